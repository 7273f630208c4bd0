"""Domain randomisation of training scenarios (Tobin et al. 2017, "Domain randomization for
transferring deep neural networks from simulation to the real world"): what the simulator cannot
pin down about a real path (its delay, jitter, loss and buffer depth, docs/transport.md) is drawn
per episode from a declared range around the scenario's value, so a policy does not learn one
exact setting; so is the transport stack the simulator imitates (``StackDraw``: one of the
``stacks`` and its profile's constants, ``envs/sim/stacks.py``, each x a factor).

``randomise(scenario, settings)`` turns every concrete number it randomises into a uniform
distribution of the scenario schema (``envs.scenario.Uniform``); the simulator then draws each
episode's concrete scenario from the episode's own seeded generator (``Simulator.episode_draw``),
so a run is reproducible per seed and the draws never leave the declared ranges.
``stack_draw(settings, stack, ccs)`` gives the simulator (``SimConfig.stack_draw``) what it draws a
profile from at each episode's reset, from a stream of its own. Settings:
``envs.schema.RandomiseSettings`` (``train.randomise.*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from envs.errors import ConfigError, out_of_range, unknown_name
from envs.scenario import Choice, LogUniform, Scenario, ScenarioError, Uniform, scenario_from_dict
from envs.sim.stacks import STACKS, StackProfile, check_ccs, profile

# settings field -> (path fields it scales, how: "factor" multiplies, "add_ms" adds, clipped at 0)
FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "bandwidth_factor": (("bandwidth_mbps",), "factor"),
    "delay_factor": (("delay_ms", "reverse_delay_ms"), "factor"),
    "jitter_add_ms": (("jitter_ms",), "add_ms"),
    "loss_factor": (("loss_pct",), "factor"),
    "queue_factor": (("queue_bdp", "queue_packets"), "factor"),
}


def _bounds(value: float, lo: float, hi: float, how: str) -> tuple[float, float]:
    if how == "factor":
        return value * lo, value * hi
    return max(0.0, value + lo), max(0.0, value + hi)


def randomise(scenario: Scenario, settings: Any, prefix: str = "train.randomise.") -> Scenario:
    """``scenario`` with each randomised path field a uniform distribution around its value (a
    range ``[1, 1]`` or ``[0, 0]`` leaves it as it is). A field already a distribution, or a
    range that takes a value outside what the scenario schema allows, is refused naming the
    setting."""
    data = scenario.model_dump(exclude_none=True)
    for i, path in enumerate(scenario.paths):
        for key, (targets, how) in FIELDS.items():
            lo, hi = (float(x) for x in getattr(settings, key))
            if (lo, hi) == ((1.0, 1.0) if how == "factor" else (0.0, 0.0)):
                continue
            for name in targets:
                value = getattr(path, name)
                if value is None:
                    continue
                if isinstance(value, (Uniform, LogUniform, Choice)):
                    raise ConfigError(f"{prefix}{key}: path {i + 1} of scenario {scenario.name!r} already draws "
                                      f"{name} from a distribution; randomise concrete scenarios only")
                a, b = _bounds(float(value), lo, hi, how)
                data["paths"][i][name] = float(a) if a == b else {"uniform": [a, b]}
    try:
        return scenario_from_dict(data)
    except ScenarioError as err:
        raise ConfigError(f"{prefix}: the randomised {scenario.name!r} leaves the scenario's ranges: {err}") from None


# The profile constants drawn as their value x a factor in ``train.randomise.stack_factor`` (a
# constant of 0 stays 0). Not drawn, coming with the stack: the packet threshold (the
# spurious-declaration tables of envs/sim/reordering.py are computed for RFC 9002's 3), the rule
# and the switches (undo, adaptive window and its persistence).
STACK_CONSTANTS = ("time_threshold", "reo_wnd", "rto_mult", "rto_var_floor", "rto_ack_delay", "rto_min")
# the CC constants of ``StackProfile.cc_defaults`` drawn alike; not ``full_bw_thresh`` (a growth
# ratio above 1: below it Startup would end at once), nor BBRv2's ``drain_gain`` and BBRv1's and
# BBRv2's ``probe_rtt_cwnd_gain`` (0.75 under XQUIC: at 1 or more Drain and ProbeRTT no longer drain the
# queue, and bounding them below 1 as a fraction would refuse any factor above 1.33), nor BBRv2's
# ``loss_thresh_packets`` (packets to an XQC_MSS, a unit), nor the switches (``extra_acked_in_startup``,
# ``recovery_modes``, BBRv1's ``conservation``, ``loss_cwnd_cut``, ``lt_bw``, and ``reset_cwnd``)
CC_CONSTANTS = ("high_gain", "cwnd_gain", "probe_rtt_s", "rtprop_window_s", "extra_acked_gain", "extra_acked_max_s",
                "loss_thresh", "beta", "headroom", "probe_rtt_interval_s", "probe_wait_base_s", "min_rtt_window_s",
                "startup_cwnd_gain", "cwnd_quanta_packets", "init_cwnd_packets")
FRACTIONS = ("loss_thresh", "beta", "headroom")  # must stay below 1


@dataclass(frozen=True)
class StackDraw:
    """Per episode: a stack drawn uniformly from ``stacks``, each of its profile's ``STACK_CONSTANTS``
    and ``CC_CONSTANTS`` x an independent factor uniform in ``factor``."""

    stacks: tuple[str, ...]
    factor: tuple[float, float]

    def ranges(self, stack: str) -> dict[str, tuple[float, float]]:
        """Each drawn constant of ``stack``'s profile (``<cc>.<name>`` for a CC's) and its range."""
        prof, (lo, hi) = profile(stack), self.factor
        out = {name: (getattr(prof, name) * lo, getattr(prof, name) * hi) for name in STACK_CONSTANTS}
        for cc, params in prof.cc_defaults.items():
            out.update({f"{cc}.{k}": (v * lo, v * hi) for k, v in params.items() if k in CC_CONSTANTS})
        return out

    def sample(self, rng: np.random.Generator) -> StackProfile:
        """One episode's profile, drawn from ``rng``."""
        prof, (lo, hi) = profile(self.stacks[int(rng.integers(len(self.stacks)))]), self.factor
        scaled: dict[str, Any] = {name: getattr(prof, name) * rng.uniform(lo, hi) for name in STACK_CONSTANTS}
        scaled["cc_defaults"] = {cc: {k: v * rng.uniform(lo, hi) if k in CC_CONSTANTS else v for k, v in params.items()}
                                 for cc, params in prof.cc_defaults.items()}
        return replace(prof, **scaled)


