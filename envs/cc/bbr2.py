"""BBRv2 (draft-cardwell-iccrg-bbr-congestion-control-01/-02, which specify BBR version 2;
Linux ``net/ipv4/tcp_bbr2.c`` of the v2alpha branch, github.com/google/bbr).

BBRv1 (``envs.cc.bbr``) plus a loss response through bounds on the model:

- ``inflight_hi``: long-term upper bound on data in flight. Unset (inf) until loss says otherwise;
  raised during ProbeBW_UP with an exponentially growing slope (1, 2, 4, ... packets per round,
  ``BBRRaiseInflightHiSlope``); cut to ``max(tx_in_flight, beta * target_inflight)`` with
  ``beta = 0.7`` when a probing round's loss rate exceeds ``loss_thresh`` = 2%
  (``BBRHandleInflightTooHigh``); raised to the flight seen while the loss rate is safe
  (``BBRAdaptUpperBounds``); in ProbeBW_CRUISE and ProbeRTT cwnd stays 15% below it
  (``BBRInflightWithHeadroom``).
- ``inflight_lo`` / ``bw_lo``: short-term lower bounds. At the end of every round with loss,
  outside bandwidth probing, ``x_lo = max(x_latest, beta * x_lo)``, a 30% cut that never goes
  below what the last round delivered (``BBRLossLowerBounds``); reset when probing starts.
- ProbeBW sub-phases DOWN (pacing gain 0.75) -> CRUISE (1.0) -> REFILL (1.0, one round) ->
  UP (1.25) -> DOWN, with the next probe ``probe_wait_base_s`` + U(0, 1) s after DOWN started,
  or earlier after ``min(target_inflight_packets, 63)`` rounds (Reno coexistence).
- The max-bandwidth filter covers the current and the previous ProbeBW cycle (2 slots); a cycle
  ends one round after probing stopped, unless that round's sample is app-limited
  (``BBRAdaptUpperBounds``). ProbeRTT marks the connection app-limited until the data in flight is
  delivered (``BBRHandleProbeRTT``, xqc_bbr2_update_min_rtt), so its low rates neither enter the
  filter (``BBRUpdateMaxBw``: an app-limited sample only when it is a new maximum) nor end a cycle:
  with XQUIC's ProbeRTT every 2.5 s, restarting ProbeBW at DOWN and CRUISE with a new 2-3 s probe
  wait each time, the filter keeps its maximum until the next (rare) ProbeBW_UP.
- ProbeRTT every ``probe_rtt_interval_s`` (5 s, its own min-RTT filter), cwnd =
  ``probe_rtt_cwnd_gain`` (0.5) x BDP for ``probe_rtt_s`` (200 ms) and one round; min_rtt itself
  keeps a 10 s window.
- Startup (pacing gain 2/ln2, cwnd gain ``startup_cwnd_gain``, 2/ln2) exits on a bandwidth plateau (< 25% growth over 3 rounds)
  or on excessive loss (a round with more than 2% loss and at least 8 loss events), setting
  ``inflight_hi`` to ``max(BDP, inflight_latest)`` (``BBRCheckStartupHighLoss``).
  Drain paces at ``drain_gain`` (ln2/2) until the flight is down to one BDP.
- Pacing is 1% below ``gain * bw`` (``BBRPacingMarginPercent``), ``bw = min(max_bw, bw_lo)``; the
  target window is ``cwnd_gain`` BDPs plus ``cwnd_quanta_packets`` (3, BBRQuantizationBudget).

Readings chosen where the fluid core lacks per-packet state:

- ``rs.tx_in_flight`` / ``rs.lost`` (loss since the acked packet was sent, a sliding round trip)
  become: the data in flight when the previous packet-timed round (or the phase that restarted
  the round) started, since the packets a round acknowledges left during the round before, and
  the bytes declared lost in the last round trip (this round's and the part of the last round's one round trip back
  covers, pro rata of time). "Inflight too high" is ``lost > loss_thresh * tx_in_flight``, checked
  at every ACK and loss declaration; with ``loss_thresh_packets`` (XQUIC: xqc_bbr2.c
  xqc_bbr2_is_inflight_too_high) the lost packets counted whole against the flight in whole
  ``XQC_MSS`` (``loss_thresh_packets`` packets to one: 1436 / 1200) and the threshold truncated
  to one, so below 50 ``XQC_MSS`` in flight any loss is too high. Rounds are the draft's packet-timed rounds, kept here (not the
  core's) so a phase can start a round (``BBRStartRound``): the acked packet's prior delivered count
  is ``delivered`` bytes back (the sample's ``rs.delivered``).
- A "loss event" for the Startup exit is one loss declaration from the core (losses are
  aggregated per step, as discontiguous ranges would be).
- ProbeBW_DOWN paces at 0.75 and cwnd gain is 2 throughout ProbeBW, as in v2alpha (BBRv3 later
  moved to 0.9 and a cwnd gain of 2.25 in UP).
- Loss recovery does not modulate cwnd (no packet conservation, which ``envs.cc.bbr`` has per
  stack): the loss response modelled is exactly the bounds above. A timeout sets cwnd to one
  packet.
- ``recovery_modes`` = 1 (the ``xquic`` stack) follows xqc_bbr2.c's RECOVERY and LOSS modes
  instead: a loss of a packet sent after the episode began opens or extends a RECOVERY episode
  (xqc_bbr2_on_lost), which the ACK of a packet sent after its start closes
  (xqc_bbr2_update_recovery_mode); during it Startup paces at 1.5
  (xqc_bbr2_startup_pacing_gain_on_lost), the Startup pacing rate may fall (elsewhere in Startup it
  only rises, _xqc_bbr2_set_pacing_rate_helper), and only during it may Startup end on high loss,
  with inflight_hi = BDP (xqc_bbr2_handle_queue_too_high_in_startup). Persistent congestion (the
  core's timeout) cuts cwnd to 4 packets in LOSS mode, restored once a packet sent after the cut is
  acknowledged, and outside bandwidth probing sets an unset inflight_lo to the prior cwnd
  (xqc_bbr2_reset_cwnd); prior_cwnd follows xqc_bbr2_save_cwnd.
- ACK aggregation (extra_acked) adds to the window as in BBRv1 (``envs/cc/aggregation.py``).
- Not modelled: ECN (and bw_hi, which only ECN sets), v2alpha's and xqc_bbr2.c's "risky probe"
  rule (after a probe found loss too high, the next ProbeBW_UP ends once the flight reaches
  inflight_hi, then re-probes), the per-packet inflight_hi from the lost skb, and XQUIC's Startup
  growth below twice its initial window.
- The defaults are the draft's; XQUIC's xqc_bbr2.c constants are the ``xquic`` stack's
  (envs/sim/stacks.py: ProbeRTT every 2.5 s at 0.75 BDP, a 2.5 s min_rtt window, Startup and
  Drain cwnd gain 2, Drain pacing gain 0.75, no quantization budget, a 32-packet initial window,
  the recovery modes).
"""

