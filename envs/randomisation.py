"""Domain randomisation of training scenarios (Tobin et al. 2017, "Domain randomization for
transferring deep neural networks from simulation to the real world"): what the simulator cannot
pin down about a real path (its delay, jitter, loss and buffer depth, docs/transport.md) is drawn
per episode from a declared range around the scenario's value, so a policy does not learn one
exact setting.

``randomise(scenario, settings)`` turns every concrete number it randomises into a uniform
distribution of the scenario schema (``envs.scenario.Uniform``); the simulator then draws each
episode's concrete scenario from the episode's own seeded generator (``Simulator.episode_rng``),
so a run is reproducible per seed and the draws never leave the declared ranges. Settings:
``envs.schema.RandomiseSettings`` (``train.randomise.*``).
"""

from __future__ import annotations

from typing import Any

from envs.errors import ConfigError
from envs.scenario import Choice, LogUniform, Scenario, ScenarioError, Uniform, scenario_from_dict

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


__all__ = ["FIELDS", "randomise"]
