"""LIA, the Linked Increases Algorithm of MPTCP (RFC 6356, section 3).

Per ACK of ``acked`` bytes on subflow i in congestion avoidance, cwnd_i grows by
``min(alpha * acked * MSS / cwnd_total, acked * MSS / cwnd_i)`` with
``alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2``: the connection as a
whole is no more aggressive than one TCP on its best path, and never more than TCP on any path.
Slow start, the loss response (halve once per round trip) and no growth in recovery are NewReno's.
"""

from numba import njit

from envs.cc import reno
from envs.cc.base import CWND, INIT_CWND_PACKETS, MIN_CWND_PACKETS, in_recovery
from envs.cc.coupled import FIRST_COUPLED, SRTT, counted, init_subflow, rate_sum, siblings, slow_start, track_rtt, window_sum
from envs.plugins import register_cc

# multiplicative decrease and initial window (packets), as NewReno's (reno.BETA, reno.INIT_CWND);
# segments each counted ACK stands for (coupled.counted); the timeout's response (reno.restart)
DEFAULTS = {"beta": 0.5, "init_cwnd_packets": INIT_CWND_PACKETS, "segments_per_ack": 1.0, "reset_cwnd": 0.0}
BETA = 0
INIT_CWND = 1
SEGMENTS_PER_ACK = 2
RESET = 3


@njit(cache=True, _nrt=False)
def alpha(C, lo, hi):
    """RFC 6356's alpha over the subflows ``lo .. hi-1`` that have an RTT estimate."""
    best = 0.0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            best = max(best, C[r, CWND] / (C[r, SRTT] * C[r, SRTT]))
    denom = rate_sum(C, lo, hi)
    return window_sum(C, lo, hi) * best / (denom * denom)


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_subflow(C, f, mss, P[f, INIT_CWND])


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    track_rtt(C, f, rtt)
    if in_recovery(C, f, now, rtt) or slow_start(C, f, acked):
        return
    lo, hi = siblings(f, nsub)
    acked = counted(P, f, nsub, acked, SEGMENTS_PER_ACK)
    coupled = alpha(C, lo, hi) * acked * mss / window_sum(C, lo, hi)
    C[f, CWND] += min(coupled, acked * mss / C[f, CWND])


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    reno.decrease(C, f, now, lost_sent, P[f, BETA], MIN_CWND_PACKETS, mss)


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    reno.restart(C, f, now, MIN_CWND_PACKETS, mss, P[f, RESET])


register_cc("lia", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=FIRST_COUPLED)
