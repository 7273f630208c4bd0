"""wVegas, weighted Vegas for MPTCP (Cao, Xu, Fu, ICC 2012; Linux MPTCP mptcp_wvegas.c).

Delay-based, once per (packet-timed) round trip on each subflow: with ``rtt`` the mean RTT
sample of the round and ``base`` the minimum RTT seen, ``diff = w (rtt - base) / rtt`` packets
are queued. In slow start, ``diff > gamma`` ends it (``w = min(w, w base / rtt + 1)``). In
congestion avoidance the subflow's target is ``alpha_r = max(2, weight_r * total_alpha)``
packets, ``weight_r`` its share of the connection's rate ``sum w_k / rtt_k`` (recomputed when
``diff >= alpha_r``); ``w`` drops by one packet when ``diff > alpha_r`` and grows by one when
``diff < alpha_r``. When the queueing delay ``rtt - base`` reaches twice the smallest positive one
seen since the last back-off, ``w`` is scaled by ``base / (2 rtt)`` to drain the queue (the
positive minimum is this model's reading: Linux's also-zero minimum would halve every round on an
empty queue). Rounds with at most 2 samples and losses are NewReno's; after a loss the weights
restart from ``initial_alpha`` as Linux re-enables wVegas.
"""

import math

from numba import njit

from envs.cc import reno
from envs.cc.base import CWND, INIT_CWND_PACKETS, MIN_CWND_PACKETS, RECOVERY_START, SSTHRESH
from envs.cc.coupled import FIRST_COUPLED, init_subflow, siblings, slow_start, track_rtt
from envs.plugins import register_cc

# parameters (the loss response is reno.decrease's, with this BETA and NewReno's floor)
BETA = 0
TOTAL_ALPHA = 1
INITIAL_ALPHA = 2
GAMMA = 3
DEFAULTS = {"beta": 0.5, "total_alpha": 10.0, "initial_alpha": 2.0, "gamma": 1.0}

BASE_RTT = FIRST_COUPLED  # minimum RTT seen (s)
RTT_SUM = FIRST_COUPLED + 1  # RTT samples of this round, weighted by packets acked
RTT_CNT = FIRST_COUPLED + 2  # packets acked this round
RATE = FIRST_COUPLED + 3  # w / rtt at the last weight update (bytes/s), 0 unset
WEIGHT = FIRST_COUPLED + 4  # share of the connection's rate
ALPHA = FIRST_COUPLED + 5  # target queued packets
QDELAY = FIRST_COUPLED + 6  # smallest positive queueing delay since the last back-off (s), 0 unset


@njit(inline="always", cache=True, _nrt=False)
def _enable(C, P, f):
    """Linux's wvegas_enable: a fresh round, initial alpha, full weight."""
    C[f, RTT_SUM] = 0.0
    C[f, RTT_CNT] = 0.0
    C[f, RATE] = 0.0
    C[f, WEIGHT] = 1.0
    C[f, ALPHA] = P[f, INITIAL_ALPHA]
    C[f, QDELAY] = 0.0


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_subflow(C, f, mss, INIT_CWND_PACKETS)  # Linux only (not in XQUIC): RFC 6928's
    C[f, BASE_RTT] = math.inf
    _enable(C, P, f)


@njit(cache=True, _nrt=False)
def weight(C, f, lo, hi):
    """Subflow f's share of the rates ``RATE`` of the subflows ``lo .. hi-1``; kept if unknown."""
    total = 0.0
    for r in range(lo, hi):
        total += C[r, RATE]
    if total > 0.0 and C[f, RATE] > 0.0:
        return C[f, RATE] / total
    return C[f, WEIGHT]


@njit(cache=True, _nrt=False)
def round_update(C, P, f, nsub, rtt, acked, mss):
    """The once-per-round wVegas rule, with ``rtt`` the round's mean RTT and ``acked`` the bytes
    of the ACK that ends the round."""
    base = C[f, BASE_RTT]
    w = C[f, CWND] / mss
    diff = w * (rtt - base) / rtt
    if C[f, CWND] < C[f, SSTHRESH]:
        if diff > P[f, GAMMA]:
            w = min(w, w * base / rtt + 1.0)
            C[f, SSTHRESH] = min(C[f, SSTHRESH], (w - 1.0) * mss)
            C[f, CWND] = max(w, MIN_CWND_PACKETS) * mss
        else:
            C[f, CWND] += acked
        return
    if diff >= C[f, ALPHA]:
        C[f, RATE] = C[f, CWND] / rtt
        lo, hi = siblings(f, nsub)
        C[f, WEIGHT] = weight(C, f, lo, hi)
        C[f, ALPHA] = max(2.0, math.floor(C[f, WEIGHT] * P[f, TOTAL_ALPHA]))
    if diff > C[f, ALPHA]:
        w -= 1.0
        C[f, SSTHRESH] = min(C[f, SSTHRESH], (w - 1.0) * mss)
    elif diff < C[f, ALPHA]:
        w += 1.0
    queueing = rtt - base
    if queueing > 0.0:
        if C[f, QDELAY] == 0.0 or queueing < C[f, QDELAY]:
            C[f, QDELAY] = queueing
        if queueing >= 2.0 * C[f, QDELAY]:
            w *= base / (2.0 * rtt)
            C[f, QDELAY] = 0.0
    C[f, CWND] = max(w, MIN_CWND_PACKETS) * mss


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    track_rtt(C, f, rtt)
    C[f, BASE_RTT] = min(C[f, BASE_RTT], rtt)
    C[f, RTT_SUM] += rtt * acked / mss
    C[f, RTT_CNT] += acked / mss
    if round_start:
        if C[f, RTT_CNT] <= 2.0:
            reno.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b)
        else:
            round_update(C, P, f, nsub, C[f, RTT_SUM] / C[f, RTT_CNT], acked, mss)
        C[f, RTT_SUM] = 0.0
        C[f, RTT_CNT] = 0.0
    else:
        slow_start(C, f, acked)


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if lost_sent > C[f, RECOVERY_START]:
        _enable(C, P, f)
    reno.decrease(C, f, now, lost_sent, P[f, BETA], MIN_CWND_PACKETS, mss)


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    _enable(C, P, f)
    reno.restart(C, f, now, MIN_CWND_PACKETS, mss, 0.0)  # Linux only


register_cc("wvegas", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=QDELAY + 1)
