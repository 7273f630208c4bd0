"""LWS, largest window space (Kimura, Lima and Loureiro, "Alternative scheduling decisions for
multipath TCP", IEEE Communications Letters 21(11), 2017; docs/schedulers.md): among the
available paths take the largest ``ws = cwnd - inflight``; paths with ``ws <= 0`` only compete on
lowest srtt (LL). Ties go to the lower path index. Not burst-safe: sending shrinks ``ws``."""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT, by_window_space

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = by_window_space(obs, nsub, False)
    return WAIT if i < 0 else 1 << i


register_scheduler("lws", pick=pick, params=PARAMS, state_slots=0)
