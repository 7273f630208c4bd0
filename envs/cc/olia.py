"""OLIA, the Opportunistic Linked Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
CoNEXT 2012 / ToN 2013; draft-khalili-mptcp-congestion-control-05).

Per packet acked on path r in congestion avoidance (windows in packets)
``w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + epsilon_r / w_r``. ``l_r`` is the larger of
the bytes acked between the last two losses and since the last loss; the best paths B have the
largest ``l_r / rtt_r^2`` (the paper's and Linux mptcp_olia.c's ranking, a TCP rate estimate
squared; docs/transport.md), M those with the largest window.
``epsilon_r = 1 / (n |B \\ M|)`` for r in B \\ M, ``-1 / (n |M|)`` for r in M when B \\ M is not
empty, else 0, with n the number of subflows. Slow start, the loss response and no growth in
recovery are NewReno's.
"""

from numba import njit

from envs.cc import reno
from envs.cc.base import CWND, INIT_CWND_PACKETS, MIN_CWND_PACKETS, RECOVERY_START, in_recovery
from envs.cc.coupled import FIRST_COUPLED, SRTT, counted, init_subflow, rate_sum, siblings, slow_start, track_rtt
from envs.plugins import register_cc

# multiplicative decrease and initial window (packets), as NewReno's (reno.BETA, reno.INIT_CWND);
# segments each counted ACK stands for (coupled.counted); the timeout's response (reno.restart)
DEFAULTS = {"beta": 0.5, "init_cwnd_packets": INIT_CWND_PACKETS, "segments_per_ack": 1.0, "reset_cwnd": 0.0}
BETA = 0
INIT_CWND = 1
SEGMENTS_PER_ACK = 2
RESET = 3

L_PREV = FIRST_COUPLED  # bytes acked between the last two losses
L_CUR = FIRST_COUPLED + 1  # bytes acked since the last loss


@njit(inline="always", cache=True, _nrt=False)
def _quality(C, r):
    """``l_r / rtt_r^2``: ranks the paths by their (squared) TCP rate estimate."""
    return max(C[r, L_PREV], C[r, L_CUR]) / (C[r, SRTT] * C[r, SRTT])


@njit(cache=True, _nrt=False)
def epsilon(C, f, lo, hi):
    """OLIA's epsilon_f over the subflows ``lo .. hi-1`` that have an RTT estimate."""
    n = 0
    max_w = 0.0
    best = 0.0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            n += 1
            max_w = max(max_w, C[r, CWND])
            best = max(best, _quality(C, r))
    in_m = 0
    best_not_m = 0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            if C[r, CWND] == max_w:
                in_m += 1
            elif _quality(C, r) == best:
                best_not_m += 1
    if best_not_m == 0:
        return 0.0
    if C[f, CWND] == max_w:
        return -1.0 / (n * in_m)
    if _quality(C, f) == best:
        return 1.0 / (n * best_not_m)
    return 0.0


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_subflow(C, f, mss, P[f, INIT_CWND])
    C[f, L_PREV] = 0.0
    C[f, L_CUR] = 0.0


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    track_rtt(C, f, rtt)
    C[f, L_CUR] += acked
    if in_recovery(C, f, now, rtt) or slow_start(C, f, acked):
        return
    lo, hi = siblings(f, nsub)
    total = rate_sum(C, lo, hi)
    w = C[f, CWND]
    per_byte = (w / (C[f, SRTT] * C[f, SRTT])) / (total * total) + epsilon(C, f, lo, hi) / w
    C[f, CWND] = max(w + counted(P, f, nsub, acked, SEGMENTS_PER_ACK) * mss * per_byte, MIN_CWND_PACKETS * mss)


@njit(inline="always", cache=True, _nrt=False)
def _new_loss_interval(C, f):
    if C[f, L_CUR] > 0.0:
        C[f, L_PREV] = C[f, L_CUR]
        C[f, L_CUR] = 0.0


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if lost_sent > C[f, RECOVERY_START]:  # a new loss episode (RFC 6582), as reno.decrease counts it
        _new_loss_interval(C, f)
    reno.decrease(C, f, now, lost_sent, P[f, BETA], MIN_CWND_PACKETS, mss)


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    _new_loss_interval(C, f)
    reno.restart(C, f, now, MIN_CWND_PACKETS, mss, P[f, RESET])


register_cc("olia", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=L_CUR + 1)
