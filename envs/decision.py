"""Decision modes: when an agent is asked, what its action means, and the batched decision
process the Gymnasium environments (single and vector) share.

- ``blocked`` (ISPRAS, Peekaboo): minRTT runs until the lowest-RTT path has no window while
  another path has; then the agent answers 0 = wait for the fast path, 1 = send on the second
  path. The answer holds for the rest of the simulator step (one decision per step at most;
  XQUIC asks per packet: docs/transport.md, "The blocked decision, in the simulator and in XQUIC").
- ``interval`` (LEEYOO): every ``interval_ms`` the agent picks one of ``modes`` (a heuristic
  scheduler with parameters) that schedules until the next decision.
- ``packet``: every simulator step the agent picks a path (action i) or waits (action P).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from envs.errors import ConfigError, out_of_range, unknown_name
from envs.features import compute, evaluate, feature_set, table
import envs.metrics  # noqa: F401 (loads scipy once, at construction)
from envs.plugins import parse_scheduler_label, scheduler_id, scheduler_label, scheduler_params
from envs.rewards import SNAP_ELAPSED, RewardSpec, reward_and_snapshot, snapshot_width
from envs.sim import kernel
from envs.sim.layout import (CN_ADVISE, CN_DONE, CN_MODE_UNTIL, CN_MSS, CN_N_SUB, CN_SCHED, CN_T, COBS_ACKED,
                             CN_PAUSE, COBS_ELAPSED, PAUSE_UNREADY, SCHED_STATE, WL_BUFFER, WL_DASH, WL_TYPE)
from envs.sim.simulator import Simulator, not_reset

DECISION_MODES = ("blocked", "interval", "packet")
DEFAULT_INTERVAL_MODES = ({"scheduler": "minrtt"}, {"scheduler": "rr"})


def mode_labels(modes: Sequence[Mapping | str]) -> list[str]:
    """Interval modes (names or ``{scheduler, params}``) as one label each
    (``envs.plugins.scheduler_label``): how a checkpoint's meta and an exported header name them."""
    return [m if isinstance(m, str) else scheduler_label(str(m["scheduler"]), m.get("params")) for m in modes]


def mode_specs(modes: Sequence[Mapping | str]) -> list[tuple[str, Mapping[str, object]]]:
    """Interval modes given by label (``"wait_rule(k=1.25)"``, ``envs.plugins.parse_scheduler_label``)
    or as the configs write them (``{scheduler, params}``) as (scheduler, params) pairs: how a live
    transport is handed them (``mpsched/Live-v0``)."""
    out: list[tuple[str, Mapping[str, object]]] = []
    for m in modes:
        if isinstance(m, str):
            out.append(parse_scheduler_label(m))
            continue
        params = m.get("params") or {}
        if not isinstance(params, Mapping):
            raise ConfigError(f"mode {dict(m)}: params must be a mapping of parameter names to values")
        out.append((str(m.get("scheduler")), dict(params)))
    return out


@dataclass(frozen=True)
class DecisionSpec:
    mode: str = "blocked"
    interval_ms: float = 50.0
    modes: tuple[Mapping, ...] = DEFAULT_INTERVAL_MODES  # interval mode: {scheduler, params}

    def __post_init__(self) -> None:
        if self.mode not in DECISION_MODES:
            raise unknown_name("decision mode", self.mode, DECISION_MODES)
        if not self.interval_ms > 0:
            raise out_of_range("interval_ms", self.interval_ms, "> 0")
        if self.mode == "interval" and not self.modes:
            raise ConfigError("modes: interval mode needs at least one mode")
        for m in self.modes:  # checked in every mode: a typo is refused even where interval mode is off
            name = m if isinstance(m, str) else m.get("scheduler") if isinstance(m, Mapping) else None
            if name is None:
                raise ConfigError(f"modes: each mode is a scheduler name or {{scheduler: <name>, params: {{...}}}}, "
                                  f"got {m!r}")
            scheduler_id(name)  # an unknown name lists the valid ones


