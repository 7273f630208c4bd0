"""The compiled fluid core: advances B independent multipath connections step by step.

One step (default 1 ms) of one connection, in order (spec/transport.md):

1. capacity schedule (trace, outages) and competing-flow activity;
2. receiver: segments whose propagation ended arrive; their bytes are ACKed back over the
   reverse delay, their lost bytes are declared lost after the packet-threshold delay, holes
   they fill shrink; the in-order point ``rcv_nxt`` and the reorder buffer follow;
3. sender: ACKs and loss declarations due now update RTT estimators (RFC 6298), delivery-rate
   samples (BBR), the CC, and the retransmission queue; RTO timers fire;
4. scheduling: per packet, the scheduler (or the agent, in ``blocked`` mode) picks paths among
   those with window space and pacing credit; retransmissions go first; each packet meets
   random loss and the drop-tail bottleneck; competing flows and UDP fill the same queues;
5. bottlenecks drain at their capacity in FIFO order; departed segments get an arrival time
   (propagation + jitter, kept in order per path).

A connection owns its clock, so each runs until its own next decision point or its end.
"""

import math

from numba import njit

from agents.heuristics import pick
from envs.cc import cc_init, cc_on_ack, cc_on_loss, cc_on_rto
from envs.cc.base import CWND, PACING
from envs.sim.layout import *  # noqa: F403 (column names)
from envs.sim.rng import normal, uniform

INITIAL_RTT = 0.333  # RFC 9002 kInitialRtt before any sample (s)
MIN_RTO = 0.2  # s
MAX_PACKETS_PER_STEP = 100000
EPS = 1e-6


@njit(cache=True)
def reset_connection(b, obs, cobs, fl, cc, ccp, bn, cn, segi, ring, hole, sched, mss):
    """Zero a connection's dynamic state, keeping its configuration columns."""
    nflows = int(cn[b, CN_N_FLOWS])
    for f in range(obs.shape[1]):
        for k in range(N_OBS):
            obs[b, f, k] = 0.0
        obs[b, f, OBS_SRTT] = INITIAL_RTT
        obs[b, f, OBS_RTTVAR] = INITIAL_RTT / 2.0
        obs[b, f, OBS_MIN_RTT] = INITIAL_RTT
        obs[b, f, OBS_LATEST_RTT] = INITIAL_RTT
        for k in range(N_FL):
            if k != FL_PATH and k != FL_IS_SUB and k != FL_CC:
                fl[b, f, k] = 0.0
        fl[b, f, FL_RTO_BACKOFF] = 1.0
        fl[b, f, FL_ACTIVE] = 1.0 if f < nflows else 0.0
        segi[b, f, 0] = 0
        segi[b, f, 1] = 0
        segi[b, f, 2] = 0
        for s in range(ring.shape[2]):
            for k in range(N_RING):
                ring[b, f, s, k] = 0.0
        if f < nflows:
            cc_init(int(fl[b, f, FL_CC]), cc[b], ccp[b], f, 0.0, mss)
            obs[b, f, OBS_CWND] = cc[b, f, CWND]
    for p in range(bn.shape[1]):
        for k in (BN_ENQ, BN_DEQ, BN_TRACE_IDX, BN_DELIVERED, BN_DROPPED):
            bn[b, p, k] = 0.0
    for h in range(hole.shape[1]):
        for k in range(N_HOLE):
            hole[b, h, k] = 0.0
        hole[b, h, HOLE_DETECT_AT] = -1.0
    for k in range(N_COBS):
        cobs[b, k] = 0.0
    for k in (CN_T, CN_DONE, CN_RCV_NXT, CN_RCV_BYTES, CN_SND_NXT, CN_ACKED_EDGE, CN_REORDER_MAX,
              CN_HOLES_HI, CN_PENDING, CN_PAUSE, CN_REORDER_SUM, CN_OOO_EXCEEDED):
        cn[b, k] = 0.0
    cn[b, CN_DONE_STEP] = -1.0
    cn[b, CN_ADVISE] = -1.0
    for k in range(SCHED_STATE, N_SCHED):
        sched[b, k] = 0.0


