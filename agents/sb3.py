"""Any Stable-Baselines3 algorithm whose action space fits (DQN, PPO, A2C, ...) as an agent,
through one code path: ``algorithm`` names the SB3 class, ``hyperparams`` are its keyword
arguments (``policy_kwargs.activation_fn`` may be written as a name: relu, tanh, ...)."""

from __future__ import annotations

import importlib
import inspect
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.dqn.policies import MlpPolicy as DQNMlpPolicy

from agents.base import Agent, Monitor
from agents.params import Rule, integer, number
from envs.errors import ConfigError, out_of_range, unknown_name

ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "elu": torch.nn.ELU, "leaky_relu": torch.nn.LeakyReLU}
MODEL_FILE = "model.zip"


# variants of SB3 algorithms that published schedulers need, by the name ``algorithm`` takes
VARIANTS = {"LEEYOO_DQN": "agents.leeyoo:LeeyooDQN"}
# replay buffers of our own, by the name ``hyperparams.replay_buffer_class`` takes; each takes the
# algorithm's ``gamma`` as a keyword, which ``_kwargs`` passes
REPLAY_BUFFERS = {"TimeDiscountReplayBuffer": "agents.time_discount:TimeDiscountReplayBuffer"}
BUFFER_RULES: dict[str, Rule] = {"time_constant_ms": number(0.0, lo_open=True)}


def replay_buffer_class(name: object) -> type[ReplayBuffer]:
    """The replay buffer ``agent.hyperparams.replay_buffer_class`` names (``REPLAY_BUFFERS``)."""
    if not isinstance(name, str) or name not in REPLAY_BUFFERS:
        raise unknown_name("agent.hyperparams.replay_buffer_class", name, REPLAY_BUFFERS)
    module, cls_name = REPLAY_BUFFERS[name].split(":")
    return getattr(importlib.import_module(module), cls_name)


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
        # a schedule (a callable, from Python) is SB3's to check; a string or list is no number
        # (learning_rate=fast ended in SB3's own words at the first update, gamma=[0.9] in torch's)
        if rule is not None and not callable(value) and not rule[0](value):
            raise out_of_range(f"agent.hyperparams.{key}", value, rule[1])
    _check_buffer(hyperparams)
    arch = (hyperparams.get("policy_kwargs") or {}).get("net_arch")
    layers = [w for part in arch.values() for w in part] if isinstance(arch, dict) else arch
    if layers is not None and not (isinstance(layers, (list, tuple)) and all(
            isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in layers)):
        raise out_of_range("agent.hyperparams.policy_kwargs.net_arch", arch,
                           "a list of layer widths (integers >= 1), or {pi: [...], vf: [...]}")


def _check_buffer(hyperparams: dict[str, Any]) -> None:
    """Refuse a ``replay_buffer_kwargs`` key the replay buffer does not take (SB3's
    ``ReplayBuffer`` unless ``replay_buffer_class`` names one of ``REPLAY_BUFFERS``) and a value
    outside BUFFER_RULES, naming ``agent.hyperparams.replay_buffer_kwargs.<key>``."""
    name = hyperparams.get("replay_buffer_class")
    given = hyperparams.get("replay_buffer_kwargs") or {}
    if name is None and not given:
        return
    buffer = ReplayBuffer if name is None else replay_buffer_class(name)
    if not isinstance(given, dict):
        raise out_of_range("agent.hyperparams.replay_buffer_kwargs", given, "a mapping")
    params = inspect.signature(buffer.__init__).parameters
    taken = set(params) - {"self", "buffer_size", "observation_space", "action_space", "device", "n_envs", "gamma"}
    for key, value in given.items():
        if key not in taken:
            raise unknown_name(f"agent.hyperparams.replay_buffer_kwargs key for {buffer.__name__}", key, taken)
        rule = BUFFER_RULES.get(key)
        if rule is not None and not rule[0](value):
            raise out_of_range(f"agent.hyperparams.replay_buffer_kwargs.{key}", value, rule[1])
    missing = [k for k, p in params.items() if p.kind == p.KEYWORD_ONLY and p.default is p.empty
               and k != "gamma" and k not in given]
    if missing:
        raise ConfigError(f"agent.hyperparams.replay_buffer_kwargs: {buffer.__name__} needs {', '.join(missing)}")


def _kwargs(cls: type[BaseAlgorithm], hyperparams: dict[str, Any]) -> dict[str, Any]:
    """``cls``'s keyword arguments from ``hyperparams``: an activation and a replay buffer of
    ours by name, the buffer given the algorithm's ``gamma``."""
    kwargs = dict(hyperparams)
    if isinstance(kwargs.get("replay_buffer_class"), str):
        kwargs["replay_buffer_class"] = replay_buffer_class(kwargs["replay_buffer_class"])
        if "gamma" not in kwargs:  # the algorithm's default, from the first class up its MRO that names it
            kwargs["gamma"] = next(params["gamma"].default for params in
                                   (inspect.signature(k.__init__).parameters for k in cls.__mro__)  # type: ignore[misc]
                                   if "gamma" in params)
        kwargs["replay_buffer_kwargs"] = {**(kwargs.get("replay_buffer_kwargs") or {}), "gamma": kwargs["gamma"]}
    policy_kwargs = dict(kwargs.pop("policy_kwargs", {}) or {})
    act = policy_kwargs.get("activation_fn")
    if isinstance(act, str):
        if act not in ACTIVATIONS:
            raise ConfigError(f"unknown activation_fn {act!r}; valid: {', '.join(ACTIVATIONS)}")
        policy_kwargs["activation_fn"] = ACTIVATIONS[act]
    kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