import math

from numba import njit

from envs.cc import aggregation
from envs.cc.base import CWND, FIRST_PRIVATE, INIT_CWND_PACKETS, PACING, RECOVERY_START, init_common
from envs.plugins import register_cc
from envs.sim.rng import uniform

# parameters
HIGH_GAIN = 0  # Startup pacing and cwnd gain, 2/ln2
CWND_GAIN = 1  # 2
LOSS_THRESH = 2  # 0.02 (BBRLossThresh)
BETA = 3  # 0.7 (BBRBeta: bounds keep 70% on a cut)
HEADROOM = 4  # 0.15 (BBRHeadroom)
PROBE_RTT_S = 5  # 0.2 s (ProbeRTTDuration)
PROBE_RTT_INTERVAL_S = 6  # 5 s (ProbeRTTInterval)
PROBE_WAIT_BASE_S = 7  # 2 s (BBRPickProbeWait: 2 + U(0, 1) s)
MIN_RTT_WIN_S = 8  # 10 s (MinRTTFilterLen)
EXTRA_GAIN = 9  # 1: ACK aggregation term's gain (0: off)
EXTRA_MAX_S = 10  # 0.1 s: ... at most this many seconds at the estimated bandwidth
EXTRA_IN_STARTUP = 11  # 0: ... only after Startup (1: also in Startup, with a one-round window)
LOSS_THRESH_PACKETS = 12  # 0: bytes; > 0: whole packets lost (this many to an mss) against whole mss in flight
STARTUP_CWND_GAIN = 13  # 2/ln2: cwnd gain in Startup and Drain
DRAIN_GAIN = 14  # ln2/2 (the inverse of the Startup gain): Drain's pacing gain
PROBE_RTT_CWND_GAIN = 15  # 0.5: ProbeRTT's cwnd, BDPs
CWND_QUANTA = 16  # 3: packets added to the target window (BBRQuantizationBudget)
INIT_CWND = 17  # 10: initial window, packets (RFC 6928)
RECOVERY_MODES = 18  # 0: 1 = XQUIC's loss-recovery modes (xqc_bbr2.c, module docstring)
DEFAULTS = {"high_gain": 2.0 / math.log(2.0), "cwnd_gain": 2.0, "loss_thresh": 0.02, "beta": 0.7,
            "headroom": 0.15, "probe_rtt_s": 0.2, "probe_rtt_interval_s": 5.0,
            "probe_wait_base_s": 2.0, "min_rtt_window_s": 10.0, "extra_acked_gain": 1.0,
            "extra_acked_max_s": 0.1, "extra_acked_in_startup": 0.0, "loss_thresh_packets": 0.0,
            "startup_cwnd_gain": 2.0 / math.log(2.0), "drain_gain": math.log(2.0) / 2.0,
            "probe_rtt_cwnd_gain": 0.5, "cwnd_quanta_packets": 3.0, "init_cwnd_packets": INIT_CWND_PACKETS,
            "recovery_modes": 0.0}

PROBE_WAIT_RAND_S = 1.0
MAX_PROBE_ROUNDS = 63.0  # Reno-coexistence bound on rounds between probes
FULL_LOSS_CNT = 8.0  # v2alpha bbr_full_loss_cnt
PACING_MARGIN = 0.01
MIN_PIPE_PACKETS = 4.0
UP_GAIN, DOWN_GAIN = 1.25, 0.75
STARTUP_GAIN_ON_LOST = 1.5  # xqc_bbr2.c xqc_bbr2_startup_pacing_gain_on_lost (with recovery_modes)

STARTUP, DRAIN, DOWN, CRUISE, REFILL, UP, PROBE_RTT = 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0

