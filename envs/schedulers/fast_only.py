"""Fast path only: send only on the path of lowest srtt, waiting while it has no window, whatever
the other paths could carry (one of the interval actions of the LEEYOO DQN scheduler,
docs/schedulers.md "Interval-based DQN")."""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.sim.roles import blocked_rule

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    fast, _, blocked = blocked_rule(obs, nsub)  # the blocked-path rule, always answered "wait"
    return WAIT if blocked else 1 << fast


# burst: see envs.schedulers.base: same answer until the path is blocked
register_scheduler("fast_only", pick=pick, params=PARAMS, state_slots=0, burst=True)
