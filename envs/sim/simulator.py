"""``Simulator``: B connections of the fluid core, configured from scenarios.

Each connection runs one episode at a time; ``reset(b)`` draws its scenario (a concrete scenario,
or a sample of a distribution or of a list of scenarios), its CC and its random stream from the
run's seed and the episode's index, so every number is reproducible and a connection's
trajectory does not depend on the rest of the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium.error import ResetNeeded

from envs.errors import ConfigError, out_of_range
from envs.plugins import cc_id, cc_params, scheduler_id, scheduler_params
from envs.network import transit_schedule
from envs.scenario import WORKLOAD_TYPES, ArrivalSpec, LinkSpec, PathSpec, Scenario, WorkloadSpec, max_value, min_value
from envs.sim import kernel
from envs.sim.layout import *  # noqa: F403 (column names)
from envs.sim.reordering import COMP_GRID, GRID, RTT_GRID, RULES, W_GRID, detection_tables, hidden_table, rate_sample_table
from envs.sim import stacks

if TYPE_CHECKING:
    from envs.randomisation import StackDraw

MAX_PATHS = 8


@dataclass(frozen=True)
class SimConfig:
    """Simulator settings that are not part of a scenario (``configs/env``)."""

    dt_ms: float = 1.0
    mss: int | None = None  # payload bytes per packet; None: the stack's (StackProfile.packet_bytes)
    max_duration_s: float = 600.0  # cap on any episode, file transfers included
    ooo_limit_bytes: float = math.inf  # flag episodes whose reorder buffer exceeds this
    end_on_ooo: bool = False  # ... and end them there (XQUIC aborts past 8192 frames)
    record_bin_ms: float = 100.0  # time bin of the delivered-bytes and reorder-buffer records (metrics)
    stack: str = stacks.DEFAULT_STACK  # the transport stack the core imitates (envs/sim/stacks.py): xquic | linux
    # per episode, a stack and its constants drawn around the profile's (train.randomise, envs/randomisation.py)
    stack_draw: StackDraw | None = None
    # every connection draws connection 0's episodes (scenario, CC, random streams): common random
    # numbers across the batch, so that connections differ only by what they are told to do
    common_draws: bool = False
    # the index of the batch's first connection among a larger set of runs: connection b draws as
    # connection first_connection + b would, so a large batch run as several gives the same runs
    # (envs.evaluation.evaluate_heuristic)
    first_connection: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.first_connection, bool) or not isinstance(self.first_connection, (int, np.integer)) \
                or self.first_connection < 0:
            raise out_of_range("first_connection", self.first_connection, "an integer >= 0")
        if not 0.01 <= self.dt_ms <= 100:
            raise out_of_range("dt_ms", self.dt_ms, "in [0.01, 100]")
        if self.mss is not None and not 500 <= self.mss <= 9000:
            raise out_of_range("mss", self.mss, "in [500, 9000]")
        if not self.max_duration_s > 0:
            raise out_of_range("max_duration_s", self.max_duration_s, "> 0")
        if not math.isfinite(self.max_duration_s):  # an episode's step budget is an integer
            raise out_of_range("max_duration_s", self.max_duration_s, "a finite number > 0")
        if not self.ooo_limit_bytes >= 0:  # inf (the default): never
            raise out_of_range("ooo_limit_bytes", self.ooo_limit_bytes, ">= 0 (inf: no limit)")
        if not self.record_bin_ms >= self.dt_ms:
            raise out_of_range("record_bin_ms", self.record_bin_ms, f">= dt_ms ({self.dt_ms})")
        stacks.profile(self.stack)  # an unknown stack lists the valid ones


def not_reset(connections: np.ndarray) -> ResetNeeded:
    """The error for stepping connections that were never reset (the core refuses them)."""
    return ResetNeeded(f"connection(s) {connections.tolist()} were never reset: call reset() before step()")


def _as_list(x: object) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Simulator:
    """A batch of B multipath connections.

    scenarios: one scenario (possibly a distribution) or a list to draw from per episode.
    ccs: one CC name or a list to draw from per episode (every subflow uses the episode's CC).
    scheduler: heuristic name from ``envs.schedulers`` (default minRTT).
    """

    def __init__(self, scenarios: Scenario | Sequence[Scenario], ccs: str | Sequence[str],
                 scheduler: str = "minrtt", batch: int = 1, seed: int = 0,
                 config: SimConfig | None = None, cc_overrides: dict | None = None,
                 scheduler_overrides: dict | None = None) -> None:
        self.scenarios = _as_list(scenarios)
        self.ccs = _as_list(ccs)
        if not self.scenarios:
            raise ConfigError("scenarios: give at least one scenario")
        if not self.ccs:
            raise ConfigError("cc: give at least one congestion control")
        if not isinstance(batch, int) or batch < 1:
            raise out_of_range("batch", batch, "an integer >= 1")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise out_of_range("seed", seed, "an integer >= 0")
        self.cfg = config or SimConfig()
        self.dt = self.cfg.dt_ms / 1000.0
        self.seed = int(seed)
        self.B = batch
        self.stack = stacks.profile(self.cfg.stack)
        self._cc_overrides = dict(cc_overrides or {})
        self._cc_params = {name: self._params(name, self._cc_overrides.get(name)) for name in self.ccs}
        for name in self.ccs:
            cc_id(name)
        self.scheduler = scheduler
        self.blocked = False  # ISPRAS/Peekaboo decision mode: pause when the fast path is blocked
        self._sched = (scheduler_id(scheduler), scheduler_params(scheduler, scheduler_overrides, self.n_paths))
        self._allocate()
        self.cn[:, CN_MSS] = self._packet(self.stack)  # until each episode's configuration
        self.episode = np.zeros(self.B, dtype=np.int64)
        self.current: list[Scenario | None] = [None] * self.B
        self.current_cc: list[str] = [""] * self.B
        self.current_stack: list[stacks.StackProfile] = [self.stack] * self.B  # the episode's (drawn) profile
        self.constants = kernel.Constants(self.dt, np.log(GRID), W_GRID,
                                          np.stack([detection_tables(rule) for rule in RULES]),
                                          np.tile(self._stack_row(self.stack), (self.B, self.F, 1)),
                                          hidden_table(), np.log(COMP_GRID),
                                          np.stack([rate_sample_table(rule) for rule in RULES]), np.log(RTT_GRID))

    def _params(self, cc: str, overrides: dict | None = None, stack: stacks.StackProfile | None = None) -> np.ndarray:
        """CC ``cc``'s parameters under the simulated stack (or the episode's ``stack``): its
        constants, then ``overrides``."""
        return cc_params(cc, stacks.cc_overrides(stack or self.stack, cc, overrides))

    def _packet(self, prof: stacks.StackProfile) -> int:
        """The payload bytes of a full packet under ``prof``: ``SimConfig.mss``, else the stack's."""
        return int(self.cfg.mss if self.cfg.mss is not None else prof.packet_bytes)

    def _stack_row(self, prof: stacks.StackProfile) -> np.ndarray:
        """A flow's row of ``Constants.stack`` under ``prof``, with its packet (``_packet``)."""
        return stacks.stack_vector(prof, self._packet(prof))

    @property
    def mss(self) -> np.ndarray:
        """Each connection's packet, payload bytes (its episode's stack's, or ``SimConfig.mss``)."""
        return self.cn[:, CN_MSS]

    @property
    def payload_share(self) -> np.ndarray:
        """Per connection, the share of its links' bytes that is payload: its packet over the packet
        and the headers its stack adds on the link (``StackProfile.header_bytes``)."""
        return np.array([prof.payload_share(mss) for prof, mss in zip(self.current_stack, self.mss)])

    @property
    def n_paths(self) -> int | None:
        """The scenarios' number of paths, None when it varies (scheduler parameter checks)."""
        counts = {len(s.paths) if s.n_paths is None
                  else int(max_value(s.n_paths)) if min_value(s.n_paths) == max_value(s.n_paths) else None
                  for s in self.scenarios}
        return counts.pop() if len(counts) == 1 else None

    # ------------------------------------------------------------------ sizing and allocation
    def _allocate(self) -> None:
        P = max(len(s.paths) if s.n_paths is None else int(max_value(s.n_paths)) for s in self.scenarios)
        K = max(P, max(len(s.links or ()) for s in self.scenarios))  # links: rows of bn and ctrace
        n_comp = max(sum(_competing_flows(link) for link in _links(s))
                     * (1 if s.n_paths is None else int(max_value(s.n_paths))) for s in self.scenarios)
        F = P + n_comp
        one_way_ms = max(s.max_one_way_ms() for s in self.scenarios)
        dt_ms = self.cfg.dt_ms
        # ring and segment FIFO lengths are powers of two: the kernel wraps indices with a mask
        # (a larger ring changes nothing: it only has to outlast the feedback horizon)
        L = _pow2(int(math.ceil(one_way_ms / dt_ms)) + 64)
        inflight_ms = max(self._max_inflight_ms(s) for s in self.scenarios)
        Q = _pow2(int(min(16384, math.ceil(inflight_ms / dt_ms * 1.5) + 64)))
        H = 512
        T = max(self._trace_len(s) for s in self.scenarios)
        TA = max(self._activity_len(s) for s in self.scenarios)
        B = self.B
        self.P, self.K, self.F, self.L, self.Q, self.H = P, K, F, L, Q, H
        self.obs = np.zeros((B, F, N_OBS))
        self.cobs = np.zeros((B, N_COBS))
        self.fl = np.zeros((B, F, N_FL))
        self.cc = np.zeros((B, F, N_CC))
        self.ccp = np.zeros((B, F, N_CCP))
        self.bn = np.zeros((B, K, N_BN))
        self.cn = np.zeros((B, N_CN))
        self.seg = np.zeros((B, F, Q, N_SEG))
        self.segi = np.zeros((B, F, N_SI), dtype=np.int64)
        self.ring = np.zeros((B, F, L, N_RING))
        self.hole = np.zeros((B, H, N_HOLE))
        self.sched = np.zeros((B, N_SCHED))
        self.ctrace = np.full((B, K, T, 2), np.inf)
        self.atrace = np.full((B, F, TA, 2), np.inf)
        self.rng = np.zeros(2 * B, dtype=np.uint64)  # network streams, then sender streams
        self.bin_steps = max(int(round(self.cfg.record_bin_ms / dt_ms)), 1)
        episode_steps = max(round(self._episode_cap_s(s.workload) * 1000 / dt_ms) for s in self.scenarios)
        self.wl = np.zeros((B, N_WL))
        self.item = np.zeros((B, max(max(s.workload.items() for s in self.scenarios), 1), N_ITEM))
        self.rec = np.zeros((B, episode_steps // self.bin_steps + 2, N_REC))
        self.active = np.ones(B, dtype=np.bool_)

    def _episode_cap_s(self, work: WorkloadSpec) -> float:
        """The longest an episode of this workload may run."""
        return min(self.cfg.max_duration_s, work.duration_s or math.inf)

    def _max_inflight_ms(self, s: Scenario) -> float:
        """Bound on the steps a flow's segments span in its FIFO: RTT plus twice a full queue's
        delay. A flow opens one segment per step, but two while slow start sends twice what the
        bottleneck serves per step (a segment holds one step of service), and with 10-20 BDP
        buffers a full queue's delay alone outlasted the FIFO (``Q``) during the overshoot."""
        worst = 0.0
        mss = self.cfg.mss or max(stacks.profile(name).packet_bytes for name in stacks.STACKS)  # any drawn stack's
        if s.links is not None:  # a concrete network: each route's RTT and its bottleneck's buffer
            net = s.network()
            for r in net.routes:
                link = net.links[r.bottleneck]
                min_bw = max(min([link.nominal_mbps()] + [m for _, m in link.bandwidth_trace or [] if m > 0]), 0.05)
                q_ms = net.queue_bytes(r.bottleneck, mss) * 8 / (min_bw * 1e3)
                worst = max(worst, 2 * (max(r.forward_ms, r.reverse_ms) + 4 * r.jitter_ms) + 2.0 * q_ms)
            return min(worst, 60_000.0)
        for path in s.paths:
            rtt = 2 * path.max_one_way_ms()
            min_bw = max(min([min_value(path.capacity)]
                             + [m for _, m in path.bandwidth_trace or [] if m > 0]), 0.05)
            if path.queue_packets is not None:
                q_ms = max_value(path.queue_packets) * mss * 8 / (min_bw * 1e3)
            else:
                assert path.queue_bdp is not None  # the validator sets one of queue_packets, queue_bdp
                q_ms = max_value(path.queue_bdp) * rtt * max_value(path.capacity) / min_bw
            worst = max(worst, rtt + 2.0 * q_ms)
        return min(worst, 60_000.0)

    @staticmethod
    def _trace_len(s: Scenario) -> int:
        return max(2 + len(p.bandwidth_trace or []) + 2 * len(p.outages) for p in _links(s))

    def _activity_len(self, s: Scenario) -> int:
        """Schedule entries per flow: a competing flow's steps or its slot's arrivals (the most
        ``arrival_horizon`` allows), a subflow's transit-loss changes."""
        worst = 1
        for link in _links(s):
            comp = link.competing
            worst = max(worst, 1 + len(comp.flows_schedule or []))
            if comp.arrivals is not None:
                most = _max_arrivals(comp.arrivals, self._episode_cap_s(s.workload))
                worst = max(worst, most // comp.arrivals.slots + 2)
        return max(worst, 2 + sum(len(link.outages) for link in _links(s)))  # a route's failures

    # ------------------------------------------------------------------ episodes
    def reset(self, b: int | None = None) -> None:
        """Start a new episode on connection b (all when None)."""
        for i in range(self.B) if b is None else [b]:
            self._configure(i)

    def episode_draw(self, b: int, episode: int) -> tuple[Scenario, str, np.random.Generator]:
        """What connection b's episode ``episode`` draws: its scenario (sampled where the template
        is a distribution), its CC, and the generator with those draws taken (nothing configured);
        with ``SimConfig.common_draws`` connection 0's."""
        rng = np.random.default_rng([self.seed, self._drawer(b), int(episode)])
        template = self.scenarios[int(rng.integers(len(self.scenarios)))]
        scen = template.sample(rng) if template.is_distribution else template
        return scen, self.ccs[int(rng.integers(len(self.ccs)))], rng

    def _drawer(self, b: int) -> int:
        """The connection whose draws connection b takes (``SimConfig.common_draws``: connection 0's;
        ``SimConfig.first_connection`` numbers the batch's connections from there)."""
        return 0 if self.cfg.common_draws else self.cfg.first_connection + b

    def _configure(self, b: int) -> None:
        scen, cc, rng = self.episode_draw(b, int(self.episode[b]))
        self.rng[b] = rng.integers(0, 2**63, dtype=np.uint64)
        self.rng[self.B + b] = rng.integers(0, 2**63, dtype=np.uint64)
        self.current[b] = scen
        self.current_cc[b] = cc
        self.episode[b] += 1
        draw = self.cfg.stack_draw
        if draw is not None:  # from a stream apart from the episode's, which draws as without it
            prof = draw.sample(np.random.default_rng([self.seed, self._drawer(b), int(self.episode[b]), 2]))
            self.current_stack[b] = prof
        prof = self.current_stack[b]
        self.constants.stack[b] = self._stack_row(prof)  # every flow's, until a competing flow's below
        sub_params = self._cc_params[cc] if draw is None else self._params(cc, self._cc_overrides.get(cc), prof)
        dt, dt_ms = self.dt, self.cfg.dt_ms
        mss = self._packet(prof)
        # the links carry headers beside the payload the core counts: rates and byte buffers in
        # the payload they carry (a packet buffer holds its packets whatever their size)
        share = prof.payload_share(mss)
        nsub = len(scen.paths)
        if nsub > self.P:
            raise ConfigError(f"scenario {scen.name!r} has {nsub} paths; this simulator was sized for {self.P}")
        self.bn[b] = 0.0
        self.ctrace[b] = np.inf
        self.atrace[b] = np.inf
        self.fl[b] = 0.0
        net = scen.network()
        for k, link in enumerate(net.links):
            bn = self.bn[b, k]
            bn[BN_QCAP] = net.queue_bytes(k, mss) * (1.0 if link.queue_packets is not None else share)
            bn[BN_DFWD] = link.forward_ms() / dt_ms
            bn[BN_DREV] = round(link.reverse_ms() / dt_ms)
            bn[BN_JITTER] = link.jitter_ms / dt_ms
            bn[BN_LOSS] = link.loss_pct / 100.0
            bn[BN_UDP] = link.competing.udp_mbps * 125_000 * dt * share
            for i, (t_step, mbps) in enumerate(_capacity_steps(link, dt_ms)):
                self.ctrace[b, k, i] = (t_step, mbps * 125_000 * dt * share)
            bn[BN_CAP] = self.ctrace[b, k, 0, 1]
        for p, route in enumerate(net.routes):
            self._set_route(b, p, route.bottleneck, route.forward_ms, route.reverse_ms, route.jitter_ms)
            self.fl[b, p, FL_IS_SUB] = 1.0
            self.fl[b, p, FL_CC] = cc_id(cc)
            self.ccp[b, p] = sub_params
            for i, (t_s, value) in enumerate(transit_schedule(net, route)):
                self.atrace[b, p, i] = (round(t_s * 1000 / dt_ms), value if value >= 0 else round(value * 1000 / dt_ms))
        f = nsub
        # apart from the episode's draws
        arrivals = np.random.default_rng([self.seed, self._drawer(b), int(self.episode[b]), 1])
        for k, link in enumerate(net.links):
            comp = link.competing
            schedule = comp.flows_schedule or [(0.0, comp.flows)]
            comp_cc = cc_id(comp.cc)
            # kernel TCP flows, as the live testbed runs them, unless they stand for another
            # connection of the simulated stack, which then runs this run's CC overrides too
            # (docs/transport.md, "Network")
            if comp.stack == "linux":
                comp_params = self._params(comp.cc, None, stacks.LINUX)
                comp_stack = self._stack_row(stacks.LINUX)  # its own packet too
            else:
                comp_params = self._params(comp.cc, self._cc_overrides.get(comp.cc), prof)
                comp_stack = self._stack_row(prof)
            slots = comp.arrivals.slots if comp.arrivals is not None else 0
            for j in range(comp.flows + slots):
                self._set_route(b, f, k, link.forward_ms(), link.reverse_ms(), link.jitter_ms)
                self.fl[b, f, FL_CC] = comp_cc
                self.ccp[b, f] = comp_params
                self.constants.stack[b, f] = comp_stack  # its loss detection, undo and timers too
                if j < comp.flows:  # long-lived: on (inf bytes to send) or off, by the schedule
                    for i, (t_s, n_active) in enumerate(schedule):
                        self.atrace[b, f, i] = (round(t_s * 1000 / dt_ms), math.inf if n_active > j else 0.0)
                f += 1
            if comp.arrivals is not None:
                starts, sizes = _arrivals(comp.arrivals, self._episode_cap_s(scen.workload), arrivals)
                first = f - slots
                for i, (t_s, size) in enumerate(zip(starts, sizes)):  # round robin over the slots
                    self.atrace[b, first + i % slots, i // slots] = (round(t_s * 1000 / dt_ms), size)
        cn = self.cn[b]
        cn[:] = 0.0
        cn[CN_MSS] = mss
        cn[CN_N_SUB] = nsub
        cn[CN_N_FLOWS] = f
        cn[CN_N_LINKS] = len(net.links)
        cn[CN_RCVBUF] = scen.receive_buffer(mss, prof.receive_window)
        cn[CN_RCVBUF_MAX] = scen.receive_buffer_max_bytes or 0.0  # auto-tuned up to it (the stack's rule)
        # DRS's first measurement to beat: the initial window, at most TCP_INIT_CWND (10) segments
        # (net/mptcp/protocol.c mptcp_rcv_space_init)
        cn[CN_TUNE_SPACE] = min(cn[CN_RCVBUF], 10.0 * mss)
        cn[CN_END_STEP] = round(self._episode_cap_s(scen.workload) / dt)
        cn[CN_REORDERS] = 1.0 if scen.jitter_reorders else 0.0
        cn[CN_OOO_LIMIT] = self.cfg.ooo_limit_bytes
        cn[CN_END_ON_OOO] = 1.0 if self.cfg.end_on_ooo else 0.0
        cn[CN_MODE_UNTIL] = -1.0
        cn[CN_BLOCKED] = 1.0 if self.blocked else 0.0
        sid, prm = self._sched
        cn[CN_SCHED] = sid
        self.sched[b, :SCHED_STATE] = prm
        kernel.reset_connection(b, self.kernel_state(), self.constants.stack[b], self.dt)
        self._configure_workload(b, scen)
        # competing flows wait for their schedule; a subflow waits until the stack has set its
        # path up (from the paths' handshake round trips, in whole steps)
        for k in range(nsub, f):
            self.fl[b, k, FL_ACTIVE] = 0.0
        opens = stacks.path_open_steps(prof.path_setup, np.round(self.obs[b, :nsub, OBS_SRTT] / dt))
        self.fl[b, :nsub, FL_OPEN_AT] = opens
        self.fl[b, :nsub, FL_ACTIVE] = opens <= 0.0
        cn[CN_PATHS_READY] = opens.max()
        # a path set up later has its setup's RTT sample, lengthened by the peer's ACK delay: at once
        # where the setup gives it as the path opens, else path_sample_delay after it opens, until
        # when the path shows the stack's unsampled RTT (a data packet's sample may come first)
        obs = self.obs[b, 1:nsub]
        if prof.unsampled_rtt is None:
            obs[:, (OBS_SRTT, OBS_MIN_RTT, OBS_LATEST_RTT)] += prof.path_sample_delay
            obs[:, OBS_RTTVAR] = obs[:, OBS_SRTT] / 2.0
        else:
            self.fl[b, 1:nsub, FL_SETUP_RTT] = obs[:, OBS_SRTT] + prof.path_sample_delay
            self.fl[b, 1:nsub, FL_SAMPLE_AT] = opens[1:] + max(round(prof.path_sample_delay / dt), 1)
            obs[:, (OBS_SRTT, OBS_MIN_RTT)] = prof.unsampled_rtt
            obs[:, OBS_RTTVAR] = prof.unsampled_rtt / 2.0
            obs[:, OBS_LATEST_RTT] = 0.0

    def _configure_workload(self, b: int, scen: Scenario) -> None:
        """Parameters and initial state of the application (``envs/sim/workload.py``)."""
        work, dt, dt_ms = scen.workload, self.dt, self.cfg.dt_ms
        w, it, cn = self.wl[b], self.item[b], self.cn[b]
        w[:] = 0.0
        it[:] = 0.0
        it[:, ITEM_DONE] = -1.0
        self.rec[b] = 0.0
        w[WL_TYPE] = WORKLOAD_TYPES.index(work.type)
        w[WL_TOTAL] = work.total_bytes()
        w[WL_ITEMS] = n = work.items()
        w[WL_BIN] = w[WL_BIN_END] = self.bin_steps
        w[WL_REQ_DELAY] = round(min(r.reverse_ms for r in scen.network().routes) / dt_ms)
        if work.type in ("bulk", "file"):  # everything offered at once, items end at fixed offsets
            cn[CN_SND_LIMIT] = w[WL_TOTAL]
            w[WL_ISSUED] = w[WL_RELEASED] = n
            if n:
                it[:n, ITEM_END] = np.arange(1, n + 1) * work.item_bytes()
        elif work.type == "web":
            w[WL_ITEM_BYTES] = work.item_bytes()
            w[WL_PARALLEL] = work.parallel
        else:  # dash: the validator filled every field
            assert work.chunk_s is not None and work.buffer_s is not None and work.bitrates_mbps is not None
            w[WL_CHUNK_STEPS] = max(round(work.chunk_s / dt), 1)
            w[WL_BUF_MAX] = round(work.buffer_s / dt)
            w[WL_HIST_K] = work.throughput_chunks
            w[WL_SAFETY] = work.safety
            w[WL_N_RATES] = len(work.bitrates_mbps)
            w[WL_RATE:WL_RATE + len(work.bitrates_mbps)] = np.asarray(work.bitrates_mbps) * 125_000 * dt

    def _set_route(self, b: int, f: int, link: int, forward_ms: float, reverse_ms: float, jitter_ms: float) -> None:
        """Flow f crosses the queue of ``link`` and has its route's delays (envs/network.py)."""
        dt_ms = self.cfg.dt_ms
        fl = self.fl[b, f]
        fl[FL_PATH] = link
        fl[FL_DFWD] = forward_ms / dt_ms
        fl[FL_DREV] = round(reverse_ms / dt_ms)
        fl[FL_JITTER] = jitter_ms / dt_ms

    # ------------------------------------------------------------------ running
    def kernel_state(self) -> kernel.State:
        """Every array of the batch, as the kernel takes them (glossary: ``envs/sim/kernel.py``)."""
        return kernel.State(self.obs, self.cobs, self.fl, self.cc, self.ccp, self.bn, self.cn, self.seg,
                            self.segi, self.ring, self.hole, self.sched, self.ctrace, self.atrace, self.wl,
                            self.item, self.rec, self.rng)

    def advance(self, max_steps: int, active: np.ndarray | None = None) -> np.ndarray:
        """Run every active, unfinished connection up to max_steps steps or its next pause;
        returns the pause reason per connection (``PAUSE_*``)."""
        kernel.advance(self.kernel_state(), self.constants, self.active if active is None else active,
                       int(max_steps))
        pause = self.cn[:, CN_PAUSE].astype(np.int64)
        if (pause == PAUSE_UNREADY).any():
            raise not_reset(np.flatnonzero(pause == PAUSE_UNREADY))
        return pause

    def run(self) -> None:
        """Run every connection's current episode to its end (heuristic scheduling)."""
        while not np.all(self.cn[:, CN_DONE] > 0):
            self.advance(10**9)

    def queue_samples(self, duration_s: float, every_s: float = 0.01) -> np.ndarray:
        """Advance ``duration_s`` and sample every bottleneck's queue (bytes, ground truth that no
        scheduler sees) every ``every_s``: an array ``[samples, B, paths]``. The simulator's side of
        the standing-queue laws (docs/transport.md; the live testbed's side is
        ``envs.live.bottleneck.QueueSampler``)."""
        chunk = max(round(every_s / self.dt), 1)
        samples = []
        for _ in range(round(duration_s / self.dt) // chunk):
            self.advance(chunk)
            samples.append(self.bn[:, :, BN_ENQ] - self.bn[:, :, BN_DEQ])
        return np.asarray(samples)

    @property
    def done(self) -> np.ndarray:
        return self.cn[:, CN_DONE] > 0

    def set_mode(self, b: int, scheduler: str | int, params: np.ndarray | None, until_step: float) -> None:
        """Interval/packet decision modes: run ``scheduler`` until ``until_step``."""
        sid = scheduler if isinstance(scheduler, int) else scheduler_id(scheduler)
        self.cn[b, CN_SCHED] = sid
        if params is not None:
            self.sched[b, :SCHED_STATE] = params
        self.cn[b, CN_MODE_UNTIL] = until_step

    # ------------------------------------------------------------------ results
    def results(self, window_s: float = 1.0) -> dict[str, np.ndarray]:
        """Per-connection metrics of the current episodes (``envs.metrics``; throughput windows of
        ``window_s``)."""
        from envs.metrics import connection_metrics
        return connection_metrics(self, window_s)


def _pow2(n: int) -> int:
    """Smallest power of two >= n."""
    return 1 << max(int(n) - 1, 0).bit_length()


def _links(s: Scenario) -> list[Any]:
    """The scenario's links: ``links`` or, in the short form, its paths."""
    return list(s.links.values()) if s.links is not None else list(s.paths)


def _competing_flows(link: Any) -> int:
    """Flow slots a link's competing traffic takes: its long-lived flows and arrival slots."""
    comp = link.competing
    return comp.flows + (comp.arrivals.slots if comp.arrivals is not None else 0)


def _max_arrivals(spec: ArrivalSpec, horizon_s: float) -> int:
    """Arrivals ``_arrivals`` may draw within ``horizon_s``: the Poisson mean plus 10 sigma."""
    mean = spec.rate_per_s * horizon_s
    return int(mean + 10 * math.sqrt(mean) + 10)


def _arrivals(spec: ArrivalSpec, horizon_s: float, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """Arrival times (Poisson process) and sizes in bytes (``ArrivalSpec.sizes``) of the flows
    arriving within ``horizon_s``."""
    starts: list[float] = []
    t = float(rng.exponential(1.0 / spec.rate_per_s))
    while t < horizon_s:
        starts.append(t)
        t += float(rng.exponential(1.0 / spec.rate_per_s))
    return starts, spec.sizes(rng, len(starts)).astype(float).tolist()


def _capacity_steps(path: LinkSpec | PathSpec, dt_ms: float) -> list[tuple[int, float]]:
    """Piecewise-constant capacity as (step, Mbit/s) change points: the trace, with outages
    forcing zero."""
    times = {0.0}
    trace = path.bandwidth_trace or [(0.0, path.nominal_mbps())]  # a concrete link: its value
    times.update(t for t, _ in trace)
    for start, end in path.outages:
        times.update((start, end))

    def nominal(t: float) -> float:
        value = path.nominal_mbps()
        for t0, mbps in trace:
            if t0 <= t:
                value = mbps
        return value

    steps = []
    for t in sorted(times):
        mbps = 0.0 if any(s <= t < e for s, e in path.outages) else nominal(t)
        steps.append((round(t * 1000 / dt_ms), mbps))
    return steps
