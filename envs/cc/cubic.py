"""CUBIC (RFC 9438): W(t) = C (t - K)^3 + W_max, beta 0.7, Reno-friendly region, fast convergence,
and HyStart++ (RFC 9406) slow-start exit on a per-round RTT increase.

Two variants, by parameter (docs/transport.md, "Stack profiles"): RFC 9438 as Linux's
tcp_cubic.c runs it (the window approaches the target by (target - W) / W per acknowledged
segment, a Reno estimate growing by 3 (1 - beta) / (1 + beta) segments per round trip), and
XQUIC's xqc_cubic.c (``jump_to_target``: each ACK sets the window to the target, at most half
the acknowledged bytes above it, and never below a Reno estimate growing by one segment per
window acknowledged; no slow-start exit but loss; persistent congestion resets the window to
its minimum and keeps ssthresh). Both evaluate the target one minimum RTT ahead."""

import math

from numba import njit

from envs.cc.base import (CWND, FIRST_PRIVATE, INIT_CWND_PACKETS, MIN_CWND_PACKETS, RECOVERY_START, SSTHRESH,
                          in_recovery, init_common)
from envs.plugins import register_cc

# parameters
C_CUBIC = 0  # 0.4 (segments / s^3)
BETA = 1  # 0.7
HYSTART = 2  # 1 = HyStart++ on
MIN_CWND = 3  # packets a reduction leaves at least (Linux tcp_cubic.c bictcp_recalc_ssthresh: 2)
INIT_CWND = 4  # 10: initial window, packets (RFC 6928)
RENO_ALPHA = 5  # Reno estimate's growth, segments per round trip; 0 = RFC 9438's 3 (1 - beta) / (1 + beta)
JUMP = 6  # 1 = XQUIC's growth and persistent-congestion reset (xqc_cubic.c, module docstring)
DEFAULTS = {"c": 0.4, "beta": 0.7, "hystart": 1.0, "min_cwnd": MIN_CWND_PACKETS, "init_cwnd_packets": INIT_CWND_PACKETS,
            "reno_alpha": 0.0, "jump_to_target": 0.0}

