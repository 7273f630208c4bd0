"""minRTT / LL (lowest latency): the default scheduler of Linux MPTCP and XQUIC.

Send on the available path of lowest srtt; if no path has window space, wait
(docs/schedulers.md; Paasch et al., "Experimental evaluation of multipath TCP schedulers", 2014).
"""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT, lowest_srtt

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = lowest_srtt(obs, nsub, True)
    return WAIT if i < 0 else 1 << i


# burst: see envs.schedulers.base: same answer until the path is blocked
register_scheduler("minrtt", pick=pick, params=PARAMS, state_slots=0, burst=True)
