"""Fast path only: send only on the path of lowest srtt, waiting while it has no window, whatever
the other paths could carry (one of the interval actions of the LEEYOO DQN scheduler,
docs/schedulers.md "Interval-based DQN")."""

from numba import njit

from agents.heuristics.base import WAIT, lowest_srtt
from envs.sim.layout import OBS_AVAILABLE

BURST = True  # see agents.heuristics.base: same answer until the path is blocked
PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    f = lowest_srtt(obs, nsub, False)
    return 1 << f if f >= 0 and obs[f, OBS_AVAILABLE] > 0.0 else WAIT
