"""BBRv2's app-limited ProbeRTT samples (envs/cc/bbr2.py; draft-cardwell-iccrg-bbr-congestion-control
BBRHandleProbeRTT and BBRAdaptUpperBounds; xqc_bbr2.c xqc_bbr2_update_min_rtt and
xqc_bbr2_adapt_upper_bounds): data sent in ProbeRTT and until its flight is delivered gives
app-limited samples, which neither enter the max-bandwidth filter below its maximum nor end a cycle
of it."""

from __future__ import annotations

import numpy as np

from envs.cc import bbr2
from envs.sim.layout import N_CC, N_CCP

MSS = 1200.0


def cruising() -> tuple[np.ndarray, np.ndarray]:
    """One BBRv2 flow in ProbeBW_CRUISE with a bandwidth filter of (10, 8) MB/s and 1 MB delivered."""
    C, P = np.zeros((1, N_CC)), np.zeros((1, N_CCP))
    P[0, :len(bbr2.DEFAULTS)] = list(bbr2.DEFAULTS.values())
    bbr2.init(C, P, 0, 0.0, MSS)
    C[0, bbr2.FILLED] = 1.0
    C[0, bbr2.MODE] = bbr2.CRUISE
    C[0, bbr2.MIN_RTT] = 0.04
    C[0, bbr2.BW_HI0], C[0, bbr2.BW_HI1] = 10e6, 8e6
    C[0, bbr2.DELIVERED] = 1e6
    return C, P


def test_probe_rtt_marks_its_flight_app_limited() -> None:
    """The mark covers packets sent from its start until the flight at its last renewal is
    delivered; packets sent before it began are not app-limited."""
    C, _ = cruising()
    bbr2._mark_app_limited(C, 0, 50_000.0)  # entry: delivered 1.0e6, 50 kB in flight
    C[0, bbr2.DELIVERED] += 20_000.0
    bbr2._mark_app_limited(C, 0, 40_000.0)  # renewed at the next ACK in ProbeRTT: ends at 1.06e6
    delivered = C[0, bbr2.DELIVERED]
    assert not bbr2._app_limited(C, 0, delivered - 0.99e6)  # sent before the mark
    assert bbr2._app_limited(C, 0, delivered - 1.01e6)  # sent during ProbeRTT
    assert bbr2._app_limited(C, 0, delivered - 1.055e6)  # sent after it, before its flight drained
    assert not bbr2._app_limited(C, 0, delivered - 1.07e6)  # sent once the mark had cleared


def test_app_limited_sample_does_not_end_a_filter_cycle() -> None:
    """One round after probing stopped the filter moves to a new cycle, unless that round's sample
    is app-limited (the first round after ProbeRTT's)."""
    rng = np.zeros(1, dtype=np.uint64)  # unused: no loss, so no random probe wait is drawn
    for app_limited, expected in ((True, (10e6, 8e6)), (False, (8e6, 0.0))):
        C, P = cruising()
        C[0, bbr2.ADVANCE_BW] = 1.0
        bbr2._adapt_upper_bounds(C, P, 0, 1.0, 0.04, MSS, 50_000.0, True, app_limited, MSS, rng, 0)
        assert (C[0, bbr2.BW_HI0], C[0, bbr2.BW_HI1]) == expected
        assert C[0, bbr2.ADVANCE_BW] == 0.0
