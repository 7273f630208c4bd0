"""``mpsched/Multipath-v0``: one multipath connection of the fluid simulator as a Gymnasium env.

Each step is one decision (see ``envs.decision``); an episode is one transfer of the scenario's
workload. ``info`` carries the running goodput and, at the end, the episode's metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from envs.decision import DecisionProcess, DecisionSpec
from envs.features import CLIP
from envs.rewards import RewardSpec
from envs.scenario import ScenarioLike, resolve_scenarios
from envs.sim.simulator import SimConfig, Simulator


def build_process(batch: int, scenario: ScenarioLike | Sequence[ScenarioLike] = "ispras_s1",
                  cc: str | Sequence[str] = "bbr", decision: str = "blocked", interval_ms: float = 50.0,
                  modes: Sequence[Mapping | str] | None = None, observation: str = "peekaboo",
                  reward: str = "throughput", reward_params: Mapping[str, float] | None = None,
                  seed: int = 0, dt_ms: float = 1.0, mss: int = 1448, max_duration_s: float = 600.0,
                  ooo_limit_bytes: float = math.inf, end_on_ooo: bool = False,
                  cc_params: Mapping[str, Mapping[str, float]] | None = None) -> DecisionProcess:
    """The decision process behind both the single and the vector environment."""
    sim = Simulator(resolve_scenarios(scenario), list(cc) if isinstance(cc, (list, tuple)) else cc,
                    batch=batch, seed=seed,
                    config=SimConfig(dt_ms=dt_ms, mss=mss, max_duration_s=max_duration_s,
                                     ooo_limit_bytes=ooo_limit_bytes, end_on_ooo=end_on_ooo),
                    cc_overrides=dict(cc_params or {}))
    spec = DecisionSpec(decision, interval_ms, tuple(modes) if modes else DecisionSpec.modes)
    return DecisionProcess(sim, spec, observation, RewardSpec(reward, **dict(reward_params or {})))


def spaces(process: DecisionProcess) -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    n = len(process.features)
    return (gym.spaces.Box(0.0, CLIP, shape=(n,), dtype=np.float32),
            gym.spaces.Discrete(process.n_actions))


class MultipathEnv(gym.Env):
    """One connection; keyword arguments as ``build_process`` (scenario, cc, decision, ...)."""

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self.process = build_process(1, **kwargs)
        self.observation_space, self.action_space = spaces(self.process)
        self._action = np.zeros(1, dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.process.sim.seed = int(seed)
            self.process.sim.episode[:] = 0
        self.process.reset()
        return self.process.last_obs[0].copy(), {"cc": self.process.sim.current_cc[0],
                                           "scenario": self.process.sim.current[0].name}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._action[0] = action
        rew, term, trunc, infos = self.process.step(self._action)
        return self.process.last_obs[0].copy(), float(rew[0]), bool(term[0]), bool(trunc[0]), infos[0]
