"""OTIAS, out-of-order transmission for in-order arrival (Yang, Wang and Amer, "Out-of-order
transmission for in-order arrival scheduling for multipath TCP", IEEE AINA workshops 2014;
docs/schedulers.md): estimate every path's arrival time for the next packet, including the data
queued ahead of it, and pick the earliest.

Reading chosen: as in the paper, data queued beyond a full window goes out one window per RTT,
so it waits ``ceil(queued / cwnd)`` whole RTTs; the queued data is what exceeds the window plus
the connection's waiting packets (this core has no per-path send queues; see ATLB, which drains
the same queue at the send rate instead). The packet waits when the earliest path is full."""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT, earliest_arrival
from envs.sim.layout import OBS_AVAILABLE

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = earliest_arrival(obs, cobs, nsub, mss, True)
    return 1 << i if i >= 0 and obs[i, OBS_AVAILABLE] > 0.0 else WAIT


register_scheduler("otias", pick=pick, params=PARAMS, state_slots=0)
