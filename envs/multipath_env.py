"""``mpsched/Multipath-v0``: one multipath connection of the fluid simulator as a Gymnasium env.

Each step is one decision (see ``envs.decision``); an episode is one transfer of the scenario's
workload. ``info`` carries the running goodput and, at the end, the episode's metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from envs.decision import DecisionProcess
from envs.errors import ConfigError, out_of_range
from envs.features import CLIP
from envs.scenario import ScenarioLike, resolve_scenarios
from envs.schema import EnvConfig
from envs.sim.simulator import Simulator
from envs.sim.stacks import check_ccs

if TYPE_CHECKING:
    from envs.randomisation import StackDraw


def build_process(batch: int, /, scenario: ScenarioLike | Sequence[ScenarioLike] = "ispras_s1",
                  cc: str | Sequence[str] = "bbr", seed: int = 0,
                  cc_params: Mapping[str, Mapping[str, float]] | None = None, stack_draw: StackDraw | None = None,
                  common_draws: bool = False, **env: Any) -> DecisionProcess:
    """The decision process behind both the single and the vector environment. ``env``: the
    settings of ``configs/env`` (``envs.schema.EnvConfig``: decision, interval_ms, modes,
    observation, reward (a preset name or a mapping) and reward_params, dt_ms, mss, record_bin_ms,
    stack, ...), each defaulting to the schema's value. A CC the stack does not have is refused.
    ``stack_draw``: a stack profile drawn per episode around it (``envs.randomisation.stack_draw``).
    ``common_draws``: every connection runs connection 0's episodes (``SimConfig.common_draws``)."""
    settings = EnvConfig.from_kwargs(**env)
    if isinstance(cc, Mapping):  # as configs/cc reads it; here it ended in "unhashable type: 'dict'"
        raise out_of_range("cc", cc, "a CC name or a list of names (their parameters: cc_params={name: {...}})")
    names = list(cc) if isinstance(cc, (list, tuple)) else [str(cc)]
    check_ccs(str(settings.stack), names)
    sim = Simulator(resolve_scenarios(scenario), names if isinstance(cc, (list, tuple)) else cc,
                    batch=batch, seed=seed,
                    config=replace(settings.sim_config(), stack_draw=stack_draw, common_draws=common_draws),
                    cc_overrides=dict(cc_params or {}))
    return DecisionProcess(sim, settings.decision_spec(), settings.observation, settings.reward_spec())


def spaces(process: DecisionProcess) -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    n = len(process.features)
    return (gym.spaces.Box(0.0, CLIP, shape=(n,), dtype=np.float32),
            gym.spaces.Discrete(process.n_actions))


class MultipathEnv(gym.Env):
    """One connection; keyword arguments as ``build_process`` (scenario, cc, decision, ...)."""

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any) -> None:
        for many in ("batch", "num_envs"):
            if many in kwargs:
                raise ConfigError(f"mpsched/Multipath-v0 is one connection ({many}={kwargs[many]!r} given); for N "
                                  "connections advanced together: gymnasium.make_vec('mpsched/Multipath-v0', num_envs=N)")
        self._kwargs = kwargs
        self.process = build_process(1, **kwargs)
        self.observation_space, self.action_space = spaces(self.process)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if options:  # none is read: the scenario, CC and stack are the env's settings (gymnasium.make)
            raise ConfigError(f"reset(options=...) takes none, got {sorted(options)}; the scenario, cc and other "
                              "settings are gymnasium.make's keyword arguments")
        super().reset(seed=seed)
        if seed is not None:
            self.process.sim.seed = int(seed)
            self.process.sim.episode[:] = 0
        self.process.reset()
        scenario = self.process.sim.current[0]
        assert scenario is not None  # reset() drew it
        return self.process.last_obs[0].copy(), {"cc": self.process.sim.current_cc[0], "scenario": scenario.name}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward, terminated, truncated, info = self.process.step_one(action)
        return self.process.last_obs[0].copy(), reward, terminated, truncated, info
