"""Semi-MDP discounting for Stable-Baselines3's off-policy learners: a replay buffer whose
transitions are discounted by the simulated time between two decisions instead of once per
decision (Bradtke & Duff, "Reinforcement learning methods for continuous-time Markov decision
problems", NIPS 7, 1995).

The blocked decision comes about 1 ms after a wait and 1-30 ms after a send, so a fixed discount
per decision ends the horizon sooner after waits. Here the discount of the transition that took
``dt`` seconds is ``gamma ** (dt / time_constant)``: ``gamma`` (the algorithm's) is the discount
per ``time_constant_ms`` of simulated time, and the horizon ``time_constant_ms / (1 - gamma)``
whatever the decisions' spacing. The interval is the environment's ``dt_s`` info
(``envs.decision.Infos``). SB3's DQN reads the per-sample ``discounts`` of
``ReplayBufferSamples``; a decision's reward is counted at the decision (Bradtke & Duff discount
the reward over the interval too, which for ``dt`` well below ``time_constant_ms / -ln gamma``
changes it by a factor ``1 + O(dt ln(1/gamma) / time_constant)``).

Used through SB3's hyperparameters: ``replay_buffer_class: TimeDiscountReplayBuffer`` and
``replay_buffer_kwargs: {time_constant_ms: 40}`` (``agents.sb3`` passes the algorithm's gamma).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from envs.errors import ConfigError, out_of_range

DT_INFO = "dt_s"  # the info key of a decision's simulated interval, in seconds


def time_discount(dt_s: np.ndarray, gamma: float, time_constant_ms: float) -> np.ndarray:
    """``gamma ** (dt / time_constant)`` per interval ``dt_s`` (seconds): the discount of a
    semi-MDP transition that took ``dt_s`` (Bradtke & Duff 1995)."""
    return np.power(gamma, np.asarray(dt_s, dtype=np.float64) * 1000.0 / time_constant_ms)


class TimeDiscountReplayBuffer(ReplayBuffer):
    """SB3's ``ReplayBuffer`` that also stores each transition's discount ``gamma ** (dt /
    time_constant)``, ``dt`` from its ``dt_s`` info, and returns it as the samples' ``discounts``
    (Bradtke & Duff 1995)."""

    def __init__(self, buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space,
                 device: Any = "auto", n_envs: int = 1, optimize_memory_usage: bool = False,
                 handle_timeout_termination: bool = True, *, gamma: float, time_constant_ms: float) -> None:
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
            raise out_of_range("agent.hyperparams.gamma", gamma, "a number >= 0.0 and <= 1.0")
        if (isinstance(time_constant_ms, bool) or not isinstance(time_constant_ms, (int, float))
                or not 0.0 < time_constant_ms < np.inf):
            raise out_of_range("agent.hyperparams.replay_buffer_kwargs.time_constant_ms", time_constant_ms,
                               "a number > 0.0")
        super().__init__(buffer_size, observation_space, action_space, device, n_envs, optimize_memory_usage,
                         handle_timeout_termination)
        self.gamma = float(gamma)
        self.time_constant_ms = float(time_constant_ms)
        self.discounts = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)

    def add(self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: np.ndarray, done: np.ndarray,
            infos: list[dict[str, Any]]) -> None:
        try:
            dt = [info[DT_INFO] for info in infos]
        except KeyError:
            raise ConfigError(f"TimeDiscountReplayBuffer needs each step's '{DT_INFO}' info (the simulated time "
                              "since the previous decision), which this environment does not give") from None
        self.discounts[self.pos] = time_discount(np.array(dt), self.gamma, self.time_constant_ms)
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """SB3's ``ReplayBuffer._get_samples`` (the same draws of the env indices) with ``discounts``."""
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        if self.optimize_memory_usage:
            next_obs = self._normalize_obs(self.observations[(batch_inds + 1) % self.buffer_size, env_indices, :], env)
        else:
            next_obs = self._normalize_obs(self.next_observations[batch_inds, env_indices, :], env)
        data = (
            self._normalize_obs(self.observations[batch_inds, env_indices, :], env),
            self.actions[batch_inds, env_indices, :],
            next_obs,
            (self.dones[batch_inds, env_indices] * (1 - self.timeouts[batch_inds, env_indices])).reshape(-1, 1),
            self._normalize_reward(self.rewards[batch_inds, env_indices].reshape(-1, 1), env),
        )
        observations, actions, next_observations, dones, rewards = map(self.to_torch, data)
        return ReplayBufferSamples(observations, actions, next_observations, dones, rewards,
                                   self.to_torch(self.discounts[batch_inds, env_indices].reshape(-1, 1)))
