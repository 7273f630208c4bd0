"""HSR, highest sending rate (Kimura, Lima and Loureiro, "Alternative scheduling decisions for
multipath TCP", IEEE Communications Letters 21(11), 2017; docs/schedulers.md): among the
available paths choose the largest ``w_r m_r / tau'_r`` (congestion window in bytes over the
latest RTT sample). Reading chosen: before a path's first RTT sample its srtt (the initial RTT)
stands in for the latest sample; ties go to the lower path index."""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.sim.layout import OBS_AVAILABLE, OBS_CWND, OBS_LATEST_RTT, OBS_SRTT

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    best = -1
    best_rate = -1.0
    for i in range(nsub):
        if obs[i, OBS_AVAILABLE] <= 0.0:
            continue
        rtt = obs[i, OBS_LATEST_RTT]
        if rtt <= 0.0:
            rtt = obs[i, OBS_SRTT]
        rate = obs[i, OBS_CWND] / rtt
        if rate > best_rate:
            best_rate = rate
            best = i
    return WAIT if best < 0 else 1 << best


# burst: depends on cwnd, RTT and availability only, none of which sending changes
register_scheduler("hsr", pick=pick, params=PARAMS, state_slots=0, burst=True)
