"""Checkpoints: the agent's own files plus ``meta.json`` (what the agent needs from the
environment, how far training got) and the resolved config (``config.yaml``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.registry import make_agent
from envs.errors import ConfigError

META = "meta.json"
CONFIG = "config.yaml"
# what must match between a checkpoint and the environment it is used in
INTERFACE = ("agent", "kind", "observation", "n_features", "n_actions", "n_paths", "decision")


def save(directory: Path, agent: Agent, meta: dict[str, Any], config_yaml: str) -> Path:
    """Write atomically: a crash mid-save leaves the previous checkpoint intact."""
    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    agent.save(tmp)
    (tmp / META).write_text(json.dumps(meta, indent=2))
    (tmp / CONFIG).write_text(config_yaml)
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)
    return directory


def read_meta(directory: Path) -> dict[str, Any]:
    path = Path(directory) / META
    if not path.is_file():
        raise ConfigError(f"not a checkpoint: {directory} has no {META}")
    return json.loads(path.read_text())


def load(directory: Path, expect: dict[str, Any] | None = None) -> tuple[Agent, dict[str, Any]]:
    """The agent saved in ``directory``; with ``expect``, refuse a checkpoint whose interface
    (agent, feature set, number of paths, ...) differs, naming every mismatch."""
    meta = read_meta(directory)
    if expect is not None:
        check_compatible(meta, expect, directory)
    agent = make_agent(meta["spec"], meta["n_features"], meta["n_actions"], meta.get("seed", 0))
    agent.load_state(Path(directory))
    return agent, meta


def check_compatible(meta: dict[str, Any], expect: dict[str, Any], directory: Path | str = "checkpoint") -> None:
    wrong = [f"{k}: checkpoint has {meta.get(k)!r}, this run needs {expect[k]!r}"
             for k in INTERFACE if k in expect and meta.get(k) != expect[k]]
    if wrong:
        raise ConfigError(f"checkpoint {directory} does not fit this run: " + "; ".join(wrong))
