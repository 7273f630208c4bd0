"""From a composed Hydra config (``configs/``) to the workbench's objects, with clear errors.

Importing it registers the config schemas (``envs.schema``) that ``configs/*.yaml`` build on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from envs import schema
from envs.errors import ConfigError, unknown_name
from envs.metrics import ALL_METRICS, metric_names
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim import stacks
from envs.sim.simulator import SimConfig

schema.register()

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
        unread = _scenario_override()
        if unread is not None:
            raise ConfigError(f"scenario_file= replaces the scenario group, so {unread} would not be read; give "
                              "one of the two (a scenario file, or scenario=<name> with its overrides)")
        found = [load_scenario(str(cfg.scenario_file))]
    else:
        node = plain(cfg.get("scenario"))
        if not isinstance(node, dict) or not node:
            raise ConfigError("scenario: select one or more, e.g. scenario=ispras_s1 or scenario=[ispras_s1,ispras_s2]")
        found = [scenario_from_dict(spec) for spec in node.values()]
    return with_workload(found, cfg)


def _scenario_override() -> str | None:
    """The command line's ``scenario=...`` or ``scenario.<name>....=...`` override, where Hydra
    composed this config (not in a worker given the composed config)."""
    from hydra.core.hydra_config import HydraConfig
    if not HydraConfig.initialized():
        return None
    for override in HydraConfig.get().overrides.task:
        key = override.split("=", 1)[0].lstrip("+~")
        if key == "scenario" or key.startswith("scenario."):
            return override
    return None


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
    scenario's workload."""
    schema.check_field(cfg, schema.EvaluateConfig, "window_s")
    asked = plain(cfg.get("metrics"))
    if asked is None:
        return metric_names(scenario.workload)
    asked = [asked] if isinstance(asked, str) else list(asked)
    if not asked:  # printed a table of no columns
        raise ConfigError("metrics: the list is empty; give at least one, e.g. metrics=[goodput_mbps,completion_s], "
                          "or leave it out for every metric that applies")
    for name in asked:
        if name not in ALL_METRICS:
            raise unknown_name("metric", name, ALL_METRICS)
    return tuple(asked)


def ccs(cfg: DictConfig) -> dict[str, dict[str, float]]:
    """The CCs selected in the ``cc`` group (``cc=bbr``, ``cc=[cubic,bbr]``, ``cc=mix``), each with
    its parameter overrides; an episode draws one of them. A CC the stack (``env.stack``) does not
    have is refused with the ones it has."""
    node = plain(cfg.cc)
    if not isinstance(node, dict) or not node:
        raise ConfigError("cc: select one or more CCs, e.g. cc=bbr2, cc=[cubic,bbr] or cc=mix")
    try:
        stacks.check_ccs(schema.env_config(cfg.env).stack if cfg.get("env") is not None else stacks.DEFAULT_STACK, node)
    except ConfigError as err:
        group = _choice("cc")
        if group is None or group in node:  # the CC the command line named
            raise
        raise ConfigError(f"cc={group} selects {', '.join(node)}: {err}") from None
    return {name: dict((spec or {}).get("params") or {}) for name, spec in node.items()}


def _choice(group: str) -> str | None:
    """The option of config group ``group`` Hydra composed (``cc=mix``: ``mix``), where Hydra ran."""
    from hydra.core.hydra_config import HydraConfig
    if not HydraConfig.initialized():
        return None
    choice = HydraConfig.get().runtime.choices.get(group)
    return None if choice is None else str(choice)


def sim_config(env: DictConfig) -> SimConfig:
    """The simulator settings of the ``env`` section."""
    return schema.env_config(env).sim_config()


def env_kwargs(env: DictConfig) -> dict[str, Any]:
    """The ``env`` section as the keyword arguments of ``build_process`` (every setting, so that
    the agent and the heuristics it is compared with run the same environment)."""
    return plain(env)


def validate(cfg: DictConfig) -> None:
    """Check the ranges and names of a composed ``train``, ``tune`` or ``evaluate`` config against
    its schema (types were checked while composing); raises ConfigError naming the field."""
    if "tune" in cfg:
        schema.check(cfg, schema.TuneConfig)
    elif "train" in cfg:
        schema.check(cfg, schema.TrainConfig)
    else:
        schema.check(cfg, schema.EvaluateConfig)


def evaluation_request(cfg: DictConfig) -> tuple[Scenario, str, dict[str, float]]:
    """evaluate.py's single scenario and CC (with its parameters), after checking the config's
    ranges."""
    validate(cfg)
    found = scenarios(cfg)
    if len(found) != 1:
        raise ConfigError(f"evaluate.py runs one scenario at a time, got {', '.join(s.name for s in found)}")
    selected = ccs(cfg)
    if len(selected) != 1:
        raise ConfigError(f"evaluate.py runs one cc at a time, got {', '.join(selected)}")
    (cc, cc_params), = selected.items()
    return found[0], cc, cc_params
