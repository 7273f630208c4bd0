"""The compiled fluid core: advances B independent multipath connections step by step.

One step (default 1 ms) of one connection, in order (docs/transport.md):

1. capacity schedule (trace, outages) and competing-flow activity;
2. receiver: segments whose propagation ended arrive; their bytes are ACKed back over the
   reverse delay, their lost bytes are declared lost after the stack's detection delay, holes
   they fill shrink; the in-order point ``rcv_nxt`` and the reorder buffer follow;
3. sender: ACKs and loss declarations due now update RTT estimators (RFC 6298), delivery-rate
   samples (BBR), the CC, and the retransmission queue (a spurious declaration's copies only
   where they can leave before their originals' ACKs, ``_queue_copies``); the DSACKs of the
   copies sent widen RACK's window, spurious reductions are undone, retransmission timers fire
   (the stack's, ``envs/sim/recovery.py``);
   the application (``envs/sim/workload.py``) offers data, records, and says when it is complete;
4. scheduling: what each path's schedule buffer holds leaves as its pacer and window allow;
   then per packet, the scheduler (or the agent, in ``blocked`` mode) picks paths among those
   available (window space, and pacing credit unless the stack holds scheduled packets on the
   path: XQUIC's path buffer, ``_enqueue``); retransmissions go first; each packet meets random
   loss and the drop-tail bottleneck; competing flows and UDP fill the same queues;
5. bottlenecks drain at their capacity in FIFO order; departed segments get an arrival time
   (propagation + jitter, kept in order per path).

A connection owns its clock, so each runs until its own next decision point or its end.

Working set (glossary). The batch is a ``State`` of dense arrays, one row per connection (B), F
flows (the connection's P subflows first, then the competing flows), P paths; ``connection(s, b)``
gives connection b's rows as a ``Connection`` of views with the same fields, which ``_run`` and
its phases take. A phase binds the fields it uses to the short local names in brackets. Columns
are named in ``envs/sim/layout.py``.

=========  ===========  =====================  ====================================================
field      local        shape (one row)        holds (columns)
=========  ===========  =====================  ====================================================
obs        ``o``        [F, N_OBS]             what the sender sees per flow (``OBS_*``)
cobs       ``co``       [N_COBS]               what the sender sees of the connection (``COBS_*``)
fl         ``fb``       [F, N_FL]              flow bookkeeping: path, CC id, pacing credit, counters (``FL_*``)
cc         ``C``        [F, N_CC]              each flow's CC state (its CC's own slots, ``envs/cc``)
ccp        ``Pc``       [F, N_CCP]             each flow's CC parameters
bn         ``bnb``      [P, N_BN]              each path's bottleneck, ground truth (``BN_*``)
cn         ``c``        [N_CN]                 the connection: clock, sequence edges, receiver, pause
                                               reason, hole-list heads (``CN_*``)
seg        ``sg``       [F, Q, N_SEG]          segments in flight, a FIFO ring per flow (``SEG_*``)
segi       ``si``       [F, N_SI] int64        the FIFO's head, departed, tail, scan counters (``SI_*``)
ring       ``rg``       [F, L, N_RING]         ACKs and loss declarations due at step t, in slot
                                               ``t & (L - 1)`` (``RING_*``)
hole       ``ho``       [H, N_HOLE]            lost data the receiver waits for, and the lists over
                                               the table (``HOLE_*``)
sched      ``prm, st``  [N_SCHED]              the scheduler's parameters, then its state (``SCHED_*``)
ctrace     ``ct``       [P, T, 2]              capacity change points per path: (step, bytes/step)
atrace     ``at``       [F, TA, 2]             activity change points per competing flow: (step, 0/1)
wl         ``w``        [N_WL]                 the application's parameters and state (``WL_*``)
item       ``it``       [I, N_ITEM]            one row per message, chunk or object (``ITEM_*``)
rec        ``rc``       [R, N_REC]             one row per record bin (``REC_*``)
rng        ``rng``      [2B] uint64            the batch's random streams, not a row: connection b
                                               draws network events from stream b, its sender
                                               (CCs, schedulers) from stream B + b (``envs/sim/rng.py``)
=========  ===========  =====================  ====================================================

A connection's packet, ``cn[CN_MSS]`` (payload bytes of a full packet), is its stack's
(``stacks.StackProfile.packet_bytes``), that of its subflows and of the UDP cross traffic; every
flow's own is its stack row's ``STK_PACKET`` (a competing kernel flow's is Linux's), which its
sends, loss counts and spurious declarations take, and its CC counts windows in that packet
times ``STK_CC_MSS``.

``Constants``: ``dt`` (s per step), the spurious-declaration tables of
``envs/sim/reordering.py`` (``spur_grid``: natural logs of their spacing grid, ``spur_wgrid``: their
window grid, ``spur_prob``: one table per loss-detection rule) and each flow's stack profile
``stack[B, F, N_STK]`` (``envs/sim/stacks.py``; its ``STK_RULE`` picks the table): the connection's
for its subflows, kernel TCP's (``stacks.LINUX``) for a competing flow that stands for a kernel
socket, as on the live testbed. Other short
names: ``conn`` a ``Connection``, ``m`` the ``Constants``, ``b`` the connection's index (and its
network stream), ``snd`` its sender stream, ``t`` the step, ``f`` a flow, ``p`` a path, ``s`` a
FIFO slot, ``h``/``k`` a hole slot, ``nsub``/``nflows`` the connection's subflows/flows.

Records cost nothing inside the core, where the phases are inlined into ``_run`` (each takes
``conn``, the ``Connection``). Functions that are not inlined take the ``Connection`` when they
run per event (``_rto``) and the arrays they use when they run per packet (``_send_packet``; the
hole-table operations take ``c, ho``): a record passed by value is every field's pointer, shape
and strides. Of the entry points, ``advance`` and ``reset_connection`` take a ``State`` from
Python, while ``envs.decision._step``, called once per env step, takes the arrays flat and
builds the records itself, because numba's dispatcher types a named tuple of arrays several
microseconds slower than the same arrays passed one by one (``benchmarks/record_dispatch.py``).

How it is kept fast (``benchmarks/sim_speed.py``; every item but the last, which changes how
random numbers are drawn, leaves results bit for bit as they were, checked on a fingerprint of
scenarios x CCs x schedulers x decision modes):

- ``_nrt=False`` everywhere (kernel, CCs, heuristics, rng): numba otherwise reference-counts
  every array it passes or slices with atomic increments, which took about 60% of the time;
  nothing here allocates, so the runtime is not needed. A new CC or heuristic should use it too.
- ``advance`` hands each connection's rows (2-D/3-D views) to ``_run``, into which the phases and
  the workload's step are inlined (``forceinline``): no calls passing a dozen array structs per
  phase and step. The workload counts its record bins instead of dividing the step by the bin
  length every step. ``_run`` itself is inlined into ``advance`` by numba (``inline="always"``),
  not by LLVM: numba compiles every called or ``forceinline`` function on its own as well, and
  ``_run``'s own copy, which nothing called, took a tenth of the cold compile (inlining the
  phases that way instead types each again inside its caller: twice the compile time);
- bursts: a scheduler registered with ``burst=True`` (minRTT, fixed; and the blocked decision mode) keeps its
  path until the path is blocked, so ``_burst`` sends that run with the counters in registers,
  drawing the same random numbers in the same order as per-packet sends would; round robin gets
  the same code one packet at a time. The tail segment's fields stay in registers while packets
  join it, written back once when the burst leaves it;
- a path's schedule buffer (XQUIC profile) holds ranges, not packets: new data the scheduler
  gives a paced path joins the newest range when it continues it (a burst of picks is one range),
  and a range leaves as one ``_burst``, so a paced path's packets still go out in registers;
  stacks without the buffer pay one comparison per path and step;
- the receiver looks for the lowest new data in the paths' schedule buffers only while it can
  still move the in-order point (a hole usually holds it lower);
- the receiver's in-order point resumes its search for the first segment carrying new data where
  the last step's search stopped (``SI_SCAN``), instead of rescanning spurious resends and
  retransmissions from the FIFO's head every step;
- ring and FIFO lengths are powers of two (a mask instead of an integer division per index);
- the hole table keeps lists of its holes in use (in sequence order), pending and awaiting
  detection (``layout.py``), instead of scans of every slot up to CN_HOLES_HI per packet or step;
  the detections due at a step are found in one pass over their list (``_detect_due``), not one
  pass per due hole (ispras_s1's paths under XQUIC's profile keep about 15 holes awaiting it);
- cheap draws (``envs/sim/rng.py``): normal jitter by inverting a tabulated quantile function;
  random loss by geometric gaps, one draw per loss instead of one per packet (``_random_loss``);
  spurious (reordering) declarations by one uniform per departed packet, cheaper at these counts
  than a binomial draw's power.
"""

import math
from collections import namedtuple
from typing import NamedTuple

import numpy as np
from numba import njit

from envs.cc.base import CWND, PACING
from envs.plugins.dispatch import burst, cc_init, cc_on_ack, cc_on_loss, cc_on_rto, pick
from envs.sim.layout import *  # noqa: F403 (column names)
from envs.sim.recovery import before_loss, copy_sent, dsack_due, reorder_window, timeout
from envs.sim.reordering import DETECTION_BLOCKS, TRAINS_PER_OCTAVE
from envs.sim.rng import quantile, quantile_min, uniform
from envs.sim.roles import blocked_rule
from envs.sim.workload import step as workload_step

INITIAL_RTT = 0.333  # RFC 9002 kInitialRtt (s): flow slots the connection does not use
MAX_PACKETS_PER_STEP = 100000
DEP_RATE_TAU = 0.01  # s: time constant of a flow's departure-rate EWMA (spurious-loss spacing)
PKT_RTT_TAIL = 0.125  # segments whose jitter draw is below this quantile give a per-packet RTT sample
EPS = 1e-6
SQRT2 = math.sqrt(2.0)
SQRT_PI = math.sqrt(math.pi)
INV_SQRT_PI = 1.0 / SQRT_PI


class State(NamedTuple):
    """Every array of a batch of B connections (see the glossary above)."""

    obs: np.ndarray
    cobs: np.ndarray
    fl: np.ndarray
    cc: np.ndarray
    ccp: np.ndarray
    bn: np.ndarray
    cn: np.ndarray
    seg: np.ndarray
    segi: np.ndarray
    ring: np.ndarray
    hole: np.ndarray
    sched: np.ndarray
    ctrace: np.ndarray
    atrace: np.ndarray
    wl: np.ndarray
    item: np.ndarray
    rec: np.ndarray
    rng: np.ndarray


Connection = namedtuple("Connection", State._fields)  # type: ignore[misc]  # State's fields, one row each
Connection.__doc__ = "One connection's rows of a ``State`` (views), the batch's ``rng`` whole."


class Constants(NamedTuple):
    """What every connection of a batch shares and never changes."""

    dt: float  # seconds per step
    spur_grid: np.ndarray  # natural logs of the spurious-declaration table's spacing grid (envs/sim/reordering.py)
    spur_wgrid: np.ndarray  # its detection-window grid (window / jitter), evenly spaced from 0
    spur_prob: np.ndarray  # per rule (STK_RULE), its tables: probability per packet at each (train, window, spacing) / jitter, the mean leads, the probability a copy is acknowledged indirectly (reordering.detection_tables)
    stack: np.ndarray  # per flow [B, F, N_STK], its stack's profile, columns STK_* (envs/sim/stacks.py, envs/sim/recovery.py)
    hidden: np.ndarray  # [C, W, R]: the share of packets one SACK block hides while a hole persists (reordering.hidden_table)
    hidden_cgrid: np.ndarray  # natural logs of its ACK-compression grid (compression delay / jitter, reordering.COMP_GRID)
    rate_scatter: np.ndarray  # per rule [2, T, R]: the delivery-rate samples' shortfall and spread x round trip / jitter (reordering.rate_sample_table)
    rate_tgrid: np.ndarray  # natural logs of its round-trip grid (round trip / jitter, reordering.RTT_GRID)


@njit(inline="always", cache=True, _nrt=False)
def _cc_mss(stk):
    """The unit a flow's CC counts its window in (its ``mss``, envs/cc/base.py): its packet times
    its stack's ``cc_mss_packets``."""
    return stk[STK_PACKET] * stk[STK_CC_MSS]