MODE = FIRST_PRIVATE
PACING_GAIN = FIRST_PRIVATE + 1
CWND_GAIN_NOW = FIRST_PRIVATE + 2
DELIVERED = FIRST_PRIVATE + 3  # bytes acknowledged since init
ROUND_END = FIRST_PRIVATE + 4  # delivered count whose acknowledgement starts the next round
ROUND = FIRST_PRIVATE + 5  # packet-timed rounds so far
BW_HI0 = FIRST_PRIVATE + 6  # max delivery rate, previous ProbeBW cycle
BW_HI1 = FIRST_PRIVATE + 7  # max delivery rate, current cycle
BW_LO = FIRST_PRIVATE + 8
INFLIGHT_HI = FIRST_PRIVATE + 9
INFLIGHT_LO = FIRST_PRIVATE + 10
BW_LATEST = FIRST_PRIVATE + 11  # max delivery rate in the last round
INFLIGHT_LATEST = FIRST_PRIVATE + 12  # max delivered volume of one sample in the last round
MIN_RTT = FIRST_PRIVATE + 13
MIN_RTT_STAMP = FIRST_PRIVATE + 14
PRT_MIN = FIRST_PRIVATE + 15  # ProbeRTT's own min-RTT filter (5 s)
PRT_MIN_STAMP = FIRST_PRIVATE + 16
PRT_DONE = FIRST_PRIVATE + 17  # ProbeRTT end time (s), 0 = cwnd not yet down
PRT_ROUND_DONE = FIRST_PRIVATE + 18
PRIOR_CWND = FIRST_PRIVATE + 19
CYCLE_STAMP = FIRST_PRIVATE + 20  # start of the current ProbeBW phase (s)
PROBE_WAIT = FIRST_PRIVATE + 21  # s from DOWN's start to the next probe
ROUNDS_SINCE_PROBE = FIRST_PRIVATE + 22
PROBE_UP_ROUNDS = FIRST_PRIVATE + 23
PROBE_UP_CNT = FIRST_PRIVATE + 24  # bytes acked per byte of inflight_hi growth in UP
PROBE_SAMPLES = FIRST_PRIVATE + 25  # 1 while losses may cut inflight_hi (bw_probe_samples)
ADVANCE_BW = FIRST_PRIVATE + 26  # 1: advance the bw filter at the next round (ACKS_PROBE_STOPPING)
LOST_RND = FIRST_PRIVATE + 27  # bytes declared lost in this round
FLIGHT_RND = FIRST_PRIVATE + 28  # bytes in flight when the packets this round acknowledges were sent
LOSS_EVENTS_RND = FIRST_PRIVATE + 29
FULL_BW = FIRST_PRIVATE + 30
FULL_BW_CNT = FIRST_PRIVATE + 31
FILLED = FIRST_PRIVATE + 32
AGG = FILLED + 1  # aggregation.SLOTS slots: the ACK aggregation estimate
LOSS_NOW = AGG + aggregation.SLOTS  # bytes declared lost since the last round start (never reset by phases)
LOSS_BEFORE = LOSS_NOW + 1  # ... in the round before
ROUND_STAMP = LOSS_NOW + 2  # when the current round started (s)
FLIGHT_NEXT = LOSS_NOW + 3  # bytes in flight when the current round started (the next round's FLIGHT_RND)
LOSS_START = LOSS_NOW + 4  # recovery_modes: when persistent congestion cut cwnd (s), -1 outside XQUIC's LOSS mode
APP_LIMITED_FROM = LOSS_NOW + 5  # delivered count when ProbeRTT marked the connection app-limited (-1: never)
APP_LIMITED_END = LOSS_NOW + 6  # ... and the count whose passing clears the mark (C.app_limited)
N_STATE = LOSS_NOW + 7


@njit(cache=True, _nrt=False)
def init(C, P, f, now, mss):
    init_common(C, f, mss, P[f, INIT_CWND])
    for k in range(FIRST_PRIVATE, FILLED + 1):
        C[f, k] = 0.0
    C[f, MODE] = STARTUP
    C[f, PACING_GAIN] = P[f, HIGH_GAIN]
    C[f, CWND_GAIN_NOW] = P[f, STARTUP_CWND_GAIN]
    C[f, BW_LO] = math.inf
    C[f, INFLIGHT_HI] = math.inf
    C[f, INFLIGHT_LO] = math.inf
    C[f, MIN_RTT] = math.inf
    C[f, MIN_RTT_STAMP] = now
    C[f, PRT_MIN] = math.inf
    C[f, PRT_MIN_STAMP] = now
    aggregation.init(C, f, AGG, now)
    C[f, LOSS_NOW] = 0.0
    C[f, LOSS_BEFORE] = 0.0
    C[f, ROUND_STAMP] = now
    C[f, FLIGHT_NEXT] = 0.0
    C[f, LOSS_START] = -1.0
    C[f, APP_LIMITED_FROM] = -1.0
    C[f, APP_LIMITED_END] = -1.0


# ----------------------------------------------------------------------------- model helpers
@njit(cache=True, _nrt=False)
def _bw(C, f):
    """BBRBoundBWForModel: bw = min(max_bw, bw_lo)."""
    return min(max(C[f, BW_HI0], C[f, BW_HI1]), C[f, BW_LO])


