"""Send only on one given path (``path``), waiting while it has no window; ``path = -1`` never
sends. The ``packet`` decision mode applies an agent's per-step choice through it."""

from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.sim.layout import OBS_AVAILABLE

PARAMS = {"path": 0.0}


def validate(values: Mapping, n_paths: int | None) -> None:
    """A path of the scenario, or -1: a path it does not have sent nothing until the episode cap
    (``scheduler=fixed scheduler_params.path=9`` on two paths: 600 simulated seconds of nothing)."""
    path, top = values["path"], (n_paths - 1 if n_paths else None)
    if not float(path).is_integer() or path < -1 or (top is not None and path > top):
        raise out_of_range("path", path, f"an integer in [-1, {top}] (-1: never send)" if top is not None
                           else "an integer >= -1 (-1: never send)")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    i = int(prm[0])
    if 0 <= i < nsub and obs[i, OBS_AVAILABLE] > 0.0:
        return 1 << i
    return 0


# burst: see envs.schedulers.base: same answer until the path is blocked
register_scheduler("fixed", pick=pick, params=PARAMS, state_slots=0, burst=True, validate=validate)