@njit(cache=True)
def _apply_schedules(b, t, fl, cc, ccp, bn, cn, ctrace, atrace, mss, now):
    """Capacity trace per path; activity schedule per competing flow (0/1 steps)."""
    for p in range(int(cn[b, CN_N_SUB])):
        idx = int(bn[b, p, BN_TRACE_IDX])
        while idx < ctrace.shape[2] and ctrace[b, p, idx, 0] <= t:
            bn[b, p, BN_CAP] = ctrace[b, p, idx, 1]
            idx += 1
        bn[b, p, BN_TRACE_IDX] = idx
    for f in range(int(cn[b, CN_N_SUB]), int(cn[b, CN_N_FLOWS])):
        idx = int(fl[b, f, FL_SCHED_IDX])
        while idx < atrace.shape[2] and atrace[b, f, idx, 0] <= t:
            on = atrace[b, f, idx, 1]
            if on > 0.0 and fl[b, f, FL_ACTIVE] == 0.0:
                cc_init(int(fl[b, f, FL_CC]), cc[b], ccp[b], f, now, mss)
            fl[b, f, FL_ACTIVE] = on
            idx += 1
        fl[b, f, FL_SCHED_IDX] = idx


@njit(cache=True)
def _detect_delay(bn, b, p, mss):
    """Steps from a lost packet's would-be arrival to its declaration: three later packets at
    the bottleneck rate (RFC 9002 packet threshold), at least one step."""
    cap = max(bn[b, p, BN_CAP], 1.0)
    return 1 + int(min(3.0 * mss / cap, 50.0))


@njit(cache=True)
def _receive(b, t, obs, fl, bn, cn, seg, segi, ring, hole, mss):
    """Arrivals at the receiver; returns nothing, updates rcv state and schedules feedback."""
    L = ring.shape[2]
    Q = seg.shape[2]
    nsub = int(cn[b, CN_N_SUB])
    for f in range(int(cn[b, CN_N_FLOWS])):
        p = int(fl[b, f, FL_PATH])
        h = segi[b, f, SI_HEAD]
        d = segi[b, f, SI_DEP]
        if h >= d:
            continue
        drev = int(bn[b, p, BN_DREV])
        det = _detect_delay(bn, b, p, mss)
        while h < d and seg[b, f, h % Q, SEG_ARRIVE] <= t:
            s = h % Q
            nbytes = seg[b, f, s, SEG_BYTES]
            if nbytes > 0.0:
                slot = (t + drev) % L
                ring[b, f, slot, RING_ACKED] += nbytes
                if seg[b, f, s, SEG_SENT] >= ring[b, f, slot, RING_SENT]:
                    ring[b, f, slot, RING_SENT] = seg[b, f, s, SEG_SENT]
                    ring[b, f, slot, RING_DELIV] = seg[b, f, s, SEG_DELIV]
            if f < nsub:
                good = seg[b, f, s, SEG_NEW] + seg[b, f, s, SEG_FILL_BYTES]
                cn[b, CN_RCV_BYTES] += good
                fl[b, f, FL_GOOD] += good
                hf = int(seg[b, f, s, SEG_FILL])
                if hf >= 0:
                    hole[b, hf, HOLE_REM] -= seg[b, f, s, SEG_FILL_BYTES]
                    if hole[b, hf, HOLE_REM] <= EPS:
                        _free_hole(b, hf, cn, hole)
            lost = seg[b, f, s, SEG_LOST]
            spur = seg[b, f, s, SEG_SPUR]
            if lost > 0.0 or spur > 0.0:
                slot = (t + drev + det) % L
                ring[b, f, slot, RING_LOST] += lost
                ring[b, f, slot, RING_SPUR] += spur
                ring[b, f, slot, RING_LOST_SENT] = max(ring[b, f, slot, RING_LOST_SENT],
                                                       seg[b, f, s, SEG_SENT])
                hh = int(seg[b, f, s, SEG_HOLE])
                if lost > 0.0 and hh >= 0 and hole[b, hh, HOLE_UNDET] > 0.0 \
                        and hole[b, hh, HOLE_DETECT_AT] < 0.0:
                    hole[b, hh, HOLE_DETECT_AT] = t + drev + det
            h += 1
        segi[b, f, SI_HEAD] = h
    # in-order point: the lowest byte not yet arrived (new data in flight, or a hole)
    rcv = cn[b, CN_SND_NXT]
    for f in range(nsub):
        h = segi[b, f, SI_HEAD]
        tl = segi[b, f, SI_TAIL]
        while h < tl:
            s = h % Q
            if seg[b, f, s, SEG_NEW] > 0.0:
                rcv = min(rcv, seg[b, f, s, SEG_SEQ])
                break
            h += 1
    for k in range(int(cn[b, CN_HOLES_HI])):
        if hole[b, k, HOLE_REM] > 0.0:
            rcv = min(rcv, hole[b, k, HOLE_SEQ])
    if rcv > cn[b, CN_RCV_NXT]:
        cn[b, CN_RCV_NXT] = rcv
    reorder = cn[b, CN_RCV_BYTES] - cn[b, CN_RCV_NXT]
    cn[b, CN_REORDER_SUM] += reorder
    if reorder > cn[b, CN_REORDER_MAX]:
        cn[b, CN_REORDER_MAX] = reorder
    if reorder > cn[b, CN_OOO_LIMIT]:
        cn[b, CN_OOO_EXCEEDED] = 1.0
    # the receiver's window travels back with each path's ACKs
    for f in range(nsub):
        slot = (t + int(bn[b, int(fl[b, f, FL_PATH]), BN_DREV])) % L
        if ring[b, f, slot, RING_ACKED] > 0.0:
            ring[b, f, slot, RING_RCV_NXT] = max(ring[b, f, slot, RING_RCV_NXT], cn[b, CN_RCV_NXT])