class EagerAdam(torch.optim.Adam):
    """``torch.optim.Adam``, the same update, without the hooks it has for ``torch.compile``:
    ``Optimizer``'s ``add_param_group``, ``zero_grad``, ``state_dict`` and ``load_state_dict``
    are wrapped in ``torch._disable_dynamo`` and ``step`` in ``graph_break`` calls, each
    importing ``torch._dynamo`` at its first call (1.3-1.7 s of CPU, as long as importing torch;
    eager training never needs it). Each method here runs the undecorated one (``inspect.unwrap``),
    ``step`` with autograd set as its wrapper sets it."""

    _add_param_group = inspect.unwrap(torch.optim.Optimizer.add_param_group)
    _zero_grad = inspect.unwrap(torch.optim.Optimizer.zero_grad)
    _state_dict = inspect.unwrap(torch.optim.Optimizer.state_dict)
    _load_state_dict = inspect.unwrap(torch.optim.Optimizer.load_state_dict)
    _step = inspect.unwrap(torch.optim.Adam.step)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        EagerAdam._add_param_group(self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if not set_to_none:
            EagerAdam._zero_grad(self, set_to_none)
            return
        for group in self.param_groups:  # torch's loop for set_to_none (SB3's), without its profiler record
            for p in group["params"]:
                p.grad = None

    def state_dict(self) -> dict[str, Any]:
        return EagerAdam._state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        EagerAdam._load_state_dict(self, state_dict)

    def step(self, closure=None):  # type: ignore[override]
        with torch.set_grad_enabled(self.defaults["differentiable"]):
            return EagerAdam._step(self, closure)


class EagerDQNPolicy(DQNMlpPolicy):
    """Stable-Baselines3's DQN ``MlpPolicy`` (the class ``"MlpPolicy"`` names for DQN) with
    ``EagerAdam`` as its default optimiser and a direct ``predict`` for a batch of flat float32
    observations: the Q-network on them and its argmax, the network and input SB3's own
    ``predict`` uses, without its per-call conversions and checks (about half of a 100 us call,
    which the main job makes about 19,000 times training and evaluating). Anything else goes
    through SB3's ``predict``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("optimizer_class", EagerAdam)
        super().__init__(*args, **kwargs)

    def set_training_mode(self, mode: bool) -> None:
        """SB3's (``nn.Module.train`` down the Q-network's modules, then the policy's flag), as a
        flag set on each module of a cached list where each module takes ``nn.Module.train`` as
        it is (the modules an MLP is made of), which is what that recursion does; SB3 switches
        the mode twice per gradient step (training, then acting)."""
        modules = self.__dict__.get("_mode_modules")
        if modules is None or modules[0] is not self.q_net:
            tree = list(self.q_net.modules())
            plain = all(type(m).train is torch.nn.Module.train for m in tree)
            modules = self.__dict__["_mode_modules"] = (self.q_net, tree if plain else None)
        if modules[1] is None or not isinstance(mode, bool):
            super().set_training_mode(mode)
            return
        for module in modules[1]:
            module.__dict__["training"] = mode  # where nn.Module.__setattr__ puts a flag that is no parameter or buffer
        self.training = mode

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        if not (isinstance(observation, np.ndarray) and observation.dtype == np.float32 and observation.ndim == 2
                and observation.shape[1:] == self.observation_space.shape):
            return super().predict(observation, state, episode_start, deterministic)
        if self.training:
            self.set_training_mode(False)
        with torch.no_grad():
            q_values = self.q_net(torch.from_numpy(observation))
        return q_values.argmax(dim=1).numpy(), state


def _policy(cls: type[BaseAlgorithm]) -> type | str:
    """The policy ``cls`` trains: ``EagerDQNPolicy`` for DQN and its variants, else ``"MlpPolicy"``."""
    return EagerDQNPolicy if cls.policy_aliases.get("MlpPolicy") is DQNMlpPolicy else "MlpPolicy"


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
                self.model = self.cls(_policy(self.cls), env, seed=self.seed, verbose=0, device="cpu",
                                      **_kwargs(self.cls, self.spec.get("hyperparams") or {}))
            except (TypeError, ValueError, AssertionError) as err:  # SB3's own checks of combinations
                raise ConfigError(f"agent.hyperparams: {err}") from None
        elif self.model.n_envs != env.num_envs:  # resumed with another train.n_envs: SB3 reloads for that
            saved = io.BytesIO()
            self.model.save(saved)
            saved.seek(0)
            self.model = self._load(saved, env=env)
        else:
            self.model.set_env(env)
        return self.model

    def learn(self, env, steps: int, monitor: Monitor) -> None:
        model = self._ensure(env)
        # a logger that writes nowhere: with verbose=0 SB3 would make one over an empty
        # SB3-<date> directory in the temp directory per call (the run's metrics go through the monitor)
        model.set_logger(Logger(folder=None, output_formats=[]))
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
        self.model = self._load(directory / MODEL_FILE)

    def _load(self, source: Path | io.BytesIO, env: Any = None) -> BaseAlgorithm:
        """``cls.load`` without SB3's "``n_steps`` is ignored" warning for an n-step DQN: the
        saved ``replay_buffer_kwargs`` already carry ``n_steps`` and ``gamma``, so the loaded
        model keeps its multi-step returns (``NStepReplayBuffer`` with the saved ``n_steps``)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"`n_steps=\d+` is ignored because a custom")
            return self.cls.load(source, env=env, device="cpu")
