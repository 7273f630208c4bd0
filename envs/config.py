"""From a composed Hydra config (``configs/``) to the workbench's objects, with clear errors."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from pathlib import Path

from envs.errors import ConfigError, out_of_range, unknown_name
from envs.metrics import ALL_METRICS, metric_names
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim.simulator import SimConfig

WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "configs" / "workload"


def plain(node: Any) -> Any:
    """An OmegaConf node as plain Python containers (other values unchanged)."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) or OmegaConf.is_list(node) \
        else node


def scenarios(cfg: DictConfig) -> list[Scenario]:
    """The scenarios selected in the ``scenario`` group (``scenario=ispras_s1``,
    ``scenario=[ispras_s1,ispras_s2]``; an episode draws one of them), or ``scenario_file=``.
    ``workload=dash`` (the ``workload`` group, fields overridable as ``workload.chunks=60``)
    replaces every scenario's workload. Without it, ``duration_s=`` / ``file_mb=`` replace the
    workload (file_mb: a file transfer, capped by duration_s if both are given; duration_s alone: a
    bulk transfer of that length); with it, they set its fields of those names."""
    if cfg.get("scenario_file"):
        found = [load_scenario(str(cfg.scenario_file))]
    else:
        node = plain(cfg.get("scenario"))
        if not isinstance(node, dict) or not node:
            raise ConfigError("scenario: select one or more, e.g. scenario=ispras_s1 or scenario=[ispras_s1,ispras_s2]")
        found = [scenario_from_dict(spec) for spec in node.values()]
    return with_workload(found, cfg)


def with_workload(found: list[Scenario], cfg: DictConfig) -> list[Scenario]:
    """The scenarios with the command line's workload override (see ``scenarios``)."""
    file_mb, duration_s = cfg.get("file_mb"), cfg.get("duration_s")
    work = plain(cfg.get("workload"))
    if work is not None:
        if not isinstance(work, dict):
            raise ConfigError(f"workload: select one of {', '.join(list_workloads())}, e.g. workload=dash")
        work = {**work, **({"file_mb": file_mb} if file_mb is not None else {}),
                **({"duration_s": duration_s} if duration_s is not None else {})}
    elif file_mb is not None:
        work = {"type": "file", "file_mb": file_mb, **({"duration_s": duration_s} if duration_s else {})}
    elif duration_s is not None:
        work = {"type": "bulk", "duration_s": duration_s}
    else:
        return found
    return [scenario_from_dict({**s.model_dump(exclude_none=True), "workload": work}) for s in found]


def list_workloads() -> list[str]:
    """The options of the ``workload`` config group."""
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.yaml"))


def metric_request(cfg: DictConfig, scenario: Scenario) -> tuple[str, ...]:
    """evaluate.py's ``metrics=[...]`` (checked by name), or every metric that applies to the
    scenario's workload; ``window_s`` must be positive."""
    window = cfg.get("window_s", 1.0)
    if not isinstance(window, (int, float)) or not window > 0:
        raise out_of_range("window_s", window, "> 0")
    asked = plain(cfg.get("metrics"))
    if asked is None:
        return metric_names(scenario.workload)
    asked = [asked] if isinstance(asked, str) else list(asked)
    for name in asked:
        if name not in ALL_METRICS:
            raise unknown_name("metric", name, ALL_METRICS)
    return tuple(asked)


def ccs(cfg: DictConfig) -> dict[str, dict[str, float]]:
    """The CCs selected in the ``cc`` group (``cc=bbr``, ``cc=[cubic,bbr]``, ``cc=mix``), each with
    its parameter overrides; an episode draws one of them."""
    node = plain(cfg.cc)
    if not isinstance(node, dict) or not node:
        raise ConfigError("cc: select one or more CCs, e.g. cc=bbr2, cc=[cubic,bbr] or cc=mix")
    return {name: dict((spec or {}).get("params") or {}) for name, spec in node.items()}


def sim_config(env: DictConfig) -> SimConfig:
    return SimConfig(dt_ms=float(env.dt_ms), mss=int(env.mss), max_duration_s=float(env.max_duration_s),
                     ooo_limit_bytes=float(env.ooo_limit_bytes), end_on_ooo=bool(env.end_on_ooo),
                     record_bin_ms=float(env.get("record_bin_ms", 100.0)))


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