@njit(cache=True)
def _rto(b, t, f, obs, fl, cc, ccp, cn, seg, segi, ring, hole, mss, dt):
    """Retransmission timeout (RFC 6298): every undetected loss of the flow is declared, the CC
    collapses, the timer backs off."""
    obs[b, f, OBS_RTOS] += 1.0
    fl[b, f, FL_RTO_BACKOFF] = min(fl[b, f, FL_RTO_BACKOFF] * 2.0, 64.0)
    fl[b, f, FL_LAST_PROGRESS] = t
    for k in range(int(cn[b, CN_HOLES_HI])):
        if hole[b, k, HOLE_REM] > 0.0 and int(hole[b, k, HOLE_FLOW]) == f \
                and hole[b, k, HOLE_UNDET] > 0.0:
            hole[b, k, HOLE_PENDING] += hole[b, k, HOLE_UNDET]
            cn[b, CN_PENDING] += hole[b, k, HOLE_UNDET]
            hole[b, k, HOLE_UNDET] = 0.0
            hole[b, k, HOLE_DETECT_AT] = -1.0
    obs[b, f, OBS_LOSSES] += fl[b, f, FL_LOST_UNNOTIFIED] / mss
    obs[b, f, OBS_INFLIGHT] = max(obs[b, f, OBS_INFLIGHT] - fl[b, f, FL_LOST_UNNOTIFIED], 0.0)
    fl[b, f, FL_LOST_UNNOTIFIED] = 0.0
    for s in range(ring.shape[2]):
        ring[b, f, s, RING_LOST] = 0.0
        ring[b, f, s, RING_SPUR] = 0.0
    Q = seg.shape[2]
    for i in range(segi[b, f, SI_HEAD], segi[b, f, SI_TAIL]):
        seg[b, f, i % Q, SEG_LOST] = 0.0
    cc_on_rto(int(fl[b, f, FL_CC]), cc[b], ccp[b], f, t * dt, obs[b, f, OBS_INFLIGHT], mss)


