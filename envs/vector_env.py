"""Batched environments backed by one compiled simulator: a Gymnasium ``VectorEnv`` (made by
``gymnasium.make_vec("mpsched/Multipath-v0", num_envs=N, vectorization_mode="vector_entry_point")``)
and ``SB3VecEnv``, the adapter Stable-Baselines3 trains on.

Both reset a finished connection in the same step, as SB3 expects; the Gymnasium env reports the
last observation and info of the ended episode under ``final_obs`` / ``final_info``
(``AutoresetMode.SAME_STEP``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from envs.errors import ConfigError
from envs.multipath_env import build_process, spaces


class MultipathVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` connections advanced together; keyword arguments as ``build_process``."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int = 8, **kwargs: Any) -> None:
        self.num_envs = num_envs
        self.process = build_process(num_envs, **kwargs)
        self.single_observation_space, self.single_action_space = spaces(self.process)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if options:  # none is read, as in mpsched/Multipath-v0
            raise ConfigError(f"reset(options=...) takes none, got {sorted(options)}; the scenario, cc and other "
                              "settings are gymnasium.make_vec's keyword arguments")
        if seed is not None:
            self.process.sim.seed = int(seed)
            self.process.sim.episode[:] = 0
        self.process.reset()
        return self.process.last_obs.copy(), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        rew, term, trunc, infos, final_obs = step_and_autoreset(self.process, actions)
        info: dict[str, Any] = {"goodput_mbps": infos.goodput_mbps.copy()}
        ended = term | trunc
        if ended.any():
            info["final_obs"] = np.array([o if e else None for o, e in zip(final_obs, ended)], dtype=object)
            info["final_info"] = np.array([infos[b] if e else None for b, e in enumerate(ended)], dtype=object)
            info["_final_obs"] = info["_final_info"] = ended
        return self.process.last_obs.copy(), rew, term, trunc, info


def step_and_autoreset(process, actions):
    """Step every connection; connections whose episode ended start a new one at once.
    Returns rewards, terminated, truncated, infos and each connection's last observation."""
    rew, term, trunc, infos = process.step(actions)
    final_obs = process.last_obs.copy()
    for b in np.flatnonzero(term | trunc):
        process.reset(int(b))
    return rew, term, trunc, infos, final_obs


class SB3VecEnv(VecEnv):
    """Stable-Baselines3 view of the batched simulator (same keyword arguments)."""

    def __init__(self, num_envs: int = 8, **kwargs: Any) -> None:
        self.process = build_process(num_envs, **kwargs)
        obs_space, act_space = spaces(self.process)
        self.render_mode = None
        super().__init__(num_envs, obs_space, act_space)
        self._actions: np.ndarray | None = None
        self._seed: int | None = None

    def reset(self) -> np.ndarray:
        if self._seed is not None:
            self.process.sim.seed = self._seed
            self.process.sim.episode[:] = 0
            self._seed = None
        self.process.reset()
        return self.process.last_obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        rew, term, trunc, infos, final_obs = step_and_autoreset(self.process, self._actions)
        infos = list(infos)  # SB3 expects a list of dicts
        for b in np.flatnonzero(term | trunc):
            infos[b]["terminal_observation"] = final_obs[b]
            infos[b]["TimeLimit.truncated"] = bool(trunc[b] and not term[b])
        return self.process.last_obs.copy(), rew, term | trunc, infos

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        return [seed] * self.num_envs

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices=None) -> list:
        return [getattr(self, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list:
        return [getattr(self, method_name)(*args, **kwargs)] * len(self._indices(indices))

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)
