"""The registry of learned agents, built from their config's ``kind`` (the heuristic schedulers,
which run inside the compiled core, are plug-ins: ``envs.plugins``)."""

from __future__ import annotations

import importlib
from typing import Any

from agents.base import Agent
from envs.errors import unknown_name

# kind -> "module:Class" (imported on use, so heuristics do not pull in torch)
AGENT_KINDS = {
    "sb3": "agents.sb3:SB3Agent",
    "qlearning": "agents.qlearning:QLearning",
    "linucb_ispras": "agents.linucb:IsprasLinUCB",
    "linucb": "agents.linucb:LinUCB",
    "peekaboo": "agents.peekaboo:Peekaboo",
    "falcon": "agents.falcon:Falcon",
}


def agent_class(kind: str) -> type[Agent]:
    if kind not in AGENT_KINDS:
        raise unknown_name("agent kind", kind, AGENT_KINDS)
    module, cls = AGENT_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), cls)


def make_agent(spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> Agent:
    return agent_class(spec.get("kind", "sb3"))(spec, n_features, n_actions, seed)
