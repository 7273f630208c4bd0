"""FALCON (Wu, Alay, Brunstrom, Caso, Ferlin, "FALCON: Fast and Accurate Multipath Scheduling
using Offline and Online Learning", arXiv 2201.08969, 2022; docs/schedulers.md, "Peekaboo and its
successors").

A DQN scheduler whose starting model comes from offline *meta-learning* over many network
conditions and which, deployed, adapts online in a few gradient steps when a change in the
conditions is detected.

**Decision.** The ``blocked`` mode (``envs.decision``): asked only when the fast path has no
window and a second path has; action 0 = wait for the fast path, 1 = send on the second path.
Observation: any feature set (``peekaboo`` in ``configs/agent/falcon.yaml``: cwnd, swnd and in
flight over srtt for the fast and the second path, as FALCON's predecessor Peekaboo); reward:
the configured preset (``throughput`` in the shipped config: in-order goodput per decision
interval / 100 Mbit/s).

**Q-network.** An MLP ``n_features -> hidden (ReLU) ... -> 2`` (``hidden`` [32, 32]); one-step
DQN targets ``r + gamma * (1 - done) * max_a' Q_target(s', a')`` with a target network synced
every ``target_update`` gradient steps, Huber loss, Adam (``lr``), minibatches of ``batch_size``
from a replay buffer, gradient-norm clip 10.

**Offline meta-learning (inside ``learn``).** Tasks are network conditions: the run's training
scenarios (``scenario=...``; a distribution such as ``mpquic_space`` is sampled per task with the
agent's generator) or ``agent.params.tasks`` (a list of scenario names, files or mappings).
First-order meta-learning with Reptile (Nichol, Achiam, Schulman 2018): per meta-iteration draw a
task, copy the meta-parameters ``phi`` into the Q-network, run ``inner_steps`` transitions of
epsilon-greedy DQN on that task (fresh buffer and optimiser, a simulator of its own with the
run's CCs), then ``phi += eps_i * (theta - phi)`` with the outer step ``eps_i`` annealed linearly
from ``meta_lr`` towards 0 over the meta-training budget, as in Reptile's experiments
(``meta_anneal: false`` keeps it constant). ``meta_fraction`` of the first ``learn``
budget goes to meta-training (those transitions count toward ``train.steps`` and are reported
to the monitor like any others).

**Online deployment and adaptation.** The Q-network starts from ``phi`` and keeps learning online
(epsilon-greedy with ``epsilon``, a gradient step every ``train_freq`` batched steps on a sliding
buffer of ``buffer_size`` transitions). A one-sided CUSUM watches the reward for a drop. Its
input is one number per *segment* of a connection: the mean reward per decision over the
connection's episode, or over ``change_segment`` decisions when the episode is longer (raw
per-decision rewards are useless here: within an episode they follow its phases, slow start
then steady state, and connections started together stay in step, so a detector on them raises
an alarm every episode). ``g = max(0, g + (mu - x) / sd - change_k)`` with the reference mean and
variance of the segment means tracked by a slow exponential average (rate ``change_rate``, the
plain average during the warm-up), so that slow drifts move the reference while abrupt drops
raise the alarm before the reference follows them (freezing the reference while ``g > 0``
would select the high segments and make false alarms certain). When ``g > change_h`` (after
``change_warmup`` segments since the last (re)start) a change is declared: the network is reset
to ``phi``, the buffer keeps only the transitions since CUSUM's change-point estimate (the last
step at which ``g`` was 0), at most ``adapt_window`` of them, so that it holds the new conditions
only, and ``adapt_steps`` gradient steps are taken at once; the detector restarts.

Readings chosen where the paper leaves room or differs: the paper keeps a *set* of meta-models,
one per coarse-grained condition class, and picks one online; here one meta-model is learned
over the whole task distribution (restrict ``tasks`` to one class to get per-class models).
The meta-update is Reptile, a first-order rule (no second-order gradients through DQN updates),
and the trigger is the reward-drop CUSUM above: neither is claimed to be the paper's exact
procedure. ``change_detection: false`` turns the trigger off (plain online DQN from the starting
model). Resuming a checkpoint restarts with an empty replay buffer; a run stopped during
meta-training meta-trains again on ``meta_fraction`` of the steps left.
``act(deterministic=True)`` is greedy on the online network (the meta-model before deployment);
``deterministic=False`` is epsilon-greedy. Determinism: the networks are initialised under
``torch.manual_seed(seed)`` (in a forked RNG, leaving the global one untouched); every random
draw (exploration, minibatches, task sampling) uses a numpy Generator seeded with the agent's
seed.
"""