@njit(cache=True, _nrt=False)
def _bdp(C, f, bw, gain, mss):
    """BBRBDPMultiple: gain * bw * min_rtt (the initial window before any RTT sample)."""
    if C[f, MIN_RTT] == math.inf:
        return gain * INIT_CWND_PACKETS * mss
    return gain * bw * C[f, MIN_RTT]


@njit(cache=True, _nrt=False)
def _target_inflight(C, f, mss):
    """BBRTargetInflight: min(BDP, cwnd)."""
    return min(_bdp(C, f, _bw(C, f), 1.0, mss), C[f, CWND])


@njit(cache=True, _nrt=False)
def _with_headroom(C, P, f, mss):
    """BBRInflightWithHeadroom: inflight_hi less 15%, at least the minimum pipe."""
    if C[f, INFLIGHT_HI] == math.inf:
        return math.inf
    return max((1.0 - P[f, HEADROOM]) * C[f, INFLIGHT_HI], MIN_PIPE_PACKETS * mss)


@njit(cache=True, _nrt=False)
def _in_probe_bw(C, f):
    return DOWN <= C[f, MODE] <= UP


@njit(cache=True, _nrt=False)
def _start_round(C, f, inflight):
    """BBRStartRound: the round ends when data sent from now on is acknowledged; that data
    leaves with ``inflight`` in flight."""
    C[f, ROUND_END] = C[f, DELIVERED]
    C[f, FLIGHT_NEXT] = inflight


@njit(cache=True, _nrt=False)
def _set_phase(C, f, mode, gain, now):
    C[f, MODE] = mode
    C[f, PACING_GAIN] = gain
    C[f, CYCLE_STAMP] = now


# ----------------------------------------------------------------------------- ProbeBW phases
@njit(cache=True, _nrt=False)
def _start_down(C, f, now, inflight, P, rng, b):
    """BBRStartProbeBW_DOWN, with BBRPickProbeWait's randomised timing of the next probe."""
    C[f, PROBE_UP_CNT] = math.inf
    C[f, ROUNDS_SINCE_PROBE] = math.floor(uniform(rng, b) * 2.0)
    C[f, PROBE_WAIT] = P[f, PROBE_WAIT_BASE_S] + PROBE_WAIT_RAND_S * uniform(rng, b)
    C[f, ADVANCE_BW] = 1.0
    C[f, CWND_GAIN_NOW] = P[f, CWND_GAIN]
    _reset_congestion_signals(C, f)
    _start_round(C, f, inflight)
    _set_phase(C, f, DOWN, DOWN_GAIN, now)


@njit(cache=True, _nrt=False)
def _start_cruise(C, f, now):
    """BBRStartProbeBW_CRUISE."""
    C[f, INFLIGHT_LO] = min(C[f, INFLIGHT_LO], C[f, INFLIGHT_HI])
    _set_phase(C, f, CRUISE, 1.0, now)


@njit(cache=True, _nrt=False)
def _start_refill(C, f, now, inflight):
    """BBRStartProbeBW_REFILL: drop the short-term bounds and refill the pipe for one round."""
    C[f, BW_LO] = math.inf
    C[f, INFLIGHT_LO] = math.inf
    C[f, PROBE_UP_ROUNDS] = 0.0
    _start_round(C, f, inflight)
    _set_phase(C, f, REFILL, 1.0, now)


@njit(cache=True, _nrt=False)
def _raise_inflight_hi_slope(C, f, mss):
    """BBRRaiseInflightHiSlope: grow inflight_hi by 1, 2, 4, ... packets per round in UP."""
    growth = mss * 2.0 ** C[f, PROBE_UP_ROUNDS]
    C[f, PROBE_UP_ROUNDS] = min(C[f, PROBE_UP_ROUNDS] + 1.0, 30.0)
    C[f, PROBE_UP_CNT] = max(C[f, CWND] / growth, 1.0)


@njit(cache=True, _nrt=False)
def _start_up(C, f, now, inflight, mss):
    C[f, PROBE_SAMPLES] = 1.0
    _start_round(C, f, inflight)
    _set_phase(C, f, UP, UP_GAIN, now)
    _raise_inflight_hi_slope(C, f, mss)


@njit(cache=True, _nrt=False)
def _time_to_probe(C, f, now, mss):
    """BBRCheckTimeToProbeBW: the randomised wait elapsed, or the Reno-coexistence round bound."""
    reno_rounds = min(_target_inflight(C, f, mss) / mss, MAX_PROBE_ROUNDS)
    return now - C[f, CYCLE_STAMP] > C[f, PROBE_WAIT] or C[f, ROUNDS_SINCE_PROBE] >= reno_rounds


@njit(cache=True, _nrt=False)
def _update_probe_bw(C, P, f, now, inflight, round_start, mss, rng, b):
    """BBRUpdateProbeBWCyclePhase."""
    mode = C[f, MODE]
    if mode == DOWN or mode == CRUISE:
        if _time_to_probe(C, f, now, mss):
            _start_refill(C, f, now, inflight)
        elif mode == DOWN and inflight <= _with_headroom(C, P, f, mss) \
                and inflight <= _bdp(C, f, max(C[f, BW_HI0], C[f, BW_HI1]), 1.0, mss):
            _start_cruise(C, f, now)
    elif mode == REFILL:
        if round_start:
            _start_up(C, f, now, inflight, mss)
    elif mode == UP:
        max_bw = max(C[f, BW_HI0], C[f, BW_HI1])
        if now - C[f, CYCLE_STAMP] > C[f, MIN_RTT] and inflight > _bdp(C, f, max_bw, UP_GAIN, mss):
            _start_down(C, f, now, inflight, P, rng, b)