@njit(cache=True)
def _feedback(b, t, obs, cobs, fl, cc, ccp, cn, seg, segi, ring, hole, rng, mss, dt):
    """Sender side: ACKs and loss declarations due at step t; loss detection; RTO timers."""
    L = ring.shape[2]
    slot = t % L
    now = t * dt
    nsub = int(cn[b, CN_N_SUB])
    for k in range(int(cn[b, CN_HOLES_HI])):
        da = hole[b, k, HOLE_DETECT_AT]
        if da >= 0.0 and da <= t:
            hole[b, k, HOLE_PENDING] += hole[b, k, HOLE_UNDET]
            cn[b, CN_PENDING] += hole[b, k, HOLE_UNDET]
            hole[b, k, HOLE_UNDET] = 0.0
            hole[b, k, HOLE_DETECT_AT] = -1.0
    for f in range(int(cn[b, CN_N_FLOWS])):
        cid = int(fl[b, f, FL_CC])
        acked = ring[b, f, slot, RING_ACKED]
        if acked > 0.0:
            o = obs[b, f]
            o[OBS_INFLIGHT] = max(o[OBS_INFLIGHT] - acked, 0.0)
            o[OBS_ACKED] += acked
            rtt = max((t - ring[b, f, slot, RING_SENT]) * dt, dt)
            if fl[b, f, FL_RTT_CNT] == 0.0:
                o[OBS_SRTT] = rtt
                o[OBS_RTTVAR] = rtt / 2.0
                o[OBS_MIN_RTT] = rtt
            else:  # RFC 6298 / RFC 9002
                o[OBS_RTTVAR] = 0.75 * o[OBS_RTTVAR] + 0.25 * abs(o[OBS_SRTT] - rtt)
                o[OBS_SRTT] = 0.875 * o[OBS_SRTT] + 0.125 * rtt
                o[OBS_MIN_RTT] = min(o[OBS_MIN_RTT], rtt)
            o[OBS_LATEST_RTT] = rtt
            fl[b, f, FL_RTT_SUM] += rtt
            fl[b, f, FL_RTT_CNT] += 1.0
            o[OBS_DELIVERY_RATE] = (o[OBS_ACKED] - ring[b, f, slot, RING_DELIV]) / rtt
            round_start = ring[b, f, slot, RING_DELIV] >= fl[b, f, FL_NEXT_ROUND]
            if round_start:
                fl[b, f, FL_NEXT_ROUND] = o[OBS_ACKED]
            fl[b, f, FL_LAST_PROGRESS] = t
            fl[b, f, FL_RTO_BACKOFF] = 1.0
            if f < nsub and ring[b, f, slot, RING_RCV_NXT] > cn[b, CN_ACKED_EDGE]:
                cn[b, CN_ACKED_EDGE] = ring[b, f, slot, RING_RCV_NXT]
            cc_on_ack(cid, cc[b], ccp[b], f, nsub, now, acked, rtt, o[OBS_MIN_RTT],
                      o[OBS_DELIVERY_RATE], o[OBS_INFLIGHT], round_start, mss, rng, b)
        lost = ring[b, f, slot, RING_LOST]
        spur = ring[b, f, slot, RING_SPUR]
        if lost > 0.0 or spur > 0.0:
            obs[b, f, OBS_INFLIGHT] = max(obs[b, f, OBS_INFLIGHT] - lost, 0.0)
            fl[b, f, FL_LOST_UNNOTIFIED] = max(fl[b, f, FL_LOST_UNNOTIFIED] - lost, 0.0)
            obs[b, f, OBS_LOSSES] += lost / mss + spur
            fl[b, f, FL_SPUR_PENDING] += spur * mss
            cc_on_loss(cid, cc[b], ccp[b], f, nsub, now, lost + spur * mss,
                       ring[b, f, slot, RING_LOST_SENT] * dt, obs[b, f, OBS_INFLIGHT], mss, rng, b)
        for k in range(N_RING):
            ring[b, f, slot, k] = 0.0
        # RTO (RFC 6298: srtt + 4 rttvar, at least MIN_RTO, doubled per expiry)
        if obs[b, f, OBS_INFLIGHT] > 0.0:
            rto = max(obs[b, f, OBS_SRTT] + 4.0 * obs[b, f, OBS_RTTVAR], MIN_RTO)
            if (t - fl[b, f, FL_LAST_PROGRESS]) * dt > rto * fl[b, f, FL_RTO_BACKOFF]:
                _rto(b, t, f, obs, fl, cc, ccp, cn, seg, segi, ring, hole, mss, dt)
        else:
            fl[b, f, FL_LAST_PROGRESS] = t
        obs[b, f, OBS_CWND] = cc[b, f, CWND]
        obs[b, f, OBS_PACING_RATE] = cc[b, f, PACING]
    # connection-level view the sender has
    cobs[b, COBS_ACKED] = cn[b, CN_ACKED_EDGE]
    cobs[b, COBS_ELAPSED] = now
    edge = cn[b, CN_ACKED_EDGE] + cn[b, CN_RCVBUF]
    cobs[b, COBS_RWND] = max(edge - cn[b, CN_SND_NXT], 0.0)
    # sent beyond the acknowledged edge, neither in flight nor awaiting retransmission
    cobs[b, COBS_REORDER] = max(cn[b, CN_SND_NXT] - cn[b, CN_ACKED_EDGE] - _inflight_sub(obs, b, nsub)
                                - cn[b, CN_PENDING], 0.0)
    cobs[b, COBS_REMAINING] = cn[b, CN_SND_LIMIT] - cn[b, CN_ACKED_EDGE]


@njit(inline="always", cache=True)
def _inflight_sub(obs, b, nsub):
    s = 0.0
    for f in range(nsub):
        s += obs[b, f, OBS_INFLIGHT]
    return s


