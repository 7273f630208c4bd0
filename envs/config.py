"""From a composed Hydra config (``configs/``) to the workbench's objects, with clear errors."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from envs.errors import ConfigError
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim.simulator import SimConfig


def plain(node: Any) -> Any:
    """An OmegaConf node as plain Python containers (other values unchanged)."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) or OmegaConf.is_list(node) \
        else node


def scenarios(cfg: DictConfig) -> list[Scenario]:
    """The scenarios selected in the ``scenario`` group (``scenario=ispras_s1``,
    ``scenario=[ispras_s1,ispras_s2]``; an episode draws one of them), or ``scenario_file=``.
    ``duration_s=`` / ``file_mb=`` replace the workload (file_mb: a file transfer, capped by
    duration_s if both are given; duration_s alone: a bulk transfer of that length)."""
    if cfg.get("scenario_file"):
        found = [load_scenario(str(cfg.scenario_file))]
    else:
        node = plain(cfg.get("scenario"))
        if not isinstance(node, dict) or not node:
            raise ConfigError("scenario: select one or more, e.g. scenario=ispras_s1 or scenario=[ispras_s1,ispras_s2]")
        found = [scenario_from_dict(spec) for spec in node.values()]
    return with_workload(found, cfg.get("file_mb"), cfg.get("duration_s"))


def with_workload(found: list[Scenario], file_mb: float | None, duration_s: float | None) -> list[Scenario]:
    """The scenarios with the ``file_mb=`` / ``duration_s=`` workload override (see ``scenarios``)."""
    if file_mb is None and duration_s is None:
        return found
    if file_mb is not None:
        work = {"type": "file", "file_mb": file_mb, **({"duration_s": duration_s} if duration_s else {})}
    else:
        work = {"type": "bulk", "duration_s": duration_s}
    return [scenario_from_dict({**s.model_dump(exclude_none=True), "workload": work}) for s in found]


def ccs(cfg: DictConfig) -> dict[str, dict[str, float]]:
    """The CCs selected in the ``cc`` group (``cc=bbr``, ``cc=[cubic,bbr]``, ``cc=mix``), each with
    its parameter overrides; an episode draws one of them."""
    node = plain(cfg.cc)
    if not isinstance(node, dict) or not node:
        raise ConfigError("cc: select one or more CCs, e.g. cc=bbr2, cc=[cubic,bbr] or cc=mix")
    return {name: dict((spec or {}).get("params") or {}) for name, spec in node.items()}


def sim_config(env: DictConfig) -> SimConfig:
    return SimConfig(dt_ms=float(env.dt_ms), mss=int(env.mss), max_duration_s=float(env.max_duration_s),
                     ooo_limit_bytes=float(env.ooo_limit_bytes), end_on_ooo=bool(env.end_on_ooo))


def evaluation_request(cfg: DictConfig) -> tuple[Scenario, str, dict[str, float]]:
    """evaluate.py's single scenario and CC (with its parameters), after checking ``format`` and
    ``runs``."""
    if cfg.format not in ("table", "json"):
        raise ConfigError(f"format must be table or json, got {cfg.format!r}")
    if not isinstance(cfg.runs, int) or cfg.runs < 1:
        raise ConfigError(f"runs must be an integer >= 1, got {cfg.runs!r}")
    found = scenarios(cfg)
    if len(found) != 1:
        raise ConfigError(f"evaluate.py runs one scenario at a time, got {', '.join(s.name for s in found)}")
    selected = ccs(cfg)
    if len(selected) != 1:
        raise ConfigError(f"evaluate.py runs one cc at a time, got {', '.join(selected)}")
    (cc, cc_params), = selected.items()
    return found[0], cc, cc_params
