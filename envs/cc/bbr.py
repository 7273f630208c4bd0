"""BBRv1 (Cardwell et al., ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00).

BtlBw is a windowed maximum of delivery-rate samples over 10 packet-timed rounds, RTprop a
windowed minimum over 10 s. Startup paces at 2/ln2 until the bandwidth stops growing by 25% for 3
rounds, Drain empties the queue, ProbeBW cycles pacing gains (1.25, 0.75, 1 x 6) starting from a
random phase, ProbeRTT holds cwnd at 4 packets for 200 ms and one round when RTprop is 10 s old.
cwnd = 2 x BDP plus the ACK aggregation term (``envs/cc/aggregation.py``) plus Linux's quantization
budget of 3 packets (tcp_bbr.c bbr_quantization_budget, with one segment per TSO burst; XQUIC's
xqc_bbr_target_cwnd adds none). The 1.25 phase of ProbeBW ends once it has lasted RTprop and either
in flight has reached 1.25 x BDP or the ACK reports a loss (tcp_bbr.c bbr_is_next_cycle_phase
``rs->losses``, xqc_bbr.c xqc_bbr_is_next_cycle_phase ``sampler->loss``). The defaults are
Linux's tcp_bbr.c constants; each stack sets its own (envs/sim/stacks.py: XQUIC's xqc_bbr.c has
cwnd gain 2.5, a 1.1 full-bandwidth threshold, 100 ms ProbeRTT and twice the aggregation term).

ProbeRTT's window: Linux holds 4 packets (tcp_bbr.c bbr_cwnd_min_target), which empties the flow's
share of the queue; XQUIC holds ``probe_rtt_cwnd_gain`` x BtlBw x RTprop, at least 4 packets
(xqc_bbr.c xqc_bbr_probe_rtt_cwnd, xqc_bbr_probe_rtt_gain 0.75), where RTprop is the sample taken
when the filter expired, so with a standing queue ProbeRTT lowers the flow's data in flight by a
quarter and the queue persists. RTprop then takes the RTT with that queue, the cwnd cap
(cwnd_gain x BtlBw x RTprop) grows with it, and flows sharing a bottleneck ratchet their queue up
every 10 s until the buffer overflows (docs/transport.md, "Shared bottleneck").

Loss does not lower the model (BtlBw, RTprop); it touches only the window, as both stacks do:

- packet conservation in recovery (tcp_bbr.c bbr_set_cwnd_to_recover_or_restore, xqc_bbr.c
  xqc_bbr_modulate_cwnd_for_recovery): entering a loss episode saves cwnd and sets it to the
  data in flight plus one packet; for the round trip that follows cwnd only replaces what is
  acknowledged; the first ACK of data sent after the episode's start ends it and restores the
  saved cwnd. ``conservation`` 1 (Linux): an episode starts at a loss of a packet sent after the
  previous one started and ends a round trip later (TCP's Recovery state); 2 (XQUIC,
  xqc_bbr_on_lost): every loss moves the episode's start to now, so under steady loss the
  episode lasts and conserves only once, and Startup enters none;
- tcp_bbr.c also takes every lost packet off cwnd (``cwnd -= rs->losses``; xqc_bbr.c has it
  under ``#if 0``: ``loss_cwnd_cut``);
- tcp_bbr.c's long-term bandwidth (``bbr_lt_bw_sampling``, a policer detector; xqc_bbr.c only
  with ``cc_params.bbr_enable_lt_bw``, which bindings/ leaves off: ``lt_bw``): from a loss on,
  intervals of 4 to 16 round trips that end in a loss with a loss rate of at least 50/256 give a
  delivery rate; two such in a row within 1/8 (or 4 kbit/s) of each other make their mean the
  bandwidth, paced at gain 1, for 48 round trips of ProbeBW.

A timeout (the core's RTO) saves the window and leaves one packet of it, Linux's TCP_CA_Loss
(tcp_enter_loss): like a loss episode without packet conservation, whose end (the ACK of data
sent after it) restores the saved window; with ``reset_cwnd`` it is XQUIC's persistent
congestion (xqc_send_ctl.c calls xqc_bbr_reset_cwnd): cwnd falls to the 4-``XQC_MSS`` floor
(xqc_bbr_min_cwnd) and a loss episode in progress is cancelled without restoring the window it
saved.
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
CONSERVATION = 8  # packet conservation in a loss episode's first round trip (0 off, 1 Linux, 2 XQUIC)
LOSS_CWND_CUT = 9  # 1: every lost packet comes off cwnd
LT_BW = 10  # 1: long-term bandwidth sampling (policer detection)
INIT_CWND = 11  # 10: initial window, packets (RFC 6928); also the target before the first RTT sample
PROBE_RTT_CWND_GAIN = 12  # 0: ProbeRTT's cwnd, max(4 packets, this x BtlBw x RTprop)
QUANTA = 13  # 3: cwnd_quanta_packets, added to the target window (tcp_bbr.c bbr_quantization_budget; 0: none)
RESET_CWND = 14  # 0: a timeout leaves one packet; 1: XQUIC's persistent congestion (module docstring)
DEFAULTS = {"high_gain": 2.0 / math.log(2.0), "cwnd_gain": 2.0, "probe_rtt_s": 0.2,
            "rtprop_window_s": 10.0, "full_bw_thresh": 1.25, "extra_acked_gain": 1.0,
            "extra_acked_max_s": 0.1, "extra_acked_in_startup": 0.0, "conservation": 1.0,
            "loss_cwnd_cut": 1.0, "lt_bw": 1.0, "init_cwnd_packets": INIT_CWND_PACKETS,
            "probe_rtt_cwnd_gain": 0.0, "cwnd_quanta_packets": 3.0, "reset_cwnd": 0.0}
# tcp_bbr.c long-term sampling: bbr_lt_intvl_min_rtts, 4 x that, bbr_lt_loss_thresh (50 / BBR_UNIT),
# bbr_lt_bw_ratio (BBR_UNIT / 8), bbr_lt_bw_diff (4000 bit/s, in bytes/s), bbr_lt_bw_max_rtts
LT_MIN_RTTS, LT_MAX_RTTS, LT_LOSS_THRESH = 4.0, 16.0, 50.0 / 256.0
LT_BW_RATIO, LT_BW_DIFF, LT_USE_RTTS = 1.0 / 8.0, 4000.0 / 8.0, 48.0

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
IN_RECOVERY = AGG + aggregation.SLOTS  # 1 during a loss episode
EPISODE = IN_RECOVERY + 1  # start of the current loss episode (s; XQUIC: its latest loss)
DELIVERED = IN_RECOVERY + 2  # bytes acknowledged since init
LOST = IN_RECOVERY + 3  # bytes declared lost since init
LOSS_SEEN = IN_RECOVERY + 4  # 1: a loss was declared since the last ACK (rs->losses > 0)
LT_SAMPLING = IN_RECOVERY + 5
LT_USE = IN_RECOVERY + 6
LT_BW_EST = IN_RECOVERY + 7  # bytes/s, 0 = none
LT_RTT_CNT = IN_RECOVERY + 8
LT_STAMP = IN_RECOVERY + 9  # start of the sampling interval (s)
LT_DELIVERED = IN_RECOVERY + 10  # DELIVERED at its start
LT_LOST = IN_RECOVERY + 11  # LOST at its start
ENTERED = IN_RECOVERY + 12  # when the episode began: packet conservation for a round trip from then
N_STATE = IN_RECOVERY + 13


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_common(C, f, mss, P[f, INIT_CWND])
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
    for k in range(IN_RECOVERY, N_STATE):
        C[f, k] = 0.0
    C[f, EPISODE] = -1.0


@njit(cache=True, _nrt=False)
def _lt_interval(C, f, now):
    """bbr_reset_lt_bw_sampling_interval."""
    C[f, LT_STAMP] = now
    C[f, LT_DELIVERED] = C[f, DELIVERED]
    C[f, LT_LOST] = C[f, LOST]
    C[f, LT_RTT_CNT] = 0.0


@njit(cache=True, _nrt=False)
def _lt_reset(C, f, now):
    """bbr_reset_lt_bw_sampling."""
    C[f, LT_BW_EST] = 0.0
    C[f, LT_USE] = 0.0
    C[f, LT_SAMPLING] = 0.0
    _lt_interval(C, f, now)


@njit(cache=True, _nrt=False)
def _lt_sampling(C, P, f, now, round_start, rng, b):
    """bbr_lt_bw_sampling, once per ACK (``LOSS_SEEN``: rs->losses)."""
    losses = C[f, LOSS_SEEN] > 0.0
    if C[f, LT_USE] > 0.0:
        if C[f, MODE] == PROBE_BW and round_start:
            C[f, LT_RTT_CNT] += 1.0
            if C[f, LT_RTT_CNT] >= LT_USE_RTTS:
                _lt_reset(C, f, now)
                _enter_probe_bw(C, P, f, now, rng, b)
        return
    if C[f, LT_SAMPLING] == 0.0:
        if not losses:
            return
        _lt_interval(C, f, now)
        C[f, LT_SAMPLING] = 1.0
    if round_start:
        C[f, LT_RTT_CNT] += 1.0
    if C[f, LT_RTT_CNT] < LT_MIN_RTTS:
        return
    if C[f, LT_RTT_CNT] > LT_MAX_RTTS:
        _lt_reset(C, f, now)
        return
    if not losses:
        return
    delivered = C[f, DELIVERED] - C[f, LT_DELIVERED]
    if delivered <= 0.0 or C[f, LOST] - C[f, LT_LOST] < LT_LOSS_THRESH * delivered:
        return
    t = now - C[f, LT_STAMP]
    if t < 0.001:
        return
    bw = delivered / t
    old = C[f, LT_BW_EST]
    if old > 0.0 and (abs(bw - old) <= LT_BW_RATIO * old or abs(bw - old) <= LT_BW_DIFF):
        C[f, LT_BW_EST] = 0.5 * (bw + old)  # bbr_lt_bw_interval_done: policed
        C[f, LT_USE] = 1.0
        C[f, PACING_GAIN] = 1.0
        C[f, LT_RTT_CNT] = 0.0
        return
    C[f, LT_BW_EST] = bw
    _lt_interval(C, f, now)


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
    C[f, PACING_GAIN] = 1.0 if C[f, LT_USE] > 0.0 else _cycle_gain(idx)


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    # bandwidth filter over BW_ROUNDS rounds
    if round_start:
        C[f, ROUND] += 1.0
        C[f, BW_WIN + int(C[f, ROUND]) % BW_ROUNDS] = 0.0
    slot = BW_WIN + int(C[f, ROUND]) % BW_ROUNDS
    if rate > C[f, slot]:
        C[f, slot] = rate
    C[f, DELIVERED] += acked
    if P[f, LT_BW] > 0.0:
        _lt_sampling(C, P, f, now, round_start, rng, b)
    losses = C[f, LOSS_SEEN] > 0.0
    C[f, LOSS_SEEN] = 0.0
    bw = 0.0
    for i in range(BW_ROUNDS):
        bw = max(bw, C[f, BW_WIN + i])
    C[f, BTLBW] = bw
    if C[f, LT_USE] > 0.0:  # bbr_bw: the long-term bandwidth while policed
        bw = C[f, LT_BW_EST]
    # RTprop filter
    expired = now - C[f, RTPROP_STAMP] > P[f, RTPROP_WIN_S]
    sample = min(rtt, min_rtt)  # the ACK's least per-packet RTT
    if sample > 0.0 and (sample <= C[f, RTPROP] or expired):
        C[f, RTPROP] = sample
        C[f, RTPROP_STAMP] = now
    rtprop = C[f, RTPROP]
    bdp = bw * rtprop if rtprop < math.inf else P[f, INIT_CWND] * mss
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
        if gain > 1.0:  # the probe ends at its full length once in flight reaches gain x BDP or a loss is seen
            advance = advance and (losses or inflight >= gain * bdp)
        elif gain < 1.0:
            advance = advance or inflight <= bdp
        if advance:
            idx = (int(C[f, CYCLE_IDX]) + 1) % 8
            C[f, CYCLE_IDX] = idx
            C[f, CYCLE_STAMP] = now
            C[f, PACING_GAIN] = 1.0 if C[f, LT_USE] > 0.0 else _cycle_gain(idx)
    # ProbeRTT
    if expired and mode != PROBE_RTT:
        C[f, MODE] = PROBE_RTT
        mode = PROBE_RTT
        C[f, PACING_GAIN] = 1.0
        C[f, CWND_GAIN_NOW] = 1.0
        C[f, PRIOR_CWND] = C[f, CWND]
        C[f, PRT_DONE] = 0.0
    probe_rtt_cwnd = max(4.0 * mss, P[f, PROBE_RTT_CWND_GAIN] * C[f, BTLBW] * rtprop) if rtprop < math.inf \
        else 4.0 * mss
    if mode == PROBE_RTT:
        if C[f, PRT_DONE] == 0.0 and inflight <= probe_rtt_cwnd:
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
        C[f, PACING] = P[f, HIGH_GAIN] * P[f, INIT_CWND] * mss / rtt
    target = C[f, CWND_GAIN_NOW] * bdp + P[f, QUANTA] * mss \
        + aggregation.cwnd(C, f, AGG, bw, P[f, EXTRA_GAIN], P[f, EXTRA_MAX_S],
                           C[f, FILLED] > 0.0 or P[f, EXTRA_IN_STARTUP] > 0.0)
    if C[f, IN_RECOVERY] > 0.0 and now - C[f, EPISODE] >= rtt:
        # the ACK of data sent after the episode began: restore the window saved at its start
        C[f, IN_RECOVERY] = 0.0
        C[f, CWND] = max(C[f, CWND], C[f, PRIOR_CWND])
    if C[f, IN_RECOVERY] > 0.0 and now - C[f, ENTERED] < rtt:
        C[f, CWND] = max(C[f, CWND], inflight + acked)  # packet conservation
    elif C[f, FILLED] > 0.0:
        C[f, CWND] = min(C[f, CWND] + acked, target)
    elif C[f, CWND] < target:
        C[f, CWND] += acked
    C[f, CWND] = max(C[f, CWND], 4.0 * mss)
    if mode == PROBE_RTT:
        C[f, CWND] = min(C[f, CWND], probe_rtt_cwnd)


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    """The window's loss response (module docstring); the model itself ignores loss."""
    C[f, LOST] += lost
    C[f, LOSS_SEEN] = 1.0
    if P[f, LOSS_CWND_CUT] > 0.0:
        C[f, CWND] = max(C[f, CWND] - lost, mss)
    how = P[f, CONSERVATION]
    if how == 0.0 or (how == 2.0 and C[f, FILLED] == 0.0 and C[f, MODE] == STARTUP):
        return
    if C[f, IN_RECOVERY] > 0.0:
        if how == 2.0:  # xqc_bbr_on_lost: save_cwnd, and the episode's start moves to now
            C[f, PRIOR_CWND] = max(C[f, PRIOR_CWND], C[f, CWND])
            C[f, EPISODE] = now
        return
    if how == 1.0 and lost_sent <= C[f, EPISODE]:
        return  # sent before the last episode began: that episode's loss
    # a new episode: bbr_save_cwnd (through bbr_ssthresh / xqc_bbr_on_lost), then in flight plus
    # one packet
    if C[f, MODE] != PROBE_RTT:
        C[f, PRIOR_CWND] = C[f, CWND]
    else:
        C[f, PRIOR_CWND] = max(C[f, PRIOR_CWND], C[f, CWND])
    C[f, IN_RECOVERY] = 1.0
    C[f, EPISODE] = now
    C[f, ENTERED] = now
    C[f, CWND] = max(inflight + mss, 4.0 * mss)


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    """The timeout's response (module docstring): the window saved as bbr_save_cwnd and
    xqc_bbr_save_cwnd do, then XQUIC's floor without an episode, or Linux's TCP_CA_Loss."""
    C[f, RECOVERY_START] = now
    if C[f, IN_RECOVERY] > 0.0 or C[f, MODE] == PROBE_RTT:
        C[f, PRIOR_CWND] = max(C[f, PRIOR_CWND], C[f, CWND])
    else:
        C[f, PRIOR_CWND] = C[f, CWND]
    if P[f, RESET_CWND] > 0.0:  # xqc_bbr_reset_cwnd
        C[f, CWND] = 4.0 * mss
        C[f, IN_RECOVERY] = 0.0
        return
    # tcp_enter_loss: one packet; leaving TCP_CA_Loss restores the saved window
    # (bbr_set_cwnd_to_recover_or_restore), with no packet conservation in between
    C[f, CWND] = mss
    C[f, IN_RECOVERY] = 1.0
    C[f, EPISODE] = now
    C[f, ENTERED] = -math.inf


register_cc("bbr", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=N_STATE)