@njit(cache=True)
def _refresh_windows(b, obs, cobs, fl, cn, nflows, nsub, mss, dt):
    """Pacing credit, send window and availability of every flow at the start of sending."""
    new_avail = min(cn[b, CN_SND_LIMIT], cn[b, CN_ACKED_EDGE] + cn[b, CN_RCVBUF]) - cn[b, CN_SND_NXT]
    cobs[b, COBS_BACKLOG] = max(new_avail, 0.0) + cn[b, CN_PENDING]
    for f in range(nflows):
        rate = obs[b, f, OBS_PACING_RATE]
        if rate > 0.0:
            # credit accrues at the pacing rate; at most one step's worth plus a 2-packet quantum
            fl[b, f, FL_PACE_CREDIT] = min(fl[b, f, FL_PACE_CREDIT] + rate * dt, rate * dt + 2.0 * mss)
        else:
            fl[b, f, FL_PACE_CREDIT] = math.inf
        if f < nsub:
            obs[b, f, OBS_SWND] = min(obs[b, f, OBS_CWND], obs[b, f, OBS_INFLIGHT] + max(new_avail, 0.0)
                                      + cn[b, CN_PENDING] + fl[b, f, FL_SPUR_PENDING])
        else:
            obs[b, f, OBS_SWND] = obs[b, f, OBS_CWND]
        _update_available(b, f, obs, fl, mss)


@njit(inline="always", cache=True)
def _update_available(b, f, obs, fl, mss):
    ok = (obs[b, f, OBS_INFLIGHT] + mss <= obs[b, f, OBS_CWND] + EPS) & (fl[b, f, FL_PACE_CREDIT] >= mss - EPS) \
        & (fl[b, f, FL_ACTIVE] > 0.0)
    obs[b, f, OBS_AVAILABLE] = 1.0 if ok else 0.0


@njit(cache=True)
def _new_segment(b, f, t, obs, seg, segi, bn, p, seq, fill):
    """Open a segment at the FIFO tail; -1 when the flow's FIFO is full."""
    Q = seg.shape[2]
    tl = segi[b, f, SI_TAIL]
    if tl - segi[b, f, SI_HEAD] >= Q:
        return -1
    s = tl % Q
    seg[b, f, s, SEG_SEQ] = seq
    seg[b, f, s, SEG_BYTES] = 0.0
    seg[b, f, s, SEG_POS] = bn[b, p, BN_ENQ]
    seg[b, f, s, SEG_SENT] = t
    seg[b, f, s, SEG_DELIV] = obs[b, f, OBS_ACKED]
    seg[b, f, s, SEG_ARRIVE] = math.inf
    seg[b, f, s, SEG_HOLE] = -1.0
    seg[b, f, s, SEG_FILL] = fill
    seg[b, f, s, SEG_FILL_BYTES] = 0.0
    seg[b, f, s, SEG_LOST] = 0.0
    seg[b, f, s, SEG_SPUR] = 0.0
    seg[b, f, s, SEG_NEW] = 0.0
    segi[b, f, SI_TAIL] = tl + 1
    return s


@njit(inline="always", cache=True)
def _free_hole(b, k, cn, hole):
    hole[b, k, HOLE_REM] = 0.0
    hole[b, k, HOLE_UNDET] = 0.0
    hole[b, k, HOLE_PENDING] = 0.0
    hole[b, k, HOLE_DETECT_AT] = -1.0
    hi = int(cn[b, CN_HOLES_HI])
    while hi > 0 and hole[b, hi - 1, HOLE_REM] <= 0.0:
        hi -= 1
    cn[b, CN_HOLES_HI] = hi


@njit(cache=True)
def _alloc_hole(b, cn, hole):
    hi = int(cn[b, CN_HOLES_HI])
    for k in range(hi):
        if hole[b, k, HOLE_REM] <= 0.0:
            return k
    if hi < hole.shape[1]:
        cn[b, CN_HOLES_HI] = hi + 1
        return hi
    return -1


