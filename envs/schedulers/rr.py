"""Round robin: cycle through the available paths, one packet each (docs/schedulers.md;
the round-robin scheduler of Linux MPTCP, Paasch et al. 2014)."""

from numba import njit

from envs.plugins import register_scheduler
from envs.sim.layout import OBS_AVAILABLE

PARAMS: dict[str, float] = {}
LAST = 0  # state: index of the path used last


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    last = int(st[LAST])
    for k in range(1, nsub + 1):
        i = (last + k) % nsub
        if obs[i, OBS_AVAILABLE] > 0.0:
            st[LAST] = i
            return 1 << i
    return 0


register_scheduler("rr", pick=pick, params=PARAMS, state_slots=LAST + 1,
                   c_source="bindings/src/mps_rules.c:pick_rr")
