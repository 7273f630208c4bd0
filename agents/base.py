"""What every learned agent offers the training loop, and the loop for agents that learn online.

An agent acts on batches of observations (one row per connection of an ``SB3VecEnv``), learns
for a number of environment transitions while reporting to a ``Monitor``, and saves itself into
a checkpoint directory. Stable-Baselines3 algorithms come in through ``agents.sb3``; bandits and
tabular learners subclass ``OnlineAgent``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from envs.errors import ConfigError

if TYPE_CHECKING:
    from envs.vector_env import SB3VecEnv


class Monitor(Protocol):
    """Receives every batch of transitions; returns False to stop training."""

    def on_step(self, n_transitions: int, rewards: np.ndarray, infos: list[dict]) -> bool: ...


@dataclass(frozen=True)
class Budget:
    """What a training run's budget counts, as its progress bar shows it: ``unit`` (singular, the
    bar's label), ``total`` over the whole run and ``done`` so far (a resumed run's earlier part
    included)."""

    unit: str
    total: int
    done: int


class Agent(abc.ABC):
    """A learned scheduler. ``spec`` is the agent's config (``configs/agent/<name>.yaml``)."""

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        self.spec = spec
        self.n_features = n_features
        self.n_actions = n_actions
        self.seed = seed

    @abc.abstractmethod
    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """Actions [N] for observations [N, n_features]."""

    @abc.abstractmethod
    def learn(self, env: SB3VecEnv, steps: int, monitor: Monitor) -> None:
        """Train for ``steps`` more transitions (summed over the env's connections)."""

    def budget(self, steps_done: int, steps_total: int) -> Budget:
        """The run's budget and how much of it is spent, given the transitions done of
        ``train.steps``. By default the budget is those transitions; an agent whose budget is
        another unit (a policy search's generations) declares it here."""
        return Budget("step", steps_total, steps_done)

    @abc.abstractmethod
    def save(self, directory: Path) -> None:
        """Write the agent's parameters into ``directory``."""

    @abc.abstractmethod
    def load_state(self, directory: Path) -> None:
        """Read back what ``save`` wrote."""


class OnlineAgent(Agent):
    """An agent that updates after every transition (bandits, tabular Q-learning)."""

    @abc.abstractmethod
    def explore(self, obs: np.ndarray) -> np.ndarray:
        """Actions while learning (with the agent's exploration)."""

    @abc.abstractmethod
    def update(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
               dones: np.ndarray) -> None:
        """Learn from one batch of transitions."""

    def learn(self, env: SB3VecEnv, steps: int, monitor: Monitor) -> None:
        obs = env.reset()
        done_steps = 0
        while done_steps < steps:
            actions = self.explore(obs)
            next_obs, rewards, dones, infos = env.step(actions)
            # the next observation of a finished connection is already its new episode's first
            final = np.array([info.get("terminal_observation", o) for o, info in zip(next_obs, infos)])
            self.update(obs, actions, rewards, final, dones)
            obs = np.asarray(next_obs)
            done_steps += env.num_envs
            if not monitor.on_step(env.num_envs, rewards, infos):
                break



def as_rows(obs: np.ndarray, n_features: int) -> np.ndarray:
    """Observations as a float64 matrix [N, n_features] (a single row may come 1-D)."""
    x = np.asarray(obs, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != n_features:
        raise ConfigError(f"expected observations of shape [N, {n_features}], got {tuple(np.shape(obs))}")
    return x


def check_blocked(n_actions: int, who: str) -> None:
    if n_actions != 2:
        raise ConfigError(f"{who} answers the 'blocked' decision (2 actions: wait for the fast path, send on "
                          f"the second); this environment has {n_actions} actions (set env.decision: blocked)")
