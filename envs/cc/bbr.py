"""BBRv1 (Cardwell et al., ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00).

BtlBw is a windowed maximum of delivery-rate samples over 10 packet-timed rounds, RTprop a
windowed minimum over 10 s. Startup paces at 2/ln2 until the bandwidth stops growing by 25% for 3
rounds, Drain empties the queue, ProbeBW cycles pacing gains (1.25, 0.75, 1 x 6) starting from a
random phase, ProbeRTT holds cwnd at 4 packets for 200 ms and one round when RTprop is 10 s old.
cwnd = 2 x BDP plus the ACK aggregation term (``envs/cc/aggregation.py``). Random loss is
ignored, as in BBRv1. The defaults are Linux's tcp_bbr.c constants; each stack sets its own
(envs/sim/stacks.py: XQUIC's xqc_bbr.c has cwnd gain 2.5, a 1.1 full-bandwidth threshold,
100 ms ProbeRTT and twice the aggregation term).
"""

import math

from numba import njit

from envs.cc import aggregation
from envs.cc.base import CWND, FIRST_PRIVATE, INIT_CWND_PACKETS, PACING, RECOVERY_START, init_common
from envs.plugins import register_cc
from envs.sim.rng import uniform

# parameters
HIGH_GAIN = 0  # 2/ln2
CWND_GAIN = 1  # 2
PROBE_RTT_S = 2  # 0.2 s
RTPROP_WIN_S = 3  # 10 s
FULL_BW_THRESH = 4  # 1.25: Startup ends after 3 rounds growing less than this
EXTRA_GAIN = 5  # 1: ACK aggregation term's gain (0: off)
EXTRA_MAX_S = 6  # 0.1 s: ... at most this many seconds at the estimated bandwidth
EXTRA_IN_STARTUP = 7  # 0: ... only after Startup (1: also in Startup, with a one-round window)
DEFAULTS = {"high_gain": 2.0 / math.log(2.0), "cwnd_gain": 2.0, "probe_rtt_s": 0.2,
            "rtprop_window_s": 10.0, "full_bw_thresh": 1.25, "extra_acked_gain": 1.0,
            "extra_acked_max_s": 0.1, "extra_acked_in_startup": 0.0}

STARTUP, DRAIN, PROBE_BW, PROBE_RTT = 0.0, 1.0, 2.0, 3.0
BW_ROUNDS = 10

MODE = FIRST_PRIVATE
BTLBW = FIRST_PRIVATE + 1
ROUND = FIRST_PRIVATE + 2
RTPROP = FIRST_PRIVATE + 3
RTPROP_STAMP = FIRST_PRIVATE + 4
PACING_GAIN = FIRST_PRIVATE + 5
CWND_GAIN_NOW = FIRST_PRIVATE + 6
CYCLE_IDX = FIRST_PRIVATE + 7
CYCLE_STAMP = FIRST_PRIVATE + 8
FULL_BW = FIRST_PRIVATE + 9
FULL_BW_CNT = FIRST_PRIVATE + 10
FILLED = FIRST_PRIVATE + 11
PRT_DONE = FIRST_PRIVATE + 12  # ProbeRTT end time (s), 0 = not started
PRT_ROUND = FIRST_PRIVATE + 13  # round that must pass before ProbeRTT ends
PRIOR_CWND = FIRST_PRIVATE + 14
BW_WIN = FIRST_PRIVATE + 15  # BW_ROUNDS slots: max sample per round
AGG = BW_WIN + BW_ROUNDS  # aggregation.SLOTS slots: the ACK aggregation estimate


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_common(C, f, mss)
    C[f, MODE] = STARTUP
    C[f, BTLBW] = 0.0
    C[f, ROUND] = 0.0
    C[f, RTPROP] = math.inf
    C[f, RTPROP_STAMP] = now
    C[f, PACING_GAIN] = P[f, HIGH_GAIN]
    C[f, CWND_GAIN_NOW] = P[f, HIGH_GAIN]
    C[f, CYCLE_IDX] = 0.0
    C[f, CYCLE_STAMP] = now
    C[f, FULL_BW] = 0.0
    C[f, FULL_BW_CNT] = 0.0
    C[f, FILLED] = 0.0
    C[f, PRT_DONE] = 0.0
    C[f, PRT_ROUND] = 0.0
    C[f, PRIOR_CWND] = 0.0
    for i in range(BW_ROUNDS):
        C[f, BW_WIN + i] = 0.0
    aggregation.init(C, f, AGG, now)


@njit(cache=True, _nrt=False)
def _cycle_gain(idx):
    if idx == 0:
        return 1.25
    if idx == 1:
        return 0.75
    return 1.0


