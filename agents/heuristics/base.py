"""The scheduler interface of the compiled core.

A heuristic is a module with ``PARAMS`` (name -> default, at most 16) and a compiled
``pick(prm, st, obs, cobs, nsub, mss, rng, b) -> int`` called once per packet the connection may
send. It sees only sender-observable state: ``obs[f, OBS_*]`` for its ``nsub`` paths and
``cobs[COBS_*]`` for the connection (``envs.sim.layout``), its parameters ``prm`` and its own
state vector ``st`` (16 floats, zero at the start of an episode). It returns a bit mask of the
paths to send the next packet on (bit i = path i; several bits send copies), or ``WAIT`` (0).

Optional ``BURST = True`` (default False) declares that the heuristic's answer depends only on
the paths' ``OBS_AVAILABLE`` and on state that sending does not change (srtt, its parameters),
and that it does not draw random numbers: once it returns a single path ``i``, it would return
``i`` again for every further packet of the step while path ``i`` stays available. The core then
sends that burst without calling ``pick`` per packet; the result is identical packet for packet.
minRTT and ``fixed`` declare it; round robin (which alternates per packet) does not.
"""

import math

from numba import njit

from envs.sim.layout import OBS_AVAILABLE, OBS_SRTT

WAIT = 0


@njit(inline="always", cache=True, _nrt=False)
def lowest_srtt(obs, nsub, available_only):
    """Index of the path of lowest srtt (among available paths if asked), -1 if none."""
    best = -1
    best_rtt = math.inf
    for i in range(nsub):
        if available_only and obs[i, OBS_AVAILABLE] <= 0.0:
            continue
        if obs[i, OBS_SRTT] < best_rtt:
            best_rtt = obs[i, OBS_SRTT]
            best = i
    return best
