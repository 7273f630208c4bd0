"""What every congestion-control model shares: the state slots the core reads.

A CC is a set of compiled functions over one connection's CC state matrix ``C[F, N_CC]``
(flow ``f`` is the row being updated; coupled MPTCP CCs read the other subflows' rows):

- ``init(C, P, f, now, mss)``
- ``on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b)``
- ``on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)``
- ``on_rto(C, P, f, now, inflight, mss)``

``mss`` is the unit the stack's CCs count windows in, in the core's bytes: one packet's payload
under Linux (a segment), XQUIC's ``XQC_MSS`` (1436 bytes of window for a 1200-byte packet, so
1.2 packets) under XQUIC (``StackProfile.cc_mss_packets``). Every packet-counted constant of a CC
(initial window, floors, growth per round trip) is therefore the stack's own figure; a CC that
counts real packets (BBRv2's XQUIC loss test) converts with its own parameter.
``rtt`` is the ACK's RTT sample (its latest-sent segment's), ``min_rtt`` the least RTT among the
packets it acknowledges, each packet with its own jitter, and the stack's own sample (its latest
RTT), the samples the stack's min RTT is taken from (a windowed minimum RTT filter reads it).
``delivered`` is the bytes acknowledged since that segment was sent and ``rate`` the delivery-rate
sample, ``delivered`` over the longer of the ACK and send intervals
(draft-cheng-iccrg-delivery-rate-estimation: ``rs.delivered``, ``rs.delivery_rate``).
``P[F, N_CCP]`` holds the CC's parameters. The module registers itself at its end with
``envs.plugins.register_cc(name, init=..., on_ack=..., on_loss=..., on_rto=..., defaults=DEFAULTS,
state_slots=...)``: ``DEFAULTS`` maps each parameter to its default, one ``P[f, :]`` slot each in
order (at most ``N_CCP``), and ``state_slots`` is one past the last ``C[f, :]`` slot it uses,
counting the shared slots below (at most ``N_CC``); registration refuses more. Each call leaves the congestion window in
``C[f, CWND]`` (bytes) and the pacing rate in ``C[f, PACING]`` (bytes/s, 0 = not paced).
Losses arrive aggregated per step with the send time of the latest lost packet, so a CC can apply
the congestion-recovery rule of RFC 6582 / RFC 9002 (one reduction per round trip: a loss of a
packet sent before the last reduction does not reduce again).
"""

import math

from numba import njit

CWND = 0
PACING = 1
SSTHRESH = 2
RECOVERY_START = 3  # time of the last window reduction (s)
FIRST_PRIVATE = 4  # CC-specific slots start here

INIT_CWND_PACKETS = 10.0  # RFC 6928
MIN_CWND_PACKETS = 2.0


@njit(inline="always", cache=True, _nrt=False)
def init_common(C, f, mss, init_cwnd_packets):
    """Every CC starts from its initial window (``init_cwnd_packets``: RFC 6928's
    ``INIT_CWND_PACKETS``, or the stack's, envs/sim/stacks.py), unpaced, in slow start, never reduced."""
    C[f, CWND] = init_cwnd_packets * mss
    C[f, PACING] = 0.0
    C[f, SSTHRESH] = math.inf
    C[f, RECOVERY_START] = -1.0


@njit(inline="always", cache=True, _nrt=False)
def in_recovery(C, f, now, rtt):
    """True within a round trip of the last reduction: the ACKs of packets sent before it do not
    grow the window, whatever the CC (RFC 9002 sec. 7.3.2; XQUIC's xqc_reno_on_ack and
    xqc_cubic_on_ack return in recovery; Linux ``tcp_cong_control`` calls no ``cong_avoid`` while
    ``tcp_in_cwnd_reduction``, for every CC module, the coupled ones of MPTCP included)."""
    return now - C[f, RECOVERY_START] < rtt