# state
W_MAX = FIRST_PRIVATE  # segments; 0 = unset (the next epoch starts at K = 0 from cwnd)
K = FIRST_PRIVATE + 1
EPOCH = FIRST_PRIVATE + 2  # start of the current congestion-avoidance epoch (s), -1 unset
W_EST = FIRST_PRIVATE + 3  # Reno-friendly estimate (segments)
ROUND_MIN = FIRST_PRIVATE + 4  # min RTT in the current round (HyStart++)
LAST_ROUND_MIN = FIRST_PRIVATE + 5
DELAY_MIN = FIRST_PRIVATE + 6  # least RTT seen (tcp_cubic.c ca->delay_min, xqc_cubic.c cubic->min_rtt)


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_common(C, f, mss, P[f, INIT_CWND])
    C[f, W_MAX] = 0.0
    C[f, K] = 0.0
    C[f, EPOCH] = -1.0
    C[f, W_EST] = 0.0
    C[f, ROUND_MIN] = math.inf
    C[f, LAST_ROUND_MIN] = math.inf
    C[f, DELAY_MIN] = math.inf


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    C[f, DELAY_MIN] = min(C[f, DELAY_MIN], min_rtt)
    if in_recovery(C, f, now, rtt):
        # so the next epoch starts after recovery, from the window an undo may have restored
        return
    if C[f, CWND] < C[f, SSTHRESH]:
        C[f, CWND] += acked
        if P[f, HYSTART] > 0.0:
            if round_start:
                C[f, LAST_ROUND_MIN] = C[f, ROUND_MIN]
                C[f, ROUND_MIN] = math.inf
            C[f, ROUND_MIN] = min(C[f, ROUND_MIN], rtt)
            last = C[f, LAST_ROUND_MIN]
            # RFC 9406: exit when this round's min RTT exceeds the last one by eta
            if last < math.inf and C[f, CWND] >= 16.0 * mss:
                eta = min(max(last / 8.0, 0.004), 0.016)
                if C[f, ROUND_MIN] >= last + eta:
                    C[f, SSTHRESH] = C[f, CWND]
        return
    w = C[f, CWND] / mss
    beta = P[f, BETA]
    if C[f, EPOCH] < 0.0:
        C[f, EPOCH] = now
        if w < C[f, W_MAX]:
            C[f, K] = math.pow((C[f, W_MAX] - w) / P[f, C_CUBIC], 1.0 / 3.0)
        else:
            C[f, K] = 0.0
            C[f, W_MAX] = w
        C[f, W_EST] = w
    t = now - C[f, EPOCH]
    # the target one minimum RTT ahead: tcp_cubic.c bictcp_update (t += ca->delay_min),
    # xqc_cubic.c xqc_cubic_update (t = now + cubic->min_rtt - epoch_start)
    ahead = C[f, DELAY_MIN] if C[f, DELAY_MIN] < math.inf else rtt
    target = P[f, C_CUBIC] * (t + ahead - C[f, K]) ** 3 + C[f, W_MAX]
    alpha = P[f, RENO_ALPHA] if P[f, RENO_ALPHA] > 0.0 else 3.0 * (1.0 - beta) / (1.0 + beta)
    if P[f, JUMP] > 0.0:
        # xqc_cubic_on_ack: tcp_cwnd += MSS once tcp_cwnd bytes are acknowledged; xqc_cubic_update:
        # cwnd = max(tcp_cwnd, min(bic_target, cwnd + acked / 2))
        C[f, W_EST] += alpha * (acked / mss) / max(C[f, W_EST], 1.0)
        w = max(C[f, W_EST], min(target, w + 0.5 * acked / mss))
    else:
        target = min(max(target, w), 1.5 * w)
        C[f, W_EST] += alpha * (acked / mss) / w
        w_cubic_now = P[f, C_CUBIC] * (t - C[f, K]) ** 3 + C[f, W_MAX]
        if w_cubic_now < C[f, W_EST]:
            w = max(w, C[f, W_EST])  # Reno-friendly region
        else:
            w += (target - w) / w * (acked / mss)
    C[f, CWND] = w * mss


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if lost_sent <= C[f, RECOVERY_START]:
        return
    beta = P[f, BETA]
    w = C[f, CWND] / mss
    if w < C[f, W_MAX]:  # fast convergence (RFC 9438 section 4.7): W_max still being approached
        C[f, W_MAX] = w * (1.0 + beta) / 2.0
    else:
        C[f, W_MAX] = w
    w = max(w * beta, P[f, MIN_CWND])
    C[f, CWND] = w * mss
    C[f, SSTHRESH] = C[f, CWND]
    # the next epoch starts at the next ACK (K = cubic_root((W_max - cwnd_epoch) / C), RFC 9438
    # section 4.2), as Linux (tcp_cubic.c bictcp_recalc_ssthresh: epoch_start = 0) and XQUIC
    # (xqc_cubic.c xqc_cubic_on_lost: epoch_start = 0) do: a reduction undone in between
    # (envs/sim/recovery.py) then restarts from the restored window
    C[f, EPOCH] = -1.0
    C[f, W_EST] = w
    C[f, RECOVERY_START] = now


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    C[f, W_MAX] = 0.0  # RFC 9438 section 4.8: the next epoch starts at K = 0, W_max = its cwnd
    C[f, EPOCH] = -1.0
    C[f, RECOVERY_START] = now
    if P[f, JUMP] > 0.0:
        # xqc_cubic_reset_cwnd (persistent congestion, the core's RTO under XQUIC): cwnd, tcp_cwnd
        # and last_max_cwnd to min_cwnd, ssthresh as it was
        C[f, CWND] = P[f, MIN_CWND] * mss
        C[f, W_EST] = P[f, MIN_CWND]
        return
    C[f, SSTHRESH] = max(C[f, CWND] * P[f, BETA], P[f, MIN_CWND] * mss)
    C[f, CWND] = mss
    C[f, DELAY_MIN] = math.inf  # tcp_cubic.c cubictcp_state: bictcp_reset on TCP_CA_Loss


register_cc("cubic", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=DELAY_MIN + 1)