def stack_draw(settings: Any, stack: str, ccs: Sequence[str], prefix: str = "train.randomise.") -> StackDraw | None:
    """What ``settings`` (``train.randomise``) draws the simulated stack from, around ``stack``
    (None: nothing to draw). ``settings.stacks`` empty means ``stack`` alone; every stack drawn
    must have every CC of ``ccs``. A bad range or name is refused naming the setting."""
    get = settings.get if hasattr(settings, "get") else lambda k, d=None: getattr(settings, k, d)
    names = [str(x) for x in (get("stacks") or [])] or [stack]
    for name in names:
        if name not in STACKS:
            raise unknown_name(f"{prefix}stacks entry", name, STACKS)
        try:
            check_ccs(name, ccs)
        except ConfigError as err:
            raise ConfigError(f"{prefix}stacks: {err}") from None
    pair = get("stack_factor")
    lo, hi = (float(x) for x in pair) if pair is not None else (1.0, 1.0)
    draw = StackDraw(tuple(dict.fromkeys(names)), (lo, hi))
    for name in draw.stacks:
        for key, (_, top) in draw.ranges(name).items():
            if key.rsplit(".", 1)[-1] in FRACTIONS and top >= 1.0:
                raise out_of_range(f"{prefix}stack_factor", [lo, hi],
                                   f"a range keeping stack {name}'s {key} below 1 (hi < {1.0 / (top / hi):.4g})")
    return None if draw.stacks == (stack,) and draw.factor == (1.0, 1.0) else draw


__all__ = ["CC_CONSTANTS", "FIELDS", "STACK_CONSTANTS", "StackDraw", "randomise", "stack_draw"]