@njit(cache=True, _nrt=False)
def reset_connection(b, state, stack, dt):
    """Zero a connection's dynamic state, keeping its configuration columns (its packet among them,
    ``CN_MSS``); ``stack`` is its flows' profiles (``Constants.stack[b]``), whose CCs start with
    their initial windows.

    Every flow starts with the RTT sample of its handshake, the path's two-way propagation delay
    in whole steps (RFC 9002 sec. 5.1/5.3 and RFC 6298 sec. 2.2: srtt = sample, rttvar = sample / 2), so a path
    not yet used shows its base RTT to a scheduler, not a placeholder."""
    obs, cobs, fl, cc, ccp, bn, cn = state.obs, state.cobs, state.fl, state.cc, state.ccp, state.bn, state.cn
    segi, ring, hole, sched = state.segi, state.ring, state.hole, state.sched
    nflows = int(cn[b, CN_N_FLOWS])
    for f in range(obs.shape[1]):
        for k in range(N_OBS):
            obs[b, f, k] = 0.0
        rtt0 = INITIAL_RTT
        if f < nflows:
            rtt0 = (max(math.floor(fl[b, f, FL_DFWD] + 0.5), 1.0) + fl[b, f, FL_DREV]) * dt  # as _depart rounds
        obs[b, f, OBS_SRTT] = rtt0
        obs[b, f, OBS_RTTVAR] = rtt0 / 2.0
        obs[b, f, OBS_MIN_RTT] = rtt0
        obs[b, f, OBS_LATEST_RTT] = rtt0
        for k in range(N_FL):
            if k != FL_PATH and k != FL_IS_SUB and k != FL_CC and k != FL_DFWD and k != FL_DREV and k != FL_JITTER:
                fl[b, f, k] = 0.0
        fl[b, f, FL_RTO_BACKOFF] = 1.0
        fl[b, f, FL_ACTIVE] = 1.0 if f < nflows else 0.0
        for k in range(N_SI):
            segi[b, f, k] = 0
        for s in range(ring.shape[2]):
            for k in range(N_RING):
                ring[b, f, s, k] = 0.0
        if f < nflows:
            cc_init(int(fl[b, f, FL_CC]), cc[b], ccp[b], f, 0.0, _cc_mss(stack[f]))
            obs[b, f, OBS_CWND] = cc[b, f, CWND]
    for p in range(bn.shape[1]):
        for k in (BN_ENQ, BN_DEQ, BN_TRACE_IDX, BN_DELIVERED, BN_DROPPED, BN_UDP_CREDIT):
            bn[b, p, k] = 0.0
    for h in range(hole.shape[1]):
        for k in range(N_HOLE):
            hole[b, h, k] = 0.0
        for k in (HOLE_DETECT_AT, HOLE_PREV, HOLE_NEXT, HOLE_PPOS, HOLE_DPOS):
            hole[b, h, k] = -1.0
    for k in range(N_COBS):
        cobs[b, k] = 0.0
    for k in (CN_T, CN_DONE, CN_RCV_NXT, CN_RCV_BYTES, CN_SND_NXT, CN_ACKED_EDGE, CN_REORDER_MAX,
              CN_HOLES_HI, CN_PENDING, CN_PAUSE, CN_REORDER_SUM, CN_OOO_EXCEEDED, CN_TUNE_T, CN_TUNE_SEQ):
        cn[b, k] = 0.0
    cn[b, CN_DONE_STEP] = -1.0
    cn[b, CN_ADVISE] = -1.0
    cn[b, CN_LIVE_HEAD] = -1.0
    cn[b, CN_LIVE_TAIL] = -1.0
    cn[b, CN_NEXT_DETECT] = math.inf
    cn[b, CN_N_PEND] = 0.0
    cn[b, CN_N_DET] = 0.0
    cn[b, CN_FREE_HINT] = 0.0
    for k in range(SCHED_STATE, N_SCHED):
        sched[b, k] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def _setup_sample(o, fb, f):
    """The RTT sample of a path's setup lands (``FL_SETUP_RTT``; ``StackProfile.unsampled_rtt``):
    under XQUIC the peer's delayed ACK of the PATH_CHALLENGE packet, its round trip plus the ACK
    delay, unless the ACK of a data packet sent on the path gave its first sample before."""
    if o[f, OBS_LATEST_RTT] <= 0.0:
        _first_sample(o, f, fb[f, FL_SETUP_RTT])
    fb[f, FL_SAMPLE_AT] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def _first_sample(o, f, sample):
    """A path's first RTT sample sets srtt, rttvar (RFC 6298 sec. 2.2, RFC 9002 sec. 5.3) and min_rtt
    (RFC 9002 sec. 5.2; XQUIC's ctl_minrtt starts at XQC_MAX_UINT32_VALUE), whatever it showed before."""
    o[f, OBS_SRTT] = sample
    o[f, OBS_RTTVAR] = sample / 2.0
    o[f, OBS_MIN_RTT] = sample
    o[f, OBS_LATEST_RTT] = sample


@njit(cache=True, _nrt=False, forceinline=True)
def _apply_schedules(t, conn, now, stks, nsub, nflows):
    """A subflow's path opens when the stack has set it up (``FL_OPEN_AT``). Capacity trace per
    link; per flow, its schedule: a subflow's transit-link loss (>= 0) or
    a transit link's failure (-s: down until step s; envs/network.py), a competing flow's activity (0: off; > 0: on, with
    that many bytes to send, inf for a long-lived flow). An arriving flow whose slot is still
    busy with the previous one waits for it to finish."""
    fb, C, Pc, bnb, ct, at = conn.fl, conn.cc, conn.ccp, conn.bn, conn.ctrace, conn.atrace
    if t <= conn.cn[CN_PATHS_READY]:  # the stack's path setup (envs/sim/stacks.py path_open_steps)
        for f in range(1, nsub):
            if fb[f, FL_ACTIVE] == 0.0 and t >= fb[f, FL_OPEN_AT]:
                fb[f, FL_ACTIVE] = 1.0
                cc_init(int(fb[f, FL_CC]), C, Pc, f, now, _cc_mss(stks[f]))  # the path's CC starts with it
    for f in range(1, nsub):
        if fb[f, FL_SAMPLE_AT] > 0.0 and t >= fb[f, FL_SAMPLE_AT]:
            _setup_sample(conn.obs, fb, f)
    for p in range(int(conn.cn[CN_N_LINKS])):
        idx = int(bnb[p, BN_TRACE_IDX])
        while idx < ct.shape[1] and ct[p, idx, 0] <= t:
            bnb[p, BN_CAP] = ct[p, idx, 1]
            idx += 1
        bnb[p, BN_TRACE_IDX] = idx
    for f in range(nflows):
        idx = int(fb[f, FL_SCHED_IDX])
        while idx < at.shape[1] and at[f, idx, 0] <= t:
            on = at[f, idx, 1]
            if f < nsub:
                if on < 0.0:
                    fb[f, FL_DOWN_UNTIL] = -on
                else:
                    fb[f, FL_XLOSS] = on
                    fb[f, FL_XLOSS_NEXT] = 0.0
            else:
                if on > 0.0 and fb[f, FL_ACTIVE] > 0.0 and fb[f, FL_BUDGET] < math.inf:
                    break  # the slot's previous flow has not finished
                if on > 0.0 and fb[f, FL_ACTIVE] == 0.0:
                    cc_init(int(fb[f, FL_CC]), C, Pc, f, now, _cc_mss(stks[f]))
                fb[f, FL_ACTIVE] = 1.0 if on > 0.0 else 0.0
                fb[f, FL_BUDGET] = on
            idx += 1
        fb[f, FL_SCHED_IDX] = idx


@njit(inline="always", cache=True, _nrt=False)
def _detect_delay(bnb, p, o, fb, f, stk, dt, most):
    """Time (steps, at most ``most``) from a lost packet's would-be arrival to its declaration:
    the stack's packet threshold at the bottleneck rate (RFC 9002: 3 packets), cut short by its
    time threshold, or RACK's window after the next packet's ACK: the window
    ``recovery.reorder_window`` gives a reordered packet, with the lost packet's round trip, not
    at hand here, read as srtt (XQUIC: 9/8 max(srtt, latest RTT) less srtt)."""
    spacing = stk[STK_PACKET] / max(bnb[p, BN_CAP], 1.0)  # the flow's packets at the bottleneck
    by_packets = stk[STK_PKT_THRESHOLD] * spacing
    window = reorder_window(o, fb, f, stk, o[f, OBS_SRTT]) / dt
    if stk[STK_TIME_THRESHOLD] > 0.0:
        by_packets = min(by_packets, window)
    rack = window if stk[STK_REO_WND] > 0.0 else 0.0
    return min(max(by_packets, rack), most)


@njit(inline="always", cache=True, _nrt=False)
def _detect_steps(delay, fb, f):
    """The step a declaration ``delay`` steps after its packet's would-be arrival is processed at,
    counted from that arrival's step. A step's arrivals stand for packets that crossed the
    bottleneck anywhere within it, so the declaration falls ``delay`` after a point within the
    step: floor(delay) steps or one more, the latter for a share frac(delay) of them. The flow
    carries the fraction over from one declaration to the next (error diffusion), so its
    declarations keep that share without a random draw (a network without jitter or random loss
    draws none). Zero puts the declaration in the step that acknowledges its packet, after that
    step's ACKs and before its sending: the window a cut leaves is not yet refilled by them
    (docs/transport.md, "Copies a late ACK cancels")."""
    whole = int(delay + fb[f, FL_DETECT_PHASE])
    fb[f, FL_DETECT_PHASE] += delay - whole
    return whole


@njit(cache=True, _nrt=False, forceinline=True)
def _receive(t, conn, dt, stks, nsub, nflows):
    """Arrivals at the receiver; updates rcv state and schedules feedback."""
    o, fb, bnb, c, sg, si, rg, ho = conn.obs, conn.fl, conn.bn, conn.cn, conn.seg, conn.segi, conn.ring, conn.hole
    Lm = rg.shape[1] - 1
    Qm = sg.shape[1] - 1
    for f in range(nflows):
        h = si[f, SI_HEAD]
        d = si[f, SI_DEP]
        if h >= d:
            continue
        s = h & Qm
        if sg[f, s, SEG_ARRIVE] > t:
            continue
        p = int(fb[f, FL_PATH])
        drev = int(fb[f, FL_DREV])
        slot_ack = (t + drev) & Lm
        det = -1
        while h < d:
            if sg[f, s, SEG_ARRIVE] > t:
                break
            nbytes = sg[f, s, SEG_BYTES]
            indirect = sg[f, s, SEG_INDIRECT]
            if indirect > 0.0:
                # copies of spurious declarations acknowledged indirectly (their originals' ACKs
                # came first, then the packet's sent next to them): they leave the flight without counting as
                # delivered or growing the window (XQUIC xqc_send_ctl_indirectly_ack_or_drop_po
                # acknowledges them without the CC or a rate sample; Linux counts the SACKed skb
                # once, the copy's arrival is a DSACK)
                rg[f, slot_ack, RING_FREED] += indirect
                nbytes = nbytes - indirect if nbytes - indirect > EPS else 0.0
            if nbytes > 0.0:
                rg[f, slot_ack, RING_ACKED] += nbytes
                if sg[f, s, SEG_SENT] >= rg[f, slot_ack, RING_SENT]:
                    rg[f, slot_ack, RING_SENT] = sg[f, s, SEG_SENT]
                    rg[f, slot_ack, RING_DELIV] = sg[f, s, SEG_DELIV]
                    rg[f, slot_ack, RING_FIRST_SENT] = sg[f, s, SEG_FIRST_SENT]
            if f < nsub:
                good = sg[f, s, SEG_NEW] + sg[f, s, SEG_FILL_BYTES]
                c[CN_RCV_BYTES] += good
                fb[f, FL_GOOD] += good
                hf = int(sg[f, s, SEG_FILL])
                if hf >= 0:
                    ho[hf, HOLE_REM] -= sg[f, s, SEG_FILL_BYTES]
                    if ho[hf, HOLE_REM] <= EPS:
                        _free_hole(hf, c, ho)
            lost = sg[f, s, SEG_LOST]
            spur = sg[f, s, SEG_SPUR]
            if lost > 0.0:
                freed = sg[f, s, SEG_COPY_LOST]  # lost copies of spurious declarations: undeclared
                if freed > 0.0:
                    rg[f, slot_ack, RING_FREED] += freed
                    lost = lost - freed if lost - freed > EPS else 0.0
            if lost > 0.0 or spur > 0.0:
                if det < 0:
                    det = _detect_steps(_detect_delay(bnb, p, o, fb, f, stks[f], dt, Lm - 1 - drev), fb, f)
                sl = (t + drev + det) & Lm
                rg[f, sl, RING_LOST] += lost
                rg[f, sl, RING_SPUR] += spur
                rg[f, sl, RING_SPUR_LEAD] += spur * sg[f, s, SEG_SPUR_LEAD]
                rg[f, sl, RING_LOST_SENT] = max(rg[f, sl, RING_LOST_SENT], sg[f, s, SEG_SENT])
                hh = int(sg[f, s, SEG_HOLE])
                if lost > 0.0 and hh >= 0 and ho[hh, HOLE_UNDET] > 0.0 and ho[hh, HOLE_DETECT_AT] < 0.0:
                    _schedule_detection(c, ho, hh, float(t + drev + det))
            h += 1
            s = (s + 1) & Qm
        si[f, SI_HEAD] = h
    # in-order point: the lowest byte not yet arrived (new data in flight, or a hole)
    rcv = c[CN_SND_NXT]
    for f in range(nsub):
        h = max(si[f, SI_HEAD], si[f, SI_SCAN])
        tl = si[f, SI_TAIL]
        while h < tl:
            s = h & Qm
            if sg[f, s, SEG_NEW] > 0.0:
                rcv = min(rcv, sg[f, s, SEG_SEQ])
                break
            h += 1
        si[f, SI_SCAN] = h
    rcv = min(rcv, _hole_min(c, ho))
    # new data scheduled on a path, not yet sent; rcv only falls from here, so once it is at or
    # below the in-order point (a hole usually holds it there) the buffers cannot move that point
    for f in range(nsub):
        if rcv <= c[CN_RCV_NXT]:
            break
        if fb[f, FL_SCHED] > 0.0:
            rcv = min(rcv, _scheduled_min(fb, f))
    if rcv > c[CN_RCV_NXT]:
        c[CN_RCV_NXT] = rcv
    reorder = c[CN_RCV_BYTES] - c[CN_RCV_NXT]
    c[CN_REORDER_SUM] += reorder
    if reorder > c[CN_REORDER_MAX]:
        c[CN_REORDER_MAX] = reorder
    if reorder > c[CN_OOO_LIMIT]:
        c[CN_OOO_EXCEEDED] = 1.0
    # the receiver's window travels back with each path's ACKs
    for f in range(nsub):
        sl = (t + int(fb[f, FL_DREV])) & Lm
        if rg[f, sl, RING_ACKED] > 0.0:
            rg[f, sl, RING_RCV_NXT] = max(rg[f, sl, RING_RCV_NXT], c[CN_RCV_NXT])


@njit(cache=True, _nrt=False, forceinline=True)
def _autotune_window(t, conn, dt, nsub, stk):
    """Receive-window auto-tuning, the stack's rule (StackProfile.window_rule), up to CN_RCVBUF_MAX.

    XQUIC (xqc_stream.c xqc_stream_do_recv_flow_ctl): once the application has read more than
    half the window since the last window update, the window is updated; it doubles if that
    update follows the previous one within 2 x the smallest subflow srtt (the first never does).
    Linux MPTCP's dynamic right-sizing (net/mptcp/protocol.c mptcp_rcv_space_adjust and
    mptcp_rcvbuf_grow): once per the largest subflow RTT, if the application read more than the
    most it read in one such measurement before (CN_TUNE_SPACE), the buffer grows to
    2 x read plus twice that times the relative increase (the sender may double its rate), never
    shrinking. The window moves with the in-order point at every step either way (the
    ACKs carry it); only its size is tuned here."""
    c, o = conn.cn, conn.obs
    read = c[CN_RCV_NXT] - c[CN_TUNE_SEQ]
    if stk[STK_WINDOW_DRS] > 0.0:
        rtt = o[0, OBS_SRTT]
        for f in range(1, nsub):
            rtt = max(rtt, o[f, OBS_SRTT])
        if (t - c[CN_TUNE_T]) * dt < rtt:
            return
        space = c[CN_TUNE_SPACE]
        if read > space:
            win = 2.0 * read
            win += 2.0 * win * (read - space) / space
            c[CN_RCVBUF] = max(c[CN_RCVBUF], min(win, c[CN_RCVBUF_MAX]))
            c[CN_TUNE_SPACE] = read
    else:
        if read <= 0.5 * c[CN_RCVBUF]:
            return
        rtt = o[0, OBS_SRTT]
        for f in range(1, nsub):
            rtt = min(rtt, o[f, OBS_SRTT])
        if c[CN_TUNE_T] > 0.0 and (t - c[CN_TUNE_T]) * dt < 2.0 * rtt:  # t = 0: no update yet
            c[CN_RCVBUF] = min(2.0 * c[CN_RCVBUF], c[CN_RCVBUF_MAX])
    c[CN_TUNE_T] = t
    c[CN_TUNE_SEQ] = c[CN_RCV_NXT]