@njit(cache=True, _nrt=False)
def _probe_inflight_hi_upward(C, f, acked, inflight, round_start, mss):
    """BBRProbeInflightHiUpward: while cwnd-limited at inflight_hi, raise it along the slope,
    which doubles every such round."""
    if C[f, CWND] < C[f, INFLIGHT_HI] or inflight + acked + mss < C[f, CWND]:
        return
    C[f, INFLIGHT_HI] += acked / C[f, PROBE_UP_CNT]
    if round_start:
        _raise_inflight_hi_slope(C, f, mss)


@njit(cache=True, _nrt=False)
def _adapt_upper_bounds(C, P, f, now, rtt, acked, inflight, round_start, app_limited, mss, rng, b):
    """BBRAdaptUpperBounds: one round after probing stopped, end the probe's samples and start a
    new cycle of the max-bw filter (unless the sample is app-limited, as the first round after
    ProbeRTT's is, or the cycle took no sample: xqc_bbr2_advance_bw_hi_filter); while the loss
    rate is safe, raise inflight_hi to the flight seen and, in UP, along the probing slope."""
    if round_start and C[f, ADVANCE_BW] > 0.0:
        C[f, ADVANCE_BW] = 0.0
        C[f, PROBE_SAMPLES] = 0.0
        if _in_probe_bw(C, f) and not app_limited and C[f, BW_HI1] > 0.0:
            C[f, BW_HI0] = C[f, BW_HI1]  # BBRAdvanceMaxBwFilter
            C[f, BW_HI1] = 0.0
    if _inflight_too_high(C, P, f, now, rtt, mss):
        if C[f, PROBE_SAMPLES] > 0.0:
            _handle_inflight_too_high(C, P, f, now, inflight, rng, b, mss)
        return
    if C[f, INFLIGHT_HI] == math.inf:
        return
    C[f, INFLIGHT_HI] = max(C[f, INFLIGHT_HI], C[f, FLIGHT_RND])
    if C[f, MODE] == UP:
        _probe_inflight_hi_upward(C, f, acked, inflight, round_start, mss)


# ----------------------------------------------------------------------------- loss response
@njit(cache=True, _nrt=False)
def _inflight_too_high(C, P, f, now, rtt, mss):
    """IsInflightTooHigh: the losses of the last round trip exceed loss_thresh of the flight."""
    back = 1.0 - (now - C[f, ROUND_STAMP]) / rtt if rtt > 0.0 else 0.0
    lost = C[f, LOSS_NOW] + C[f, LOSS_BEFORE] * min(max(back, 0.0), 1.0)
    flight = max(C[f, FLIGHT_RND], 1.0)
    if P[f, LOSS_THRESH_PACKETS] > 0.0:  # xqc_bbr2.c: lost_pkts > (uint32_t)(inflight_pkts * thresh)
        lost_packets = math.floor(lost * P[f, LOSS_THRESH_PACKETS] / mss + 0.5)
        return lost > 0.0 and lost_packets > math.floor(math.floor(flight / mss) * P[f, LOSS_THRESH])
    return lost > P[f, LOSS_THRESH] * flight


@njit(cache=True, _nrt=False)
def _handle_inflight_too_high(C, P, f, now, inflight, rng, b, mss):
    """BBRHandleInflightTooHigh: cut inflight_hi once per probe; leave UP."""
    C[f, PROBE_SAMPLES] = 0.0
    C[f, INFLIGHT_HI] = max(C[f, FLIGHT_RND], P[f, BETA] * _target_inflight(C, f, mss))
    if C[f, MODE] == UP:
        _start_down(C, f, now, inflight, P, rng, b)


@njit(cache=True, _nrt=False)
def _adapt_lower_bounds(C, P, f):
    """BBRAdaptLowerBoundsFromCongestion at a round's end: cut bw_lo / inflight_lo by 30% after
    a round with loss, never below the latest round's delivery (not while probing)."""
    mode = C[f, MODE]
    if C[f, LOST_RND] <= 0.0 or mode == STARTUP or mode == REFILL or mode == UP:
        return
    if C[f, BW_LO] == math.inf:
        C[f, BW_LO] = max(C[f, BW_HI0], C[f, BW_HI1])
    if C[f, INFLIGHT_LO] == math.inf:
        C[f, INFLIGHT_LO] = C[f, CWND]
    C[f, BW_LO] = max(C[f, BW_LATEST], P[f, BETA] * C[f, BW_LO])
    C[f, INFLIGHT_LO] = max(C[f, INFLIGHT_LATEST], P[f, BETA] * C[f, INFLIGHT_LO])


