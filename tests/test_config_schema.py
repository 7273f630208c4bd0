"""The config schema (envs/schema.py): every default in one place, types checked while composing,
ranges named, and the environment an agent is evaluated in equal to the one minRTT runs in."""

import dataclasses

import numpy as np
import pytest
import yaml
from hydra.errors import ConfigCompositionException

from agents import training
from conftest import ROOT, compose_config
from envs import config, schema
from envs.decision import DecisionSpec
from envs.errors import ConfigError
from envs.multipath_env import build_process
from envs.rewards import RewardSpec
from envs.sim.simulator import SimConfig


composed = compose_config


@pytest.mark.parametrize("path", ["train.yaml", "evaluate.yaml", "tune.yaml", "env/default.yaml",
                                  "live/default.yaml"])
def test_the_yaml_files_hold_no_defaults(path):
    """Defaults live in the schema only: these files choose groups and set Hydra's own options."""
    keys = set(yaml.safe_load((ROOT / "configs" / path).read_text()))
    assert keys <= {"defaults", "hydra"}, keys


def test_composed_defaults_are_the_schemas():
    cfg = composed("evaluate")
    assert config.plain(cfg.env) == dataclasses.asdict(schema.EnvConfig())
    assert config.plain(cfg.live) == dataclasses.asdict(schema.LiveOptions())
    assert config.plain(cfg.mlflow) == dataclasses.asdict(schema.MlflowSettings())
    assert (cfg.runs, cfg.format, cfg.backend, cfg.window_s) == (10, "table", "sim", 1.0)
    assert config.plain(composed("train", "agent=linucb").train) == dataclasses.asdict(schema.TrainSettings())
    tune = composed("tune", "agent=dqn")
    assert tune.train.steps == 20000 and config.plain(tune.ray) == dataclasses.asdict(schema.RaySettings())
    # the environment's defaults are those of the objects it builds, and build_process uses them
    env = schema.EnvConfig()
    assert (env.sim_config(), env.decision_spec(), env.reward_spec()) == (SimConfig(), DecisionSpec(), RewardSpec())
    process = build_process(1)
    assert process.sim.cfg == SimConfig() and process.reward_spec == RewardSpec()


def test_every_env_setting_reaches_the_agents_evaluation(tmp_path, monkeypatch):
    """env.record_bin_ms (and every other env setting) is the same for the agent's evaluation as
    for minRTT's in the comparison: both come from the one env section."""
    cfg = composed("train", "agent=linucb", "cc=cubic", "duration_s=0.5", "env.record_bin_ms=50", "env.mss=1200",
                   "env.dt_ms=0.5", "env.max_duration_s=30", "env.ooo_limit_bytes=1e6", "env.end_on_ooo=true")
    s = training.setup(cfg, tmp_path)
    assert s.sim == SimConfig(dt_ms=0.5, mss=1200, max_duration_s=30.0, ooo_limit_bytes=1e6, end_on_ooo=True,
                              record_bin_ms=50.0)
    seen = []

    def spy(*args, **kwargs):
        process = build_process(*args, **kwargs)
        seen.append(process.sim.cfg)
        return process

    monkeypatch.setattr(training, "build_process", spy)

    class Wait:
        def act(self, obs, deterministic=True):
            return np.zeros(len(obs), dtype=np.int64)

    training.evaluate_agent(Wait(), s, s.scenarios[0], "cubic", 2, 0)
    assert seen == [s.sim]


@pytest.mark.parametrize("name, overrides, message", [
    ("train", ["train.steps=0"], "train.steps must be an integer >= 1, got 0"),
    ("train", ["train.eval_every=-1"], "train.eval_every must be an integer >= 0, got -1"),
    ("train", ["seed=-3"], "seed must be an integer >= 0 and <= 4293967295, got -3"),
    ("train", ["duration_s=0"], "duration_s must be > 0, got 0"),
    ("train", ["env.record_bin_ms=0.5"], "env.record_bin_ms must be >= dt_ms (1.0), got 0.5"),
    ("train", ["env.mss=100"], "env.mss must be in [500, 9000], got 100"),
    ("train", ["env.reward.alpha=-1"], "env.reward.alpha must be >= 0, got -1.0"),
    ("train", ["env.decision=often"], "env: unknown decision mode 'often'; valid: blocked, interval, packet"),
    ("tune", ["agent=dqn", "tune.scheduler.reduction_factor=1"], "tune.scheduler.reduction_factor must be > 1"),
    ("tune", ["agent=dqn", "tune.objective.name=best"], "unknown tune.objective.name 'best'; valid: cc_robust"),
    ("tune", ["agent=dqn", "ray.num_cpus=0"], "ray.num_cpus must be an integer >= 1, got 0"),
    ("evaluate", ["workers=0"], "workers must be an integer >= 1, got 0"),
    ("evaluate", ["format=xml"], "unknown format 'xml'; valid: json, table"),
    ("evaluate", ["live.retries=-1"], "live.retries must be an integer >= 0, got -1"),
    ("evaluate", ["transport=tcp"], "unknown transport 'tcp'; valid: mptcp, xquic"),
])
def test_out_of_range_values_name_the_field_and_range(name, overrides, message):
    with pytest.raises(ConfigError) as err:
        config.validate(composed(name, *overrides))
    assert message in str(err.value)


@pytest.mark.parametrize("override, key", [("env.mss=abc", "env.mss"), ("train.stepz=3", "train.stepz"),
                                           ("env.reward.weight=2", "env.reward.weight")])
def test_types_and_unknown_keys_are_refused_while_composing(override, key):
    with pytest.raises(ConfigCompositionException, match=key.replace(".", r"\.")):
        composed("train", override)


def test_build_process_refuses_unknown_settings():
    with pytest.raises(ConfigError, match="unknown environment setting 'observatoin'; valid: .*observation"):
        build_process(1, observatoin="peekaboo")
    with pytest.raises(ConfigError, match="unknown reward setting 'betta'"):
        build_process(1, reward={"name": "ispras", "betta": 1.0})