@njit(inline="always", cache=True)
def _send_packet(b, f, t, obs, fl, bn, cn, seg, segi, hole, rng, mss, kind):
    """Send one packet on flow f. kind 0: connection data (retransmission first, else new data);
    1: a copy or a spurious resend that carries nothing new; 2: a competing flow's packet.
    Returns the bytes sent (0 when nothing could be sent)."""
    Q = seg.shape[2]
    p = int(fl[b, f, FL_PATH])
    fill = -1
    seq = math.inf
    size = mss
    if kind == 0:
        if cn[b, CN_PENDING] > EPS:
            best = math.inf
            for k in range(int(cn[b, CN_HOLES_HI])):
                if hole[b, k, HOLE_REM] > 0.0 and hole[b, k, HOLE_PENDING] > EPS \
                        and hole[b, k, HOLE_SEQ] < best:
                    best = hole[b, k, HOLE_SEQ]
                    fill = k
            if fill < 0:  # bookkeeping drift: nothing is really pending
                cn[b, CN_PENDING] = 0.0
        if fill >= 0:
            size = min(mss, hole[b, fill, HOLE_PENDING])
            seq = hole[b, fill, HOLE_SEQ]
        else:
            limit = min(cn[b, CN_SND_LIMIT], cn[b, CN_ACKED_EDGE] + cn[b, CN_RCVBUF])
            size = min(mss, limit - cn[b, CN_SND_NXT])
            if size <= EPS:
                return 0.0
            seq = cn[b, CN_SND_NXT]
    # the tail segment takes the packet if it was opened this step for the same kind of data
    # and holds less than one step of bottleneck service, unless the FIFO is full (fidelity
    # fix: a whole-window burst in one segment departed, and was ACKed, only when its last byte
    # left the queue, which broke ACK clocking and halved unpaced CCs' throughput at 1 BDP)
    tl = segi[b, f, SI_TAIL]
    s = -1
    if tl > segi[b, f, SI_DEP]:
        last = (tl - 1) % Q
        room = seg[b, f, last, SEG_BYTES] + seg[b, f, last, SEG_LOST] < max(bn[b, p, BN_CAP], mss) - EPS \
            or tl - segi[b, f, SI_HEAD] >= Q
        if room and seg[b, f, last, SEG_SENT] == t and int(seg[b, f, last, SEG_FILL]) == fill \
                and (fill >= 0 or (seg[b, f, last, SEG_SEQ] == math.inf) == (seq == math.inf)):
            s = last
    if s < 0:
        s = _new_segment(b, f, t, obs, seg, segi, bn, p, seq, float(fill))
        if s < 0:
            return 0.0
    if kind == 0:
        if fill >= 0:
            hole[b, fill, HOLE_PENDING] -= size
            cn[b, CN_PENDING] = max(cn[b, CN_PENDING] - size, 0.0)
            obs[b, f, OBS_RETRANS] += 1.0
        else:
            cn[b, CN_SND_NXT] += size
    # the network: random loss on the way in, then the drop-tail buffer
    q = bn[b, p, BN_ENQ] - bn[b, p, BN_DEQ]
    lost = bn[b, p, BN_LOSS] > 0.0 and uniform(rng, b) < bn[b, p, BN_LOSS]
    if not lost and q + size > bn[b, p, BN_QCAP] + EPS:
        lost = True
        bn[b, p, BN_DROPPED] += size
    obs[b, f, OBS_INFLIGHT] += size
    obs[b, f, OBS_SENT] += size
    fl[b, f, FL_PACE_CREDIT] -= size
    fl[b, f, FL_SENT_PKTS] += 1.0
    if lost:
        fl[b, f, FL_LOST_PKTS] += 1.0
        fl[b, f, FL_LOST_UNNOTIFIED] += size
        seg[b, f, s, SEG_LOST] += size
        if kind == 0:
            if fill >= 0:
                hole[b, fill, HOLE_UNDET] += size
                hole[b, fill, HOLE_FLOW] = f
                seg[b, f, s, SEG_HOLE] = fill
            else:
                hh = int(seg[b, f, s, SEG_HOLE])
                if hh < 0:
                    hh = _alloc_hole(b, cn, hole)
                    if hh < 0:  # hole table full: extend the newest hole (approximation)
                        hh = int(cn[b, CN_HOLES_HI]) - 1
                    else:
                        hole[b, hh, HOLE_SEQ] = seq
                        hole[b, hh, HOLE_DETECT_AT] = -1.0
                    seg[b, f, s, SEG_HOLE] = hh
                hole[b, hh, HOLE_REM] += size
                hole[b, hh, HOLE_UNDET] += size
                hole[b, hh, HOLE_FLOW] = f
    else:
        bn[b, p, BN_ENQ] += size
        seg[b, f, s, SEG_BYTES] += size
        seg[b, f, s, SEG_POS] = bn[b, p, BN_ENQ]
        if kind == 0:
            if fill >= 0:
                seg[b, f, s, SEG_FILL_BYTES] += size
            else:
                seg[b, f, s, SEG_NEW] += size
                if seq < seg[b, f, s, SEG_SEQ] or seg[b, f, s, SEG_NEW] == size:
                    seg[b, f, s, SEG_SEQ] = seq
    _update_available(b, f, obs, fl, mss)
    return size


