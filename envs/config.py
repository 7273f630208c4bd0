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


def scenario(cfg: DictConfig) -> Scenario:
    """``scenario_file=`` if given, else the ``scenario`` group; ``duration_s=`` / ``file_mb=``
    replace the workload (file_mb: a file transfer, capped by duration_s if both are given;
    duration_s alone: a bulk transfer of that length)."""
    if cfg.get("scenario_file"):
        scen = load_scenario(str(cfg.scenario_file))
    else:
        scen = scenario_from_dict(plain(cfg.scenario))
    file_mb, duration_s = cfg.get("file_mb"), cfg.get("duration_s")
    if file_mb is None and duration_s is None:
        return scen
    if file_mb is not None:
        work = {"type": "file", "file_mb": file_mb, **({"duration_s": duration_s} if duration_s else {})}
    else:
        work = {"type": "bulk", "duration_s": duration_s}
    return scenario_from_dict({**scen.model_dump(exclude_none=True), "workload": work})


def cc(cfg: DictConfig) -> tuple[str, dict[str, float]]:
    """Name and parameter overrides of the ``cc`` group."""
    node = cfg.cc
    if isinstance(node, str):
        return node, {}
    if "name" not in node:
        raise ConfigError("cc: the config needs a 'name'")
    return str(node.name), dict(plain(node.get("params") or {}))


def sim_config(env: DictConfig) -> SimConfig:
    return SimConfig(dt_ms=float(env.dt_ms), mss=int(env.mss), max_duration_s=float(env.max_duration_s),
                     ooo_limit_bytes=float(env.ooo_limit_bytes), end_on_ooo=bool(env.end_on_ooo))