@njit(inline="always", cache=True, _nrt=False)
def _packets(nbytes, mss):
    """Whole packets in ``nbytes`` lost bytes, as a sender counts them (a short packet, such as
    a file's last, is one packet; exact unless one step declares two short packets lost)."""
    return math.ceil(nbytes / mss - EPS) if nbytes > EPS else 0.0


@njit(cache=True, _nrt=False)
def _rto(b, t, f, conn, mss, cc_mss, dt):
    """Retransmission timeout (RFC 6298): every undetected loss of the flow is declared, the CC
    (counting windows in ``cc_mss``) collapses, the timer backs off; a subflow's data not yet
    arrived is reinjected."""
    o, fb, C, Pc, c = conn.obs, conn.fl, conn.cc, conn.ccp, conn.cn
    sg, si, rg, ho = conn.seg, conn.segi, conn.ring, conn.hole
    o[f, OBS_RTOS] += 1.0
    fb[f, FL_RTO_BACKOFF] = min(fb[f, FL_RTO_BACKOFF] * 2.0, 64.0)
    fb[f, FL_UNDO_OK] = 0.0  # a timeout ends the episode a DSACK could have undone
    fb[f, FL_LAST_PROGRESS] = t
    for h in range(int(c[CN_HOLES_HI])):
        if ho[h, HOLE_REM] > 0.0 and int(ho[h, HOLE_FLOW]) == f and ho[h, HOLE_UNDET] > 0.0:
            _add_pending(c, ho, h, ho[h, HOLE_UNDET])
            ho[h, HOLE_UNDET] = 0.0
            _cancel_detection(c, ho, h)
    o[f, OBS_LOSSES] += _packets(fb[f, FL_LOST_UNNOTIFIED], mss)
    o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - fb[f, FL_LOST_UNNOTIFIED], 0.0)
    fb[f, FL_LOST_UNNOTIFIED] = 0.0
    for s in range(rg.shape[1]):
        rg[f, s, RING_LOST] = 0.0
        rg[f, s, RING_SPUR] = 0.0
        rg[f, s, RING_SPUR_LEAD] = 0.0
    Qm = sg.shape[1] - 1
    for i in range(si[f, SI_HEAD], si[f, SI_TAIL]):
        s = i & Qm
        # lost copies of spurious declarations leave the flight undeclared (see _receive)
        o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - sg[f, s, SEG_COPY_LOST], 0.0)
        sg[f, s, SEG_COPY_LOST] = 0.0
        sg[f, s, SEG_LOST] = 0.0
    if fb[f, FL_IS_SUB] > 0.0:
        _reinject(f, c, sg, si, ho)
        if fb[f, FL_SQ_N] > 0.0:
            _unschedule(f, o, fb, c, ho)
    cc_on_rto(int(fb[f, FL_CC]), C, Pc, f, t * dt, o[f, OBS_INFLIGHT] - fb[f, FL_SCHED], cc_mss)


@njit(cache=True, _nrt=False)
def _reinject(f, c, sg, si, ho):
    """The connection data a timed-out subflow still has in flight returns to the send queue, to
    be retransmitted on any path (MPTCP reinjection, RFC 8684 sec. 3.3.6; docs/transport.md), so
    a failed path (or a failed link on its route) does not block in-order delivery: Linux MPTCP
    retransmits a timed-out subflow's unacknowledged data at the connection level on the other
    subflows, and XQUIC's reinjection sends a path's unacknowledged packets again on the others. The copies in the network still arrive and
    are acknowledged, carrying nothing new: a segment's new bytes become a hole pending
    retransmission, and the retransmitted bytes it carries return to their hole's queue."""
    Qm = sg.shape[1] - 1
    for i in range(si[f, SI_HEAD], si[f, SI_TAIL]):
        s = i & Qm
        hf = int(sg[f, s, SEG_FILL])
        if hf >= 0 and sg[f, s, SEG_FILL_BYTES] > 0.0:
            _add_pending(c, ho, hf, sg[f, s, SEG_FILL_BYTES])
            sg[f, s, SEG_FILL_BYTES] = 0.0
            sg[f, s, SEG_FILL] = -1.0
        new = sg[f, s, SEG_NEW]
        if new > 0.0:
            if not _pending_new_data(c, ho, f, sg[f, s, SEG_SEQ], new):
                return  # hole table full: the rest stays on this path
            sg[f, s, SEG_NEW] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def _pending_new_data(c, ho, f, seq, nbytes):
    """New data taken back from flow f (``nbytes`` from ``seq``) becomes a hole pending
    retransmission on any path; False when the hole table is full."""
    k = _alloc_hole(c, ho)
    if k < 0:
        return False
    ho[k, HOLE_SEQ] = seq
    ho[k, HOLE_REM] = nbytes
    ho[k, HOLE_UNDET] = 0.0
    ho[k, HOLE_FLOW] = f
    ho[k, HOLE_DETECT_AT] = -1.0
    _link_live(c, ho, k)
    _add_pending(c, ho, k, nbytes)
    return True


@njit(cache=True, _nrt=False)
def _unschedule(f, o, fb, c, ho):
    """A timed-out subflow's schedule buffer returns to the connection's queue with its data in
    flight (``_reinject``): its new data becomes holes pending retransmission, its
    retransmissions return to their holes' queues, to be sent on any path, its copies (which
    carry nothing new) are dropped. XQUIC moves a path's
    schedule buffer back to the connection's queues when the path is closed or frozen
    (``xqc_multipath.c`` ``xqc_path_send_buffer_clear``); the simulator takes a subflow's timeout
    for its failure, as it does for the data in flight."""
    while fb[f, FL_SQ_N] > 0.0:
        col = FL_SQ + int(fb[f, FL_SQ_HEAD]) * SQ_W
        nbytes = fb[f, col + SQ_BYTES]
        fill = int(fb[f, col + SQ_FILL])
        if nbytes > 0.0:
            if fill >= 0:
                _add_pending(c, ho, fill, nbytes)
            elif fill == SQ_NEW:
                if not _pending_new_data(c, ho, f, fb[f, col + SQ_SEQ], nbytes):
                    return  # hole table full: the rest stays on this path
            o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - nbytes, 0.0)
            fb[f, FL_SCHED] = max(fb[f, FL_SCHED] - nbytes, 0.0)
        fb[f, col + SQ_BYTES] = 0.0
        fb[f, FL_SQ_HEAD] = float((int(fb[f, FL_SQ_HEAD]) + 1) & (SQ_K - 1))
        fb[f, FL_SQ_N] -= 1.0
    fb[f, FL_SCHED] = 0.0


