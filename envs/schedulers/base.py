"""The scheduler interface of the compiled core.

A heuristic is a module with a compiled ``pick(prm, st, obs, cobs, nsub, mss, rng, b) -> int``
called once per packet the connection may send, registered at the module's end with
``envs.plugins.register_scheduler(name, pick=pick, params=PARAMS, state_slots=...)``: ``PARAMS``
maps each parameter to its default (at most ``N_PARAMS`` = 16 slots), ``state_slots`` is how many
entries of ``st`` it uses (at most ``N_STATE`` = 16); registration refuses more. It sees only
sender-observable state: ``obs[f, OBS_*]`` for its ``nsub`` paths and ``cobs[COBS_*]`` for the
connection (``envs.sim.layout``), its parameters ``prm`` and its own state vector ``st`` (zero at
the start of an episode). It returns a bit mask of the paths to send the next packet on (bit i =
path i; several bits send copies), or ``WAIT`` (0).

``burst=True`` (default False) declares that the heuristic's answer depends only on
the paths' ``OBS_AVAILABLE`` and on state that sending does not change (srtt, its parameters),
and that it does not draw random numbers: once it returns a single path ``i``, it would return
``i`` again for every further packet of the step while path ``i`` stays available. The core then
sends that burst without calling ``pick`` per packet; the result is identical packet for packet.
minRTT and ``fixed`` are registered so; round robin (which alternates per packet) does not.

``validate=`` names an optional ``validate(values: dict, n_paths: int | None) -> None``
that checks the parameter values (defaults updated with the user's overrides) before a run,
raising ``envs.errors.ConfigError`` naming the field and its range; ``n_paths`` is the
scenarios' path count, None when it varies. A parameter whose default is a tuple takes a list of
numbers (e.g. WRR's ``weights``); it must be the last one, and it fills the remaining parameter
slots (zero where not given).
``c_source="<file>:<function>"`` names the heuristic's C form, where it has one (the XQUIC
backend's rules in ``bindings/src/mps_rules.c``).
"""

import math

from numba import njit

from envs.sim.layout import COBS_BACKLOG, OBS_AVAILABLE, OBS_CWND, OBS_INFLIGHT, OBS_SRTT

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


@njit(inline="always", cache=True, _nrt=False)
def arrival_time(obs, cobs, i, mss, rounds):
    """When the next packet would reach the receiver over path ``i``: the one-way delay
    ``srtt / 2`` plus, on a path without window space, the time until the data ahead of the
    packet has gone out: what exceeds the window (``inflight - cwnd``) and the connection's
    waiting data up to this packet (``COBS_BACKLOG``, the packets that would queue for that path
    with it), at the path's send rate ``cwnd / srtt``, or in whole RTTs when ``rounds`` (a window
    of packets per RTT). An available path sends it at once."""
    srtt = obs[i, OBS_SRTT]
    t = 0.5 * srtt
    if obs[i, OBS_AVAILABLE] <= 0.0:
        cwnd = max(obs[i, OBS_CWND], mss)
        ahead = max(obs[i, OBS_INFLIGHT] - cwnd, 0.0) + max(cobs[COBS_BACKLOG], mss)
        t += srtt * (math.ceil(ahead / cwnd) if rounds else ahead / cwnd)
    return t


@njit(inline="always", cache=True, _nrt=False)
def earliest_arrival(obs, cobs, nsub, mss, rounds):
    """Path on which the next packet would arrive at the receiver first (``arrival_time``), -1
    if none."""
    best = -1
    best_t = math.inf
    for i in range(nsub):
        t = arrival_time(obs, cobs, i, mss, rounds)
        if t < best_t:
            best_t = t
            best = i
    return best


@njit(inline="always", cache=True, _nrt=False)
def by_window_space(obs, nsub, per_time):
    """Kimura et al.'s window-space rules over the available paths with ``ws = cwnd - inflight
    > 0``: the largest ``ws`` (LWS), or the lowest ``srtt / ws`` (LTS) when ``per_time``; when no
    such path exists, the lowest srtt among the available paths (LL); -1 if none."""
    best = -1
    best_score = math.inf
    for i in range(nsub):
        if obs[i, OBS_AVAILABLE] <= 0.0:
            continue
        ws = obs[i, OBS_CWND] - obs[i, OBS_INFLIGHT]
        if ws <= 0.0:
            continue
        score = obs[i, OBS_SRTT] / ws if per_time else -ws
        if score < best_score:
            best_score = score
            best = i
    return best if best >= 0 else lowest_srtt(obs, nsub, True)
