"""minRTT, then fast path only: in every period of ``period_ms`` (counted from the connection's
start), minRTT for the first ``minrtt_ms``, then the fast path only (LEEYOO's two mixed actions,
docs/schedulers.md "Interval-based DQN": minRTT 15 ms then fast-only 35 ms, minRTT 30 ms then
fast-only 20 ms, within its 50 ms decision interval).

Reading chosen: the phase comes from the connection's elapsed time, so the period lines up with
the agent's decisions when they are every ``period_ms`` from the start (the env's ``interval``
mode with ``interval_ms`` = ``period_ms``)."""

from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.schedulers import fast_only, minrtt
from envs.sim.layout import COBS_ELAPSED

PARAMS = {"minrtt_ms": 15.0, "period_ms": 50.0}


def validate(values: Mapping, n_paths: int | None) -> None:
    if not values["period_ms"] > 0:
        raise out_of_range("period_ms", values["period_ms"], "> 0")
    if not 0.0 <= values["minrtt_ms"] <= values["period_ms"]:
        raise out_of_range("minrtt_ms", values["minrtt_ms"], f"in [0, period_ms = {values['period_ms']}]")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    phase_ms = (cobs[COBS_ELAPSED] * 1000.0 + 1e-9) % prm[1]
    if phase_ms < prm[0]:
        return minrtt.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    return fast_only.pick(prm, st, obs, cobs, nsub, mss, rng, b)


# burst: minRTT and fast-only are; the phase changes only between steps
register_scheduler("minrtt_fast", pick=pick, params=PARAMS, state_slots=0, burst=True, validate=validate)