def _erf_tables(step: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """erf and its integral plus 1 / sqrt(pi), G(x) = x erf(x) + exp(-x^2) / sqrt(pi), at
    0, step, .. end + step, for ``_cancelled_share``'s linear interpolation (beyond ``end``,
    erf is 1 and G(x) = x to within 1e-8)."""
    x = np.arange(0.0, end + 2.0 * step, step)
    erf = np.array([math.erf(v) for v in x])
    return erf, x * erf + np.exp(-x * x) * INV_SQRT_PI


ERF_STEP, ERF_END = 1.0 / 1024.0, 4.0
_ERF, _ERF_INTEGRAL = _erf_tables(ERF_STEP, ERF_END)


@njit(inline="always", cache=True, _nrt=False)
def _interpolate_erf(table, x, beyond):
    """``table`` (``_ERF`` or ``_ERF_INTEGRAL``) at x >= 0, linearly; ``beyond`` past ERF_END."""
    if x >= ERF_END:
        return beyond
    u = x / ERF_STEP
    i = int(u)
    return table[i] + (u - i) * (table[i + 1] - table[i])


@njit(inline="always", cache=True, _nrt=False)
def _cancelled_share(a, w):
    """The chance that a copy is cancelled before it leaves: its original's ACK comes a lead after
    the declaration, half-normal (P(lead < x) = erf(x), in units of the half-normal's scale x
    sqrt(2)), and the copy leaves ``a`` after it (the copies queued before it, the window) plus a
    wait uniform over the pacer's period ``w``: the mean of erf over that wait, (G(a + w) - G(a)) / w
    with G the integral of erf, from tables so that a copy costs no libm call (within 2e-5 of the
    exact share)."""
    if w <= EPS:
        return _interpolate_erf(_ERF, a, 1.0)
    b = a + w
    return (_interpolate_erf(_ERF_INTEGRAL, b, b) - _interpolate_erf(_ERF_INTEGRAL, a, a)) / w


@njit(inline="always", cache=True, _nrt=False)
def _queue_copies(o, fb, C, f, nbytes, lead, dt, mss, pacer_delay, rng, b):
    """Queue the copies of ``nbytes`` declared lost spuriously, after the CC's reaction, their
    originals' ACKs due ``lead`` steps after the declaration on average (the rule's mean,
    ``envs/sim/reordering.py``). A copy whose original is acknowledged before it leaves is
    cancelled (XQUIC: xqc_conn.c ``xqc_check_acked_or_dropped_pkt`` -> xqc_send_ctl.c
    ``xqc_send_ctl_indirectly_ack_or_drop_po``, ``po_origin->po_acked``; Linux:
    ``tcp_xmit_retransmit_queue`` skips a SACKed segment). The leads spread as the ACK loop's do,
    about a half-normal of that mean (``ack_loop.declaration_leads``). Copies leave first, in
    order, once the window has room for them over what is in flight (the ACKs freeing it at about
    a window per round trip; XQUIC ``xqc_send_packet_check_cc``, Linux ``tcp_cwnd_test``) and
    the queue ahead has left at the flow's sending rate (its pacing rate, at most its window per
    round trip); a paced flow's then when its pacer next releases, uniform over max(the stack's
    ``pacer_delay``, one packet's time). Each copy is queued whole or cancelled, by one uniform of
    the network's stream ``b`` against the chance that its original's ACK comes first (the queue
    sends whole packets: a share of a copy would go out as a whole one; docs/transport.md,
    "Copies a late ACK cancels")."""
    srtt = max(o[f, OBS_SRTT], dt)
    rate = C[f, CWND] / srtt
    period = 0.0
    if o[f, OBS_PACING_RATE] > 0.0:
        rate = min(rate, o[f, OBS_PACING_RATE])
        period = max(pacer_delay, mss / rate)
    flight = max(o[f, OBS_INFLIGHT] - fb[f, FL_SCHED], 0.0)
    scale = max(lead * dt, EPS) * SQRT_PI  # a half-normal's scale x sqrt(2), from its mean
    per_rate = 1.0 / (rate * scale)  # s of queue per byte, in units of the scale
    per_freed = srtt / (max(flight, mss) * scale)  # ... of window: the ACKs free what is in flight per srtt
    over = flight - C[f, CWND]  # bytes in flight over the window
    wait = period / scale
    left = nbytes
    while left > EPS:  # each copy behind the ones before it
        size = min(mss, left)
        queued = fb[f, FL_SPUR_PENDING]
        ahead = max(queued * per_rate, (over + queued + size) * per_freed, 0.0)
        if uniform(rng, b) >= _cancelled_share(ahead, wait):
            fb[f, FL_SPUR_PENDING] += size
            copy_sent(fb, f)
        left -= size


@njit(cache=True, _nrt=False, forceinline=True)
def _feedback(b, snd, t, conn, m, stks, nsub, nflows):
    """Sender side: ACKs and loss declarations due at step t; loss detection; RTO timers.
    The connection's own CCs draw from its sender stream ``snd``, competing flows from ``b``;
    whether an ACK cancels a spurious declaration's copy is the network's, drawn from ``b``."""
    dt = m.dt
    o, co, fb, C, Pc = conn.obs, conn.cobs, conn.fl, conn.cc, conn.ccp
    c, rg, ho, rng = conn.cn, conn.ring, conn.hole, conn.rng
    slot = t & (rg.shape[1] - 1)
    now = t * dt
    if c[CN_NEXT_DETECT] <= t:  # some hole's detection is due (exact: CN_NEXT_DETECT is a lower bound)
        _detect_due(t, c, ho)
    for f in range(nflows):
        mss = stks[f, STK_PACKET]  # the flow's packet
        cc_mss = _cc_mss(stks[f])
        if fb[f, FL_DSACK_AT] > 0.0 and t >= fb[f, FL_DSACK_AT]:  # before the ACKs, as Linux's undo
            dsack_due(t, fb, C, f, stks[f])
        acked = rg[f, slot, RING_ACKED]
        if acked > 0.0:
            o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - acked, 0.0)
            o[f, OBS_ACKED] += acked
            rtt = max((t - rg[f, slot, RING_SENT]) * dt, dt)
            # the stack's own sample where it differs from the segment's (RING_RTT_SAMPLE)
            sample = rtt if rg[f, slot, RING_RTT_SAMPLE] <= 0.0 else rg[f, slot, RING_RTT_SAMPLE] * dt
            # RFC 6298 / RFC 9002 (the handshake gave the first sample, see reset_connection, but
            # to a path whose setup sample comes late, StackProfile.unsampled_rtt)
            if o[f, OBS_LATEST_RTT] > 0.0:
                o[f, OBS_RTTVAR] = 0.75 * o[f, OBS_RTTVAR] + 0.25 * abs(o[f, OBS_SRTT] - sample)
                o[f, OBS_SRTT] = 0.875 * o[f, OBS_SRTT] + 0.125 * sample
            else:
                _first_sample(o, f, sample)
            # the least RTT sample of this ACK: the least per-packet one (see _depart) and the
            # stack's own (its latest RTT). The stack's min_rtt and its CC's min-RTT filters read
            # the same samples (XQUIC ctl_minrtt and BBR's sampler->rtt both ctl_latest_rtt,
            # xqc_send_ctl.c, xqc_sample.c; its CUBIC every acknowledged packet's RTT, xqc_cubic.c
            # xqc_cubic_on_ack; Linux tcp_min_rtt and BBR's rs->rtt_us both ca_rtt_us, tcp_input.c),
            # so neither is above a latest RTT the sender saw; RACK's window
            # (recovery.reorder_window) is tcp_min_rtt / 4
            pkt_rtt = min(rtt, sample)
            if rg[f, slot, RING_PKT_RTT] > 0.0:
                pkt_rtt = min(pkt_rtt, rg[f, slot, RING_PKT_RTT] * dt)
            o[f, OBS_MIN_RTT] = min(o[f, OBS_MIN_RTT], pkt_rtt)
            o[f, OBS_LATEST_RTT] = sample
            fb[f, FL_RTT_SUM] += rtt
            fb[f, FL_RTT_CNT] += 1.0
            # draft-cheng-iccrg-delivery-rate-estimation (Linux tcp_rate.c, XQUIC xqc_sample.c): over
            # the longer of the ACK interval and the send interval, from the send of the packet
            # newest-acknowledged when this one left to this one's send. The ACK interval runs from
            # the last delivery before the ACK's newest packet left (xqc_sample.c ack_elapse, Linux
            # prior_mstamp) to now, the span of the data it divides (delivered since that packet
            # left): here the segment's own round trip, not the stack's RTT sample, which under
            # reordering is a packet that left later than the segment (docs/transport.md,
            # "Delivery-rate samples"); under reordering jitter, with the scatter of a sample whose
            # two ends fall on single packets and ACKs (_sample_scatter)
            delivered = o[f, OBS_ACKED] - rg[f, slot, RING_DELIV]
            interval = max(rtt, (rg[f, slot, RING_SENT] - rg[f, slot, RING_FIRST_SENT]) * dt)
            o[f, OBS_DELIVERY_RATE] = delivered / interval
            if fb[f, FL_RATE_AT] > 0.0:  # the round trip over its jitter, both in steps as _depart has them
                o[f, OBS_DELIVERY_RATE] *= _sample_scatter(m, int(stks[f, STK_RULE]), fb[f, FL_RATE_AT] - 1.0,
                                                           rtt / dt / (fb[f, FL_JITTER] * SQRT2),
                                                           uniform(rng, snd if f < nsub else b))
            fb[f, FL_FIRST_SENT] = max(fb[f, FL_FIRST_SENT], rg[f, slot, RING_SENT])
            round_start = rg[f, slot, RING_DELIV] >= fb[f, FL_NEXT_ROUND]
            if round_start:
                fb[f, FL_NEXT_ROUND] = o[f, OBS_ACKED]
            fb[f, FL_LAST_PROGRESS] = t
            fb[f, FL_RTO_BACKOFF] = 1.0
            if f < nsub and rg[f, slot, RING_RCV_NXT] > c[CN_ACKED_EDGE]:
                c[CN_ACKED_EDGE] = rg[f, slot, RING_RCV_NXT]
            cc_on_ack(int(fb[f, FL_CC]), C, Pc, f, nsub, now, acked, rtt, pkt_rtt,
                      o[f, OBS_DELIVERY_RATE], delivered, o[f, OBS_INFLIGHT] - fb[f, FL_SCHED], round_start, cc_mss,
                      rng, snd if f < nsub else b)
        if rg[f, slot, RING_FREED] > 0.0:
            o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - rg[f, slot, RING_FREED], 0.0)
        lost = rg[f, slot, RING_LOST]
        spur = rg[f, slot, RING_SPUR]
        if lost > 0.0 or spur > 0.0:
            o[f, OBS_INFLIGHT] = max(o[f, OBS_INFLIGHT] - lost, 0.0)
            fb[f, FL_LOST_UNNOTIFIED] = max(fb[f, FL_LOST_UNNOTIFIED] - lost, 0.0)
            o[f, OBS_LOSSES] += _packets(lost, mss) + spur
            before_loss(t, o, fb, C, f, lost, spur, dt, stks[f])
            cc_on_loss(int(fb[f, FL_CC]), C, Pc, f, nsub, now, lost + spur * mss,
                       rg[f, slot, RING_LOST_SENT] * dt, o[f, OBS_INFLIGHT] - fb[f, FL_SCHED], cc_mss, rng,
                       snd if f < nsub else b)
            if spur > 0.0:
                _queue_copies(o, fb, C, f, spur * mss, rg[f, slot, RING_SPUR_LEAD] / spur, dt, mss,
                              stks[f, STK_PACER_DELAY], rng, b)
        for j in range(N_RING):
            rg[f, slot, j] = 0.0
        if fb[f, FL_ACTIVE] > 0.0 and f >= nsub and fb[f, FL_BUDGET] <= EPS and o[f, OBS_INFLIGHT] <= EPS:
            fb[f, FL_ACTIVE] = 0.0  # an arriving flow sent its size and all of it was answered: it leaves
        # RTO (the stack's, envs/sim/recovery.py; doubled per expiry), armed while packets are in
        # flight (not those still in the path's schedule buffer)
        if o[f, OBS_INFLIGHT] - fb[f, FL_SCHED] > (EPS if fb[f, FL_SCHED] > 0.0 else 0.0):
            rto = timeout(o, f, stks[f])
            if (t - fb[f, FL_LAST_PROGRESS]) * dt > rto * fb[f, FL_RTO_BACKOFF]:
                _rto(b, t, f, conn, mss, cc_mss, dt)
        else:
            fb[f, FL_LAST_PROGRESS] = t
            fb[f, FL_FIRST_SENT] = t  # nothing in flight: the next send starts a new interval
        o[f, OBS_CWND] = C[f, CWND]
        o[f, OBS_PACING_RATE] = C[f, PACING]
    # connection-level view the sender has
    co[COBS_ACKED] = c[CN_ACKED_EDGE]
    co[COBS_ELAPSED] = now
    edge = c[CN_ACKED_EDGE] + c[CN_RCVBUF]
    co[COBS_RWND] = max(edge - c[CN_SND_NXT], 0.0)
    # sent beyond the acknowledged edge, neither in flight nor awaiting retransmission
    infl = 0.0
    for f in range(nsub):
        infl += o[f, OBS_INFLIGHT]
    co[COBS_REORDER] = max(c[CN_SND_NXT] - c[CN_ACKED_EDGE] - infl - c[CN_PENDING], 0.0)
    co[COBS_REMAINING] = c[CN_SND_LIMIT] - c[CN_ACKED_EDGE]


@njit(cache=True, _nrt=False, forceinline=True)
def _refresh_windows(conn, nflows, nsub, stks, dt):
    """Pacing credit, send window and availability of every flow at the start of sending."""
    o, co, fb, c = conn.obs, conn.cobs, conn.fl, conn.cn
    new_avail = min(c[CN_SND_LIMIT], c[CN_ACKED_EDGE] + c[CN_RCVBUF]) - c[CN_SND_NXT]
    co[COBS_BACKLOG] = max(new_avail, 0.0) + c[CN_PENDING]
    for f in range(nflows):
        mss = stks[f, STK_PACKET]  # the flow's packet
        rate = o[f, OBS_PACING_RATE]
        if rate > 0.0:
            # credit accrues at the pacing rate; at most one step's worth plus a 2-packet quantum
            fb[f, FL_PACE_CREDIT] = min(fb[f, FL_PACE_CREDIT] + rate * dt, rate * dt + 2.0 * mss)
        else:
            fb[f, FL_PACE_CREDIT] = math.inf
        if f < nsub:
            o[f, OBS_SWND] = min(o[f, OBS_CWND], o[f, OBS_INFLIGHT] + max(new_avail, 0.0)
                                 + c[CN_PENDING] + fb[f, FL_SPUR_PENDING])
        else:
            o[f, OBS_SWND] = o[f, OBS_CWND]
        _update_available(o, fb, f, mss)


@njit(inline="always", cache=True, _nrt=False)
def _update_available(o, fb, f, mss):
    """OBS_AVAILABLE: window room for one MSS beyond what is committed to the path (in flight and
    scheduled), and pacing credit unless the stack holds scheduled packets on the path (XQUIC's
    xqc_scheduler_check_path_can_send: the window only; envs/sim/stacks.py path_buffer)."""
    ok = (o[f, OBS_INFLIGHT] + mss <= o[f, OBS_CWND] + EPS) & ((fb[f, FL_PACE_CREDIT] >= mss - EPS)
                                                             | (fb[f, FL_BUFFERED] > 0.0)) \
        & (fb[f, FL_ACTIVE] > 0.0)
    o[f, OBS_AVAILABLE] = 1.0 if ok else 0.0


@njit(inline="always", cache=True, _nrt=False)
def _init_segment(sg, f, s, seq, pos, t, deliv, first, fill):
    sg[f, s, SEG_SEQ] = seq
    sg[f, s, SEG_BYTES] = 0.0
    sg[f, s, SEG_POS] = pos
    sg[f, s, SEG_SENT] = t
    sg[f, s, SEG_DELIV] = deliv
    sg[f, s, SEG_FIRST_SENT] = first
    sg[f, s, SEG_ARRIVE] = math.inf
    sg[f, s, SEG_HOLE] = -1.0
    sg[f, s, SEG_FILL] = fill
    sg[f, s, SEG_FILL_BYTES] = 0.0
    sg[f, s, SEG_LOST] = 0.0
    sg[f, s, SEG_SPUR] = 0.0
    sg[f, s, SEG_SPUR_LEAD] = 0.0
    sg[f, s, SEG_NEW] = 0.0
    sg[f, s, SEG_COPY] = 0.0
    sg[f, s, SEG_COPY_LOST] = 0.0
    sg[f, s, SEG_INDIRECT] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def _store_segment(sg, f, s, nbytes, lost, new, seq, pos):
    sg[f, s, SEG_BYTES] = nbytes
    sg[f, s, SEG_LOST] = lost
    sg[f, s, SEG_NEW] = new
    sg[f, s, SEG_SEQ] = seq
    sg[f, s, SEG_POS] = pos


@njit(cache=True, _nrt=False)
def _new_segment(f, t, o, sg, si, enq, seq, fill, first):
    """Open a segment at the FIFO tail; -1 when the flow's FIFO is full."""
    Q = sg.shape[1]
    tl = si[f, SI_TAIL]
    if tl - si[f, SI_HEAD] >= Q:
        return -1
    s = tl & (Q - 1)
    _init_segment(sg, f, s, seq, enq, t, o[f, OBS_ACKED], first, fill)
    si[f, SI_TAIL] = tl + 1
    return s


# --------------------------------------------------------------------------- hole table
# Every operation below keeps the lists of layout.py (holes in use in sequence order, holes
# pending retransmission, holes with a detection scheduled) in step with the table, so that
# the lowest hole, the lowest pending hole and the due detections are found without scanning
# every slot up to CN_HOLES_HI (hundreds with several lossy paths). Results are exactly those of
# the scans: minima are order-free, and due detections are still processed in slot order.


@njit(inline="always", cache=True, _nrt=False)
def _list_add(c, ho, k, n_col, pos_col, list_col):
    n = int(c[n_col])
    ho[n, list_col] = k
    ho[k, pos_col] = n
    c[n_col] = n + 1


@njit(inline="always", cache=True, _nrt=False)
def _list_del(c, ho, k, n_col, pos_col, list_col):
    i = int(ho[k, pos_col])
    if i >= 0:
        n = int(c[n_col]) - 1
        last = ho[n, list_col]
        ho[i, list_col] = last
        ho[int(last), pos_col] = i
        ho[k, pos_col] = -1.0
        c[n_col] = n


@njit(cache=True, _nrt=False)
def _link_live(c, ho, k):
    """Insert hole k into the list of holes in use, in sequence order (new holes carry the
    highest sequence sent so far, so this appends)."""
    seq = ho[k, HOLE_SEQ]
    p = int(c[CN_LIVE_TAIL])
    while p >= 0 and ho[p, HOLE_SEQ] > seq:
        p = int(ho[p, HOLE_PREV])
    if p < 0:
        nx = int(c[CN_LIVE_HEAD])
        c[CN_LIVE_HEAD] = k
    else:
        nx = int(ho[p, HOLE_NEXT])
        ho[p, HOLE_NEXT] = k
    ho[k, HOLE_PREV] = p
    ho[k, HOLE_NEXT] = nx
    if nx < 0:
        c[CN_LIVE_TAIL] = k
    else:
        ho[nx, HOLE_PREV] = k
    ho[k, HOLE_LINKED] = 1.0


@njit(inline="always", cache=True, _nrt=False)
def _hole_min(c, ho):
    """Lowest sequence of the holes in use (inf if none)."""
    k = int(c[CN_LIVE_HEAD])
    return ho[k, HOLE_SEQ] if k >= 0 else math.inf


@njit(inline="always", cache=True, _nrt=False)
def _add_pending(c, ho, k, amount):
    """Detected bytes of hole k join its retransmission queue."""
    ho[k, HOLE_PENDING] += amount
    c[CN_PENDING] += amount
    if ho[k, HOLE_PENDING] > EPS and ho[k, HOLE_PPOS] < 0.0:
        _list_add(c, ho, k, CN_N_PEND, HOLE_PPOS, HOLE_PLIST)


@njit(inline="always", cache=True, _nrt=False)
def _schedule_detection(c, ho, k, due):
    ho[k, HOLE_DETECT_AT] = due
    _list_add(c, ho, k, CN_N_DET, HOLE_DPOS, HOLE_DLIST)
    if due < c[CN_NEXT_DETECT]:
        c[CN_NEXT_DETECT] = due


@njit(inline="always", cache=True, _nrt=False)
def _cancel_detection(c, ho, k):
    ho[k, HOLE_DETECT_AT] = -1.0
    _list_del(c, ho, k, CN_N_DET, HOLE_DPOS, HOLE_DLIST)


