"""Checkpoints: the agent's own files plus ``meta.json`` (what the agent needs from the
environment, how far training got, and a SHA-256 of every other file) and the resolved config
(``config.yaml``). Written atomically and checked when read: a damaged checkpoint is refused by
name, with the newest intact one of the same agent offered."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.registry import make_agent
from envs.errors import ConfigError

META = "meta.json"
CONFIG = "config.yaml"
FILES = "files"  # meta.json's key: {relative path: sha256} of every other file
# what must match between a checkpoint and the environment it is used in
INTERFACE = ("agent", "kind", "observation", "n_features", "n_actions", "n_paths", "decision")
REQUIRED = ("spec", "n_features", "n_actions")


# the libraries a trained policy's numbers depend on beside the seed (meta.json's ``software``)
LIBRARIES = ("torch", "stable-baselines3", "numpy", "numba", "gymnasium")


@functools.cache
def software() -> dict[str, str]:
    """The versions of ``LIBRARIES`` and the CPU capability torch dispatches its kernels for: with
    other versions, or on another machine, the same seed can train other weights (docs/transfer.md,
    "`dqn_modes` at 20 runs in every cell, trained on another machine")."""
    import torch

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    out["torch_cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
    return out


def save(directory: Path, agent: Agent, meta: dict[str, Any], config_yaml: str) -> Path:
    """Write into a temporary directory (every file fsynced, checksums in ``meta.json``), then
    rename it into place: a crash mid-save leaves the previous checkpoint intact (as
    ``<name>.old`` between the two renames)."""
    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    agent.save(tmp)
    (tmp / CONFIG).write_text(config_yaml)
    sums = checksums(tmp)
    (tmp / META).write_text(json.dumps({**meta, FILES: sums}, indent=2))
    for name in (*sums, META):
        _fsync(tmp / name)
    _fsync(tmp)
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    _fsync(directory.parent)
    shutil.rmtree(old, ignore_errors=True)
    return directory


def checksums(directory: Path) -> dict[str, str]:
    """SHA-256 of every file under ``directory`` but ``meta.json``, by relative path."""
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(directory).rglob("*")) if p.is_file() and p.name != META}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def damage(directory: Path) -> str | None:
    """What is wrong with the checkpoint in ``directory`` (None: intact). Checkpoints written
    before checksums were recorded are checked for readable metadata only."""
    path = Path(directory) / META
    if not path.is_file():
        return f"not a checkpoint: {directory} has no {META}"
    try:
        meta = json.loads(path.read_text())
    except (ValueError, OSError) as err:  # cut off, overwritten, not UTF-8
        return f"{path} is unreadable ({type(err).__name__}: {err})"
    if not isinstance(meta, dict) or any(k not in meta for k in REQUIRED):
        return f"{path} lacks {', '.join(k for k in REQUIRED if not isinstance(meta, dict) or k not in meta)}"
    for name, digest in (meta.get(FILES) or {}).items():
        f = Path(directory) / name
        if not f.is_file():
            return f"{f} is missing"
        if hashlib.sha256(f.read_bytes()).hexdigest() != digest:
            return f"{f} does not match its checksum in {META} (cut off or changed after it was written)"
    return None


def intact_alternative(directory: Path, agent: str | None) -> Path | None:
    """The newest intact checkpoint of ``agent`` near ``directory``: its previous version
    (``<name>.old``) or another run's under the same output tree (``outputs/<date>/<time>/checkpoint``)."""
    directory = Path(directory).resolve()
    runs = directory.parent.parent  # outputs/<date>
    found = [directory.with_name(directory.name + ".old"), *runs.glob(f"*/{directory.name}"),
             *runs.parent.glob(f"*/*/{directory.name}")]
    good = []
    for d in {p.resolve() for p in found if (p / META).is_file() and p.resolve() != directory}:
        if damage(d) is None and (agent is None or json.loads((d / META).read_text()).get("agent") == agent):
            good.append(d)
    return max(good, key=lambda d: (d / META).stat().st_mtime, default=None)


def read_meta(directory: Path) -> dict[str, Any]:
    """The checkpoint's metadata, after checking every file against its checksum."""
    problem = damage(directory)
    if problem is not None:
        if not (Path(directory) / META).is_file():
            raise ConfigError(problem)
        raise ConfigError(f"damaged checkpoint {directory}: {problem}; {_offer(directory)}")
    return json.loads((Path(directory) / META).read_text())


def _offer(directory: Path) -> str:
    try:
        agent = json.loads((Path(directory) / META).read_text()).get("agent")
    except (ValueError, OSError, AttributeError):
        agent = None
    other = intact_alternative(directory, agent)
    if other is None:
        return "no intact checkpoint of this agent found next to it"
    steps = json.loads((other / META).read_text()).get("steps_done")
    return f"the newest intact one of this agent is {other} ({steps} steps)"


def load(directory: Path, expect: dict[str, Any] | None = None) -> tuple[Agent, dict[str, Any]]:
    """The agent saved in ``directory``; with ``expect``, refuse a checkpoint whose interface
    (agent, feature set, number of paths, ...) differs, naming every mismatch."""
    meta = read_meta(directory)
    if expect is not None:
        check_compatible(meta, expect, directory)
    agent = make_agent(meta["spec"], meta["n_features"], meta["n_actions"], meta.get("seed", 0))
    try:
        agent.load_state(Path(directory))
    except ConfigError:
        raise
    except Exception as err:  # an unchecksummed file the agent's library cannot read
        raise ConfigError(f"damaged checkpoint {directory}: the agent's files do not load "
                          f"({type(err).__name__}: {err}); {_offer(directory)}") from err
    return agent, meta


def check_compatible(meta: dict[str, Any], expect: dict[str, Any], directory: Path | str = "checkpoint") -> None:
    wrong = [f"{k}: checkpoint has {meta.get(k)!r}, this run needs {expect[k]!r}"
             for k in INTERFACE if k in expect and meta.get(k) != expect[k]]
    if wrong:
        raise ConfigError(f"checkpoint {directory} does not fit this run: " + "; ".join(wrong))