class DecisionProcess:
    """B connections of a Simulator, each paused at its own next decision."""

    def __init__(self, sim: Simulator, decision: DecisionSpec, observation: str, reward_spec: RewardSpec):
        self.sim = sim
        self.decision = decision
        self.reward_spec = reward_spec
        n_paths = {s.fixed_paths for s in sim.scenarios if s.fixed_paths is not None}
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
        self._rewards = np.zeros(sim.B, dtype=np.float32)  # the dtype step() returns
        self.decisions = np.zeros(sim.B, dtype=np.int64)
        self._mode_sid = np.array([m[0] for m in self.modes], dtype=np.int64)
        self._mode_prm = np.array([m[1] for m in self.modes]).reshape(len(self.modes), SCHED_STATE)
        self._live = np.zeros(sim.B, dtype=np.bool_)
        self._info = np.zeros((sim.B, N_INFO))
        self._done_metrics: tuple[bytes, dict[str, np.ndarray]] | None = None  # see step()
        self.last_obs = np.zeros((sim.B, len(self.features)), dtype=np.float32)  # features now
        # ``_step``'s arguments after the actions, gathered once (the simulator allocates its arrays
        # once): building them from attributes took about 1 us of a ~11 us packet-mode env step.
        # The kernel's records go flat (see ``_step``).
        self._step_args = (self.n_actions, self._mode_sid, self._mode_prm, self.interval_steps,
                           self.decisions, self._live, *sim.kernel_state(), *sim.constants, self._reward_prm,
                           self._prev, self._rewards, *self._table, self.last_obs, self._info)
        self._entry = None  # see _compiled_step
        self._one = np.zeros(1, dtype=np.int64)  # step_one's action

    def _mode(self, m: Mapping | str) -> tuple[int, np.ndarray]:
        if isinstance(m, str):
            m = {"scheduler": m}
        name = m.get("scheduler")
        if name is None:
            raise ConfigError(f"decision.modes: each mode needs a 'scheduler', got {dict(m)}")
        return scheduler_id(name), scheduler_params(name, m.get("params"), self.sim.n_paths)

    def _compiled_step(self, actions: np.ndarray) -> int:
        """``_step`` on ``actions`` (int64, one per connection) and this process's arrays. The
        first call goes through numba's dispatcher (compiling or loading ``_step``); later calls go
        straight to the machine code of that signature (``Dispatcher.get_overload``), skipping the
        dispatcher's typing of the 37 arguments, about 1 us of a single env's ~8 us step. Safe
        because the arrays never change type: the simulator allocates its own once and ``step``
        converts the actions."""
        if self._entry is None:
            n_done = _step(actions, *self._step_args)
            if hasattr(_step, "get_overload"):  # not under NUMBA_DISABLE_JIT, where _step is a plain function
                self._entry = _step.get_overload(tuple(_step.typeof_pyval(a) for a in (actions, *self._step_args)))
            else:
                self._entry = _step
            return n_done
        return self._entry(actions, *self._step_args)

    def __getstate__(self) -> dict:
        """Pickled without the bound machine code, which the copy binds again at its first step."""
        return {**self.__dict__, "_entry": None}

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
        self._done_metrics = None
        self._run(mask)
        reward_and_snapshot(self._reward_prm, self._prev, s.obs, s.cobs, s.cn[:, CN_N_SUB], s.mss,
                            np.zeros(s.B, dtype=np.bool_), self._rewards)
        evaluate(*self._table, s.obs, s.cobs, s.cn[:, CN_N_SUB], self.last_obs)

    def step(self, actions: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Infos]:
        """Apply one action per unfinished connection and run each to its next decision.

        Returns rewards, terminated (a file completed, or a bulk transfer reached its duration),
        truncated (a file transfer hit the episode cap), and per-connection infos (running
        goodput; ``episode_metrics`` when the episode ended). Finished episodes are not reset here.
        Applying the actions, the simulation, the rewards and the next features (``last_obs``)
        are one compiled call.
        """
        try:
            ints = np.ascontiguousarray(actions, dtype=np.int64).reshape(-1)
            exact = (isinstance(actions, np.ndarray) and actions.dtype.kind in "iub") or np.array_equal(
                ints, np.asarray(actions).reshape(-1))  # not a fraction the cast cut
        except (TypeError, ValueError, OverflowError):
            exact = False
        if not exact:
            raise ConfigError(f"actions must be integers in [0, {self.n_actions - 1}], got {actions!r}")
        metrics = self._decide(ints)
        if metrics is None:
            terminated, truncated = np.zeros((2, self.sim.B), dtype=bool)
        else:
            terminated, truncated = self._ended(metrics)
        return (self._rewards.copy(), terminated, truncated,
                Infos(self._info.copy(), list(self.sim.current_cc), metrics))

    def step_one(self, action: int) -> tuple[float, bool, bool, dict]:
        """``step`` of a process of one connection, as Gymnasium's single env returns it: reward,
        terminated, truncated and the info dict (no per-step arrays to allocate or copy)."""
        try:
            self._one[0] = action
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"action must be an integer in [0, {self.n_actions - 1}], got {action!r}") from None
        if self._one[0] != action:  # a fraction, which the int64 slot would cut (1.5 -> 1)
            raise ConfigError(f"action must be an integer in [0, {self.n_actions - 1}], got {action!r}")
        metrics = self._decide(self._one)
        info = info_dict(self._info[0], self.sim.current_cc[0], metrics, 0)
        if metrics is None:
            return float(self._rewards[0]), False, False, info
        terminated, truncated = self._ended(metrics)
        return float(self._rewards[0]), bool(terminated[0]), bool(truncated[0]), info

    def _decide(self, actions: np.ndarray) -> dict[str, np.ndarray] | None:
        """``step``'s work on ``actions`` (int64, contiguous): rewards, infos and features go to
        the process's arrays; returns the finished connections' metrics (None while none has
        finished)."""
        s = self.sim
        if actions.shape[0] != s.B:
            raise ConfigError(f"expected {s.B} actions, got {actions.shape[0]}")
        n_done = self._compiled_step(actions)
        if n_done == NOT_RESET:
            raise not_reset(np.flatnonzero(s.cn[:, CN_PAUSE] == PAUSE_UNREADY))
        if n_done < 0:
            bad = actions[(actions < 0) | (actions >= self.n_actions)]
            raise ConfigError(f"action out of range [0, {self.n_actions - 1}]: {bad.tolist()}")
        if not n_done:
            return None
        # a finished connection stays as it is until reset: its metrics are computed once, not
        # again at every later step of the others (an evaluation's batch ends one by one)
        key = s.done.tobytes() + s.episode.tobytes()
        if self._done_metrics is None or self._done_metrics[0] != key:
            self._done_metrics = (key, s.results())
        return self._done_metrics[1]

    def _ended(self, metrics: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Terminated (a file completed, or a bulk transfer reached its duration) and truncated
        (a file transfer hit the episode cap), per connection."""
        done = self.sim.done
        bulk = np.array([sc is not None and sc.workload.type == "bulk" for sc in self.sim.current])
        terminated = done & (~np.isnan(metrics["completion_s"]) | bulk)
        return terminated, done & ~terminated


class Infos(Sequence):
    """Per-connection info dicts of one step, built when read: ``goodput_mbps``, ``elapsed_s``,
    ``dt_s`` (the simulated time from the previous decision to this one, the interval a
    semi-MDP discounts over: ``agents.time_discount``), ``decisions``, ``cc``, ``buffer_s`` (the client's video buffer, dash workload only), and ``episode_metrics`` for connections whose episode ended. A dict,
    once read, is kept (callers may add keys)."""

    def __init__(self, table: np.ndarray, ccs: list[str], metrics: dict[str, np.ndarray] | None) -> None:
        self.table = table  # [B, INFO_*]
        self._ccs = ccs
        self._metrics = metrics
        self._dicts: dict[int, dict] = {}

    @property
    def goodput_mbps(self) -> np.ndarray:
        return self.table[:, INFO_GOODPUT]

    def __len__(self) -> int:
        return self.table.shape[0]

    def __getitem__(self, b):
        if isinstance(b, slice):
            return [self[i] for i in range(*b.indices(len(self)))]
        if b < 0:
            b += len(self)
        d = self._dicts.get(b)
        if d is None:
            if not 0 <= b < len(self):
                raise IndexError(f"connection index out of range for {len(self)} connections")
            d = self._dicts[b] = info_dict(self.table[b], self._ccs[b], self._metrics, b)
        return d


def info_dict(row: np.ndarray, cc: str, metrics: dict[str, np.ndarray] | None, b: int) -> dict:
    """Connection ``b``'s info dict from its row of ``_step``'s info table (``Infos``)."""
    goodput, elapsed, decisions, done, buffer, dt = row.tolist()
    d = {"goodput_mbps": goodput, "elapsed_s": elapsed, "dt_s": dt, "decisions": int(decisions), "cc": cc}
    if buffer >= 0.0:
        d["buffer_s"] = buffer
    if done > 0.0 and metrics is not None:
        d["episode_metrics"] = {k: (v[b].tolist() if v.ndim > 1 else float(v[b])) for k, v in metrics.items()}
    return d


INFO_GOODPUT, INFO_ELAPSED, INFO_DECISIONS, INFO_DONE, INFO_BUFFER, INFO_DT = range(6)  # buffer: -1 if not dash
N_INFO = 6
# no step budget: each connection runs to its next pause. A numpy integer, not a Python one, which
# numba would pass to ``kernel.advance`` as a literal: a second compilation of the whole core
# beside the one Python's calls (``Simulator.advance``) use
MAX_STEPS = np.int64(10**12)
NOT_RESET = -2  # ``_step``'s answer when the core refused a connection that was never reset


@njit(cache=True, _nrt=False)
def _step(actions, n_actions, mode_sid, mode_prm, interval_steps, decisions, live,
          obs, cobs, fl, cc, ccp, bn, cn, seg, segi, ring, hole, sched, ctrace, atrace, wl, item, rec, rng,
          dt, spur_grid, spur_wgrid, spur_prob, stack, hidden, hidden_cgrid, rate_scatter, rate_tgrid,
          reward_prm, prev, rewards, field, path, per, scale, features, info):
    """One decision of every unfinished connection: apply its action (blocked mode when
    ``mode_sid`` is empty: CN_ADVISE, the answer for the rest of the step; else run mode ``a`` for
    ``interval_steps``, as ``Simulator.set_mode``), advance it to its
    next pause, then rewards, features and info rows. Returns the number of finished connections,
    -1 (nothing applied) when an action is out of range, or NOT_RESET.

    The simulator's ``kernel.State`` (obs ... rng) and ``kernel.Constants`` (dt ... rate_tgrid)
    arrive flat, field by field, and are rebuilt here: this is called once per env step, and
    numba's dispatcher types a named tuple of arrays several microseconds slower than the same
    arrays one by one (``benchmarks/record_dispatch.py``), most of a packet-mode step's compiled time."""
    B = cn.shape[0]
    for b in range(B):
        if not 0 <= actions[b] < n_actions:
            return -1
    blocked = mode_sid.shape[0] == 0
    for b in range(B):
        live[b] = cn[b, CN_DONE] == 0.0
        if not live[b]:
            continue
        a = actions[b]
        if blocked:
            cn[b, CN_ADVISE] = 1.0 if a == 1 else 0.0
        else:
            cn[b, CN_SCHED] = mode_sid[a]
            for k in range(SCHED_STATE):
                sched[b, k] = mode_prm[a, k]
            cn[b, CN_MODE_UNTIL] = cn[b, CN_T] + interval_steps
        decisions[b] += 1
    kernel.advance(kernel.State(obs, cobs, fl, cc, ccp, bn, cn, seg, segi, ring, hole, sched, ctrace, atrace, wl, item,
                                rec, rng),
                   kernel.Constants(dt, spur_grid, spur_wgrid, spur_prob, stack, hidden, hidden_cgrid, rate_scatter,
                                    rate_tgrid), live, MAX_STEPS)
    nsub = cn[:, CN_N_SUB]
    for b in range(B):  # the decision's interval, before the snapshot moves on to now
        info[b, INFO_DT] = cobs[b, COBS_ELAPSED] - prev[b, SNAP_ELAPSED] if live[b] else 0.0
    reward_and_snapshot(reward_prm, prev, obs, cobs, nsub, cn[:, CN_MSS], live, rewards)
    evaluate(field, path, per, scale, obs, cobs, nsub, features)
    n_done = 0
    for b in range(B):
        elapsed = cobs[b, COBS_ELAPSED]
        info[b, INFO_GOODPUT] = cobs[b, COBS_ACKED] * 8.0 / max(elapsed, 1e-9) / 1e6
        info[b, INFO_ELAPSED] = elapsed
        info[b, INFO_DECISIONS] = decisions[b]
        info[b, INFO_DONE] = cn[b, CN_DONE]
        info[b, INFO_BUFFER] = wl[b, WL_BUFFER] * dt if wl[b, WL_TYPE] == WL_DASH else -1.0
        if cn[b, CN_DONE] > 0.0:
            n_done += 1
        elif cn[b, CN_PAUSE] == PAUSE_UNREADY:
            return NOT_RESET
    return n_done