@njit(cache=True, _nrt=False)
def _detect_due(t, c, ho):
    """Declare the losses whose detection is due at step t, in slot order (the order of the
    additions to CN_PENDING), and note the next detection time. One pass moves the due entries
    to the end of the detection list, sorted so that the lowest slot comes last; each is then
    the list's last entry when it leaves it (the list's order is otherwise free)."""
    n = int(c[CN_N_DET])
    due = 0
    nxt = math.inf
    i = 0
    while i < n - due:
        k = int(ho[i, HOLE_DLIST])
        da = ho[k, HOLE_DETECT_AT]
        if da <= t:
            due += 1
            _list_swap(ho, i, n - due)
        else:
            if da < nxt:
                nxt = da
            i += 1
    lo = n - due
    for a in range(lo + 1, n):  # insertion sort of the due entries, highest slot first
        j = a
        while j > lo and ho[j - 1, HOLE_DLIST] < ho[j, HOLE_DLIST]:
            _list_swap(ho, j - 1, j)
            j -= 1
    for a in range(n - 1, lo - 1, -1):
        k = int(ho[a, HOLE_DLIST])
        _add_pending(c, ho, k, ho[k, HOLE_UNDET])
        ho[k, HOLE_UNDET] = 0.0
        _cancel_detection(c, ho, k)
    c[CN_NEXT_DETECT] = nxt


@njit(inline="always", cache=True, _nrt=False)
def _list_swap(ho, i, j):
    """Swap entries i and j of the detection list."""
    ki = ho[i, HOLE_DLIST]
    kj = ho[j, HOLE_DLIST]
    ho[i, HOLE_DLIST] = kj
    ho[int(kj), HOLE_DPOS] = i
    ho[j, HOLE_DLIST] = ki
    ho[int(ki), HOLE_DPOS] = j


@njit(cache=True, _nrt=False)
def _free_hole(k, c, ho):
    """All of hole k arrived. (A late copy of a retransmission can free a hole twice.)"""
    if ho[k, HOLE_LINKED] > 0.0:
        p = int(ho[k, HOLE_PREV])
        nx = int(ho[k, HOLE_NEXT])
        if p < 0:
            c[CN_LIVE_HEAD] = nx
        else:
            ho[p, HOLE_NEXT] = nx
        if nx < 0:
            c[CN_LIVE_TAIL] = p
        else:
            ho[nx, HOLE_PREV] = p
        ho[k, HOLE_LINKED] = 0.0
    _list_del(c, ho, k, CN_N_PEND, HOLE_PPOS, HOLE_PLIST)
    _list_del(c, ho, k, CN_N_DET, HOLE_DPOS, HOLE_DLIST)
    if k < c[CN_FREE_HINT]:
        c[CN_FREE_HINT] = k
    ho[k, HOLE_REM] = 0.0
    ho[k, HOLE_UNDET] = 0.0
    ho[k, HOLE_PENDING] = 0.0
    ho[k, HOLE_DETECT_AT] = -1.0
    hi = int(c[CN_HOLES_HI])
    while hi > 0 and ho[hi - 1, HOLE_REM] <= 0.0:
        hi -= 1
    c[CN_HOLES_HI] = hi


@njit(cache=True, _nrt=False)
def _alloc_hole(c, ho):
    """The lowest free slot (-1 when the table is full)."""
    hi = int(c[CN_HOLES_HI])
    k = int(c[CN_FREE_HINT])
    while k < hi and ho[k, HOLE_REM] > 0.0:
        k += 1
    if k >= hi:
        if hi >= ho.shape[0]:
            c[CN_FREE_HINT] = hi
            return -1
        k = hi
        c[CN_HOLES_HI] = hi + 1
    c[CN_FREE_HINT] = k + 1
    return k


@njit(cache=True, _nrt=False)
def _lose_new_data(f, sg, s, c, ho, seq, size):
    """Bytes of new data lost from segment s: they join (or open) the segment's hole."""
    hh = int(sg[f, s, SEG_HOLE])
    if hh < 0:
        hh = _alloc_hole(c, ho)
        if hh < 0:  # hole table full: extend the newest hole (approximation)
            hh = int(c[CN_HOLES_HI]) - 1
        else:
            ho[hh, HOLE_SEQ] = seq
            ho[hh, HOLE_DETECT_AT] = -1.0
            _link_live(c, ho, hh)
        sg[f, s, SEG_HOLE] = hh
    ho[hh, HOLE_REM] += size
    ho[hh, HOLE_UNDET] += size
    ho[hh, HOLE_FLOW] = f


@njit(cache=True, _nrt=False)
def _lowest_pending(c, ho):
    """The hole of lowest sequence (lowest slot on a tie) waiting for retransmission, -1 none."""
    fill = -1
    best = math.inf
    for i in range(int(c[CN_N_PEND])):
        k = int(ho[i, HOLE_PLIST])
        sq = ho[k, HOLE_SEQ]
        if sq < best or (sq == best and k < fill):
            best = sq
            fill = k
    return fill


@njit(inline="always", cache=True, _nrt=False)
def _random_loss(loss, left, rng, b):
    """Whether the path's random loss (probability ``loss`` per packet, independently) takes the
    next packet entering it, and the packets left until the next loss. The gaps between losses
    are Geometric(loss), drawn once per loss (inversion, Devroye 1986, X.2) instead of one
    uniform per packet. Returns (lost, left)."""
    if left <= 0.0:
        left = max(math.ceil(math.log(1.0 - uniform(rng, b)) / math.log1p(-loss)), 1.0)
    return left <= 1.0, left - 1.0


@njit(inline="always", cache=True, _nrt=False)
def _pending_hole(c, ho):
    """The hole whose retransmission is sent next (the lowest pending; -1: none), as
    ``_send_packet`` and ``_enqueue`` take connection data: retransmissions first."""
    if c[CN_PENDING] <= EPS:
        return -1
    fill = _lowest_pending(c, ho)
    if fill < 0:  # bookkeeping drift: nothing is really pending
        c[CN_PENDING] = 0.0
    return fill


@njit(cache=True, _nrt=False)
def _send_packet(b, f, t, o, fb, bnb, c, sg, si, ho, rng, mss, kind, seq3, fill3, size3):
    """Send one packet on flow f. kind 0: connection data (retransmission first, else new data);
    1: a copy or a spurious resend that carries nothing new; 2: a competing flow's packet; 3: a
    packet of the path's schedule buffer (``_release``), ``size3`` bytes of hole ``fill3`` (-1:
    new data) from ``seq3``, taken from the connection's queue when it was scheduled; 4: a copy
    the path's schedule buffer held (``_release``), ``size3`` bytes, sent as kind 1.
    Returns the bytes sent (0 when nothing could be sent). ``_burst`` is the same, packet for
    packet, for runs of packets on one flow without retransmissions. It takes the arrays it uses
    flat, not the ``Connection``: it is called per packet and not inlined, and a record passed by
    value is every field's pointer, shape and strides (about 180 words) per call."""
    Q = sg.shape[1]
    p = int(fb[f, FL_PATH])
    fill = -1
    seq = math.inf
    size = mss
    if kind == 0:
        fill = _pending_hole(c, ho)
        if fill >= 0:
            size = min(mss, ho[fill, HOLE_PENDING])
            seq = ho[fill, HOLE_SEQ]
        else:
            limit = min(c[CN_SND_LIMIT], c[CN_ACKED_EDGE] + c[CN_RCVBUF])
            size = min(mss, limit - c[CN_SND_NXT])
            if size <= EPS:
                return 0.0
            seq = c[CN_SND_NXT]
    elif kind == 3:
        seq, fill, size = seq3, fill3, size3
    elif kind == 4:
        size = size3
    # the tail segment takes the packet if it was opened this step for the same hole (or for no
    # hole: new data, copies and spurious resends share segments) and holds less than one step of bottleneck service, unless the FIFO is full (fidelity
    # fix: a whole-window burst in one segment departed, and was ACKed, only when its last byte
    # left the queue, which broke ACK clocking and halved unpaced CCs' throughput at 1 BDP)
    tl = si[f, SI_TAIL]
    s = -1
    if tl > si[f, SI_DEP]:
        last = (tl - 1) & (Q - 1)
        room = sg[f, last, SEG_BYTES] + sg[f, last, SEG_LOST] < max(bnb[p, BN_CAP], mss) - EPS \
            or tl - si[f, SI_HEAD] >= Q
        if room and sg[f, last, SEG_SENT] == t and int(sg[f, last, SEG_FILL]) == fill:
            s = last
    if s < 0:
        s = _new_segment(f, t, o, sg, si, bnb[p, BN_ENQ], seq, float(fill), fb[f, FL_FIRST_SENT])
        if s < 0:
            return 0.0
    if kind == 0:
        if fill >= 0:
            ho[fill, HOLE_PENDING] -= size
            if ho[fill, HOLE_PENDING] <= EPS:
                _list_del(c, ho, fill, CN_N_PEND, HOLE_PPOS, HOLE_PLIST)
            c[CN_PENDING] = max(c[CN_PENDING] - size, 0.0)
            o[f, OBS_RETRANS] += 1.0
        else:
            c[CN_SND_NXT] += size
    elif kind == 1 or (kind == 3 and fill >= 0):  # a copy of a spurious declaration is one too
        o[f, OBS_RETRANS] += 1.0
    # the network: random loss on the way in, then the drop-tail buffer
    q = bnb[p, BN_ENQ] - bnb[p, BN_DEQ]
    lost = False
    if bnb[p, BN_LOSS] > 0.0:
        lost, left = _random_loss(bnb[p, BN_LOSS], bnb[p, BN_LOSS_NEXT], rng, b)
        bnb[p, BN_LOSS_NEXT] = left
    if not lost and fb[f, FL_XLOSS] > 0.0:  # the route's transit links (envs/network.py)
        lost, left = _random_loss(fb[f, FL_XLOSS], fb[f, FL_XLOSS_NEXT], rng, b)
        fb[f, FL_XLOSS_NEXT] = left
    if not lost and q + size > bnb[p, BN_QCAP] + EPS:
        lost = True
        bnb[p, BN_DROPPED] += size
    if kind >= 3:  # committed when it was scheduled: it moves from the buffer to the wire
        fb[f, FL_SCHED] = max(fb[f, FL_SCHED] - size, 0.0)
    else:
        o[f, OBS_INFLIGHT] += size
    o[f, OBS_SENT] += size
    fb[f, FL_PACE_CREDIT] -= size
    fb[f, FL_SENT_PKTS] += 1.0
    if lost:
        fb[f, FL_LOST_PKTS] += 1.0
        sg[f, s, SEG_LOST] += size
        if kind == 1:
            # a copy of a spurious declaration: its original arrived, so the stack never declares
            # it lost, it only leaves the flight (XQUIC xqc_send_ctl_indirectly_ack_or_drop_po: a
            # packet whose po_origin is acknowledged; Linux: the retransmitted skb is SACKed)
            sg[f, s, SEG_COPY_LOST] += size
        else:
            fb[f, FL_LOST_UNNOTIFIED] += size
        if kind == 0 or kind == 3:
            if fill >= 0:
                ho[fill, HOLE_UNDET] += size
                ho[fill, HOLE_FLOW] = f
                sg[f, s, SEG_HOLE] = fill
            else:
                _lose_new_data(f, sg, s, c, ho, seq, size)
    else:
        bnb[p, BN_ENQ] += size
        sg[f, s, SEG_BYTES] += size
        sg[f, s, SEG_POS] = bnb[p, BN_ENQ]
        if kind == 0 or kind == 3:
            if fill >= 0:
                sg[f, s, SEG_FILL_BYTES] += size
            else:
                sg[f, s, SEG_NEW] += size
                if seq < sg[f, s, SEG_SEQ] or sg[f, s, SEG_NEW] == size:
                    sg[f, s, SEG_SEQ] = seq
        elif kind == 1:
            sg[f, s, SEG_COPY] += size
    _update_available(o, fb, f, mss)
    return size


@njit(inline="always", cache=True, _nrt=False)
def _can_send(o, fb, f, mss):
    """Whether ``_burst`` may send flow f's first packet (unless it is free): window room over what
    is in flight and pacing credit with a path buffer (OBS_AVAILABLE does not say whether the pacer
    lets a packet out now), else OBS_AVAILABLE. A burst that may not sends nothing and changes nothing."""
    if fb[f, FL_BUFFERED] > 0.0:
        return (o[f, OBS_INFLIGHT] - fb[f, FL_SCHED] + mss <= o[f, OBS_CWND] + EPS) \
            & (fb[f, FL_PACE_CREDIT] >= mss - EPS) & (fb[f, FL_ACTIVE] > 0.0)
    return o[f, OBS_AVAILABLE] > 0.0


@njit(cache=True, _nrt=False, forceinline=True)
def _burst(b, f, t, conn, mss, kind, first_free, maxpk, budget, seq3):
    """``_burst_packets`` with its integers and flag passed on as plain values: numba compiles a
    function once for every set of literal arguments it is called with (each caller's constant
    ``kind``), so its large body would be compiled once per caller on its own, beside its inlined
    copies (LLVM still folds each caller's constants into its copy)."""
    return _burst_packets(b, f, t, conn, mss, np.int64(kind), np.bool_(first_free), np.int64(maxpk), budget, seq3)


