"""Probabilistic split: each packet goes to path 0 with probability ``p_first``, otherwise to one
of the other paths chosen uniformly; if the chosen path has no window space, wait (LEEYOO's
split actions, docs/schedulers.md "Interval-based DQN": P(path 1) = 0.25, 0.5, 0.75).

Reading chosen: LEEYOO has two paths; with more, the remaining probability is shared equally.
The draw uses the connection's stream, so runs are reproducible."""

from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.sim.layout import OBS_AVAILABLE
from envs.sim.rng import uniform

PARAMS = {"p_first": 0.5}


def validate(values: Mapping, n_paths: int | None) -> None:
    if not 0.0 <= values["p_first"] <= 1.0:
        raise out_of_range("p_first", values["p_first"], "in [0, 1]")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    u = uniform(rng, b)
    if u < prm[0] or nsub == 1:
        i = 0
    else:
        i = 1 + min(int((u - prm[0]) / (1.0 - prm[0]) * (nsub - 1)), nsub - 2)
    return 1 << i if obs[i, OBS_AVAILABLE] > 0.0 else WAIT


register_scheduler("split", pick=pick, params=PARAMS, state_slots=0, validate=validate)
