"""Send only on one given path (``path``), waiting while it has no window; ``path = -1`` never
sends. The ``packet`` decision mode applies an agent's per-step choice through it."""

from numba import njit

from envs.plugins import register_scheduler
from envs.sim.layout import OBS_AVAILABLE

PARAMS = {"path": 0.0}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = int(prm[0])
    if 0 <= i < nsub and obs[i, OBS_AVAILABLE] > 0.0:
        return 1 << i
    return 0


# burst: see envs.schedulers.base: same answer until the path is blocked
register_scheduler("fixed", pick=pick, params=PARAMS, state_slots=0, burst=True)