@njit(cache=True, _nrt=False, forceinline=True)
def _burst_packets(b, f, t, conn, mss, kind, first_free, maxpk, budget, seq3):
    """Send up to ``maxpk`` packets on flow f while it stays available, exactly as the same
    number of ``_send_packet`` calls would, with the flow's, path's and connection's counters in
    registers. kind 0: new connection data (the caller made sure no retransmission is pending;
    sending cannot make one pending), the first packet sent whatever the window (as a pick
    would), later ones while the backlog lasts; 1: spurious resends while ``budget`` (bytes)
    lasts; 2: a competing flow's packets; 3: the new data the path's schedule buffer holds from
    ``seq3``, ``budget`` bytes (``_release``). Sending needs window room over what is in flight and
    pacing credit. Returns (packets sent, whether a send failed, remaining budget)."""
    o, fb, bnb, c, sg, si, ho, rng = conn.obs, conn.fl, conn.bn, conn.cn, conn.seg, conn.segi, conn.hole, conn.rng
    Q = sg.shape[1]
    p = int(fb[f, FL_PATH])
    cwnd_eps = o[f, OBS_CWND] + EPS
    mss_eps = mss - EPS
    active = fb[f, FL_ACTIVE] > 0.0
    sched = fb[f, FL_SCHED]  # committed to the path, not yet sent (0 without a path buffer)
    inflight = o[f, OBS_INFLIGHT] - sched
    sent_b = o[f, OBS_SENT]
    deliv = o[f, OBS_ACKED]
    first = fb[f, FL_FIRST_SENT]
    credit = fb[f, FL_PACE_CREDIT]
    sent_pk = fb[f, FL_SENT_PKTS]
    lost_pk = fb[f, FL_LOST_PKTS]
    lost_un = fb[f, FL_LOST_UNNOTIFIED]
    enq = bnb[p, BN_ENQ]
    deq = bnb[p, BN_DEQ]
    qcap_eps = bnb[p, BN_QCAP] + EPS
    loss = bnb[p, BN_LOSS]
    loss_next = bnb[p, BN_LOSS_NEXT]
    xloss = fb[f, FL_XLOSS]
    xloss_next = fb[f, FL_XLOSS_NEXT]
    room_lim = max(bnb[p, BN_CAP], mss) - EPS
    dropped = bnb[p, BN_DROPPED]
    snd_nxt = c[CN_SND_NXT]
    limit = min(c[CN_SND_LIMIT], c[CN_ACKED_EDGE] + c[CN_RCVBUF])
    pending = c[CN_PENDING]
    head = si[f, SI_HEAD]
    dep = si[f, SI_DEP]
    tl = si[f, SI_TAIL]
    ls = (tl - 1) & (Q - 1)  # slot of the tail segment
    # the tail segment's fields live in registers while packets join it (written back on leaving)
    cached = tl > dep and sg[f, ls, SEG_SENT] == t and int(sg[f, ls, SEG_FILL]) == -1
    seg_bytes = sg[f, ls, SEG_BYTES] if cached else 0.0
    seg_lost = sg[f, ls, SEG_LOST] if cached else 0.0
    seg_new = sg[f, ls, SEG_NEW] if cached else 0.0
    # copies' bytes only in a burst of copies (kind 1; the other kinds' inlined copies drop them)
    seg_copy = sg[f, ls, SEG_COPY] if cached and kind == 1 else 0.0
    seg_copy_lost = sg[f, ls, SEG_COPY_LOST] if cached and kind == 1 else 0.0
    seg_seq = sg[f, ls, SEG_SEQ] if cached else 0.0
    seg_pos = sg[f, ls, SEG_POS] if cached else 0.0
    buffered = fb[f, FL_BUFFERED] > 0.0
    avail = _can_send(o, fb, f, mss)
    n = 0
    failed = False
    seq = math.inf
    size = mss
    while n < maxpk:
        if kind == 0:
            if n > 0:  # the checks a new pick would make
                if pending + max(limit - snd_nxt, 0.0) <= EPS or not avail:
                    break
            elif not first_free and not avail:
                break
            size = min(mss, limit - snd_nxt)
            if size <= EPS:
                failed = True
                break
            seq = snd_nxt
        else:
            if not avail or (kind != 2 and not budget > EPS):
                break
            if kind == 3:
                size = min(mss, budget)
                seq = seq3
                seq3 += size
        # as in _send_packet: new data and spurious resends share segments
        if not (cached and (seg_bytes + seg_lost < room_lim or tl - head >= Q)):
            if tl - head >= Q:
                failed = True
                break
            if cached:
                _store_segment(sg, f, ls, seg_bytes, seg_lost, seg_new, seg_seq, seg_pos)
                if kind == 1:
                    sg[f, ls, SEG_COPY] = seg_copy
                    sg[f, ls, SEG_COPY_LOST] = seg_copy_lost
            ls = (ls + 1) & (Q - 1)
            _init_segment(sg, f, ls, seq, enq, t, deliv, first, -1.0)
            tl += 1
            cached = True
            seg_bytes, seg_lost, seg_new, seg_copy, seg_copy_lost, seg_seq, seg_pos = 0.0, 0.0, 0.0, 0.0, 0.0, seq, enq
        if kind == 0:
            snd_nxt += size
        elif kind == 3:
            sched = max(sched - size, 0.0)
        q = enq - deq
        lost = False
        if loss > 0.0:
            lost, loss_next = _random_loss(loss, loss_next, rng, b)
        if not lost and xloss > 0.0:
            lost, xloss_next = _random_loss(xloss, xloss_next, rng, b)
        if not lost and q + size > qcap_eps:
            lost = True
            dropped += size
        inflight += size
        sent_b += size
        credit -= size
        sent_pk += 1.0
        if lost:
            lost_pk += 1.0
            seg_lost += size
            if kind == 1:  # its original arrived: never declared (see _send_packet)
                seg_copy_lost += size
            else:
                lost_un += size
            if kind == 0 or kind == 3:
                _lose_new_data(f, sg, ls, c, ho, seq, size)
        else:
            enq += size
            seg_bytes += size
            seg_pos = enq
            if kind == 0 or kind == 3:
                seg_new += size
                if seq < seg_seq or seg_new == size:
                    seg_seq = seq
            elif kind == 1:
                seg_copy += size
        avail = (inflight + mss <= cwnd_eps) & (credit >= mss_eps) & active
        n += 1
        if kind == 1 or kind == 3:
            budget = max(budget - size, 0.0)
    if n > 0:
        _store_segment(sg, f, ls, seg_bytes, seg_lost, seg_new, seg_seq, seg_pos)
        if kind == 1:
            sg[f, ls, SEG_COPY] = seg_copy
            sg[f, ls, SEG_COPY_LOST] = seg_copy_lost
        o[f, OBS_INFLIGHT] = inflight + sched
        o[f, OBS_SENT] = sent_b
        if kind == 1:  # copies of spurious declarations (as _send_packet counts them)
            o[f, OBS_RETRANS] += n
        if buffered:
            fb[f, FL_SCHED] = sched
            avail = (inflight + sched + mss <= cwnd_eps) & active
        o[f, OBS_AVAILABLE] = 1.0 if avail else 0.0
        fb[f, FL_PACE_CREDIT] = credit
        fb[f, FL_SENT_PKTS] = sent_pk
        fb[f, FL_LOST_PKTS] = lost_pk
        fb[f, FL_LOST_UNNOTIFIED] = lost_un
        bnb[p, BN_ENQ] = enq
        bnb[p, BN_DROPPED] = dropped
        bnb[p, BN_LOSS_NEXT] = loss_next
        fb[f, FL_XLOSS_NEXT] = xloss_next
        c[CN_SND_NXT] = snd_nxt
        si[f, SI_TAIL] = tl
    return n, failed, budget


@njit(inline="always", cache=True, _nrt=False)
def _scheduled_min(fb, f):
    """The lowest sequence of the new data in flow f's schedule buffer (inf: none)."""
    low = math.inf
    for j in range(int(fb[f, FL_SQ_N])):
        col = FL_SQ + ((int(fb[f, FL_SQ_HEAD]) + j) & (SQ_K - 1)) * SQ_W
        if fb[f, col + SQ_FILL] == SQ_NEW and fb[f, col + SQ_BYTES] > 0.0:
            low = min(low, fb[f, col + SQ_SEQ])
    return low


@njit(cache=True, _nrt=False, forceinline=True)
def _enqueue(f, o, fb, c, ho, mss, maxpk):
    """Schedule up to ``maxpk`` packets of connection data (retransmissions first, as
    ``_send_packet`` takes them) on flow f's schedule buffer, the first one whatever the window
    (as a pick would), later ones while what is committed to the path leaves room for one more
    in its window (XQUIC: xqc_conn_schedule_packets_to_paths with
    xqc_scheduler_check_path_can_send). Their sequence is fixed now: XQUIC frames stream data
    before it schedules the packet. New data joins the newest range when it continues it; a full
    ring (SQ_K ranges) takes new data into its newest new-data range (its packets then leave
    numbered from that range's start, so the receiver's in-order point can only lag) and refuses
    a retransmission. Returns the packets scheduled."""
    n = 0
    while n < maxpk:
        room = math.floor((o[f, OBS_CWND] + EPS - o[f, OBS_INFLIGHT]) / mss)
        if n > 0 and (room < 1.0 or fb[f, FL_ACTIVE] <= 0.0):
            break
        fill = _pending_hole(c, ho)
        if fill >= 0:
            size = min(mss, ho[fill, HOLE_PENDING])
            seq = ho[fill, HOLE_SEQ]
            npk = 1.0
        else:
            limit = min(c[CN_SND_LIMIT], c[CN_ACKED_EDGE] + c[CN_RCVBUF])
            npk = min(max(room, 1.0), float(maxpk - n))
            size = min(npk * mss, limit - c[CN_SND_NXT])
            if size <= EPS:
                break
            seq = c[CN_SND_NXT]
            npk = math.ceil(size / mss - EPS)
        if not _ring_add(fb, f, seq, size, float(fill)):
            break
        if fill >= 0:
            ho[fill, HOLE_PENDING] -= size
            if ho[fill, HOLE_PENDING] <= EPS:
                _list_del(c, ho, fill, CN_N_PEND, HOLE_PPOS, HOLE_PLIST)
            c[CN_PENDING] = max(c[CN_PENDING] - size, 0.0)
        else:
            c[CN_SND_NXT] += size
        o[f, OBS_INFLIGHT] += size
        fb[f, FL_SCHED] += size
        n += int(npk)
    _update_available(o, fb, f, mss)
    return n


@njit(inline="always", cache=True, _nrt=False)
def _pacer_holds(fb, f, mss):
    """Whether a packet given to flow f waits in its schedule buffer (a stack with one, XQUIC's
    path_schedule_buf) rather than leaving now: the buffer already holds packets, which leave
    first, or the path's pacer has no credit for one more."""
    return fb[f, FL_BUFFERED] > 0.0 and (fb[f, FL_SCHED] > 0.0 or fb[f, FL_PACE_CREDIT] < mss - EPS)


@njit(cache=True, _nrt=False)
def _enqueue_copy(f, o, fb, mss):
    """Schedule a copy of the packet just given to another path (a scheduler that picks several
    paths, ``redundant``) on flow f's schedule buffer, behind what it holds, to leave as its pacer
    and window allow as any packet does: XQUIC's copies of a packet for other paths
    (``xqc_reinjection.c`` ``xqc_conn_try_reinject_packet``: a path from the scheduler's
    ``get_path`` with the window checked, then ``xqc_path_send_buffer_append`` to the path's
    ``path_reinj_tmp_buf``, which ``xqc_conn_reinject_unack_packets`` moves to the back of its
    ``path_schedule_buf``) count in ``path_schedule_bytes`` and leave through
    ``xqc_path_send_packets``, not at once. The copy carries nothing new (as ``_send_packet``'s
    kind 1). Returns the bytes scheduled (0: the ring is full, no copy)."""
    if not _ring_add(fb, f, math.inf, mss, SQ_COPY):
        return 0.0
    o[f, OBS_INFLIGHT] += mss
    fb[f, FL_SCHED] += mss
    _update_available(o, fb, f, mss)
    return mss


@njit(inline="always", cache=True, _nrt=False)
def _ring_put(fb, f, slot, seq, size, fill):
    """Write a new range into slot ``slot`` (mod SQ_K) of flow f's schedule buffer, one more range held."""
    col = FL_SQ + (slot & (SQ_K - 1)) * SQ_W
    fb[f, col + SQ_SEQ] = seq
    fb[f, col + SQ_BYTES] = size
    fb[f, col + SQ_FILL] = fill
    fb[f, FL_SQ_N] += 1.0


@njit(inline="always", cache=True, _nrt=False)
def _ring_add(fb, f, seq, size, fill):
    """Add a range to flow f's schedule buffer (see ``_enqueue``); False when it is refused. New
    data and copies (``_enqueue_copy``) go to the back, joining the newest range when it is new
    data they continue or copies; a retransmission after the retransmissions already there,
    ahead of the rest (XQUIC keeps a path's lost packets in their own buffer, sent first)."""
    k = int(fb[f, FL_SQ_N])
    head = int(fb[f, FL_SQ_HEAD])
    if fill >= 0.0:
        pos = 0  # ranges ahead: the retransmissions already held
        while pos < k and fb[f, FL_SQ + ((head + pos) & (SQ_K - 1)) * SQ_W + SQ_FILL] >= 0.0:
            pos += 1
        if pos > 0:
            col = FL_SQ + ((head + pos - 1) & (SQ_K - 1)) * SQ_W
            if fb[f, col + SQ_FILL] == fill:
                fb[f, col + SQ_BYTES] += size
                return True
        if k == SQ_K:
            return False
        for j in range(k, pos, -1):  # make room: the new data behind moves back one range
            dst = FL_SQ + ((head + j) & (SQ_K - 1)) * SQ_W
            src = FL_SQ + ((head + j - 1) & (SQ_K - 1)) * SQ_W
            for w in range(SQ_W):
                fb[f, dst + w] = fb[f, src + w]
        _ring_put(fb, f, head + pos, seq, size, fill)
        return True
    if k > 0:
        col = FL_SQ + ((head + k - 1) & (SQ_K - 1)) * SQ_W
        joins = fb[f, col + SQ_FILL] == fill and (fill == SQ_COPY or abs(fb[f, col + SQ_SEQ] + fb[f, col + SQ_BYTES] - seq) < EPS)
        if joins or (k == SQ_K and fill == SQ_NEW and fb[f, col + SQ_FILL] == SQ_NEW):
            fb[f, col + SQ_BYTES] += size
            return True
        if k == SQ_K:
            return False
    _ring_put(fb, f, head + k, seq, size, fill)
    return True