@njit(cache=True, _nrt=False)
def _check_startup_done(C, P, f, now, rtt, round_start, mss):
    """BBRCheckStartupFullBandwidth (plateau for 3 rounds) and BBRCheckStartupHighLoss."""
    if C[f, FILLED] > 0.0 or not round_start:
        return
    bw = max(C[f, BW_HI0], C[f, BW_HI1])
    if bw >= C[f, FULL_BW] * 1.25:
        C[f, FULL_BW] = bw
        C[f, FULL_BW_CNT] = 0.0
    else:
        C[f, FULL_BW_CNT] += 1.0
    if C[f, FULL_BW_CNT] >= 3.0:
        C[f, FILLED] = 1.0
    elif C[f, MODE] == STARTUP and C[f, ROUND] > 1.0 and _inflight_too_high(C, P, f, now, rtt, mss) \
            and C[f, LOSS_EVENTS_RND] >= FULL_LOSS_CNT:
        if P[f, RECOVERY_MODES] == 0.0:
            C[f, FILLED] = 1.0
            C[f, INFLIGHT_HI] = max(_bdp(C, f, bw, 1.0, mss), C[f, INFLIGHT_LATEST])
        elif _in_recovery(C, f):
            # xqc_bbr2_check_loss_too_high_in_startup: only in RECOVERY mode;
            # xqc_bbr2_handle_queue_too_high_in_startup: inflight_hi = bdp(max_bw)
            C[f, FILLED] = 1.0
            C[f, INFLIGHT_HI] = _bdp(C, f, bw, 1.0, mss)
    if C[f, FILLED] > 0.0 and C[f, MODE] == STARTUP:
        C[f, CWND_GAIN_NOW] = P[f, STARTUP_CWND_GAIN]
        _reset_congestion_signals(C, f)
        _set_phase(C, f, DRAIN, P[f, DRAIN_GAIN], now)


# ----------------------------------------------------------------------------- min RTT, ProbeRTT
@njit(cache=True, _nrt=False)
def _update_min_rtt(C, P, f, now, rtt):
    """BBRUpdateMinRTT: a 5 s filter for ProbeRTT feeding the 10 s min_rtt. Returns whether the
    5 s filter had expired (time for ProbeRTT)."""
    expired = now > C[f, PRT_MIN_STAMP] + P[f, PROBE_RTT_INTERVAL_S]
    if rtt > 0.0 and (rtt < C[f, PRT_MIN] or expired):
        C[f, PRT_MIN] = rtt
        C[f, PRT_MIN_STAMP] = now
    if C[f, PRT_MIN] < C[f, MIN_RTT] or now > C[f, MIN_RTT_STAMP] + P[f, MIN_RTT_WIN_S]:
        C[f, MIN_RTT] = C[f, PRT_MIN]
        C[f, MIN_RTT_STAMP] = C[f, PRT_MIN_STAMP]
    return expired


@njit(cache=True, _nrt=False)
def _probe_rtt_cwnd(C, P, f, mss):
    return max(_bdp(C, f, _bw(C, f), P[f, PROBE_RTT_CWND_GAIN], mss), MIN_PIPE_PACKETS * mss)


@njit(cache=True, _nrt=False)
def _mark_app_limited(C, f, inflight):
    """BBRHandleProbeRTT's MarkConnectionAppLimited (xqc_bbr2_update_min_rtt: ctl_app_limited =
    delivered + bytes in flight): data sent from now until everything in flight is delivered
    gives app-limited rate samples, so ProbeRTT's low rates neither enter nor age the filter."""
    if C[f, DELIVERED] > C[f, APP_LIMITED_END]:  # no mark standing: a new one starts here
        C[f, APP_LIMITED_FROM] = C[f, DELIVERED]
    C[f, APP_LIMITED_END] = C[f, DELIVERED] + inflight


@njit(cache=True, _nrt=False)
def _app_limited(C, f, delivered):
    """rs.is_app_limited: the acknowledged packet left while the mark stood (its prior delivered
    count, ``delivered`` bytes back, between the mark's start and its end)."""
    prior = C[f, DELIVERED] - delivered
    return C[f, APP_LIMITED_FROM] <= prior <= C[f, APP_LIMITED_END]


@njit(cache=True, _nrt=False)
def _check_probe_rtt(C, P, f, now, expired, inflight, round_start, mss, rng, b):
    """BBRCheckProbeRTT / BBRHandleProbeRTT / BBRCheckProbeRTTDone / BBRExitProbeRTT."""
    if expired and C[f, MODE] != PROBE_RTT:
        C[f, PRT_DONE] = 0.0
        C[f, ADVANCE_BW] = 1.0
        C[f, CWND_GAIN_NOW] = 1.0
        _start_round(C, f, inflight)
        if P[f, RECOVERY_MODES] == 0.0:
            C[f, PRIOR_CWND] = C[f, CWND]
            _set_phase(C, f, PROBE_RTT, 1.0, now)
        else:  # xqc_bbr2_update_min_rtt: enter ProbeRTT, then xqc_bbr2_save_cwnd (in ProbeRTT: the maximum)
            _set_phase(C, f, PROBE_RTT, 1.0, now)
            _save_cwnd(C, f)
        _mark_app_limited(C, f, inflight)
        return
    if C[f, MODE] != PROBE_RTT:
        return
    _mark_app_limited(C, f, inflight)
    if C[f, PRT_DONE] == 0.0:
        if inflight <= _probe_rtt_cwnd(C, P, f, mss):
            C[f, PRT_DONE] = now + P[f, PROBE_RTT_S]
            C[f, PRT_ROUND_DONE] = 0.0
            _start_round(C, f, inflight)
        return
    if round_start:
        C[f, PRT_ROUND_DONE] = 1.0
    if C[f, PRT_ROUND_DONE] > 0.0 and now > C[f, PRT_DONE]:
        C[f, PRT_MIN_STAMP] = now
        C[f, CWND] = max(C[f, CWND], C[f, PRIOR_CWND])
        C[f, BW_LO] = math.inf
        C[f, INFLIGHT_LO] = math.inf
        if C[f, FILLED] > 0.0:
            _start_down(C, f, now, inflight, P, rng, b)
            _start_cruise(C, f, now)
        else:
            C[f, CWND_GAIN_NOW] = P[f, STARTUP_CWND_GAIN]
            _set_phase(C, f, STARTUP, P[f, HIGH_GAIN], now)


