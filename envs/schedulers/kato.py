"""KATO, throughput-fluctuation suppression (the KATO study of docs/scenarios.md;
docs/schedulers.md "KATO"): estimate each path's throughput ``cwnd * MSS / RTT`` and keep the
running mean of the estimates since the connection started; among the available paths, High is
the one closest to the mean from above, Low the one closest from below. With both, choose Low
with probability ``alpha``, else High; with one, choose it; with none available, wait.

Readings chosen: cwnd is in bytes (``cwnd * MSS`` with cwnd in packets) and RTT is the srtt;
the running mean is sampled once per simulator step (each step adds every path's estimate), so
it weighs time, not packets sent; "from above" includes a path exactly at the mean. The random
draw uses the connection's stream, so runs are reproducible."""

from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.sim.layout import COBS_ELAPSED, OBS_AVAILABLE, OBS_CWND, OBS_SRTT
from envs.sim.rng import uniform

PARAMS = {"alpha": 0.5}
SUM, COUNT, STAMP = 0, 1, 2  # state: sum and number of estimates; 1 + elapsed time of the last sample


def validate(values: Mapping, n_paths: int | None) -> None:
    if not 0.0 <= values["alpha"] <= 1.0:
        raise out_of_range("alpha", values["alpha"], "in [0, 1]")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    stamp = 1.0 + cobs[COBS_ELAPSED]
    if st[STAMP] != stamp:
        st[STAMP] = stamp
        for i in range(nsub):
            st[SUM] += obs[i, OBS_CWND] / obs[i, OBS_SRTT]
        st[COUNT] += nsub
    mean = st[SUM] / st[COUNT]
    high = -1
    low = -1
    high_thr = 0.0
    low_thr = 0.0
    for i in range(nsub):
        if obs[i, OBS_AVAILABLE] <= 0.0:
            continue
        thr = obs[i, OBS_CWND] / obs[i, OBS_SRTT]
        if thr >= mean:
            if high < 0 or thr < high_thr:
                high = i
                high_thr = thr
        elif low < 0 or thr > low_thr:
            low = i
            low_thr = thr
    if high < 0 and low < 0:
        return WAIT
    if high < 0:
        return 1 << low
    if low < 0:
        return 1 << high
    return 1 << low if uniform(rng, b) < prm[0] else 1 << high


register_scheduler("kato", pick=pick, params=PARAMS, state_slots=STAMP + 1, validate=validate)