@njit(cache=True, _nrt=False, forceinline=True)
def _release(b, f, t, conn, mss):
    """Flow f's schedule buffer leaves in order while its window (over what is in flight) and its
    pacer allow (XQUIC's xqc_path_send_packets with xqc_send_packet_check_cc); new data as a
    ``_burst``, a retransmission or a copy packet by packet. At a timeout the buffer stays on the path, as
    XQUIC's path_schedule_buf does (only closing or freezing the path returns it)."""
    o, fb = conn.obs, conn.fl
    while fb[f, FL_SQ_N] > 0.0:
        col = FL_SQ + int(fb[f, FL_SQ_HEAD]) * SQ_W
        nbytes = fb[f, col + SQ_BYTES]
        fill = int(fb[f, col + SQ_FILL])
        if fill == SQ_NEW:
            left = nbytes
            if _can_send(o, fb, f, mss):
                _, _, left = _burst(b, f, t, conn, mss, 3, False, MAX_PACKETS_PER_STEP, nbytes, fb[f, col + SQ_SEQ])
                fb[f, col + SQ_SEQ] += nbytes - left
        else:
            kind = 3 if fill >= 0 else 4
            left = nbytes
            while left > EPS and (o[f, OBS_INFLIGHT] - fb[f, FL_SCHED] + mss <= o[f, OBS_CWND] + EPS) \
                    and fb[f, FL_PACE_CREDIT] >= mss - EPS and fb[f, FL_ACTIVE] > 0.0:
                sent = _send_packet(b, f, t, o, fb, conn.bn, conn.cn, conn.seg, conn.segi, conn.hole, conn.rng, mss,
                                    kind, fb[f, col + SQ_SEQ], fill, min(mss, left))
                if sent <= 0.0:
                    break
                left -= sent
        if left > EPS:
            fb[f, col + SQ_BYTES] = left
            break
        fb[f, col + SQ_BYTES] = 0.0
        fb[f, FL_SQ_HEAD] = float((int(fb[f, FL_SQ_HEAD]) + 1) & (SQ_K - 1))
        fb[f, FL_SQ_N] -= 1.0
    if fb[f, FL_SQ_N] == 0.0:  # what the buffer held is on the wire: no rounding left behind
        fb[f, FL_SCHED] = 0.0
    _update_available(o, fb, f, mss)


@njit(cache=True, _nrt=False, forceinline=True)
def _schedule(b, snd, t, conn, prm, st, mss, nsub):
    """Per-packet scheduling of the connection's data. Returns PAUSE_DECISION when the agent
    must answer (blocked mode), else PAUSE_NONE. The scheduler draws from the sender stream
    ``snd``; the network's loss draws on the way out use the network stream ``b``."""
    o, co, fb, c, rng = conn.obs, conn.cobs, conn.fl, conn.cn, conn.rng
    sid = int(c[CN_SCHED])
    # spurious resends go out on the flow that declared them, ahead of new data (with a path
    # buffer, ahead of what it holds: XQUIC sends a path's lost packets before its new data,
    # xqc_engine.c xqc_conn_retransmit_lost_packets before xqc_conn_send_packets; _burst checks
    # the window over what is in flight and the pacer)
    for f in range(nsub):
        if fb[f, FL_SPUR_PENDING] > EPS and _can_send(o, fb, f, mss):
            _, _, left = _burst(b, f, t, conn, mss, 1, False, MAX_PACKETS_PER_STEP, fb[f, FL_SPUR_PENDING], 0.0)
            fb[f, FL_SPUR_PENDING] = left
    # then what the paths' schedule buffers hold, as their pacers and windows allow
    for f in range(nsub):
        if fb[f, FL_SCHED] > 0.0:
            _release(b, f, t, conn, mss)
    blocked = c[CN_BLOCKED] > 0.0
    sticky = blocked or burst(sid)  # the same single path until it is blocked (see _burst)
    # while the stack sets paths up, an unopened path looks unavailable with an infinite RTT to the
    # scheduler and the blocked rule, as bindings/ shows XQUIC's rules the paths not yet active (its
    # srtt, restored below, is twice its rttvar until its first sample: reset_connection and
    # StackProfile.unsampled_rtt set both so)
    opening = t < c[CN_PATHS_READY]
    if opening:
        for f in range(1, nsub):
            if fb[f, FL_ACTIVE] == 0.0:
                o[f, OBS_SRTT] = math.inf
    it = 0
    while it < MAX_PACKETS_PER_STEP:
        backlog = c[CN_PENDING] + max(min(c[CN_SND_LIMIT], c[CN_ACKED_EDGE] + c[CN_RCVBUF])
                                      - c[CN_SND_NXT], 0.0)
        co[COBS_BACKLOG] = backlog
        co[COBS_RWND] = max(c[CN_ACKED_EDGE] + c[CN_RCVBUF] - c[CN_SND_NXT], 0.0)  # as sent so far
        if backlog <= EPS:
            break
        if blocked:
            fast, second, fast_blocked = blocked_rule(o, nsub)
            if not fast_blocked:
                mask = 1 << fast
            else:
                if second < 0:
                    break
                advise = c[CN_ADVISE]
                if advise < 0.0:
                    if opening:
                        _unmask_unopened(o, fb, nsub)
                    return PAUSE_DECISION
                if advise == 0.0:
                    break
                mask = 1 << second
        else:
            mask = pick(sid, prm, st, o, co, nsub, mss, rng, snd)
        if mask == 0:
            break
        if (mask & (mask - 1)) == 0:
            i = 0
            while (mask >> i) != 1:
                i += 1
            if _pacer_holds(fb, i, mss):  # scheduled on the path, behind what it holds already
                n = _enqueue(i, o, fb, c, conn.hole, mss, MAX_PACKETS_PER_STEP - it if sticky else 1)
                if n == 0:
                    break
                it += n
                continue
            if c[CN_PENDING] <= EPS:
                n, failed, _ = _burst(b, i, t, conn, mss, 0, True, MAX_PACKETS_PER_STEP - it if sticky else 1, 0.0,
                                      0.0)
                if failed:
                    break
                it += n
                continue
        # several paths (redundant): the first takes the packet, the others a copy; a path whose
        # pacer holds it schedules its packet or copy behind what it holds (_enqueue_copy)
        first = True
        progressed = False
        for i in range(nsub):
            if mask & (1 << i):
                if _pacer_holds(fb, i, mss):
                    if first:
                        sent = float(_enqueue(i, o, fb, c, conn.hole, mss, 1))
                    else:
                        sent = _enqueue_copy(i, o, fb, mss)
                else:
                    sent = _send_packet(b, i, t, o, fb, conn.bn, c, conn.seg, conn.segi, conn.hole, rng, mss,
                                        0 if first else 1, 0.0, -1, 0.0)
                progressed = progressed or sent > 0.0
                first = False
        if not progressed:
            break
        it += 1
    if opening:
        _unmask_unopened(o, fb, nsub)
    return PAUSE_NONE


@njit(inline="always", cache=True, _nrt=False)
def _unmask_unopened(o, fb, nsub):
    """An unopened path's srtt back from infinity (see _schedule)."""
    for f in range(1, nsub):
        if fb[f, FL_ACTIVE] == 0.0:
            o[f, OBS_SRTT] = 2.0 * o[f, OBS_RTTVAR]


@njit(cache=True, _nrt=False, forceinline=True)
def _competing_and_udp(b, t, conn, mss, stks, nsub, nflows):
    """Competing flows send what their windows (and an arriving flow's size) allow, the resends
    of their spurious declarations first (as a subflow's, ``_schedule``: a step of resends, then
    new data); UDP cross traffic joins the queues."""
    o, fb, bnb = conn.obs, conn.fl, conn.bn
    for f in range(nsub, nflows):
        if o[f, OBS_AVAILABLE] > 0.0:
            left = fb[f, FL_BUDGET]
            copies = fb[f, FL_SPUR_PENDING]
            if left > EPS or copies > EPS:  # one call site: every inlined copy of _burst costs compile time
                resend = copies > EPS
                finite = left < math.inf
                pk = stks[f, STK_PACKET]  # its own stack's packet
                maxpk = 1 << 62 if resend or not finite else max(int(math.ceil(left / pk - EPS)), 1)
                n, _, rest = _burst(b, f, t, conn, pk, 1 if resend else 2, False, maxpk, copies, 0.0)
                if resend:
                    fb[f, FL_SPUR_PENDING] = rest
                elif finite:
                    fb[f, FL_BUDGET] = left - n * pk
    # UDP cross traffic in whole packets at its constant rate, each meeting the drop-tail buffer
    # as the connection's packets do (fluid crumbs would fill every byte of room a step frees)
    for p in range(int(conn.cn[CN_N_LINKS])):
        udp = bnb[p, BN_UDP]
        if udp > 0.0:
            credit = bnb[p, BN_UDP_CREDIT] + udp
            q = bnb[p, BN_ENQ] - bnb[p, BN_DEQ]
            qcap_eps = bnb[p, BN_QCAP] + EPS
            while credit >= mss - EPS:
                if q + mss > qcap_eps:
                    bnb[p, BN_DROPPED] += mss
                else:
                    bnb[p, BN_ENQ] += mss
                    q += mss
                credit -= mss
            bnb[p, BN_UDP_CREDIT] = credit