# ----------------------------------------------------------------------------- XQUIC's recovery modes
@njit(cache=True, _nrt=False)
def _in_recovery(C, f):
    """xqc_bbr2_in_recovery: a loss episode is open (RECOVERY mode; not LOSS mode)."""
    return C[f, RECOVERY_START] >= 0.0 and C[f, LOSS_START] < 0.0


@njit(cache=True, _nrt=False)
def _save_cwnd(C, f):
    """xqc_bbr2_save_cwnd: prior_cwnd is the window, or its maximum with the saved one in
    RECOVERY mode and ProbeRTT."""
    if _in_recovery(C, f) or C[f, MODE] == PROBE_RTT:
        C[f, PRIOR_CWND] = max(C[f, CWND], C[f, PRIOR_CWND])
    else:
        C[f, PRIOR_CWND] = C[f, CWND]


@njit(cache=True, _nrt=False)
def _update_recovery_mode(C, P, f, now, rtt):
    """xqc_bbr2_update_recovery_mode and xqc_bbr2_update_pacing_gain_for_loss_recovery: the ACK of
    a packet sent after LOSS mode began ends it and restores cwnd; one sent after the loss
    episode began ends RECOVERY mode; in Startup the pacing gain is 1.5 during RECOVERY."""
    sent = now - rtt
    if C[f, LOSS_START] >= 0.0:
        if sent <= C[f, LOSS_START]:
            return
        C[f, LOSS_START] = -1.0
        C[f, CWND] = max(C[f, CWND], C[f, PRIOR_CWND])
    elif C[f, RECOVERY_START] >= 0.0 and sent > C[f, RECOVERY_START]:
        C[f, RECOVERY_START] = -1.0
    if C[f, MODE] == STARTUP:
        C[f, PACING_GAIN] = STARTUP_GAIN_ON_LOST if _in_recovery(C, f) else P[f, HIGH_GAIN]


# ----------------------------------------------------------------------------- control
@njit(cache=True, _nrt=False)
def _cwnd_cap(C, P, f, mss):
    """BBRBoundCwndForModel (and BBRBoundCwndForProbeRTT)."""
    mode = C[f, MODE]
    cap = math.inf
    if mode == DOWN or mode == REFILL or mode == UP:
        cap = C[f, INFLIGHT_HI]
    elif mode == CRUISE or mode == PROBE_RTT:
        cap = _with_headroom(C, P, f, mss)
    cap = max(min(cap, C[f, INFLIGHT_LO]), MIN_PIPE_PACKETS * mss)
    if mode == PROBE_RTT:
        cap = min(cap, _probe_rtt_cwnd(C, P, f, mss))
    return cap


@njit(cache=True, _nrt=False)
def _set_rate_and_cwnd(C, P, f, acked, rtt, mss):
    """BBRSetPacingRate (1% margin) and BBRSetCwnd."""
    bw = _bw(C, f)
    if bw > 0.0:
        rate = C[f, PACING_GAIN] * bw * (1.0 - PACING_MARGIN)
        # xqc_bbr2.c _xqc_bbr2_set_pacing_rate_helper: before the pipe is full the rate only rises,
        # except in RECOVERY mode
        if P[f, RECOVERY_MODES] == 0.0 or C[f, FILLED] > 0.0 or rate > C[f, PACING] or _in_recovery(C, f):
            C[f, PACING] = rate
    elif rtt > 0.0:
        C[f, PACING] = P[f, HIGH_GAIN] * P[f, INIT_CWND] * mss / rtt
    target = _bdp(C, f, bw, C[f, CWND_GAIN_NOW], mss) + P[f, CWND_QUANTA] * mss \
        + aggregation.cwnd(C, f, AGG, bw, P[f, EXTRA_GAIN], P[f, EXTRA_MAX_S],
                           C[f, FILLED] > 0.0 or P[f, EXTRA_IN_STARTUP] > 0.0)
    if C[f, FILLED] > 0.0:
        C[f, CWND] = min(C[f, CWND] + acked, target)
    elif C[f, CWND] < target:
        C[f, CWND] += acked
    C[f, CWND] = min(max(C[f, CWND], MIN_PIPE_PACKETS * mss), _cwnd_cap(C, P, f, mss))


@njit(cache=True, _nrt=False)
def _update_round(C, f, now, acked, delivered, inflight):
    """Packet-timed rounds (BBRUpdateRound): True when the acknowledged packet was sent after the
    current round started. The packets the new round acknowledges left with the flight of the
    previous round's start (rs.tx_in_flight, one round trip old)."""
    C[f, DELIVERED] += acked
    prior_delivered = C[f, DELIVERED] - delivered
    round_start = prior_delivered >= C[f, ROUND_END] - 1.0
    if round_start:
        C[f, ROUND_END] = C[f, DELIVERED]
        C[f, ROUND] += 1.0
        C[f, ROUNDS_SINCE_PROBE] += 1.0
        C[f, LOSS_BEFORE] = C[f, LOSS_NOW]
        C[f, LOSS_NOW] = 0.0
        C[f, ROUND_STAMP] = now
        C[f, FLIGHT_RND] = C[f, FLIGHT_NEXT]
        C[f, FLIGHT_NEXT] = inflight
    return round_start


