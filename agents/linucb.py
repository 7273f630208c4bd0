"""Contextual bandits over the blocked-mode decision (docs/schedulers.md, "Learned schedulers").

Both learners answer the ``blocked`` decision of ``envs.decision``: they are asked only when the
fast path F (lowest srtt) has no window while a second path S has; action 0 = wait for F
(the "F" arm), action 1 = send on S (the "S" arm). When F has window, or F and S coincide, the
environment sends without asking, which is the "if F has free cwnd send on F" part of both
published rules. The context is the observation row as given (``peekaboo`` set in the shipped
configs: ``cwnd / srtt``, ``swnd / srtt``, ``inflight / srtt`` of F and of S, each in units of
100 Mbit/s and clipped to [0, 10], see ``envs.features``); any feature set works, ``d`` is the
observation width.

- ``IsprasLinUCB`` (kind ``linucb_ispras``): the ISPRAS variant after Peekaboo. Per arm a d x d
  matrix ``A`` (ridge * I at the start) and a d-vector ``b`` (0); the arm's parameters ``theta``
  are kept between updates. Predictions ``val_F = theta_F^T x``, ``val_S = theta_S^T x``. If
  ``val_S < val_F`` it sends on S with probability ``p_send_if_worse`` (0.3), else waits; if
  ``val_S >= val_F`` it sends on S with probability ``p_send_if_better`` (0.9), else waits.
  Update of the chosen arm with reward r: ``A += x x^T``, ``b += r x``, ``theta = A^-1 b``, then
  every component ``theta[i] += lr * (r - val)``.
- ``LinUCB`` (kind ``linucb``): classic disjoint LinUCB (Li, Chu, Langford, Schapire, "A
  contextual-bandit approach to personalized news article recommendation", WWW 2010, Alg. 1):
  choose ``argmax_a theta_a^T x + alpha * sqrt(x^T A_a^-1 x)`` with ``theta_a = A_a^-1 b_a``;
  update ``A_a += x x^T``, ``b_a += r x``. Online: updated after every transition.

Readings chosen where the descriptions leave a detail open (all in ``agent.params``):
- ISPRAS ``val`` in ``reward - val`` is the chosen arm's prediction at decision time (theta before
  this batch's update); the adjustment is added to every component of theta, literally as the
  ISPRAS description writes it (``adjust: uniform``); ``adjust: gradient`` scales it by ``x[i]``
  (an LMS step), ``adjust: none`` drops it. theta is recomputed from A and b at each update of
  the arm, so the adjustment of the arm's latest update is what persists.
- Rows of a batch (one per connection) are applied one after another in row order.
- ``A`` starts at ``ridge * I`` (ridge 1.0, as in Li et al.).
- ``act(obs, deterministic=True)``, used for evaluation, exploits: the ISPRAS variant takes the
  likelier branch (S if ``val_S >= val_F``, else wait); classic LinUCB takes
  ``argmax theta_a^T x`` without the exploration bonus. ``deterministic=False`` and ``explore``
  follow the published rules (random draws from the agent's generator). Ties go to waiting in
  the classic rule (arm 0), to S in the ISPRAS rule (``val_S >= val_F``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.base import OnlineAgent, as_rows, check_blocked
from agents.params import Rule, choice, number, read_params
from agents.state import load_json, rng_state, save_json, set_rng_state
from envs.errors import ConfigError

ARRAYS_FILE = "linucb.npz"


# ---------------------------------------------------------------------------------- the bandits
class _LinearBandit(OnlineAgent):
    """Per arm A (d x d), b (d), theta (d); shared save/load."""

    DEFAULTS: dict[str, Any] = {"ridge": 1.0}
    RULES: dict[str, Rule] = {"ridge": number(0.0, lo_open=True)}

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        check_blocked(n_actions, type(self).__name__)
        self.params = read_params(spec, self.DEFAULTS, self.RULES)
        d, k = n_features, n_actions
        self.A = np.repeat(np.eye(d)[None] * float(self.params["ridge"]), k, axis=0)
        self.b = np.zeros((k, d))
        self.theta = np.zeros((k, d))
        self.rng = np.random.default_rng(seed)
        self.updates = 0

    def values(self, obs: np.ndarray) -> np.ndarray:
        """theta_a^T x per row and arm: [N, n_actions]."""
        return as_rows(obs, self.n_features) @ self.theta.T

    def save(self, directory: Path) -> None:
        np.savez(Path(directory) / ARRAYS_FILE, A=self.A, b=self.b, theta=self.theta)
        save_json(directory, {"updates": self.updates, "rng": rng_state(self.rng), "params": self.params})

    def load_state(self, directory: Path) -> None:
        path = Path(directory) / ARRAYS_FILE
        if not path.is_file():
            raise ConfigError(f"checkpoint {directory} has no {ARRAYS_FILE}")
        with np.load(path) as z:
            if z["theta"].shape != self.theta.shape:
                raise ConfigError(f"checkpoint {directory}: parameters of shape {z['theta'].shape}, "
                                  f"this agent needs {self.theta.shape}")
            self.A, self.b, self.theta = z["A"].copy(), z["b"].copy(), z["theta"].copy()
        state = load_json(directory)
        self.updates = int(state["updates"])
        set_rng_state(self.rng, state["rng"])


class IsprasLinUCB(_LinearBandit):
    """ISPRAS LinUCB (after Peekaboo): see the module docstring. Params: ``lr`` (0.05),
    ``p_send_if_worse`` (0.3), ``p_send_if_better`` (0.9), ``adjust`` (uniform), ``ridge`` (1)."""

    DEFAULTS = {**_LinearBandit.DEFAULTS, "lr": 0.05, "p_send_if_worse": 0.3, "p_send_if_better": 0.9,
                "adjust": "uniform"}
    RULES = {**_LinearBandit.RULES, "lr": number(0.0, 1.0), "p_send_if_worse": number(0.0, 1.0),
             "p_send_if_better": number(0.0, 1.0), "adjust": choice("uniform", "gradient", "none")}

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        if not deterministic:
            return self.explore(obs)
        v = self.values(obs)
        return (v[:, 1] >= v[:, 0]).astype(np.int64)

    def send_probability(self, obs: np.ndarray) -> np.ndarray:
        """P(send on S) per row under the published rule."""
        v = self.values(obs)
        return np.where(v[:, 1] < v[:, 0], self.params["p_send_if_worse"], self.params["p_send_if_better"])

    def explore(self, obs: np.ndarray) -> np.ndarray:
        p = self.send_probability(obs)
        return (self.rng.random(p.shape[0]) < p).astype(np.int64)

    def update(self, obs, actions, rewards, next_obs, dones) -> None:
        x_all = as_rows(obs, self.n_features)
        acts = np.asarray(actions).reshape(-1).astype(np.int64)
        rew = np.asarray(rewards, dtype=np.float64).reshape(-1)
        vals = np.einsum("nd,nd->n", x_all, self.theta[acts])  # predictions at decision time
        lr, adjust = float(self.params["lr"]), self.params["adjust"]
        for x, a, r, val in zip(x_all, acts, rew, vals):
            self.A[a] += np.outer(x, x)
            self.b[a] += r * x
            theta = np.linalg.solve(self.A[a], self.b[a])
            if adjust == "uniform":
                theta += lr * (r - val)
            elif adjust == "gradient":
                theta += lr * (r - val) * x
            self.theta[a] = theta
        self.updates += len(rew)


class LinUCB(_LinearBandit):
    """Classic disjoint LinUCB (Li et al. 2010). Params: ``alpha`` (1.0), ``ridge`` (1.0)."""

    DEFAULTS = {**_LinearBandit.DEFAULTS, "alpha": 1.0}
    RULES = {**_LinearBandit.RULES, "alpha": number(0.0)}

    def ucb(self, obs: np.ndarray) -> np.ndarray:
        """theta_a^T x + alpha * sqrt(x^T A_a^-1 x) per row and arm: [N, n_actions]."""
        x = as_rows(obs, self.n_features)
        a_inv = np.linalg.inv(self.A)
        width = np.sqrt(np.maximum(np.einsum("nd,ade,ne->na", x, a_inv, x), 0.0))
        return x @ self.theta.T + float(self.params["alpha"]) * width

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        if not deterministic:
            return self.explore(obs)
        return np.argmax(self.values(obs), axis=1).astype(np.int64)

    def explore(self, obs: np.ndarray) -> np.ndarray:
        return np.argmax(self.ucb(obs), axis=1).astype(np.int64)

    def update(self, obs, actions, rewards, next_obs, dones) -> None:
        x = as_rows(obs, self.n_features)
        acts = np.asarray(actions).reshape(-1).astype(np.int64)
        rew = np.asarray(rewards, dtype=np.float64).reshape(-1)
        for a in np.unique(acts):
            rows = acts == a
            self.A[a] += x[rows].T @ x[rows]
            self.b[a] += x[rows].T @ rew[rows]
            self.theta[a] = np.linalg.solve(self.A[a], self.b[a])
        self.updates += len(rew)
