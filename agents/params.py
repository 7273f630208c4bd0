"""Reading an agent's ``agent.params`` over its defaults, each value checked against a rule.

A ``Rule`` is a predicate and the allowed range in words; ``read_params`` refuses an unknown key
with the list of valid ones and an out-of-range value with its field and range (README, "When
things go wrong").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from envs.errors import ConfigError, out_of_range, unknown_name

Rule = tuple[Callable[[Any], bool], str]


def read_params(spec: Mapping[str, Any], defaults: Mapping[str, Any], rules: Mapping[str, Rule]) -> dict[str, Any]:
    """``spec["params"]`` over ``defaults``; unknown keys and values outside ``rules`` raise a
    ConfigError naming ``agent.params.<key>``."""
    given = spec.get("params") or {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"agent.params must be a mapping, got {given!r}")
    for key in given:
        if key not in defaults:
            raise unknown_name("agent.params key", key, defaults)
    out = {**defaults, **given}
    for key, (ok, allowed) in rules.items():
        value = out[key]
        try:
            good = bool(ok(value))
        except (TypeError, ValueError):
            good = False
        if not good:
            raise out_of_range(f"agent.params.{key}", value, allowed)
    return out


def number(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False) -> Rule:
    """A real number (not bool) within the bounds."""
    def ok(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return False
        if lo is not None and (v <= lo if lo_open else v < lo):
            return False
        return not (hi is not None and (v >= hi if hi_open else v > hi))
    lo_s = "" if lo is None else f"{'>' if lo_open else '>='} {lo}"
    hi_s = "" if hi is None else f"{'<' if hi_open else '<='} {hi}"
    return ok, "a number " + " and ".join(s for s in (lo_s, hi_s) if s)


def integer(lo: int) -> Rule:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo), f"an integer >= {lo}"


def choice(*options: str) -> Rule:
    return (lambda v: v in options), "one of " + ", ".join(options)