@njit(cache=True)
def _schedule(b, t, obs, cobs, fl, bn, cn, seg, segi, hole, sched, rng, mss):
    """Per-packet scheduling of the connection's data. Returns PAUSE_DECISION when the agent
    must answer (blocked mode), else PAUSE_NONE."""
    nsub = int(cn[b, CN_N_SUB])
    sid = int(cn[b, CN_SCHED])
    o = obs[b]
    co = cobs[b]
    prm = sched[b, :SCHED_STATE]
    st = sched[b, SCHED_STATE:]
    # spurious resends go out on the flow that declared them, ahead of new data
    for f in range(nsub):
        while fl[b, f, FL_SPUR_PENDING] > EPS and o[f, OBS_AVAILABLE] > 0.0:
            sent = _send_packet(b, f, t, obs, fl, bn, cn, seg, segi, hole, rng, mss, 1)
            if sent <= 0.0:
                break
            fl[b, f, FL_SPUR_PENDING] = max(fl[b, f, FL_SPUR_PENDING] - sent, 0.0)
    for _ in range(MAX_PACKETS_PER_STEP):
        backlog = cn[b, CN_PENDING] + max(min(cn[b, CN_SND_LIMIT], cn[b, CN_ACKED_EDGE] + cn[b, CN_RCVBUF])
                                          - cn[b, CN_SND_NXT], 0.0)
        co[COBS_BACKLOG] = backlog
        if backlog <= EPS:
            break
        if cn[b, CN_BLOCKED] > 0.0:
            fast = -1
            best = math.inf
            for i in range(nsub):
                if o[i, OBS_SRTT] < best:
                    best = o[i, OBS_SRTT]
                    fast = i
            if o[fast, OBS_AVAILABLE] > 0.0:
                mask = 1 << fast
            else:
                second = -1
                best = math.inf
                for i in range(nsub):
                    if o[i, OBS_AVAILABLE] > 0.0 and o[i, OBS_SRTT] < best:
                        best = o[i, OBS_SRTT]
                        second = i
                if second < 0:
                    break
                advise = cn[b, CN_ADVISE]
                if advise < 0.0:
                    return PAUSE_DECISION
                if advise == 0.0:
                    break
                mask = 1 << second
        else:
            mask = pick(sid, prm, st, o, co, nsub, mss, rng, b)
        if mask == 0:
            break
        first = True
        progressed = False
        for i in range(nsub):
            if mask & (1 << i):
                sent = _send_packet(b, i, t, obs, fl, bn, cn, seg, segi, hole, rng, mss, 0 if first else 1)
                progressed = progressed or sent > 0.0
                first = False
        if not progressed:
            break
    return PAUSE_NONE


@njit(cache=True)
def _competing_and_udp(b, t, obs, fl, bn, cn, seg, segi, hole, rng, mss):
    for f in range(int(cn[b, CN_N_SUB]), int(cn[b, CN_N_FLOWS])):
        while obs[b, f, OBS_AVAILABLE] > 0.0:
            if _send_packet(b, f, t, obs, fl, bn, cn, seg, segi, hole, rng, mss, 2) <= 0.0:
                break
    for p in range(int(cn[b, CN_N_SUB])):
        udp = bn[b, p, BN_UDP]
        if udp > 0.0:
            room = bn[b, p, BN_QCAP] - (bn[b, p, BN_ENQ] - bn[b, p, BN_DEQ])
            take = min(udp, max(room, 0.0))
            bn[b, p, BN_ENQ] += take
            bn[b, p, BN_DROPPED] += udp - take


@njit(cache=True)
def _depart(b, t, fl, bn, cn, seg, segi, rng, spur_r, spur_p, mss):
    """Bottlenecks drain in FIFO order; departed segments get their arrival step."""
    Q = seg.shape[2]
    for p in range(int(cn[b, CN_N_SUB])):
        q = bn[b, p, BN_ENQ] - bn[b, p, BN_DEQ]
        out = min(q, bn[b, p, BN_CAP])
        bn[b, p, BN_DEQ] += out
        bn[b, p, BN_DELIVERED] += out
    reorders = cn[b, CN_REORDERS] > 0.0
    for f in range(int(cn[b, CN_N_FLOWS])):
        p = int(fl[b, f, FL_PATH])
        deq = bn[b, p, BN_DEQ]
        jit = bn[b, p, BN_JITTER]
        d = segi[b, f, SI_DEP]
        tl = segi[b, f, SI_TAIL]
        while d < tl:
            s = d % Q
            if seg[b, f, s, SEG_POS] > deq + EPS:
                break
            delay = bn[b, p, BN_DFWD]
            if jit > 0.0:
                delay = max(delay + jit * normal(rng, b), 0.0)
                if reorders and seg[b, f, s, SEG_BYTES] > 0.0:
                    prob = _spurious_prob(mss / max(bn[b, p, BN_CAP], 1.0) / jit, spur_r, spur_p)
                    npk = int(math.ceil(seg[b, f, s, SEG_BYTES] / mss - EPS))
                    for _ in range(npk):
                        if uniform(rng, b) < prob:
                            seg[b, f, s, SEG_SPUR] += 1.0
            arrive = max(float(t) + max(math.floor(delay + 0.5), 1.0), fl[b, f, FL_LAST_ARRIVE])
            seg[b, f, s, SEG_ARRIVE] = arrive
            fl[b, f, FL_LAST_ARRIVE] = arrive
            d += 1
        segi[b, f, SI_DEP] = d


