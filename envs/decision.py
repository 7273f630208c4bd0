"""Decision modes: when an agent is asked, what its action means, and the batched decision
process the Gymnasium environments (single and vector) share.

- ``blocked`` (ISPRAS, Peekaboo): minRTT runs until the lowest-RTT path has no window while
  another path has; then the agent answers 0 = wait for the fast path, 1 = send on the second
  path. The answer holds for the rest of the simulator step (one decision per step at most).
- ``interval`` (LEEYOO): every ``interval_ms`` the agent picks one of ``modes`` (a heuristic
  scheduler with parameters) that schedules until the next decision.
- ``packet``: every simulator step the agent picks a path (action i) or waits (action P).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agents.heuristics import scheduler_id, scheduler_params
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.features import compute, feature_set, table
import envs.metrics  # noqa: F401 (loads scipy once, at construction)
from envs.rewards import RewardSpec, reward_and_snapshot, snapshot_width
from envs.sim.layout import CN_N_SUB, CN_T, COBS_ACKED, COBS_ELAPSED, WL_BUFFER, WL_DASH, WL_TYPE
from envs.sim.simulator import Simulator

DECISION_MODES = ("blocked", "interval", "packet")
DEFAULT_INTERVAL_MODES = ({"scheduler": "minrtt"}, {"scheduler": "rr"})


@dataclass(frozen=True)
class DecisionSpec:
    mode: str = "blocked"
    interval_ms: float = 50.0
    modes: tuple[Mapping, ...] = DEFAULT_INTERVAL_MODES  # interval mode: {scheduler, params}

    def __post_init__(self) -> None:
        if self.mode not in DECISION_MODES:
            raise unknown_name("decision mode", self.mode, DECISION_MODES)
        if not self.interval_ms > 0:
            raise out_of_range("decision.interval_ms", self.interval_ms, "> 0")
        if self.mode == "interval" and not self.modes:
            raise ConfigError("decision.modes: interval mode needs at least one mode")


class DecisionProcess:
    """B connections of a Simulator, each paused at its own next decision."""

    def __init__(self, sim: Simulator, decision: DecisionSpec, observation: str, reward_spec: RewardSpec):
        self.sim = sim
        self.decision = decision
        self.reward_spec = reward_spec
        n_paths = {len(s.paths) for s in sim.scenarios if s.n_paths is None}
        self.n_paths = sim.P
        if decision.mode in ("blocked",) and sim.P < 2:
            raise ConfigError("decision mode 'blocked' needs scenarios with at least 2 paths")
        self.features = feature_set(observation, min(n_paths) if n_paths else sim.P)
        self._table = table(self.features)
        self.interval_steps = max(1, round(decision.interval_ms / sim.cfg.dt_ms))
        if decision.mode == "interval":
            self.modes = [self._mode(m) for m in decision.modes]
        elif decision.mode == "packet":
            self.modes = [(scheduler_id("fixed"), scheduler_params("fixed", {"path": i}))
                          for i in [*range(sim.P), -1]]
            self.interval_steps = 1
        else:
            self.modes = []
        self.n_actions = 2 if decision.mode == "blocked" else len(self.modes)
        sim.blocked = decision.mode == "blocked"
        self._reward_prm = reward_spec.vector()
        self._prev = np.zeros((sim.B, snapshot_width(sim.P)))
        self._rewards = np.zeros(sim.B)
        self.decisions = np.zeros(sim.B, dtype=np.int64)

    def _mode(self, m: Mapping | str) -> tuple[int, np.ndarray]:
        if isinstance(m, str):
            m = {"scheduler": m}
        name = m.get("scheduler")
        if name is None:
            raise ConfigError(f"decision.modes: each mode needs a 'scheduler', got {dict(m)}")
        return scheduler_id(name), scheduler_params(name, m.get("params"), self.sim.n_paths)

    # ------------------------------------------------------------------ running
    def observe(self) -> np.ndarray:
        s = self.sim
        return compute(self._table, s.obs[:, :s.P], s.cobs, s.cn[:, CN_N_SUB])

    def _run(self, mask: np.ndarray) -> None:
        """Advance the masked connections to their next decision or episode end."""
        s = self.sim
        if self.decision.mode != "blocked":
            for b in np.flatnonzero(mask):
                if s.cn[b, CN_T] == 0 and self.decisions[b] == 0:
                    s.set_mode(b, self.modes[0][0], self.modes[0][1], 0.0)  # decide at t = 0
        s.advance(10**12, active=mask)

    def reset(self, b: int | None = None) -> None:
        """New episode(s); leaves them at their first decision."""
        s = self.sim
        mask = np.zeros(s.B, dtype=bool)
        if b is None:
            s.reset()
            mask[:] = True
        else:
            s.reset(b)
            mask[b] = True
        self.decisions[mask] = 0
        self._run(mask)
        reward_and_snapshot(self._reward_prm, self._prev, s.obs, s.cobs, s.cn[:, CN_N_SUB], s.mss,
                            np.zeros(s.B, dtype=np.bool_), self._rewards)

    def step(self, actions: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Apply one action per unfinished connection and run each to its next decision.

        Returns rewards, terminated (a file completed, or a bulk transfer reached its duration),
        truncated (a file transfer hit the episode cap), and per-connection infos (running
        goodput; ``episode_metrics`` when the episode ended). Finished episodes are not reset here.
        """
        s = self.sim
        actions = np.asarray(actions).reshape(-1)
        if actions.shape[0] != s.B:
            raise ConfigError(f"expected {s.B} actions, got {actions.shape[0]}")
        bad = (actions < 0) | (actions >= self.n_actions)
        if bad.any():
            raise ConfigError(f"action out of range [0, {self.n_actions - 1}]: {actions[bad].tolist()}")
        live = ~s.done
        for b in np.flatnonzero(live):
            a = int(actions[b])
            if self.decision.mode == "blocked":
                s.advise(b, a == 1)
            else:
                sid, prm = self.modes[a]
                s.set_mode(b, sid, prm, s.cn[b, CN_T] + self.interval_steps)
        self.decisions[live] += 1
        self._run(live)
        reward_and_snapshot(self._reward_prm, self._prev, s.obs, s.cobs, s.cn[:, CN_N_SUB], s.mss, live,
                            self._rewards)
        done = s.done
        elapsed = s.cobs[:, COBS_ELAPSED]
        goodput = s.cobs[:, COBS_ACKED] * 8 / np.maximum(elapsed, 1e-9) / 1e6
        infos = [{"goodput_mbps": float(goodput[b]), "elapsed_s": float(elapsed[b]),
                  "decisions": int(self.decisions[b]), "cc": s.current_cc[b]} for b in range(s.B)]
        for b in np.flatnonzero(s.wl[:, WL_TYPE] == WL_DASH):  # the client's video buffer
            infos[b]["buffer_s"] = float(s.wl[b, WL_BUFFER] * s.dt)
        terminated = np.zeros(s.B, dtype=bool)
        if done.any():
            metrics = s.results()
            bulk = np.array([sc is not None and sc.workload.type == "bulk" for sc in s.current])
            terminated = done & (~np.isnan(metrics["completion_s"]) | bulk)
            for b in np.flatnonzero(done):
                infos[b]["episode_metrics"] = {k: (v[b].tolist() if v.ndim > 1 else float(v[b]))
                                               for k, v in metrics.items()}
        return self._rewards.astype(np.float32), terminated, done & ~terminated, infos
