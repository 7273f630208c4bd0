"""Export a checkpoint (a directory or an MLflow run id) or a loaded agent to a C header."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from agents import checkpoint as ckpt
from envs.errors import ConfigError, write_atomic
from envs.features import feature_set
from export import cnames
from export.errors import ExportError
from export.exporters import EXPORTERS, self_check
from export.bodies import QF
from export.generate import PolicySpec, header

VERSION = "1.0.0"
DEFAULT_PREFIX = "mpsched_policy"
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def resolve_checkpoint(ref: str | Path, tracking_uri: str | None = None, dst: str | Path | None = None) -> Path:
    """A checkpoint directory: ``ref`` itself, or the ``checkpoint`` artifact of the MLflow run
    ``ref`` (downloaded into ``dst`` or a temporary directory)."""
    path = Path(ref)
    if path.is_dir():
        return path
    if RUN_ID.match(str(ref)):
        import mlflow

        from agents.tracking import probe
        probe(tracking_uri or mlflow.get_tracking_uri(), "tracking_uri")
        try:
            local = mlflow.artifacts.download_artifacts(run_id=str(ref), artifact_path="checkpoint",
                                                        dst_path=str(dst) if dst else tempfile.mkdtemp(prefix="mpsched-"),
                                                        tracking_uri=tracking_uri)
        except Exception as err:  # mlflow raises several types for unknown runs / stores
            raise ExportError(f"MLflow run {ref}: cannot fetch its checkpoint artifact "
                              f"(tracking URI {tracking_uri or mlflow.get_tracking_uri()}): {err}") from None
        return Path(local)
    raise ExportError(f"checkpoint {ref!r} is neither a directory nor an MLflow run id (32 hex digits)")


def _interval_decision(meta: dict[str, Any], directory: Path | None) -> tuple[list[str], float]:
    """An interval policy's modes (``envs.plugins.scheduler_label``s) and interval (ms): from the
    checkpoint's meta (train.py writes them since 2026-11-30), else from its training config (the
    decision defaults where its ``env`` section sets none). A policy with neither is refused: a
    header naming other modes than those it chose among would run them."""
    from envs.decision import DecisionSpec, mode_labels

    if meta.get("modes"):
        return list(meta["modes"]), float(meta.get("interval_ms") or DecisionSpec.interval_ms)
    env = None
    if directory is not None and (directory / ckpt.CONFIG).is_file():
        env = (yaml.safe_load((directory / ckpt.CONFIG).read_text()) or {}).get("env")
    if not isinstance(env, dict):
        raise ExportError("an interval policy's header names its modes: the checkpoint's meta has no 'modes' and "
                          "no training config with an env section is beside it")
    return (mode_labels(env.get("modes") or DecisionSpec.modes),
            float(env.get("interval_ms") or DecisionSpec.interval_ms))


def generate(agent: Any, meta: dict[str, Any], prefix: str = DEFAULT_PREFIX, fixed_point: bool = False,
             source: str | None = None, directory: Path | None = None) -> str:
    """The header text for a loaded ``agent`` and its checkpoint ``meta``; raises ExportError
    (naming the agent, layer or setting) for anything that cannot be exported."""
    kind = meta.get("kind") or (meta.get("spec") or {}).get("kind", "sb3")
    if kind not in EXPORTERS:
        raise ExportError(f"agent kind {kind!r} ({type(agent).__name__}) has no exporter; exportable kinds: "
                          f"{', '.join(EXPORTERS)}")
    decision = meta.get("decision", "blocked")
    if decision not in ("blocked", "packet", "interval"):
        raise ExportError(f"decision mode {decision!r} is not supported by the exporter")
    try:
        feats = feature_set(meta["observation"], int(meta["n_paths"]))
    except KeyError as err:
        raise ExportError(f"checkpoint meta lacks {err}") from None
    if len(feats) != int(meta["n_features"]):
        raise ExportError(f"feature set {meta['observation']!r} has {len(feats)} features, the checkpoint "
                          f"{meta['n_features']}: envs/features.py changed since training")
    body, what = EXPORTERS[kind](agent)
    if body.n_features != len(feats):
        raise ExportError(f"the {kind} policy reads {body.n_features} inputs, the feature set "
                          f"{meta['observation']!r} gives {len(feats)}")
    agreement = self_check(agent, body, kind)
    prefix = cnames.identifier(prefix, DEFAULT_PREFIX)
    spec = meta.get("spec") or {}
    prov = [("agent", f"{meta.get('agent') or spec.get('name', '?')} (kind {kind}; {what})"),
            ("training config", f"sha256[:12] {meta.get('config_hash', 'unknown')}"),
            ("trained", f"{meta.get('steps_done', '?')} of {meta.get('steps_target', '?')} steps"
                        f"{' (finished)' if meta.get('finished') else ''}, seed {meta.get('seed', '?')}, "
                        f"scenarios {', '.join(meta.get('scenarios') or []) or '?'}, "
                        f"CCs {', '.join(meta.get('ccs') or []) or '?'}"),
            ("MLflow run", meta.get("mlflow_run_id") or "none"),
            ("checkpoint", source or "(in memory)"),
            ("feature set", f"{meta['observation']} ({len(feats)} features, {meta['n_paths']} paths)"),
            ("decision mode", f"{decision} ({meta['n_actions']} actions)"),
            ("numeric variant", f"int32 fixed point (features Q7.{QF})" if fixed_point else "float32"),
            ("export tool", f"mpsched export {VERSION} (python -m export); self-check agreement with the agent "
                            f"{100 * agreement:.2f}%")]
    modes, interval_ms = _interval_decision(meta, directory) if decision == "interval" else ([], 0.0)
    pspec = PolicySpec(prefix, feats, str(meta["observation"]), decision, int(meta["n_actions"]), fixed_point, prov,
                       seed=int(meta.get("seed", 0) or 0), modes=modes, interval_ms=interval_ms)
    return header(pspec, body)


def export_agent(agent: Any, meta: dict[str, Any], out: str | Path | None = None, prefix: str = DEFAULT_PREFIX,
                 fixed_point: bool = False, source: str | None = None) -> str:
    """Header text for a loaded agent; written to ``out`` (atomically) when given."""
    text = generate(agent, meta, prefix, fixed_point, source)
    if out is not None:
        write_atomic(out, text)
    return text


def export_checkpoint(checkpoint: str | Path, out: str | Path | None = None, prefix: str = DEFAULT_PREFIX,
                      fixed_point: bool = False, tracking_uri: str | None = None) -> str:
    """Header text for a checkpoint directory or MLflow run id; written to ``out`` when given.
    Nothing is written unless the whole header could be generated."""
    with tempfile.TemporaryDirectory(prefix="mpsched-export-") as tmp:
        directory = resolve_checkpoint(checkpoint, tracking_uri, dst=tmp)
        if Path(checkpoint).is_dir():
            source = str(checkpoint)
        else:
            import mlflow

            source = f"artifact 'checkpoint' of MLflow run {checkpoint} ({tracking_uri or mlflow.get_tracking_uri()})"
        try:
            agent, meta = ckpt.load(directory)
        except ExportError:
            raise
        except ConfigError as err:
            raise ExportError(f"checkpoint {checkpoint}: {err}") from None
        except (ImportError, AttributeError, OSError, ValueError, KeyError) as err:
            raise ExportError(f"checkpoint {checkpoint}: cannot load its agent ({type(err).__name__}: {err})") from None
        text = generate(agent, meta, prefix, fixed_point, source, directory)
    if out is not None:
        write_atomic(out, text)
    return text


class _KeepGoing:
    """SB3 callback protocol of ``agents.base``: never stop."""

    def on_step(self, n: int, rewards: Any, infos: Any) -> bool:
        return True


def fast_only_header(out: str | Path, prefix: str = "fast_only") -> Path:
    """fast_only (send on the fast path, wait whenever it is blocked) as an exported policy: an
    untrained ISPRAS DQN (``configs/agent/dqn.yaml``) whose output bias on action 0 (wait for the
    fast path) dominates every input, so XQUIC runs the fixed split through the same ``get_path``
    hook as a learned policy."""
    import torch
    from agents.registry import make_agent, preset
    from agents.sb3 import SB3Agent
    from envs.vector_env import SB3VecEnv

    cfg = preset("dqn")
    spec, env = cfg["agent"], cfg["env"]
    torch.manual_seed(0)
    agent = make_agent(spec, 6, 2, seed=0)
    assert isinstance(agent, SB3Agent)  # configs/agent/dqn.yaml: an SB3 DQN
    venv = SB3VecEnv(1, scenario="ispras_s3", cc="cubic", seed=0, decision=env["decision"],
                     observation=env["observation"], reward=env["reward"]["name"])
    agent.learn(venv, 1, _KeepGoing())  # builds the network (no update before learning_starts)
    from stable_baselines3 import DQN

    assert isinstance(agent.model, DQN)
    last = [m for m in agent.model.q_net.q_net if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([1.0, -1.0]))  # Q(wait) = 1 > Q(send) = -1 for every input
    meta = {"agent": "dqn", "kind": "sb3", "observation": env["observation"], "n_features": 6, "n_actions": 2,
            "n_paths": 2, "decision": env["decision"], "spec": spec, "seed": 0, "steps_done": 0,
            "finished": True, "config_hash": "fast_only", "scenarios": [], "ccs": []}
    export_agent(agent, meta, out, prefix=prefix)
    return Path(out)
