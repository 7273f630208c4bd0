"""The one registry of heuristic schedulers (``scheduler=<name>``), each a compiled ``pick``
(see ``agents.heuristics.base``) dispatched by its id, the index of its name in ``NAMES``."""

from collections.abc import Mapping

import numpy as np
from numba import njit

from agents.heuristics import fixed, minrtt, rr
from envs.errors import ConfigError, unknown_name

MODULES = {"minrtt": minrtt, "rr": rr, "fixed": fixed}
NAMES = tuple(MODULES)
_BURST = tuple(bool(getattr(m, "BURST", False)) for m in MODULES.values())
N_PARAMS = 16


def scheduler_id(name: str) -> int:
    if name not in MODULES:
        raise unknown_name("scheduler", name, NAMES)
    return NAMES.index(name)


def scheduler_params(name: str, overrides: Mapping[str, float] | None = None) -> np.ndarray:
    """Parameter vector of scheduler ``name``: its defaults updated with ``overrides``."""
    if name not in MODULES:
        raise unknown_name("scheduler", name, NAMES)
    values = dict(MODULES[name].PARAMS)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(
                f"scheduler {name!r} has no parameter {key!r}; valid: {', '.join(values) or 'none'}")
        values[key] = float(value)
    out = np.zeros(N_PARAMS)
    out[: len(values)] = list(values.values())
    return out


@njit(cache=True, _nrt=False)
def burst(sid):
    """Whether scheduler ``sid`` declares ``BURST``: once it picks a single path it would keep
    picking that path for every further packet until the path has no window or pacing credit
    (see ``agents.heuristics.base``), so the core may send the burst without asking again."""
    if 0 <= sid < len(_BURST):
        return _BURST[sid]
    return False


@njit(cache=True, _nrt=False)
def pick(sid, prm, st, obs, cobs, nsub, mss, rng, b):
    if sid == 0:
        return minrtt.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 1:
        return rr.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    return fixed.pick(prm, st, obs, cobs, nsub, mss, rng, b)
