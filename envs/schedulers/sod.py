"""SOD, scheduling on demand, with its receiver flow control (docs/schedulers.md "SOD"; the SOD
study of docs/scenarios.md, ns-3).

Loop over the paths in index order; path s gets data only on demand, while its outgoing queue
has room: ``sw_s = min(cwnd_s, win_s)``, skip s if ``flight_s > sw_s`` or ``backlog_s > sw_s -
flight_s``, else it may take ``sw_s - flight_s - backlog_s`` packets. The flow control: the
receiver keeps out-of-order packets in per-subflow ingoing queues of ``ingoing_kb`` and advertises
their free space as each subflow's window ``win_s``; when a queue is exhausted it releases
``delta`` packets anyway, so a subflow's window never closes below ``delta`` packets.

Readings chosen for this core: (1) the core sends a packet the moment a path is picked, so a
path's outgoing queue is empty at every decision (``backlog_s = 0``) and "moving n packets to
s's queue" is sending on s while ``flight_s + mss <= sw_s``: the first path in index order with
room for one packet. (2) the receiver here has one reorder buffer, not per-subflow queues; the
sender sees its occupancy ``R`` (``COBS_REORDER``), counts it against every subflow's ingoing
queue (the conservative bound: a subflow's share of R is at most R), so
``win_s = max(ingoing - R, delta * mss)``. ``flow_control = 0`` drops ``win_s``."""

from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.sim.layout import COBS_REORDER, OBS_AVAILABLE, OBS_CWND, OBS_INFLIGHT

PARAMS = {"delta": 2.0, "ingoing_kb": 64.0, "flow_control": 1.0}
EPS = 1e-6


def validate(values: Mapping, n_paths: int | None) -> None:
    if not 0.0 <= values["delta"] <= 1e4:
        raise out_of_range("delta", values["delta"], "in [0, 10000] (packets)")
    if not 0.0 < values["ingoing_kb"] <= 1e7:
        raise out_of_range("ingoing_kb", values["ingoing_kb"], "in (0, 1e7]")
    if values["flow_control"] not in (0.0, 1.0):
        raise out_of_range("flow_control", values["flow_control"], "0 or 1")


@njit(inline="always", cache=True, _nrt=False)
def window(prm, obs, cobs, s, mss):
    """``sw_s``: the path's congestion window, capped by its advertised window under flow control."""
    sw = obs[s, OBS_CWND]
    if prm[2] > 0.0:
        sw = min(sw, max(prm[1] * 1024.0 - cobs[COBS_REORDER], prm[0] * mss))
    return sw


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    for s in range(nsub):
        if obs[s, OBS_AVAILABLE] <= 0.0:
            continue
        if obs[s, OBS_INFLIGHT] + mss <= window(prm, obs, cobs, s, mss) + EPS:
            return 1 << s
    return WAIT


register_scheduler("sod", pick=pick, params=PARAMS, state_slots=0, validate=validate)