from __future__ import annotations

import contextlib
import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.base import Monitor, OnlineAgent, as_rows, check_blocked
from agents.params import integer, number, read_params
from agents.state import load_json, rng_state, save_json, set_rng_state
from envs.decision import DecisionProcess
from envs.errors import ConfigError
from envs.features import FEATURE_SETS, full_set
from envs.scenario import Scenario, resolve_scenarios
from envs.sim.simulator import Simulator
from envs.vector_env import step_and_autoreset

META_FILE = "falcon_meta.pt"
ONLINE_FILE = "falcon_online.pt"
STATE_FILE = "falcon_state.json"
TASK_SEED_OFFSET = 7919  # task simulators never share the training env's seed


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


@contextlib.contextmanager
def single_thread():
    """Run torch on one thread: the networks are tiny, and intra-op threads only contend with
    the simulator and other processes (a 64x2 reduction took ~10 ms on 2 busy cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class QNet(nn.Module):
    def __init__(self, n_in: int, hidden: list[int], n_out: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = n_in
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_out))
        self.body = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class Replay:
    """A ring buffer of transitions."""

    def __init__(self, capacity: int, n_features: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, n_features), dtype=np.float32)
        self.next_obs = np.zeros((capacity, n_features), dtype=np.float32)
        self.act = np.zeros(capacity, dtype=np.int64)
        self.rew = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.size = 0

    def push(self, obs, act, rew, next_obs, done) -> None:
        for i in range(len(act)):
            j = self.pos
            self.obs[j], self.act[j], self.rew[j] = obs[i], act[i], rew[i]
            self.next_obs[j], self.done[j] = next_obs[i], done[i]
            self.pos = (j + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def keep_latest(self, n: int) -> None:
        """Drop everything but the ``n`` most recent transitions."""
        n = min(n, self.size)
        idx = (self.pos - n + np.arange(n)) % self.capacity
        for arr in (self.obs, self.next_obs, self.act, self.rew, self.done):
            arr[:n] = arr[idx]
        self.size, self.pos = n, n % self.capacity

    def sample(self, rng: np.random.Generator, n: int) -> tuple[torch.Tensor, ...]:
        idx = rng.integers(0, self.size, size=n)
        return (torch.from_numpy(self.obs[idx]), torch.from_numpy(self.act[idx]), torch.from_numpy(self.rew[idx]),
                torch.from_numpy(self.next_obs[idx]), torch.from_numpy(self.done[idx]))


def observation_name(features: tuple) -> str:
    """The name of a feature set given its features (task processes are built by name)."""
    for name, feats in FEATURE_SETS.items():
        if tuple(features) == feats:
            return name
    for n in range(1, 9):
        if tuple(features) == full_set(n):
            return "full"
    raise ConfigError("falcon: the environment's observation is not a named feature set")


class Falcon(OnlineAgent):
    DEFAULTS: dict[str, Any] = {
        "hidden": [32, 32], "gamma": 0.9, "lr": 0.001, "batch_size": 64, "target_update": 100,
        "meta_fraction": 0.5, "meta_lr": 0.5, "meta_anneal": True, "inner_steps": 512, "inner_epsilon": 0.2,
        "tasks": None,
        "epsilon": 0.05, "train_freq": 1, "buffer_size": 4096,
        "change_detection": True, "change_segment": 256, "change_k": 0.5, "change_h": 8.0, "change_warmup": 16,
        "change_rate": 0.02,
        "adapt_steps": 20, "adapt_window": 256,
    }
    RULES = {
        "hidden": ((lambda v: isinstance(v, (list, tuple)) and len(v) > 0
                    and all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in v)),
                   "a non-empty list of layer widths >= 1"),
        "gamma": number(0.0, 1.0), "lr": number(0.0, 1.0, lo_open=True), "batch_size": integer(1),
        "target_update": integer(1), "meta_fraction": number(0.0, 1.0), "meta_lr": number(0.0, 1.0, lo_open=True),
        "meta_anneal": (_bool, "true or false"), "inner_steps": integer(1), "inner_epsilon": number(0.0, 1.0),
        "tasks": ((lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0)),
                  "null (the run's scenarios) or a non-empty list of scenarios"),
        "epsilon": number(0.0, 1.0), "train_freq": integer(1), "buffer_size": integer(1),
        "change_detection": (_bool, "true or false"), "change_segment": integer(1), "change_k": number(0.0),
        "change_h": number(0.0, lo_open=True), "change_warmup": integer(1),
        "change_rate": number(0.0, 1.0, lo_open=True), "adapt_steps": integer(0), "adapt_window": integer(1),
    }

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        check_blocked(n_actions, "falcon")
        self.params = p = read_params(spec, self.DEFAULTS, self.RULES)
        self.hidden = [int(h) for h in p["hidden"]]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.meta_net = QNet(n_features, self.hidden, n_actions)
        self.net = copy.deepcopy(self.meta_net)
        self.target = copy.deepcopy(self.meta_net)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=float(p["lr"]))
        self.rng = np.random.default_rng(seed)
        self.buffer = Replay(int(p["buffer_size"]), n_features)
        self.meta_done = False
        self.deployed = False
        self.meta_iterations = 0
        self.grad_steps = 0
        self.online_steps = 0
        self.batched_steps = 0
        self.adaptations = 0
        self.change_steps: list[int] = []  # online_steps at which a change was declared
        self._reset_detector()

    # ------------------------------------------------------------------ acting
    def _q(self, net: nn.Module, obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(as_rows(obs, self.n_features), dtype=torch.float32)
        with torch.no_grad():
            return net(x).numpy()

    def _eps_greedy(self, net: nn.Module, obs: np.ndarray, eps: float) -> np.ndarray:
        greedy = np.argmax(self._q(net, obs), axis=1)
        n = greedy.shape[0]
        rand = self.rng.random(n) < eps
        return np.where(rand, self.rng.integers(0, self.n_actions, n), greedy).astype(np.int64)

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        net = self.net if self.deployed else self.meta_net
        with single_thread():
            if deterministic:
                return np.argmax(self._q(net, obs), axis=1).astype(np.int64)
            return self._eps_greedy(net, obs, float(self.params["epsilon"]))

    def explore(self, obs: np.ndarray) -> np.ndarray:
        return self._eps_greedy(self.net if self.deployed else self.meta_net, obs, float(self.params["epsilon"]))

    # ------------------------------------------------------------------ DQN step
    def _fresh_optimiser(self) -> None:
        self.opt = torch.optim.Adam(self.net.parameters(), lr=float(self.params["lr"]))
        self.target.load_state_dict(self.net.state_dict())

    def _train_step(self, buffer: Replay) -> None:
        if buffer.size == 0:
            return
        o, a, r, o2, d = buffer.sample(self.rng, int(self.params["batch_size"]))
        q = self.net(o).gather(1, a[:, None]).squeeze(1)
        with torch.no_grad():
            target = r + float(self.params["gamma"]) * (1.0 - d) * self.target(o2).amax(1)
        loss = nn.functional.smooth_l1_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), 10.0)
        self.opt.step()
        self.grad_steps += 1
        if self.grad_steps % int(self.params["target_update"]) == 0:
            self.target.load_state_dict(self.net.state_dict())

    # ------------------------------------------------------------------ offline meta-learning
    def task_scenarios(self, env) -> list[Scenario]:
        tasks = self.params["tasks"]
        return resolve_scenarios(list(tasks)) if tasks else list(env.process.sim.scenarios)

    def _task_process(self, env, scenarios: list[Scenario]) -> DecisionProcess:
        proc = env.process
        sim = proc.sim
        tsim = Simulator(scenarios, list(sim.ccs), batch=env.num_envs, seed=self.seed + TASK_SEED_OFFSET,
                         config=sim.cfg)
        tsim._cc_params = dict(sim._cc_params)  # the run's CC parameter overrides
        tproc = DecisionProcess(tsim, proc.decision, observation_name(proc.features), proc.reward_spec)
        if len(tproc.features) != self.n_features:
            raise ConfigError(f"falcon: the tasks give {len(tproc.features)} features, the run {self.n_features} "
                              f"(tasks must have as many paths as the training scenarios)")
        return tproc

    def _sample_task(self, tasks: list[Scenario]) -> Scenario:
        t = tasks[int(self.rng.integers(len(tasks)))]
        return t.sample(self.rng) if t.is_distribution else t

    def meta_train(self, env, budget: int, monitor: Monitor) -> tuple[int, bool]:
        """Reptile over tasks for about ``budget`` transitions; returns (transitions used,
        whether the monitor asked to stop)."""
        p = self.params
        tasks = self.task_scenarios(env)
        proc = self._task_process(env, tasks)
        B = proc.sim.B
        per_task = max(1, int(p["inner_steps"]) // B)  # batched steps per task
        n_iter = max(1, budget // (per_task * B))
        used, stop, i = 0, False, 0
        while used + B <= budget and not stop:
            proc.sim.scenarios = [self._sample_task(tasks)]
            proc.reset()
            self.net.load_state_dict(self.meta_net.state_dict())
            self._fresh_optimiser()
            buf = Replay(per_task * B, self.n_features)
            obs = proc.observe()
            for _ in range(per_task):
                if used + B > budget:
                    break
                actions = self._eps_greedy(self.net, obs, float(p["inner_epsilon"]))
                rew, term, trunc, infos, final = step_and_autoreset(proc, actions)
                buf.push(obs, actions, rew, final, term)
                self._train_step(buf)
                obs = proc.observe()
                used += B
                if not monitor.on_step(B, rew, infos):
                    stop = True
                    break
            step = float(p["meta_lr"]) * ((1.0 - i / n_iter) if p["meta_anneal"] else 1.0)
            with torch.no_grad():
                for mp, tp in zip(self.meta_net.parameters(), self.net.parameters()):
                    mp.add_(step * (tp - mp))
            self.meta_iterations += 1
            i += 1
        return used, stop

    def deploy(self) -> None:
        """Start online operation from the meta-initialised model."""
        self.net.load_state_dict(self.meta_net.state_dict())
        self._fresh_optimiser()
        self.buffer = Replay(int(self.params["buffer_size"]), self.n_features)
        self._reset_detector()
        self.deployed = True

    def learn(self, env, steps: int, monitor: Monitor) -> None:
        with single_thread():
            self._learn(env, steps, monitor)

    def _learn(self, env, steps: int, monitor: Monitor) -> None:
        if not self.meta_done:
            used, stop = self.meta_train(env, int(float(self.params["meta_fraction"]) * steps), monitor)
            self.meta_done = True
            steps -= used
            if stop:
                return
        if not self.deployed:
            self.deploy()
        if steps > 0:
            super().learn(env, steps, monitor)

    # ------------------------------------------------------------------ online adaptation
    def _reset_detector(self) -> None:
        self.det_mu, self.det_var, self.det_g, self.det_n = 0.0, 0.0, 0.0, 0
        self.det_zero = self.online_steps  # online_steps when g was last 0 (change-point estimate)
        # per connection: reward and decisions of the running segment
        self.seg_sum: np.ndarray = np.zeros(0)
        self.seg_len: np.ndarray = np.zeros(0, dtype=np.int64)

    def segments(self, rewards: np.ndarray, dones: np.ndarray) -> list[float]:
        """Add one batch of rewards to the connections' running segments; the means of the
        segments that closed (episode over, or ``change_segment`` decisions), in row order."""
        if self.seg_sum.shape != rewards.shape:
            self.seg_sum, self.seg_len = np.zeros(rewards.shape), np.zeros(rewards.shape, dtype=np.int64)
        self.seg_sum += rewards
        self.seg_len += 1
        closed = np.flatnonzero(dones | (self.seg_len >= int(self.params["change_segment"])))
        means = [float(self.seg_sum[b] / self.seg_len[b]) for b in closed]
        self.seg_sum[closed], self.seg_len[closed] = 0.0, 0
        return means

    def detect(self, x: float) -> bool:
        """Feed one segment mean; True when a drop is declared (one-sided CUSUM)."""
        p = self.params
        self.det_n += 1
        rate = max(1.0 / self.det_n, float(p["change_rate"]))
        fired = False
        if self.det_n > int(p["change_warmup"]):
            z = (self.det_mu - x) / math.sqrt(self.det_var + 1e-12)
            self.det_g = max(0.0, self.det_g + z - float(p["change_k"]))
            fired = self.det_g > float(p["change_h"])
        if self.det_g == 0.0:  # the change point estimate moves on
            self.det_zero = self.online_steps
        delta = x - self.det_mu
        self.det_mu += rate * delta
        self.det_var = (1.0 - rate) * (self.det_var + rate * delta * delta)
        return fired

    def adapt(self) -> None:
        """A change was detected: restart from the meta-model and take a few gradient steps on
        the most recent transitions."""
        self.net.load_state_dict(self.meta_net.state_dict())
        self._fresh_optimiser()
        since_change = self.online_steps - self.det_zero
        self.buffer.keep_latest(min(int(self.params["adapt_window"]), max(since_change, len(self.seg_sum), 1)))
        for _ in range(int(self.params["adapt_steps"])):
            self._train_step(self.buffer)
        self._reset_detector()
        self.adaptations += 1
        self.change_steps.append(self.online_steps)

    def update(self, obs, actions, rewards, next_obs, dones) -> None:
        if not self.deployed:
            self.deploy()
        rew = np.asarray(rewards, dtype=np.float32).reshape(-1)
        done = np.asarray(dones, dtype=bool).reshape(-1)
        self.buffer.push(as_rows(obs, self.n_features), np.asarray(actions).reshape(-1), rew,
                         as_rows(next_obs, self.n_features), done.astype(np.float32))
        self.online_steps += len(rew)
        self.batched_steps += 1
        if self.params["change_detection"] and any(self.detect(m) for m in self.segments(rew.astype(float), done)):
            self.adapt()
        elif self.batched_steps % int(self.params["train_freq"]) == 0:
            self._train_step(self.buffer)

    # ------------------------------------------------------------------ checkpoints
    def save(self, directory: Path) -> None:
        directory = Path(directory)
        torch.save(self.meta_net.state_dict(), directory / META_FILE)
        torch.save(self.net.state_dict(), directory / ONLINE_FILE)
        save_json(directory, {
            "params": self.params, "hidden": self.hidden, "meta_done": self.meta_done, "deployed": self.deployed,
            "meta_iterations": self.meta_iterations, "grad_steps": self.grad_steps,
            "online_steps": self.online_steps, "batched_steps": self.batched_steps,
            "adaptations": self.adaptations, "change_steps": self.change_steps,
            "detector": [self.det_mu, self.det_var, self.det_g, self.det_n, self.det_zero],
            "segments": [self.seg_sum.tolist(), self.seg_len.tolist()], "rng": rng_state(self.rng)}, STATE_FILE)

    def load_state(self, directory: Path) -> None:
        directory = Path(directory)
        for name in (META_FILE, ONLINE_FILE):
            if not (directory / name).is_file():
                raise ConfigError(f"checkpoint {directory} has no {name}")
        state = load_json(directory, STATE_FILE)
        if state["hidden"] != self.hidden:
            raise ConfigError(f"checkpoint {directory}: network hidden={state['hidden']}, "
                              f"this config has {self.hidden}")
        self.meta_net.load_state_dict(torch.load(directory / META_FILE, weights_only=True))
        self.net.load_state_dict(torch.load(directory / ONLINE_FILE, weights_only=True))
        self._fresh_optimiser()
        self.meta_done, self.deployed = bool(state["meta_done"]), bool(state["deployed"])
        self.meta_iterations, self.grad_steps = int(state["meta_iterations"]), int(state["grad_steps"])
        self.online_steps, self.batched_steps = int(state["online_steps"]), int(state["batched_steps"])
        self.adaptations, self.change_steps = int(state["adaptations"]), list(state["change_steps"])
        self.det_mu, self.det_var, self.det_g, self.det_n, self.det_zero = state["detector"]
        self.det_n, self.det_zero = int(self.det_n), int(self.det_zero)
        self.seg_sum = np.array(state["segments"][0], dtype=float)
        self.seg_len = np.array(state["segments"][1], dtype=np.int64)
        set_rng_state(self.rng, state["rng"])