@njit(cache=True, _nrt=False)
def _enter_probe_bw(C, P, f, now, rng, b):
    C[f, MODE] = PROBE_BW
    C[f, CWND_GAIN_NOW] = P[f, CWND_GAIN]
    # random start phase, never the draining 0.75 phase (draft section 4.3.4.4)
    idx = int(uniform(rng, b) * 7.0)
    if idx >= 1:
        idx += 1
    C[f, CYCLE_IDX] = idx
    C[f, CYCLE_STAMP] = now
    C[f, PACING_GAIN] = _cycle_gain(idx)


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b):
    # bandwidth filter over BW_ROUNDS rounds
    if round_start:
        C[f, ROUND] += 1.0
        C[f, BW_WIN + int(C[f, ROUND]) % BW_ROUNDS] = 0.0
    slot = BW_WIN + int(C[f, ROUND]) % BW_ROUNDS
    if rate > C[f, slot]:
        C[f, slot] = rate
    bw = 0.0
    for i in range(BW_ROUNDS):
        bw = max(bw, C[f, BW_WIN + i])
    C[f, BTLBW] = bw
    # RTprop filter
    expired = now - C[f, RTPROP_STAMP] > P[f, RTPROP_WIN_S]
    if rtt > 0.0 and (rtt <= C[f, RTPROP] or expired):
        C[f, RTPROP] = rtt
        C[f, RTPROP_STAMP] = now
    rtprop = C[f, RTPROP]
    bdp = bw * rtprop if rtprop < math.inf else INIT_CWND_PACKETS * mss
    mode = C[f, MODE]
    # full-pipe detection (Startup exit)
    in_startup = P[f, EXTRA_IN_STARTUP] > 0.0 and C[f, FILLED] == 0.0
    aggregation.update(C, f, AGG, now, acked, bw, round_start, in_startup, mss)
    if round_start and C[f, FILLED] == 0.0:
        if bw >= C[f, FULL_BW] * P[f, FULL_BW_THRESH]:
            C[f, FULL_BW] = bw
            C[f, FULL_BW_CNT] = 0.0
        else:
            C[f, FULL_BW_CNT] += 1.0
            if C[f, FULL_BW_CNT] >= 3.0:
                C[f, FILLED] = 1.0
    if mode == STARTUP and C[f, FILLED] > 0.0:
        C[f, MODE] = DRAIN
        C[f, PACING_GAIN] = 1.0 / P[f, HIGH_GAIN]
        C[f, CWND_GAIN_NOW] = P[f, HIGH_GAIN]
        mode = DRAIN
    if mode == DRAIN and inflight <= bdp:
        _enter_probe_bw(C, P, f, now, rng, b)
        mode = PROBE_BW
    if mode == PROBE_BW:
        gain = C[f, PACING_GAIN]
        advance = now - C[f, CYCLE_STAMP] > rtprop
        if gain > 1.0:
            advance = advance and inflight >= gain * bdp
        elif gain < 1.0:
            advance = advance or inflight <= bdp
        if advance:
            idx = (int(C[f, CYCLE_IDX]) + 1) % 8
            C[f, CYCLE_IDX] = idx
            C[f, CYCLE_STAMP] = now
            C[f, PACING_GAIN] = _cycle_gain(idx)
    # ProbeRTT
    if expired and mode != PROBE_RTT:
        C[f, MODE] = PROBE_RTT
        mode = PROBE_RTT
        C[f, PACING_GAIN] = 1.0
        C[f, CWND_GAIN_NOW] = 1.0
        C[f, PRIOR_CWND] = C[f, CWND]
        C[f, PRT_DONE] = 0.0
    if mode == PROBE_RTT:
        if C[f, PRT_DONE] == 0.0 and inflight <= 4.0 * mss:
            C[f, PRT_DONE] = now + P[f, PROBE_RTT_S]
            C[f, PRT_ROUND] = C[f, ROUND] + 1.0
        elif C[f, PRT_DONE] > 0.0 and now >= C[f, PRT_DONE] and C[f, ROUND] >= C[f, PRT_ROUND]:
            C[f, RTPROP_STAMP] = now
            C[f, CWND] = max(C[f, CWND], C[f, PRIOR_CWND])
            if C[f, FILLED] > 0.0:
                _enter_probe_bw(C, P, f, now, rng, b)
            else:
                C[f, MODE] = STARTUP
                C[f, PACING_GAIN] = P[f, HIGH_GAIN]
                C[f, CWND_GAIN_NOW] = P[f, HIGH_GAIN]
            mode = C[f, MODE]
    # pacing rate and cwnd
    if bw > 0.0:
        C[f, PACING] = C[f, PACING_GAIN] * bw
    elif rtt > 0.0:
        C[f, PACING] = P[f, HIGH_GAIN] * INIT_CWND_PACKETS * mss / rtt
    target = C[f, CWND_GAIN_NOW] * bdp + 3.0 * mss \
        + aggregation.cwnd(C, f, AGG, bw, P[f, EXTRA_GAIN], P[f, EXTRA_MAX_S],
                           C[f, FILLED] > 0.0 or P[f, EXTRA_IN_STARTUP] > 0.0)
    if C[f, FILLED] > 0.0:
        C[f, CWND] = min(C[f, CWND] + acked, target)
    elif C[f, CWND] < target:
        C[f, CWND] += acked
    C[f, CWND] = max(C[f, CWND], 4.0 * mss)
    if mode == PROBE_RTT:
        C[f, CWND] = min(C[f, CWND], 4.0 * mss)


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    return  # BBRv1 does not react to random loss


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    C[f, PRIOR_CWND] = max(C[f, PRIOR_CWND], C[f, CWND])
    C[f, CWND] = mss
    C[f, RECOVERY_START] = now


register_cc("bbr", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=AGG + aggregation.SLOTS)
