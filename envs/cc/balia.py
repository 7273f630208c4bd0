"""BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low, IEEE/ACM ToN 2016;
draft-walid-mptcp-congestion-control).

With ``x_r = w_r / rtt_r`` and ``alpha_r = max_k x_k / x_r``, per packet acked on path r in
congestion avoidance (windows in packets)
``w_r += x_r / (rtt_r (sum_k x_k)^2) * (1 + alpha_r) / 2 * (4 + alpha_r) / 5``, and on a loss
``w_r -= w_r / 2 * min(alpha_r, 1.5)`` once per round trip, without growth in the round trip after
it. With one path both are NewReno's.
"""

from numba import njit

from envs.cc import reno
from envs.cc.base import CWND, INIT_CWND_PACKETS, MIN_CWND_PACKETS, RECOVERY_START, SSTHRESH, in_recovery
from envs.cc.coupled import FIRST_COUPLED, SRTT, counted, init_subflow, rate_sum, siblings, slow_start, track_rtt
from envs.plugins import register_cc

# initial window (packets), as NewReno's (reno.INIT_CWND); segments each counted ACK stands for
# (coupled.counted); the timeout's response (reno.restart)
DEFAULTS = {"init_cwnd_packets": INIT_CWND_PACKETS, "segments_per_ack": 1.0, "reset_cwnd": 0.0}
INIT_CWND = 0
SEGMENTS_PER_ACK = 1
RESET = 2


@njit(cache=True, _nrt=False)
def alpha(C, f, lo, hi):
    """``alpha_f = max_k x_k / x_f`` over the subflows ``lo .. hi-1`` that have an RTT estimate."""
    best = 0.0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            best = max(best, C[r, CWND] / C[r, SRTT])
    own = C[f, CWND] / C[f, SRTT] if C[f, SRTT] > 0.0 else best
    return best / own if own > 0.0 else 1.0


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_subflow(C, f, mss, P[f, INIT_CWND])


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    track_rtt(C, f, rtt)
    if in_recovery(C, f, now, rtt) or slow_start(C, f, acked):
        return
    lo, hi = siblings(f, nsub)
    a = alpha(C, f, lo, hi)
    total = rate_sum(C, lo, hi)
    x = C[f, CWND] / C[f, SRTT]
    per_byte = x / (C[f, SRTT] * total * total) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0
    C[f, CWND] += counted(P, f, nsub, acked, SEGMENTS_PER_ACK) * mss * per_byte


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if lost_sent <= C[f, RECOVERY_START]:
        return  # same loss episode (RFC 6582 recovery)
    lo, hi = siblings(f, nsub)
    w = C[f, CWND]
    C[f, SSTHRESH] = max(w - w / 2.0 * min(alpha(C, f, lo, hi), 1.5), MIN_CWND_PACKETS * mss)
    C[f, CWND] = C[f, SSTHRESH]
    C[f, RECOVERY_START] = now


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    reno.restart(C, f, now, MIN_CWND_PACKETS, mss, P[f, RESET])


register_cc("balia", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=FIRST_COUPLED)