@njit(cache=True, _nrt=False)
def _reset_congestion_signals(C, f):
    """BBRResetCongestionSignals."""
    C[f, BW_LATEST] = 0.0
    C[f, INFLIGHT_LATEST] = 0.0
    C[f, LOST_RND] = 0.0
    C[f, LOSS_EVENTS_RND] = 0.0


@njit(cache=True, _nrt=False)
def _end_round(C, f, rate, delivered):
    """BBRAdvanceLatestDeliverySignals and the per-round loss counters."""
    _reset_congestion_signals(C, f)
    C[f, BW_LATEST] = rate
    C[f, INFLIGHT_LATEST] = delivered


@njit(cache=True, _nrt=False)
def on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    """BBRUpdateModelAndState then BBRUpdateControlParameters, in the draft's order. The core's
    round_start is replaced by this module's rounds, which phase changes restart."""
    round_start = _update_round(C, f, now, acked, delivered, inflight)
    app_limited = _app_limited(C, f, delivered)
    aggregation.update(C, f, AGG, now, acked, _bw(C, f), round_start,
                       P[f, EXTRA_IN_STARTUP] > 0.0 and C[f, FILLED] == 0.0, mss)
    C[f, BW_LATEST] = max(C[f, BW_LATEST], rate)
    C[f, INFLIGHT_LATEST] = max(C[f, INFLIGHT_LATEST], delivered)
    if not app_limited or rate >= max(C[f, BW_HI0], C[f, BW_HI1]):  # BBRUpdateMaxBw
        C[f, BW_HI1] = max(C[f, BW_HI1], rate)
    if round_start:
        _adapt_lower_bounds(C, P, f)
    _check_startup_done(C, P, f, now, rtt, round_start, mss)
    if C[f, MODE] == DRAIN and inflight <= _bdp(C, f, _bw(C, f), 1.0, mss):
        _start_down(C, f, now, inflight, P, rng, b)
    if C[f, FILLED] > 0.0:
        _adapt_upper_bounds(C, P, f, now, rtt, acked, inflight, round_start, app_limited, mss, rng, b)
        _update_probe_bw(C, P, f, now, inflight, round_start, mss, rng, b)
    expired = _update_min_rtt(C, P, f, now, min(rtt, min_rtt))  # the ACK's least per-packet RTT
    _check_probe_rtt(C, P, f, now, expired, inflight, round_start, mss, rng, b)
    if round_start:
        _end_round(C, f, rate, delivered)
    if P[f, RECOVERY_MODES] > 0.0:
        _update_recovery_mode(C, P, f, now, rtt)
    _set_rate_and_cwnd(C, P, f, acked, rtt, mss)


@njit(cache=True, _nrt=False)
def on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if P[f, RECOVERY_MODES] > 0.0 and C[f, LOSS_START] < 0.0 and lost_sent > C[f, RECOVERY_START]:
        # xqc_bbr2_on_lost: a loss of a packet sent after the episode began starts (or extends)
        # it; entering it saves cwnd (xqc_bbr2_update_recovery_mode, xqc_bbr2_save_cwnd)
        if C[f, RECOVERY_START] < 0.0:
            _save_cwnd(C, f)
        C[f, RECOVERY_START] = now
    C[f, LOST_RND] += lost
    C[f, LOSS_NOW] += lost
    C[f, LOSS_EVENTS_RND] += 1.0
    if C[f, PROBE_SAMPLES] > 0.0 and _inflight_too_high(C, P, f, now, C[f, MIN_RTT], mss):
        _handle_inflight_too_high(C, P, f, now, inflight, rng, b, mss)
        C[f, CWND] = min(C[f, CWND], _cwnd_cap(C, P, f, mss))


@njit(cache=True, _nrt=False)
def on_rto(C, P, f, now, inflight, mss):
    if P[f, RECOVERY_MODES] == 0.0:
        C[f, CWND] = mss
        C[f, RECOVERY_START] = now
        return
    # xqc_bbr2_reset_cwnd, on persistent congestion: cwnd to the minimum in LOSS mode (restored
    # once a packet sent after it is acknowledged), the full-bandwidth baseline forgotten, and
    # outside bandwidth probing inflight_lo set to the window before the cut
    _save_cwnd(C, f)
    C[f, CWND] = MIN_PIPE_PACKETS * mss
    C[f, LOSS_START] = now
    C[f, FULL_BW] = 0.0
    mode = C[f, MODE]
    if mode != STARTUP and mode != REFILL and mode != UP and C[f, INFLIGHT_LO] == math.inf:
        C[f, INFLIGHT_LO] = C[f, PRIOR_CWND]
    C[f, RECOVERY_START] = -1.0


register_cc("bbr2", init=init, on_ack=on_ack, on_loss=on_loss, on_rto=on_rto, defaults=DEFAULTS,
            state_slots=N_STATE)
