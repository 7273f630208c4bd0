"""ATLB, arrival-time matching load balancing (the baseline of the SOD study, docs/schedulers.md):
give the next packet to the path where it would arrive at the receiver earliest, estimated from
the path's RTT and send rate and the data queued ahead of it.

Reading chosen: this core has no per-path send queues (a picked packet leaves at once). On a
path with window space the packet leaves now and arrives after ``srtt / 2``; on a full path it
queues behind what exceeds the window and behind the connection's other waiting packets (those
that would queue there with it), drained at the send rate ``cwnd / srtt``
(``envs.schedulers.base.earliest_arrival``). When the earliest path is full the packet waits
for it (in the original it would wait in that path's send queue). Not burst-safe: a full path's
estimate shrinks with the backlog as packets go out elsewhere."""

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT, earliest_arrival
from envs.sim.layout import OBS_AVAILABLE

PARAMS: dict[str, float] = {}


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = earliest_arrival(obs, cobs, nsub, mss, False)
    return 1 << i if i >= 0 and obs[i, OBS_AVAILABLE] > 0.0 else WAIT


register_scheduler("atlb", pick=pick, params=PARAMS, state_slots=0)
