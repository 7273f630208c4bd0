"""ISPRAS tabular Q-learning (docs/schedulers.md, "ISPRAS family").

State: a performance class per path, from sender-observable RTT, RTO count, loss and throughput:

- **low** (0): ``srtt >= rtt_high_ms`` or ``rtos >= rtos_many`` or ``loss >= loss_high_pct``;
- **high** (2): ``srtt < rtt_low_ms`` and ``loss < loss_low_pct`` and no RTO and
  ``delivery rate >= thr_low_mbps``;
- **medium** (1): everything else (medium RTT, low throughput or moderate loss).

Two paths give ``3 * 3 = 9`` states. Actions, as ISPRAS defines them: send on path 1, send on
path 2. The agent is asked only in the ``blocked`` decision mode (``envs.decision``): when the fast
path F (lowest srtt) has no window and the other path has; "send on F" can then only mean *wait
for F* (env action 0) and "send on the other path" is *send on the second path* (env action 1).
By index the agent finds F as the environment does, the path of lower srtt, path 1 on a tie
(``envs.features.path_roles``), from the observation's srtt (clipped at 1 s; beyond that both
read 1 s and path 1 counts as F); by role the observation gives F's features first. When F and
the second path coincide the environment sends
without asking (ISPRAS: "send there"). Which path is path 1 is open in the published description;
``actions`` chooses the reading:

- ``paths`` (by index, the description read literally): ``state = 3 * class(path 1) +
  class(path 2)``, ``Q[state, path]``, ``env_action = 0 if chosen path == F else 1`` and back.
  One row then means *wait* where path 1 is the fast path and *send* where it is the slow one:
  trained on ispras_s1 (F = path 2) and ispras_s2 (F = path 1), whose states coincide, the table
  can be right in at most one of them, and on ispras_s3 (F alternates) it mixes both answers;
- ``roles`` (the shipped preset): paths numbered by their role at the decision, path 1 = F and
  path 2 = the second path, as the ISPRAS DQN and LinUCB number them: ``state = 3 * class(F) +
  class(S)``, ``Q[state, 0]`` = wait for F, ``Q[state, 1]`` = send on S, the env action is the
  column. The observation layer names the paths by role (``ispras_q_roles``, as ``peekaboo``
  does), so the agent, and the exported header, read path 1 as F with no ordering of their own.

Observation: the ``ispras_q`` feature set (``envs.features``; ``ispras_q_roles`` by role), per
path: srtt in units of 100 ms (clip 1 s), RTO count (clip 10), loss in percent of packets sent
(losses x 1448 / bytes sent x 100, clip 10 %), delivery rate in units of 10 Mbit/s (clip 100
Mbit/s). Readings chosen:
RTO count and loss are cumulative since the connection started (the observation carries no
windowed counters); the throughput term uses the latest delivery-rate sample; the loss rate
assumes the default MSS (1448 B). Thresholds, in natural units (``agent.params``), defaults
chosen for the shipped scenarios (base RTTs 20-80 ms, loss 0-1 %): ``rtt_low_ms`` 50,
``rtt_high_ms`` 200, ``loss_low_pct`` 0.25, ``loss_high_pct`` 2, ``rtos_many`` 3,
``thr_low_mbps`` 1 (0 disables the throughput condition).

Learning (``update``): ``sample``, as published, is one-step Q-learning (Watkins 1989) ``Q[s, p]
+= lr * (r + gamma * (1 - done) * max_p' Q[s', p'] - Q[s, p])``, rows of a batch applied in row
order. ``batch`` (the preset) is batch Q-learning (Sutton and Barto, *Reinforcement Learning: An
Introduction*, 2nd ed. 2018, section 6.3, and the planning of Dyna-Q, section 8.2, run to
convergence): the same target applied to all transitions seen until nothing changes, which is the
optimal Q of the maximum-likelihood model of those transitions (the certainty-equivalence
estimate): ``Q[s, p] = rbar(s, p) + gamma * sum_s' P(s' | s, p) max_p' Q[s', p']`` with the mean
reward and the next-state frequencies of the pair (a terminal transition leads nowhere), solved
after every batch by policy iteration from the current greedy policy. One-step updates on rows
that lead back to themselves (a wait leaves the paths' classes as they were; on ispras_s2 a send
mostly does too) converge slowly: an early, large target (a send followed by a long interval
without a decision earns all the fast path's bytes of that interval) lifts the row, its targets then
bootstrap on the row's own maximum, and the excess decays by only ``rate * (1 - gamma)`` per
update, so after a training's ~1,000 updates of that row the two entries still carry different
parts of it, more than the reward that sets them apart (docs/cc_robustness.md, "Why Q-learning
waited on ispras_s2"). The batch solution keeps no trace of the order the transitions came in.
Epsilon-greedy over the two paths with epsilon decaying linearly from ``epsilon`` to
``epsilon_final`` over ``epsilon_decay_steps`` transitions (0: constant). Q starts at 0; greedy
ties go to path 1. With ``update: sample``, ``lr_decay`` ``constant`` keeps ``lr``; ``visits``
uses ``lr / n(s, p) ** lr_exponent`` at the n-th update of the pair, the polynomial rates
(Even-Dar and Mansour, JMLR 2003) that satisfy the step-size conditions of Watkins and Dayan's
convergence proof (Machine Learning 8, 1992: sum of rates infinite, sum of
squares finite, for ``0.5 < lr_exponent <= 1``): a constant rate keeps only the last ``~1 / lr``
targets of a pair, and where the two actions' values differ by less than those targets' noise
the final greedy action is decided by the last few rewards. ``act(deterministic=True)``
is greedy; ``deterministic=False`` uses the current epsilon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.base import OnlineAgent, as_rows, check_blocked
from agents.params import choice, integer, number, read_params
from agents.state import load_json, rng_state, save_json, set_rng_state
from envs.errors import ConfigError, out_of_range
from envs.features import FEATURE_SETS

# the observation set of each reading of "path 1 / path 2" (agent.params.actions): path 1's features first
OBSERVATIONS = {"paths": "ispras_q", "roles": "ispras_q_roles"}
PATH_TAGS = {"paths": ("1", "2"), "roles": ("fast", "second")}
FEATURES = ("srtt", "rtos", "loss_pct", "delivery_rate")  # per path, in this order
# feature value -> natural unit (see envs.features "ispras_q")
TO_MS, TO_COUNT, TO_PCT, TO_MBPS = 100.0, 1.0, 1.0, 10.0
LOW, MEDIUM, HIGH = 0, 1, 2
N_PATHS = 2
N_STATES = 3 ** N_PATHS
Q_FILE = "qtable.npz"
MAX_POLICY_ITERATIONS = 100  # policy iteration ends in a few; a cap against float ties cycling

for _actions, _name in OBSERVATIONS.items():
    assert tuple(f.name for f in FEATURE_SETS[_name]) == tuple(
        f"{n}_{tag}" for tag in PATH_TAGS[_actions] for n in FEATURES), \
        f"{_name} layout changed: update agents/qlearning.py"


class QLearning(OnlineAgent):
    DEFAULTS: dict[str, Any] = {
        "lr": 0.1, "gamma": 0.9, "epsilon": 0.2, "epsilon_final": 0.02, "epsilon_decay_steps": 20000,
        "rtt_low_ms": 50.0, "rtt_high_ms": 200.0, "loss_low_pct": 0.25, "loss_high_pct": 2.0,
        "rtos_many": 3, "thr_low_mbps": 1.0, "actions": "paths", "lr_decay": "constant", "lr_exponent": 0.8,
        "update": "sample",
    }
    RULES = {
        "lr": number(0.0, 1.0, lo_open=True), "gamma": number(0.0, 1.0), "epsilon": number(0.0, 1.0),
        "epsilon_final": number(0.0, 1.0), "epsilon_decay_steps": integer(0),
        "rtt_low_ms": number(0.0, 1000.0, lo_open=True), "rtt_high_ms": number(0.0, 1000.0, lo_open=True),
        "loss_low_pct": number(0.0, 10.0, lo_open=True), "loss_high_pct": number(0.0, 10.0, lo_open=True),
        "rtos_many": integer(1), "thr_low_mbps": number(0.0, 100.0), "actions": choice("paths", "roles"),
        "lr_decay": choice("constant", "visits"), "lr_exponent": number(0.5, 1.0, lo_open=True),
        "update": choice("sample", "batch"),
    }

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        check_blocked(n_actions, "qlearning")
        p = read_params(spec, self.DEFAULTS, self.RULES)
        self.observation = OBSERVATIONS[p["actions"]]
        if n_features != len(FEATURE_SETS[self.observation]):
            raise ConfigError(f"qlearning reads the {self.observation!r} observation set "
                              f"({len(FEATURE_SETS[self.observation])} features); this environment gives {n_features} "
                              f"(set env.observation: {self.observation})")
        if p["update"] == "batch" and not p["gamma"] < 1.0:
            raise out_of_range("agent.params.gamma", p["gamma"], "< 1 with update: batch (the model's Bellman "
                               "equation has one solution only when discounted)")
        if not p["rtt_low_ms"] < p["rtt_high_ms"]:
            raise out_of_range("agent.params.rtt_low_ms", p["rtt_low_ms"], f"< rtt_high_ms ({p['rtt_high_ms']})")
        if not p["loss_low_pct"] <= p["loss_high_pct"]:
            raise out_of_range("agent.params.loss_low_pct", p["loss_low_pct"],
                               f"<= loss_high_pct ({p['loss_high_pct']})")
        self.params = p
        self.by_role = p["actions"] == "roles"
        self.q = np.zeros((N_STATES, N_PATHS))
        self.visits = np.zeros((N_STATES, N_PATHS), dtype=np.int64)  # updates per (state, action)
        # update: batch: the model of the transitions seen, per (state, action): reward sum, next-state counts
        self.reward_sum = np.zeros((N_STATES, N_PATHS))
        self.next_counts = np.zeros((N_STATES, N_PATHS, N_STATES), dtype=np.int64)
        self.rng = np.random.default_rng(seed)
        self.steps = 0  # transitions learned from (drives the epsilon schedule)

    # ------------------------------------------------------------------ state and action mapping
    def classes(self, obs: np.ndarray) -> np.ndarray:
        """Performance class (0 low, 1 medium, 2 high) per row and path: [N, 2]."""
        x = as_rows(obs, self.n_features).reshape(-1, N_PATHS, len(FEATURES))
        srtt_ms, rtos = x[..., 0] * TO_MS, x[..., 1] * TO_COUNT
        loss_pct, thr = x[..., 2] * TO_PCT, x[..., 3] * TO_MBPS
        p = self.params
        low = (srtt_ms >= p["rtt_high_ms"]) | (rtos >= p["rtos_many"]) | (loss_pct >= p["loss_high_pct"])
        high = (srtt_ms < p["rtt_low_ms"]) & (loss_pct < p["loss_low_pct"]) & (rtos < 1) & (thr >= p["thr_low_mbps"])
        return np.where(low, LOW, np.where(high, HIGH, MEDIUM)).astype(np.int64)

    def states(self, obs: np.ndarray) -> np.ndarray:
        """``3 * class(path 1) + class(path 2)``, path 1 the first path of the observation: the
        first by index, or (``actions: roles``, ``ispras_q_roles``) F."""
        c = self.classes(obs)
        return 3 * c[:, 0] + c[:, 1]

    def fast_path(self, obs: np.ndarray) -> np.ndarray:
        """By index: F per row, the lower srtt, path 0 on a tie (as envs.features.path_roles)."""
        x = as_rows(obs, self.n_features).reshape(-1, N_PATHS, len(FEATURES))
        return (x[:, 1, 0] < x[:, 0, 0]).astype(np.int64)

    def to_env_action(self, obs: np.ndarray, paths: np.ndarray) -> np.ndarray:
        """Table column -> env action (by role the column is the action)."""
        if self.by_role:
            return np.asarray(paths, dtype=np.int64).reshape(-1)
        return (np.asarray(paths) != self.fast_path(obs)).astype(np.int64)

    def to_path(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Env action -> table column."""
        actions = np.asarray(actions, dtype=np.int64).reshape(-1)
        if self.by_role:
            return actions
        fast = self.fast_path(obs)
        return np.where(actions == 0, fast, 1 - fast)

    # ------------------------------------------------------------------ acting and learning
    def learn(self, env, steps: int, monitor) -> None:
        features = getattr(getattr(env, "process", None), "features", None)
        if features is not None and tuple(features) != FEATURE_SETS[self.observation]:
            raise ConfigError(f"qlearning with actions: {self.params['actions']} reads the {self.observation!r} "
                              f"observation set; this environment gives {[f.name for f in features]} "
                              f"(set env.observation: {self.observation})")
        super().learn(env, steps, monitor)

    @property
    def epsilon(self) -> float:
        p = self.params
        if p["epsilon_decay_steps"] <= 0:
            return float(p["epsilon"])
        frac = min(1.0, self.steps / p["epsilon_decay_steps"])
        return float(p["epsilon"] + frac * (p["epsilon_final"] - p["epsilon"]))

    def greedy_paths(self, obs: np.ndarray) -> np.ndarray:
        return np.argmax(self.q[self.states(obs)], axis=1)

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        if not deterministic:
            return self.explore(obs)
        return self.to_env_action(obs, self.greedy_paths(obs))

    def explore(self, obs: np.ndarray) -> np.ndarray:
        paths = self.greedy_paths(obs)
        n = paths.shape[0]
        rand = self.rng.random(n) < self.epsilon
        paths = np.where(rand, self.rng.integers(0, N_PATHS, n), paths)
        return self.to_env_action(obs, paths)

    def update(self, obs, actions, rewards, next_obs, dones) -> None:
        s = self.states(obs)
        s2 = self.states(next_obs)
        paths = self.to_path(obs, actions)
        rew = np.asarray(rewards, dtype=np.float64).reshape(-1)
        done = np.asarray(dones, dtype=bool).reshape(-1)
        if self.params["update"] == "batch":
            np.add.at(self.visits, (s, paths), 1)
            np.add.at(self.reward_sum, (s, paths), rew)
            np.add.at(self.next_counts, (s[~done], paths[~done], s2[~done]), 1)
            self.solve()
            self.steps += len(rew)
            return
        lr, gamma = float(self.params["lr"]), float(self.params["gamma"])
        decay = self.params["lr_decay"] == "visits"
        omega = float(self.params["lr_exponent"])
        for si, pi, r, s2i, d in zip(s, paths, rew, s2, done):
            target = r + (0.0 if d else gamma * self.q[s2i].max())
            self.visits[si, pi] += 1
            rate = lr / self.visits[si, pi] ** omega if decay else lr
            self.q[si, pi] += rate * (target - self.q[si, pi])
        self.steps += len(rew)

    def solve(self) -> None:
        """``update: batch``: Q := the optimal Q of the maximum-likelihood model of the transitions
        seen (mean reward, next-state frequencies per pair; unseen pairs 0), by policy iteration
        from the current greedy policy: each policy's values solved exactly, ``(I - gamma P_pi) V =
        rbar_pi``, then ``Q = rbar + gamma P V``, until the greedy policy stays."""
        n = np.maximum(self.visits, 1)
        rbar = self.reward_sum / n
        p = self.next_counts / n[..., None]
        gamma = float(self.params["gamma"])
        rows = np.arange(N_STATES)
        policy = np.argmax(self.q, axis=1)
        for _ in range(MAX_POLICY_ITERATIONS):
            v = np.linalg.solve(np.eye(N_STATES) - gamma * p[rows, policy], rbar[rows, policy])
            self.q = rbar + gamma * p @ v
            greedy = np.argmax(self.q, axis=1)
            if np.array_equal(greedy, policy):
                break
            policy = greedy

    # ------------------------------------------------------------------ checkpoints
    def save(self, directory: Path) -> None:
        np.savez(Path(directory) / Q_FILE, q=self.q, visits=self.visits, reward_sum=self.reward_sum,
                 next_counts=self.next_counts)
        save_json(directory, {"steps": self.steps, "rng": rng_state(self.rng), "params": self.params,
                              "observation": self.observation})

    def load_state(self, directory: Path) -> None:
        path = Path(directory) / Q_FILE
        if not path.is_file():
            raise ConfigError(f"checkpoint {directory} has no {Q_FILE}")
        with np.load(path) as z:
            if z["q"].shape != self.q.shape:
                raise ConfigError(f"checkpoint {directory}: Q-table of shape {z['q'].shape}, expected {self.q.shape}")
            self.q = z["q"].copy()
            # checkpoints made before the visit counts were kept: none counted
            self.visits = z["visits"].copy() if "visits" in z.files else np.zeros_like(self.visits)
            # ... nor the model of update: batch
            if "reward_sum" in z.files:
                self.reward_sum, self.next_counts = z["reward_sum"].copy(), z["next_counts"].copy()
        state = load_json(directory)
        saved = state.get("observation", self.observation)
        if saved != self.observation:  # a table by role read the paths by index before ispras_q_roles
            raise ConfigError(f"checkpoint {directory}: its table was learned on the {saved!r} observation set, "
                              f"actions: {self.params['actions']} reads {self.observation!r}; retrain it")
        self.steps = int(state["steps"])
        set_rng_state(self.rng, state["rng"])
