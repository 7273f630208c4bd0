"""NewReno (RFC 5681 / RFC 6582): slow start, +1 MSS per RTT, halve once per round trip on loss."""

from numba import njit

from envs.cc.base import (CWND, FIRST_PRIVATE, INIT_CWND_PACKETS, MIN_CWND_PACKETS, RECOVERY_START, SSTHRESH,
                          in_recovery, init_common)
from envs.plugins import register_cc

# parameters
BETA = 0  # 0.5: multiplicative decrease
INIT_CWND = 1  # 10: initial window, packets (RFC 6928)
MIN_CWND = 2  # 2: the least window a reduction leaves, packets (RFC 5681's 2 segments)
RESET = 3  # 0: a timeout leaves one packet (Linux's tcp_enter_loss); 1: XQUIC's persistent congestion (``restart``)
DEFAULTS = {"beta": 0.5, "init_cwnd_packets": INIT_CWND_PACKETS, "min_cwnd": MIN_CWND_PACKETS, "reset_cwnd": 0.0}


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_common(C, f, mss, P[f, INIT_CWND])


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    if in_recovery(C, f, now, rtt):
        return
    if C[f, CWND] < C[f, SSTHRESH]:
        C[f, CWND] += acked  # slow start: +1 MSS per MSS acked
    else:
        C[f, CWND] += mss * acked / C[f, CWND]  # congestion avoidance: +1 MSS per RTT


@njit(cache=True, _nrt=False)
def decrease(C, f, now, lost_sent, beta, floor, mss):
    """The loss response, a window of ``floor`` packets at least (shared by the coupled CCs, whose
    parameters lay out otherwise)."""
    if lost_sent <= C[f, RECOVERY_START]:
        return  # same loss episode (RFC 6582 recovery)
    C[f, SSTHRESH] = max(C[f, CWND] * beta, floor * mss)
    C[f, CWND] = C[f, SSTHRESH]
    C[f, RECOVERY_START] = now


@njit(cache=True, _nrt=False)
def restart(C, f, now, floor, mss, reset):
    """The timeout response: one packet, ssthresh half the window (``floor`` packets at least;
    Linux's tcp_enter_loss with tcp_reno_ssthresh, max(snd_cwnd / 2, 2), where RFC 5681 sec. 3.1
    halves the flight); with ``reset`` > 0 XQUIC's persistent congestion instead
    (xqc_new_reno.c xqc_reno_reset_cwnd, bindings/src/mps_coupled.c coupled_reset_cwnd): the
    window to ``floor`` packets, ssthresh kept, the recovery epoch cleared."""
    if reset > 0.0:
        C[f, CWND] = floor * mss
        C[f, RECOVERY_START] = -1.0
        return
    C[f, SSTHRESH] = max(C[f, CWND] * 0.5, floor * mss)
    C[f, CWND] = mss
    C[f, RECOVERY_START] = now


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    decrease(C, f, now, lost_sent, P[f, BETA], P[f, MIN_CWND], mss)


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    restart(C, f, now, P[f, MIN_CWND], mss, P[f, RESET])


register_cc("reno", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=FIRST_PRIVATE)
