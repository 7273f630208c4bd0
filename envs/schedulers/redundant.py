"""Redundant: send every packet on all available paths; the receiver keeps the first copy
(the redundant scheduler of Linux MPTCP, Frömmgen et al., "ReMP TCP: low latency multipath
TCP", IEEE ICC 2016; docs/schedulers.md).

Reading chosen: a packet goes out when at least one path has window space, on each path that
has it at that moment (paths without space get no copy later). The core sends the first copy as
data and the others as copies that carry nothing new to the receiver; under XQUIC's profile a
path whose pacer holds it keeps its packet or copy in its schedule buffer (docs/transport.md)."""

from numba import njit

from envs.plugins import register_scheduler
from envs.sim.layout import OBS_AVAILABLE

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    mask = 0
    for i in range(nsub):
        if obs[i, OBS_AVAILABLE] > 0.0:
            mask |= 1 << i
    return mask


# burst: a single-path answer means no other path is available, which sending keeps so
register_scheduler("redundant", pick=pick, params=PARAMS, state_slots=0, burst=True)
