"""LEEYOO's interval DQN (docs/schedulers.md, "Interval-based DQN"): Stable-Baselines3's DQN with
the study's exploration. Epsilon starts at ``exploration_initial_eps`` and is multiplied by
``epsilon_decay`` per action (transition), down to ``exploration_final_eps``; a connection
explores only while its client's video buffer holds at least ``explore_buffer_s`` seconds (the
env reports it as ``info["buffer_s"]`` on the dash workload; without it, exploration is always
allowed). The rest (batch 20 from a large replay buffer, gamma 0.5, target copy synchronised
every 50 actions) is DQN's own hyperparameters, set in ``configs/agent/dqn_leeyoo.yaml``.

Decided differently: the study also leaves chunks with a random action out of the client's
bitrate estimate; the simulated client's estimate (envs/sim/workload.py) uses every chunk."""

from __future__ import annotations

import numpy as np
from stable_baselines3 import DQN


class LeeyooDQN(DQN):
    def __init__(self, *args, epsilon_decay: float = 0.997, explore_buffer_s: float = 15.0, **kwargs) -> None:
        self.epsilon_decay = epsilon_decay
        self.explore_buffer_s = explore_buffer_s
        self._buffer_s: np.ndarray | None = None
        super().__init__(*args, **kwargs)

    def _on_step(self) -> None:
        super()._on_step()  # target synchronisation
        self.exploration_rate = max(self.exploration_final_eps,
                                    self.exploration_initial_eps * self.epsilon_decay ** self.num_timesteps)
        self.logger.record("rollout/exploration_rate", self.exploration_rate)

    def _update_info_buffer(self, infos: list[dict], dones: np.ndarray | None = None) -> None:
        self._buffer_s = np.array([info.get("buffer_s", np.inf) for info in infos])
        super()._update_info_buffer(infos, dones)

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        action, state = self.policy.predict(observation, state, episode_start, deterministic=True)
        if deterministic or not self.policy.is_vectorized_observation(observation):
            return action, state
        n = action.shape[0]
        allowed = np.ones(n, bool) if self._buffer_s is None or len(self._buffer_s) != n \
            else self._buffer_s >= self.explore_buffer_s
        explore = allowed & (np.random.rand(n) < self.exploration_rate)
        if explore.any():
            action = action.copy()
            action[explore] = [self.action_space.sample() for _ in range(int(explore.sum()))]
        return action, state
