"""The one registry of heuristic schedulers (``scheduler=<name>``), each a compiled ``pick``
(see ``agents.heuristics.base``) dispatched by its id, the index of its name in ``NAMES``."""

from collections.abc import Mapping, Sequence

import numpy as np
from numba import njit

from agents.heuristics import (atlb, blest, ecf, fast_only, fixed, hsr, kato, lts, lws, minrtt, minrtt_fast,
                               otias, redundant, rr, sod, split, wrr)
from envs.errors import ConfigError, unknown_name

MODULES = {"minrtt": minrtt, "rr": rr, "fixed": fixed, "wrr": wrr, "redundant": redundant, "ecf": ecf,
           "blest": blest, "sod": sod, "atlb": atlb, "hsr": hsr, "lws": lws, "lts": lts, "kato": kato,
           "fast_only": fast_only, "otias": otias, "split": split, "minrtt_fast": minrtt_fast}
NAMES = tuple(MODULES)
_BURST = tuple(bool(getattr(m, "BURST", False)) for m in MODULES.values())
N_PARAMS = 16


def scheduler_id(name: str) -> int:
    if name not in MODULES:
        raise unknown_name("scheduler", name, NAMES)
    return NAMES.index(name)


def _number(name: str, key: str, value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"scheduler {name!r}: {key} must be a number, got {value!r}") from None


def scheduler_params(name: str, overrides: Mapping[str, object] | None = None,
                     n_paths: int | None = None) -> np.ndarray:
    """Parameter vector of scheduler ``name``: its defaults updated with ``overrides``, checked
    by the module's ``validate`` for scenarios of ``n_paths`` paths (None: unknown or varying)."""
    if name not in MODULES:
        raise unknown_name("scheduler", name, NAMES)
    module = MODULES[name]
    values: dict[str, object] = dict(module.PARAMS)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(
                f"scheduler {name!r} has no parameter {key!r}; valid: {', '.join(values) or 'none'}")
        if isinstance(values[key], tuple):
            if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
                raise ConfigError(f"scheduler {name!r}: {key} must be a list of numbers, got {value!r}")
            values[key] = tuple(_number(name, key, v) for v in value)
        else:
            values[key] = _number(name, key, value)
    validate = getattr(module, "validate", None)
    if validate is not None:
        try:
            validate(values, n_paths)
        except ConfigError as err:
            raise ConfigError(f"scheduler {name!r}: {err}") from None
    out = np.zeros(N_PARAMS)
    i = 0
    for key, value in values.items():
        seq = value if isinstance(value, tuple) else (value,)
        if i + len(seq) > N_PARAMS:
            raise ConfigError(f"scheduler {name!r}: {key} takes at most {N_PARAMS - i} values, got {len(seq)}")
        out[i:i + len(seq)] = seq
        i += len(seq)
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
    if sid == 2:
        return fixed.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 3:
        return wrr.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 4:
        return redundant.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 5:
        return ecf.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 6:
        return blest.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 7:
        return sod.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 8:
        return atlb.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 9:
        return hsr.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 10:
        return lws.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 11:
        return lts.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 12:
        return kato.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 13:
        return fast_only.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 14:
        return otias.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    if sid == 15:
        return split.pick(prm, st, obs, cobs, nsub, mss, rng, b)
    return minrtt_fast.pick(prm, st, obs, cobs, nsub, mss, rng, b)
