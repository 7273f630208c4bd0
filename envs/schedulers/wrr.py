"""Weighted round robin: cycle through the available paths, each taking packets in proportion to
its weight (docs/schedulers.md; Linux MPTCP's round-robin scheduler with weights).

Reading chosen: the smooth weighted round robin of nginx (each available path gains its weight
in credit per packet, the richest sends and pays the total), so a path with weight 3 next to one
with weight 1 sends 3 of every 4 packets, interleaved rather than in runs. Only available paths
take part; a path without window space keeps its credit. ``weights`` (one per path; default
equal) or ``by_rate = 1``: weights are the paths' estimated rates ``cwnd / srtt``."""

from collections.abc import Mapping

from numba import njit

from envs.errors import ConfigError, out_of_range
from envs.plugins import N_STATE, register_scheduler
from envs.sim.layout import OBS_AVAILABLE, OBS_CWND, OBS_SRTT

PARAMS = {"by_rate": 0.0, "weights": ()}
W0 = 1  # prm[W0 + i]: weight of path i (all zero: equal weights)
# state: st[i] is path i's credit


def validate(values: Mapping, n_paths: int | None) -> None:
    if values["by_rate"] not in (0.0, 1.0):
        raise out_of_range("by_rate", values["by_rate"], "0 or 1")
    weights = values["weights"]
    if not weights:
        return
    if n_paths is None:
        raise ConfigError("weights: the scenarios have different numbers of paths; give weights "
                          "only for scenarios with a fixed path count")
    if len(weights) != n_paths:
        raise ConfigError(f"weights: give one weight per path ({n_paths}), got {len(weights)}: {list(weights)}")
    if min(weights) < 0 or max(weights) <= 0:
        raise out_of_range("weights", list(weights), ">= 0 with at least one > 0")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    given = False
    for i in range(nsub):
        if prm[W0 + i] > 0.0:
            given = True
    best = -1
    total = 0.0
    for i in range(nsub):
        if obs[i, OBS_AVAILABLE] <= 0.0:
            continue
        if prm[0] > 0.0:
            w = obs[i, OBS_CWND] / obs[i, OBS_SRTT]
        elif given:
            w = prm[W0 + i]
        else:
            w = 1.0
        if w <= 0.0:
            continue
        st[i] += w
        total += w
        if best < 0 or st[i] > st[best]:
            best = i
    if best < 0:
        return 0
    st[best] -= total
    return 1 << best


register_scheduler("wrr", pick=pick, params=PARAMS, state_slots=N_STATE, validate=validate)
