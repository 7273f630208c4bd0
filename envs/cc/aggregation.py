"""ACK aggregation as BBR sees it: the ``extra_acked`` term of BBR's congestion window.

Data acknowledged beyond what the estimated bandwidth would have delivered since an epoch
started is "extra"; its maximum over the last two windows of ``WIN_ROUNDS`` packet-timed
rounds, times a gain and at most ``bw x max_s``, is added to the window so that the sender keeps
sending while ACKs arrive in bursts (draft-cardwell-iccrg-bbr-congestion-control, "BBR.extra_acked";
Linux tcp_bbr.c bbr_update_ack_aggregation / bbr_ack_aggregation_cwnd; XQUIC xqc_bbr.c and
xqc_bbr2.c xqc_update_ack_aggregation / xqc_bbr_ack_aggregation_cwnd). The gain, the cap and
whether it applies in Startup are the CC's parameters, set per stack (envs/sim/stacks.py).

A CC keeps ``SLOTS`` state slots from ``base`` on for it.
"""

from numba import njit

from envs.cc.base import CWND

SLOTS = 6
_EXTRA = 0  # two slots: the maximum of the current and of the previous window
_IDX = 2  # which of the two is current
_ROUNDS = 3  # rounds into the current window
_EPOCH_ACKED = 4  # bytes acknowledged since the epoch started
_EPOCH_STAMP = 5  # start of the epoch (s)
WIN_ROUNDS = 5.0  # tcp_bbr.c bbr_extra_acked_win_rtts; xqc_bbr.c / xqc_bbr2.c ..._extra_ack_win_rtt
STARTUP_WIN_ROUNDS = 1.0  # xqc_bbr.c / xqc_bbr2.c xqc_bbr2_extra_ack_win_rtt_in_startup
EPOCH_RESET_PACKETS = float(1 << 20)  # tcp_bbr.c bbr_ack_epoch_acked_reset_thresh


@njit(inline="always", cache=True, _nrt=False)
def init(C, f, base, now):
    for k in range(SLOTS):
        C[f, base + k] = 0.0
    C[f, base + _EPOCH_STAMP] = now


@njit(inline="always", cache=True, _nrt=False)
def update(C, f, base, now, acked, bw, round_start, short_window, mss):
    """One ACK of ``acked`` bytes at time ``now`` with bandwidth estimate ``bw`` (bytes/s);
    ``short_window``: Startup of a stack that uses the one-round window there."""
    if round_start:
        C[f, base + _ROUNDS] += 1.0
        if C[f, base + _ROUNDS] >= (STARTUP_WIN_ROUNDS if short_window else WIN_ROUNDS):
            C[f, base + _ROUNDS] = 0.0
            idx = 1.0 - C[f, base + _IDX]
            C[f, base + _IDX] = idx
            C[f, base + _EXTRA + int(idx)] = 0.0
    expected = bw * (now - C[f, base + _EPOCH_STAMP])
    if C[f, base + _EPOCH_ACKED] <= expected or C[f, base + _EPOCH_ACKED] + acked >= EPOCH_RESET_PACKETS * mss:
        C[f, base + _EPOCH_ACKED] = 0.0
        C[f, base + _EPOCH_STAMP] = now
        expected = 0.0
    C[f, base + _EPOCH_ACKED] += acked
    extra = min(C[f, base + _EPOCH_ACKED] - expected, C[f, CWND])
    slot = base + _EXTRA + int(C[f, base + _IDX])
    if extra > C[f, slot]:
        C[f, slot] = extra


@njit(inline="always", cache=True, _nrt=False)
def cwnd(C, f, base, bw, gain, max_s, active):
    """Bytes to add to the window (0 unless ``active``)."""
    if gain <= 0.0 or not active:
        return 0.0
    return min(gain * max(C[f, base + _EXTRA], C[f, base + _EXTRA + 1]), bw * max_s)
