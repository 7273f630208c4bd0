"""What the coupled MPTCP congestion controls (LIA, OLIA, BALIA, wVegas) share.

A coupled CC couples the windows of one MPTCP connection's subflows: rows ``0 .. nsub-1`` of the
connection's CC matrix. A competing flow (row ``f >= nsub``) is a single-path connection of its
own: it couples with nobody, so a coupled CC on it behaves as its single-path form (LIA and OLIA
reduce to Reno, RFC 6356 section 3). Each subflow keeps its own smoothed RTT in slot ``SRTT``
(RFC 6298's 7/8 EWMA), 0 until its first sample: the algorithms sum over subflows that have one,
as Linux MPTCP sums over subflows that can send and have an RTT estimate.
"""

from numba import njit

from envs.cc.base import CWND, FIRST_PRIVATE, SSTHRESH, init_common

SRTT = FIRST_PRIVATE  # smoothed RTT of this subflow (s), 0 before the first sample
FIRST_COUPLED = FIRST_PRIVATE + 1  # each coupled CC's own slots start here


@njit(inline="always", cache=True, _nrt=False)
def init_subflow(C, f, mss, init_cwnd_packets):
    """A subflow's start: the common one (init_common), no RTT estimate yet."""
    init_common(C, f, mss, init_cwnd_packets)
    C[f, SRTT] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def siblings(f, nsub):
    """Rows ``lo .. hi-1`` that flow ``f`` couples with: the connection's subflows, or itself."""
    if f < nsub:
        return 0, nsub
    return f, f + 1


@njit(inline="always", cache=True, _nrt=False)
def track_rtt(C, f, rtt):
    """Fold one RTT sample into the subflow's smoothed RTT (RFC 6298)."""
    if C[f, SRTT] <= 0.0:
        C[f, SRTT] = rtt
    else:
        C[f, SRTT] = 0.875 * C[f, SRTT] + 0.125 * rtt


@njit(inline="always", cache=True, _nrt=False)
def counted(P, f, nsub, acked, segments_per_ack):
    """The acknowledged bytes a coupled increase counts. The multipath-tcp.org kernel's LIA, OLIA
    and BALIA (``mptcp_coupled.c``, ``mptcp_olia.c``, ``mptcp_balia.c``) step ``snd_cwnd_cnt`` once
    per ACK, whatever it acknowledges, where RFC 6356 counts the bytes acknowledged; with a
    receiver that ACKs every ``segments_per_ack`` segments (Linux: every second full segment,
    ``tcp_input.c`` ``__tcp_ack_snd_check``) they count 1/``segments_per_ack`` of them. 1 for
    byte counting (XQUIC's ``bindings/src/mps_coupled.c`` grows per acknowledged packet) and for a
    competing single-path flow (the modules call ``tcp_reno_cong_avoid`` without MPTCP)."""
    return acked / P[f, segments_per_ack] if f < nsub else acked


@njit(inline="always", cache=True, _nrt=False)
def slow_start(C, f, acked):
    """Standard slow start (RFC 5681) while below ssthresh; True when it applied."""
    if C[f, CWND] < C[f, SSTHRESH]:
        C[f, CWND] += acked
        return True
    return False


@njit(inline="always", cache=True, _nrt=False)
def window_sum(C, lo, hi):
    """``sum_r w_r`` (bytes) over the coupled subflows with an RTT estimate."""
    total = 0.0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            total += C[r, CWND]
    return total


@njit(inline="always", cache=True, _nrt=False)
def rate_sum(C, lo, hi):
    """``sum_r w_r / rtt_r`` (bytes/s) over the coupled subflows with an RTT estimate."""
    total = 0.0
    for r in range(lo, hi):
        if C[r, SRTT] > 0.0:
            total += C[r, CWND] / C[r, SRTT]
    return total
