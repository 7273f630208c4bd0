"""The registry of learned agents, built from their config's ``kind`` (the heuristic schedulers,
which run inside the compiled core, are plug-ins: ``envs.plugins``)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from agents.base import Agent
from envs.errors import unknown_name

PRESET_DIR = Path(__file__).resolve().parents[1] / "configs" / "agent"

# kind -> "module:Class" (imported on use, so heuristics do not pull in torch)
AGENT_KINDS = {
    "sb3": "agents.sb3:SB3Agent",
    "qlearning": "agents.qlearning:QLearning",
    "linucb_ispras": "agents.linucb:IsprasLinUCB",
    "linucb": "agents.linucb:LinUCB",
    "peekaboo": "agents.peekaboo:Peekaboo",
    "falcon": "agents.falcon:Falcon",
    "policy_search": "agents.policy_search:PolicySearch",
}


def agent_class(kind: str) -> type[Agent]:
    if kind not in AGENT_KINDS:
        raise unknown_name("agent kind", kind, AGENT_KINDS)
    module, cls = AGENT_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), cls)


def make_agent(spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> Agent:
    return agent_class(spec.get("kind", "sb3"))(spec, n_features, n_actions, seed)


def preset(name: str) -> dict[str, Any]:
    """``configs/agent/<name>.yaml`` as a mapping (agent spec and its env settings), outside Hydra
    (benchmarks, exports and live runs that name a preset): a preset built on another
    (``defaults: [dqn, _self_]``) merged over its base as Hydra composes it; overrides of other
    config groups in ``defaults`` (``override /scenario: ...``) are Hydra's and left out."""
    from omegaconf import DictConfig, OmegaConf

    path = PRESET_DIR / f"{name}.yaml"
    if not path.is_file():
        raise unknown_name("agent", name, [p.stem for p in PRESET_DIR.glob("*.yaml")])
    cfg = OmegaConf.load(path)
    assert isinstance(cfg, DictConfig)  # a preset is a mapping
    bases = [d for d in cfg.pop("defaults", []) if isinstance(d, str) and d != "_self_"]
    merged = OmegaConf.to_container(OmegaConf.merge(*(preset(b) for b in bases), cfg), resolve=True)
    assert isinstance(merged, dict)
    return {str(k): v for k, v in merged.items()}
