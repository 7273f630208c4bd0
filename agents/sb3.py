"""Any Stable-Baselines3 algorithm whose action space fits (DQN, PPO, A2C, ...) as an agent,
through one code path: ``algorithm`` names the SB3 class, ``hyperparams`` are its keyword
arguments (``policy_kwargs.activation_fn`` may be written as a name: relu, tanh, ...)."""

from __future__ import annotations

import importlib
import inspect
import io
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from agents.base import Agent, Monitor
from agents.linucb import Rule, integer, number
from envs.errors import ConfigError, out_of_range, unknown_name

ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "elu": torch.nn.ELU, "leaky_relu": torch.nn.LeakyReLU}
MODEL_FILE = "model.zip"


# variants of SB3 algorithms that published schedulers need, by the name ``algorithm`` takes
VARIANTS = {"LEEYOO_DQN": "agents.leeyoo:LeeyooDQN"}


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    if name.upper() in VARIANTS:
        module, cls_name = VARIANTS[name.upper()].split(":")
        return getattr(importlib.import_module(module), cls_name)
    cls = getattr(stable_baselines3, name.upper(), None)
    valid = [n for n in dir(stable_baselines3) if isinstance(getattr(stable_baselines3, n), type)
             and issubclass(getattr(stable_baselines3, n), BaseAlgorithm)]
    if cls is None or not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise ConfigError(f"unknown Stable-Baselines3 algorithm {name!r}; valid: {', '.join(sorted(valid + list(VARIANTS)))}")
    return cls


# ranges of the SB3 keyword arguments the configs set (SB3 itself checks few of them, and only
# deep inside training: torch's optimiser refuses a negative learning rate at the first update)
RULES: dict[str, Rule] = {
    "learning_rate": number(0.0, lo_open=True), "gamma": number(0.0, 1.0), "gae_lambda": number(0.0, 1.0),
    "tau": number(0.0, 1.0, lo_open=True), "buffer_size": integer(1), "batch_size": integer(1),
    "learning_starts": integer(0), "gradient_steps": integer(-1), "target_update_interval": integer(1),
    "n_steps": integer(1), "n_epochs": integer(1), "exploration_fraction": number(0.0, 1.0),
    "exploration_initial_eps": number(0.0, 1.0), "exploration_final_eps": number(0.0, 1.0),
    "ent_coef": number(0.0), "vf_coef": number(0.0), "max_grad_norm": number(0.0, lo_open=True),
    "clip_range": number(0.0, lo_open=True),
}


def check_hyperparams(cls: type[BaseAlgorithm], hyperparams: dict[str, Any]) -> None:
    """Refuse, before anything runs, a key ``cls`` does not take and a value outside RULES,
    naming ``agent.hyperparams.<key>``."""
    taken: set[str] = set()
    for klass in cls.__mro__:  # a variant's own keywords, then those it passes on (**kwargs)
        params = inspect.signature(klass.__init__).parameters  # type: ignore[misc]  # each class's own constructor
        taken |= {k for k, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            break
    taken -= {"self", "args", "kwargs", "policy", "env", "seed", "device", "verbose"}
    for key, value in hyperparams.items():
        if key not in taken:
            raise unknown_name(f"agent.hyperparams key for {cls.__name__}", key, taken)
        rule = RULES.get(key)
        if rule is not None and not isinstance(value, (list, tuple, str)) and not rule[0](value):
            raise out_of_range(f"agent.hyperparams.{key}", value, rule[1])


def _kwargs(hyperparams: dict[str, Any]) -> dict[str, Any]:
    kwargs = dict(hyperparams)
    policy_kwargs = dict(kwargs.pop("policy_kwargs", {}) or {})
    act = policy_kwargs.get("activation_fn")
    if isinstance(act, str):
        if act not in ACTIVATIONS:
            raise ConfigError(f"unknown activation_fn {act!r}; valid: {', '.join(ACTIVATIONS)}")
        policy_kwargs["activation_fn"] = ACTIVATIONS[act]
    kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


class _Callback(BaseCallback):
    def __init__(self, monitor: Monitor) -> None:
        super().__init__()
        self.monitor = monitor

    def _on_step(self) -> bool:
        return self.monitor.on_step(self.training_env.num_envs, self.locals["rewards"], self.locals["infos"])


class SB3Agent(Agent):
    """``spec``: {algorithm: DQN, hyperparams: {...}}."""

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        self.cls = algorithm_class(spec.get("algorithm", "DQN"))
        check_hyperparams(self.cls, spec.get("hyperparams") or {})
        self.model: BaseAlgorithm | None = None

    def _ensure(self, env) -> BaseAlgorithm:
        if self.model is None:
            try:
                self.model = self.cls("MlpPolicy", env, seed=self.seed, verbose=0, device="cpu",
                                      **_kwargs(self.spec.get("hyperparams") or {}))
            except (TypeError, ValueError, AssertionError) as err:  # SB3's own checks of combinations
                raise ConfigError(f"agent.hyperparams: {err}") from None
        elif self.model.n_envs != env.num_envs:  # resumed with another train.n_envs: SB3 reloads for that
            saved = io.BytesIO()
            self.model.save(saved)
            saved.seek(0)
            self.model = self.cls.load(saved, env=env, device="cpu")
        else:
            self.model.set_env(env)
        return self.model

    def learn(self, env, steps: int, monitor: Monitor) -> None:
        model = self._ensure(env)
        model.learn(steps, callback=_Callback(monitor), reset_num_timesteps=False, progress_bar=False)

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        if self.model is None:
            raise ConfigError("the agent has not been trained or loaded yet")
        actions, _ = self.model.predict(obs, deterministic=deterministic)
        return np.asarray(actions).reshape(-1)

    def save(self, directory: Path) -> None:
        if self.model is None:
            raise ConfigError("the agent has not been trained or loaded yet")
        self.model.save(directory / MODEL_FILE)

    def load_state(self, directory: Path) -> None:
        self.model = self.cls.load(directory / MODEL_FILE, device="cpu")