@njit(cache=True, _nrt=False, forceinline=True)
def _depart(b, t, conn, m, nsub, nflows):
    """Bottlenecks drain in FIFO order; departed segments get their arrival step.

    With reordering jitter, each departed packet is declared lost spuriously with the
    probability of ``reordering.py`` under the stack's loss detection (its time window:
    ``envs/sim/recovery.py``) at the spacing of the flow's own packets: a paced flow's are
    ``mss`` over its departure rate (an EWMA over ~10 ms, at most the capacity), so a flow using
    a fraction of the link is reordered less; a flow that does not pace sends its window as one
    back-to-back train per round trip (the stack's ``unpaced_trains``), whose packets can be
    overtaken only by the later ones of their train. Spacing and window are measured against the
    jitter of a round trip (the data's and its ACK's). The same tables give the declaration's mean
    lead over the packet's ACK (``SEG_SPUR_LEAD``), the time its copy has to leave.

    On a subflow whose ACKs name one SACK block (``STK_ONE_SACK``, kernel MPTCP) a real loss's
    hole holds the cumulative ACK until its retransmission arrives (``FL_HOLE_UNTIL``: its
    declaration, ``_detect_delay``, and the way there); a packet arriving meanwhile is also
    declared with the probability that no ACK names it (``reordering.hidden_table``) if its own
    deadline comes first, its lead the time left to the repair (docs/transport.md, "One SACK
    block per ACK")."""
    o, fb, bnb, c, sg, si, rg, rng = conn.obs, conn.fl, conn.bn, conn.cn, conn.seg, conn.segi, conn.ring, conn.rng
    stks = m.stack[b]
    dt, spur_r, spur_w = m.dt, m.spur_grid, m.spur_wgrid
    Qm = sg.shape[1] - 1
    for p in range(int(c[CN_N_LINKS])):
        q = bnb[p, BN_ENQ] - bnb[p, BN_DEQ]
        out = min(q, bnb[p, BN_CAP])
        bnb[p, BN_DEQ] += out
        bnb[p, BN_DELIVERED] += out
    reorders = c[CN_REORDERS] > 0.0
    w = min(dt / DEP_RATE_TAU, 1.0)
    for f in range(nflows):
        rate = fb[f, FL_DEP_RATE]
        fb[f, FL_DEP_RATE] = rate * (1.0 - w)
        d = si[f, SI_DEP]
        tl = si[f, SI_TAIL]
        if d >= tl:
            continue
        p = int(fb[f, FL_PATH])
        mss = stks[f, STK_PACKET]  # the flow's packet
        deq_eps = bnb[p, BN_DEQ] + EPS
        s = d & Qm
        if sg[f, s, SEG_POS] > deq_eps:
            continue
        jit = fb[f, FL_JITTER]
        dfwd = fb[f, FL_DFWD]
        # a transit link of the route is down: what crosses the bottleneck waits there for it
        down = fb[f, FL_DOWN_UNTIL] + dfwd if fb[f, FL_DOWN_UNTIL] > t else 0.0
        last_arrive = fb[f, FL_LAST_ARRIVE]
        # a competing kernel TCP flow runs the Linux profile's row but is plain TCP: three blocks
        one_sack = stks[f, STK_ONE_SACK] > 0.0 and reorders and f < nsub
        det = -1.0  # time (steps) from a packet's arrival to its declaration, unrounded (_detect_delay), once per step
        hidden = -1.0  # probability a packet arriving while a hole persists is never named
        prob = -1.0
        lead = -1.0  # steps from a declaration to the declared packet's ACK (-1: not looked up yet)
        p_ind = -1.0  # probability that a copy of a spurious declaration is acknowledged indirectly
        r_jit, n_train, block = 0.0, -1.0, 0  # n_train -1: evenly spaced (paced)
        ri, ra, wj, wc = 0, 0.0, 0, 0.0  # where the spacing and window fall on the tables' grids (_table_pos)
        # the stack's RTT samples over the segments' mean, in round-trip jitters (STK_RTT_LARGEST)
        sample_mean, sample_sd = 0.0, -1.0
        out = 0.0
        while d < tl:
            if sg[f, s, SEG_POS] > deq_eps:
                break
            out += sg[f, s, SEG_BYTES]
            delay = dfwd
            u, z = 0.0, 0.0
            if jit > 0.0:
                u = uniform(rng, b)  # normal(rng, b), keeping its uniform for the RTT samples below
                z = quantile(u)
                delay = max(delay + jit * z, 0.0)
            arrive = max(float(t) + max(math.floor(delay + 0.5), 1.0), last_arrive, down)
            if jit > 0.0:
                p_hide, hide_lead = 0.0, 0.0
                if one_sack:
                    real = sg[f, s, SEG_LOST] - sg[f, s, SEG_COPY_LOST] > EPS
                    if real or fb[f, FL_HOLE_UNTIL] > arrive:
                        if det < 0:
                            det = _detect_delay(bnb, p, o, fb, f, stks[f], dt, rg.shape[1] - 2 - int(fb[f, FL_DREV]))
                        if real:  # a real loss: a hole until its resend arrives
                            fb[f, FL_HOLE_UNTIL] = max(fb[f, FL_HOLE_UNTIL], arrive + fb[f, FL_DREV] + det + dfwd)
                        hide_lead = fb[f, FL_HOLE_UNTIL] - arrive - det
                if reorders and sg[f, s, SEG_BYTES] > 0.0:
                    if prob < 0.0:  # spacing at the rate so far (before this step's departures)
                        stk = stks[f]
                        tables = m.spur_prob[int(stk[STK_RULE])]
                        # probabilities, leads, copies acknowledged indirectly, RTT samples'
                        # mean and spread (reordering.detection_tables)
                        block = tables.shape[0] // DETECTION_BLOCKS
                        spur_p = tables[:block]
                        # the round trip the segment's packets are expected to take
                        expected = (t - sg[f, s, SEG_SENT]) * dt + (dfwd + fb[f, FL_DREV]) * dt
                        window = reorder_window(o, fb, f, stk, expected) / dt
                        # the sender learns of an arrival from its ACK, which the reverse path
                        # jitters alike (jitter_ms is per direction): the RTT's jitter is sqrt(2) x
                        rtt_jit = jit * SQRT2
                        if stk[STK_TRAINS] > 0.0 and o[f, OBS_PACING_RATE] <= 0.0:
                            # unpaced: its window's packets, back to back at the bottleneck's rate
                            r_jit = mss / max(bnb[p, BN_CAP], 1e-3) / rtt_jit
                            n_train = max(o[f, OBS_SWND] / mss, 0.0)
                        else:
                            r_jit = mss / max(min(rate, bnb[p, BN_CAP]), 1e-3) / rtt_jit
                        ri, ra, wj, wc = _table_pos(r_jit, window / rtt_jit, spur_r, spur_w)
                        fb[f, FL_RATE_AT] = ri + ra + 1.0 if n_train < 0.0 else 0.0
                        prob = _lookup_at(ri, ra, wj, wc, n_train, spur_p)
                        if stk[STK_RTT_LARGEST] > 0.0:  # the same for every window: at w = 0
                            sample_mean = _lookup_at(ri, ra, 0, 0.0, n_train, tables[3 * block:4 * block])
                            sample_sd = _lookup_at(ri, ra, 0, 0.0, n_train, tables[4 * block:])
                    if hide_lead > 0.0:
                        if hidden < 0.0:  # the receiver's compression against the round trip's jitter
                            stk = stks[f]
                            comp = min(stk[STK_COMP_SACK_DELAY], stk[STK_COMP_SACK_RTT] * o[f, OBS_SRTT]) / dt
                            cj = max(comp / rtt_jit, 1e-12)
                            if cj != fb[f, FL_COMP_C]:
                                fb[f, FL_COMP_C] = cj
                                fb[f, FL_COMP_LOG] = math.log(cj)
                            hidden = _hidden_prob(ri, ra, wj, wc, fb[f, FL_COMP_LOG], m)
                        p_hide = hidden
                    # one uniform per packet: cheaper than a binomial draw's power at these counts
                    n_spur, n_hide = 0.0, 0.0
                    # a copy of a spurious declaration is not: its original's ACK takes it out of
                    # the rule's reach first (SEG_COPY; docs/transport.md, "Reordering")
                    for _ in range(int(math.ceil((sg[f, s, SEG_BYTES] - sg[f, s, SEG_COPY]) / mss - EPS))):
                        v = uniform(rng, b)
                        if v < prob:
                            n_spur += 1.0
                        elif v < prob + p_hide:  # never named before the hole's repair (one SACK block)
                            n_hide += 1.0
                    if n_spur + n_hide > 0.0:
                        if lead < 0.0:  # once per step, at the first declaration
                            lead = _lookup_at(ri, ra, wj, wc, n_train, tables[block:2 * block]) * rtt_jit  # steps
                        sg[f, s, SEG_SPUR] += n_spur + n_hide
                        sg[f, s, SEG_SPUR_LEAD] = (n_spur * lead + n_hide * hide_lead) / (n_spur + n_hide)
                    # the copies among them: acknowledged indirectly when the packet sent just
                    # before them or a later one is acknowledged first (reordering.indirect_table)
                    copies = sg[f, s, SEG_COPY]
                    if copies > 0.0:
                        if p_ind < 0.0:  # at the spacing the declarations took, once per step
                            p_ind = _lookup_at(ri, ra, 0, 0.0, n_train, tables[2 * block:3 * block])
                        ind = 0.0
                        for _ in range(int(math.ceil(copies / mss - EPS))):
                            if uniform(rng, b) < p_ind:
                                ind += mss
                        sg[f, s, SEG_INDIRECT] = min(ind, copies)
            if u < PKT_RTT_TAIL and jit > 0.0 and sg[f, s, SEG_BYTES] > 0.0:
                # the least RTT sample among the segment's packets: each packet and its ACK get
                # their own jitter, so the sender's per-packet samples reach below the segment's
                # (BBR's min_rtt filters read them): the least of k round-trip jitters, by the
                # segment's own uniform (an early segment gives a low sample); only the lowest
                # eighth of segments, as a filter holding seconds of samples keeps their least
                k = math.ceil(sg[f, s, SEG_BYTES] / mss - EPS)
                pkt = t - sg[f, s, SEG_SENT] + dfwd + fb[f, FL_DREV] + jit * SQRT2 * quantile_min(u, k)
                slot = int(arrive + fb[f, FL_DREV]) & (rg.shape[1] - 1)
                pkt = max(pkt, 1.0)
                if rg[f, slot, RING_PKT_RTT] == 0.0 or pkt < rg[f, slot, RING_PKT_RTT]:
                    rg[f, slot, RING_PKT_RTT] = pkt
            if sample_sd >= 0.0 and sg[f, s, SEG_BYTES] > 0.0:
                # the stack's RTT sample at this segment's ACK: from the ACK's largest newly
                # acknowledged packet (RFC 9002 sec. 5.1), an early one under reordering
                # (ack_loop.rtt_sample_table), drawn by the segment's own uniform; the latest
                # segment acknowledged at a step gives it, as its largest packet
                sample = t - sg[f, s, SEG_SENT] + dfwd + fb[f, FL_DREV] + jit * SQRT2 * (sample_mean + sample_sd * z)
                rg[f, int(arrive + fb[f, FL_DREV]) & (rg.shape[1] - 1), RING_RTT_SAMPLE] = max(sample, 1.0)
            sg[f, s, SEG_ARRIVE] = arrive
            last_arrive = arrive
            d += 1
            s = (s + 1) & Qm
        si[f, SI_DEP] = d
        fb[f, FL_LAST_ARRIVE] = last_arrive
        fb[f, FL_DEP_RATE] += w * out


@njit(inline="always", cache=True, _nrt=False)
def _grid_pos(v, lo, hi, n):
    """Index and weight of v on an evenly spaced grid of n points from lo to hi (clamped)."""
    x = (v - lo) / (hi - lo) * (n - 1)
    if x <= 0.0:
        return 0, 0.0
    if x >= n - 1:
        return n - 2, 1.0
    i = int(x)
    return i, x - i


@njit(inline="always", cache=True, _nrt=False)
def _table_pos(r, w, log_grid, w_grid):
    """Where spacing/jitter ratio r and window/jitter ratio w (0 for the blocks that are the same
    for every window) fall on the grids of ``reordering.detection_tables`` (``log_grid``: the
    natural logs of the evenly log-spaced spacing grid; ``w_grid``: the evenly spaced window grid):
    the index and weight along each, for ``_lookup_at`` (one position, every block)."""
    i, a = _grid_pos(math.log(r), log_grid[0], log_grid[log_grid.shape[0] - 1], log_grid.shape[0])
    j, c = _grid_pos(w, w_grid[0], w_grid[w_grid.shape[0] - 1], w_grid.shape[0])
    return i, a, j, c


@njit(inline="always", cache=True, _nrt=False)
def _bilinear(tables, k, i, a, j, c):
    """``tables[k, w, r]`` interpolated at a position of ``_table_pos``."""
    lo = tables[k, j, i] * (1.0 - a) + tables[k, j, i + 1] * a
    hi = tables[k, j + 1, i] * (1.0 - a) + tables[k, j + 1, i + 1] * a
    return lo * (1.0 - c) + hi * c


@njit(inline="always", cache=True, _nrt=False)
def _lookup_at(i, a, j, c, n_train, tables):
    """One of ``reordering.detection_tables``' blocks at a position of ``_table_pos``, for a train
    of ``n_train`` packets (-1: evenly spaced). Slice 0 is the evenly spaced stream; for a
    back-to-back train, slices 1.. hold trains of ``reordering.TRAIN_GRID`` packets (log-spaced,
    interpolated), a longer train is the stream."""
    if n_train >= 0.0:
        x = TRAINS_PER_OCTAVE * math.log2(max(n_train, 1.0))
        if x < tables.shape[0] - 2:
            k = int(x)
            g = x - k
            return _bilinear(tables, k + 1, i, a, j, c) * (1.0 - g) + _bilinear(tables, k + 2, i, a, j, c) * g
    return _bilinear(tables, 0, i, a, j, c)


@njit(inline="always", cache=True, _nrt=False)
def _sample_scatter(m, rule, at, w, u):
    """The factor a delivery-rate sample of an evenly paced flow takes under reordering jitter, at
    ``at`` on the spacing grid (``FL_RATE_AT``) and a round trip of ``w`` jitters, by the uniform
    ``u``: one draw from the normal of the ACK loop's per-ACK samples (``Constants.rate_scatter``:
    their mean shortfall and spread relative to the rate, both about proportional to 1 / ``w``,
    held so beyond the grid's ends). One draw a step, which stands for the ACKs of about a
    millisecond, whose samples span nearly the same packets (docs/transport.md, "Delivery-rate
    samples")."""
    tg = m.rate_tgrid
    w = max(w, math.exp(tg[0]))
    i = int(at)
    j, c = _grid_pos(math.log(w), tg[0], tg[tg.shape[0] - 1], tg.shape[0])
    table = m.rate_scatter[rule]
    shortfall = _bilinear(table, 0, i, at - i, j, c)
    spread = _bilinear(table, 1, i, at - i, j, c)
    return max(1.0 + (spread * quantile(u) - shortfall) / w, 0.0)


@njit(inline="always", cache=True, _nrt=False)
def _hidden_prob(i, a, j, e, log_c, m):
    """``Constants.hidden`` at a position of ``_table_pos`` (spacing and window over the jitter)
    and ACK compression/jitter ratio c, given as ``log_c`` = log(max(c, 1e-12)) (interpolated in
    log c, clamped to its grid)."""
    cg = m.hidden_cgrid
    k, g = _grid_pos(log_c, cg[0], cg[cg.shape[0] - 1], cg.shape[0])
    return _bilinear(m.hidden, k, i, a, j, e) * (1.0 - g) + _bilinear(m.hidden, k + 1, i, a, j, e) * g


@njit(inline="always", cache=True, _nrt=False)
def _run(b, conn, m, max_steps):
    """Connection ``b`` (``conn``: its rows; ``m``: the batch's ``Constants``) until it pauses or
    has run ``max_steps`` steps."""
    c = conn.cn
    mss, dt = c[CN_MSS], m.dt
    # after a decision or interval pause the step continues at scheduling
    resume_send = c[CN_PAUSE] == PAUSE_DECISION or c[CN_PAUSE] == PAUSE_INTERVAL
    c[CN_PAUSE] = PAUSE_NONE
    nflows = int(c[CN_N_FLOWS])
    nsub = int(c[CN_N_SUB])
    snd = b + conn.rng.shape[0] // 2  # the sender's own stream (see envs.sim.rng)
    prm = conn.sched[:SCHED_STATE]
    st = conn.sched[SCHED_STATE:]
    stks = m.stack[b]
    for f in range(nsub):  # the stack's path buffer (its row may change between episodes)
        conn.fl[f, FL_BUFFERED] = stks[f, STK_PATH_BUFFER]
    steps = 0
    while steps < max_steps:
        t = int(c[CN_T])
        if not resume_send:
            now = t * dt
            _apply_schedules(t, conn, now, stks, nsub, nflows)
            _receive(t, conn, dt, stks, nsub, nflows)
            if c[CN_RCVBUF_MAX] > c[CN_RCVBUF]:
                _autotune_window(t, conn, dt, nsub, stks[0])  # the connection's receiver
            _feedback(b, snd, t, conn, m, stks, nsub, nflows)
            # the app's offer (CN_SND_LIMIT) and its end
            complete = workload_step(t, c, conn.wl, conn.item, conn.rec, conn.cobs, dt)
            _refresh_windows(conn, nflows, nsub, stks, dt)  # before a break: terminal obs
            done = complete or t >= c[CN_END_STEP] or (c[CN_OOO_EXCEEDED] > 0.0 and c[CN_END_ON_OOO] > 0.0)
            if done:
                if complete:
                    c[CN_DONE_STEP] = t
                c[CN_DONE] = 1.0
                c[CN_PAUSE] = PAUSE_DONE
                break
            if c[CN_MODE_UNTIL] >= 0.0 and t >= c[CN_MODE_UNTIL]:
                c[CN_PAUSE] = PAUSE_INTERVAL  # the agent sets the next mode, then we send
                break
        resume_send = False
        if _schedule(b, snd, t, conn, prm, st, mss, nsub) == PAUSE_DECISION:
            c[CN_PAUSE] = PAUSE_DECISION
            break
        c[CN_ADVISE] = -1.0
        _competing_and_udp(b, t, conn, mss, stks, nsub, nflows)
        _depart(b, t, conn, m, nsub, nflows)
        c[CN_T] = t + 1
        steps += 1
    if c[CN_PAUSE] == PAUSE_NONE:
        c[CN_PAUSE] = PAUSE_LIMIT


@njit(inline="always", cache=True, _nrt=False)
def connection(s, b):
    """Connection b's rows of the batch ``s`` (a ``State``), as a ``Connection`` of views."""
    return Connection(s.obs[b], s.cobs[b], s.fl[b], s.cc[b], s.ccp[b], s.bn[b], s.cn[b], s.seg[b], s.segi[b],
                      s.ring[b], s.hole[b], s.sched[b], s.ctrace[b], s.atrace[b], s.wl[b], s.item[b], s.rec[b],
                      s.rng)


@njit(cache=True, _nrt=False)
def advance(s, m, active, max_steps):
    """Advance every active connection of the batch ``s`` (a ``State``; ``m``: its ``Constants``)
    until it pauses (decision, interval end, episode end) or has run ``max_steps`` steps. The
    reason is left in ``s.cn[b, CN_PAUSE]``; a connection that was never reset is refused
    (PAUSE_UNREADY): its time would not advance."""
    for b in range(s.cn.shape[0]):
        if not active[b] or s.cn[b, CN_DONE] > 0.0:
            continue
        if s.cn[b, CN_N_SUB] < 1.0 or not s.wl[b, WL_BIN] >= 1.0:
            s.cn[b, CN_PAUSE] = PAUSE_UNREADY
            continue
        _run(b, connection(s, b), m, max_steps)
