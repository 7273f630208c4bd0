"""The stack's loss recovery as the core runs it: detection window, DSACK, undo, timeout.

Each function reads the flow's stack profile from ``stk`` (its row of ``Constants.stack``, columns ``STK_*`` of
``envs/sim/layout.py``, filled by ``envs/sim/stacks.py``), so one compiled core serves every
stack. docs/transport.md ("Stacks differ") gives the sources:

- the detection window (``reorder_window``): RFC 9002's time threshold (XQUIC: 9/8 of the
  larger of srtt and the latest RTT sample after the send, beyond the packet's expected round
  trip) or RACK's reordering window (Linux: min_rtt / 4 per step, at most srtt;
  RFC 8985 sec. 6.2, tcp_recovery.c tcp_rack_reo_wnd);
- DSACK (Linux, RFC 2883): a spurious resend is reported one round trip after the declaration
  that caused it; the report widens RACK's window by one step (at most once per round trip,
  tcp_rack_update_reo_wnd) for the next TCP_RACK_RECOVERY_THRESH (16) recoveries. Only a copy
  that was sent makes one: a copy cancelled by its original's ACK reaches no receiver
  (``copy_sent``), and RACK's window stays;
- undo: when every declaration of the episode was spurious the reduction is undone, about a
  round trip after the declaration, whether or not a copy left (tcp_input.c tcp_may_undo: by
  DSACKs, tcp_try_undo_dsack, or at the recovery's end, tcp_try_undo_recovery, where
  tcp_packet_delayed holds when nothing was retransmitted or the ACK echoes a timestamp from
  before the first retransmission; tcp_undo_cwnd_reduction: cwnd = max(cwnd, prior_cwnd),
  ssthresh = max(ssthresh, prior_ssthresh));
- the retransmission timeout (``timeout``): RFC 6298 / Linux __tcp_set_rto, or RFC 9002's
  persistent congestion after three PTOs (XQUIC).
"""

import math

from numba import njit

from envs.cc.base import CWND, SSTHRESH
from envs.sim.layout import (FL_COPY_SENT, FL_DSACK_AT, FL_PRIOR_CWND, FL_PRIOR_SSTHRESH, FL_RECOVERY_AT, FL_REO_PERSIST,
                             FL_REO_STEPS, FL_UNDO_OK, OBS_LATEST_RTT, OBS_MIN_RTT, OBS_RTTVAR, OBS_SRTT, STK_REO_ADAPT,
                             STK_REO_PERSIST, STK_REO_WND, STK_RTO_ACK_DELAY, STK_RTO_MIN, STK_RTO_MULT,
                             STK_RTO_VAR_FLOOR, STK_TIME_THRESHOLD, STK_UNDO)

MAX_REO_STEPS = 255.0  # tcp_rack_update_reo_wnd: min_t(u32, 0xFF, reo_wnd_steps + 1)


@njit(inline="always", cache=True, _nrt=False)
def reorder_window(o, fb, f, stk, expected):
    """How late (s) a packet whose round trip is expected to take ``expected`` (s) may be
    acknowledged, once a later-sent one is, before it is declared lost. RFC 9002 sec. 6.1.2
    (XQUIC xqc_send_ctl.c xqc_send_ctl_detect_lost): lost once older than (1 + time threshold)
    max(srtt, latest RTT), which XQUIC's samples of early packets put below the expected round
    trip plus its eighth under reordering (envs/sim/ack_loop.py); RACK: its reordering window."""
    srtt = o[f, OBS_SRTT]
    by_time = 0.0
    if stk[STK_TIME_THRESHOLD] > 0.0:
        by_time = max((1.0 + stk[STK_TIME_THRESHOLD]) * max(srtt, o[f, OBS_LATEST_RTT]) - expected, 0.0)
    steps = 1.0 + fb[f, FL_REO_STEPS]
    return min(by_time + o[f, OBS_MIN_RTT] * stk[STK_REO_WND] * steps, srtt)


@njit(inline="always", cache=True, _nrt=False)
def timeout(o, f, stk):
    """The retransmission timeout (s) before back-off."""
    base = o[f, OBS_SRTT] + max(4.0 * o[f, OBS_RTTVAR], stk[STK_RTO_VAR_FLOOR]) + stk[STK_RTO_ACK_DELAY]
    return max(stk[STK_RTO_MULT] * base, stk[STK_RTO_MIN])


@njit(cache=True, _nrt=False)
def before_loss(t, o, fb, C, f, lost, spur, dt, stk):
    """A loss notification (``lost`` bytes really lost, ``spur`` packets declared spuriously) is
    about to reach the CC: note what a DSACK will later prove, and count recoveries."""
    if stk[STK_UNDO] == 0.0 and stk[STK_REO_ADAPT] == 0.0:
        return
    if spur > 0.0 and fb[f, FL_DSACK_AT] <= 0.0:
        # the resend reaches the receiver, which already has the original: DSACK one RTT later
        fb[f, FL_DSACK_AT] = t + max(math.floor(o[f, OBS_LATEST_RTT] / dt + 0.5), 1.0)
        fb[f, FL_UNDO_OK] = 1.0 if lost <= 0.0 else 0.0
        fb[f, FL_PRIOR_CWND] = C[f, CWND]
        fb[f, FL_PRIOR_SSTHRESH] = max(C[f, SSTHRESH], 0.75 * C[f, CWND])  # tcp_current_ssthresh
    elif lost > 0.0:
        fb[f, FL_UNDO_OK] = 0.0  # a real loss in the episode: its retransmission is no DSACK
    if lost > 0.0 and (t - fb[f, FL_RECOVERY_AT]) * dt >= o[f, OBS_SRTT]:
        fb[f, FL_RECOVERY_AT] = t  # a new recovery: a widened window persists for so many
        if fb[f, FL_REO_PERSIST] > 0.0:
            fb[f, FL_REO_PERSIST] -= 1.0
        else:
            fb[f, FL_REO_STEPS] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def copy_sent(fb, f):
    """A copy of a spurious declaration is queued (not cancelled): it will reach the receiver,
    which has its original, so the pending report is a DSACK. The mark is set only while a report
    is pending and cleared with it (``dsack_due``), so a new episode starts without one."""
    if fb[f, FL_DSACK_AT] > 0.0:
        fb[f, FL_COPY_SENT] = 1.0


@njit(inline="always", cache=True, _nrt=False)
def dsack_due(t, fb, C, f, stk):
    """A round trip after a spurious declaration, step t: undo the reduction if the episode's
    declarations were all spurious; widen the window if a copy was sent (its DSACK)."""
    if stk[STK_UNDO] > 0.0 and fb[f, FL_UNDO_OK] > 0.0:
        C[f, CWND] = max(C[f, CWND], fb[f, FL_PRIOR_CWND])
        C[f, SSTHRESH] = max(C[f, SSTHRESH], fb[f, FL_PRIOR_SSTHRESH])
    if stk[STK_REO_ADAPT] > 0.0 and fb[f, FL_COPY_SENT] > 0.0:
        fb[f, FL_REO_STEPS] = min(fb[f, FL_REO_STEPS] + 1.0, MAX_REO_STEPS - 1.0)
        fb[f, FL_REO_PERSIST] = stk[STK_REO_PERSIST]
    fb[f, FL_DSACK_AT] = 0.0
    fb[f, FL_COPY_SENT] = 0.0
    fb[f, FL_UNDO_OK] = 0.0