@njit(inline="always", cache=True)
def _spurious_prob(r, grid, table):
    """Interpolate the spurious-declaration probability at spacing/jitter ratio r (log grid)."""
    if r <= grid[0]:
        return table[0]
    n = grid.shape[0]
    if r >= grid[n - 1]:
        return table[n - 1]
    lg0 = math.log(grid[0])
    step = (math.log(grid[n - 1]) - lg0) / (n - 1)
    x = (math.log(r) - lg0) / step
    i = int(x)
    w = x - i
    return table[i] * (1.0 - w) + table[i + 1] * w


@njit(cache=True)
def advance(obs, cobs, fl, cc, ccp, bn, cn, seg, segi, ring, hole, sched, ctrace, atrace, rng,
            spur_r, spur_p, active, max_steps, mss, dt):
    """Advance every active connection until it pauses (decision, interval end, episode end) or
    has run ``max_steps`` steps. The reason is left in ``cn[b, CN_PAUSE]``."""
    for b in range(cn.shape[0]):
        if not active[b] or cn[b, CN_DONE] > 0.0:
            continue
        # after a decision or interval pause the step continues at scheduling
        resume_send = cn[b, CN_PAUSE] == PAUSE_DECISION or cn[b, CN_PAUSE] == PAUSE_INTERVAL
        cn[b, CN_PAUSE] = PAUSE_NONE
        steps = 0
        while steps < max_steps:
            t = int(cn[b, CN_T])
            nflows = int(cn[b, CN_N_FLOWS])
            nsub = int(cn[b, CN_N_SUB])
            if not resume_send:
                now = t * dt
                _apply_schedules(b, t, fl, cc, ccp, bn, cn, ctrace, atrace, mss, now)
                _receive(b, t, obs, fl, bn, cn, seg, segi, ring, hole, mss)
                _feedback(b, t, obs, cobs, fl, cc, ccp, cn, seg, segi, ring, hole, rng, mss, dt)
                done = (cn[b, CN_RCV_NXT] >= cn[b, CN_SND_LIMIT] - EPS) or t >= cn[b, CN_END_STEP] \
                    or (cn[b, CN_OOO_EXCEEDED] > 0.0 and cn[b, CN_END_ON_OOO] > 0.0)
                if done:
                    if cn[b, CN_RCV_NXT] >= cn[b, CN_SND_LIMIT] - EPS:
                        cn[b, CN_DONE_STEP] = t
                    cn[b, CN_DONE] = 1.0
                    cn[b, CN_PAUSE] = PAUSE_DONE
                    break
                _refresh_windows(b, obs, cobs, fl, cn, nflows, nsub, mss, dt)
                if cn[b, CN_MODE_UNTIL] >= 0.0 and t >= cn[b, CN_MODE_UNTIL]:
                    cn[b, CN_PAUSE] = PAUSE_INTERVAL  # the agent sets the next mode, then we send
                    break
            resume_send = False
            if _schedule(b, t, obs, cobs, fl, bn, cn, seg, segi, hole, sched, rng, mss) == PAUSE_DECISION:
                cn[b, CN_PAUSE] = PAUSE_DECISION
                break
            cn[b, CN_ADVISE] = -1.0
            _competing_and_udp(b, t, obs, fl, bn, cn, seg, segi, hole, rng, mss)
            _depart(b, t, fl, bn, cn, seg, segi, rng, spur_r, spur_p, mss)
            cn[b, CN_T] = t + 1
            steps += 1
        if cn[b, CN_PAUSE] == PAUSE_NONE:
            cn[b, CN_PAUSE] = PAUSE_LIMIT
