"""tune.py: a tiny Ray Tune sweep end to end (trials are train.py runs), a failing trial fails
alone, MLflow parent and nested runs, the best config trains with train.py; bad search spaces."""

import re
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from agents.sweep import search_space
from envs.errors import ConfigError
from conftest import ROOT, compose_config


TINY_SPACE = """# @package tune.space
agent:
  hyperparams:
    learning_rate: {loguniform: [1.0e-4, 1.0e-2]}
    policy_kwargs: {activation_fn: {grid: [relu, tanh, elu, sigmoid]}}   # sigmoid: not an option
"""


@pytest.mark.slow
def test_tiny_sweep_end_to_end(tmp_path):
    (tmp_path / "configs" / "tune").mkdir(parents=True)
    (tmp_path / "configs" / "tune" / "tiny.yaml").write_text(TINY_SPACE)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    command = [sys.executable, "tune.py", "agent=dqn", "cc=cubic", "duration_s=2", "tune=tiny",
               f"hydra.searchpath=[file://{tmp_path}/configs]", "tune.num_samples=1", "ray.num_cpus=2",
               "train.steps=1000", "train.n_envs=4", "train.eval_every=500", "train.eval_runs=2",
               "tune.scheduler.grace_steps=500", "tune.scheduler.reduction_factor=2",
               "agent.hyperparams.learning_starts=200", f"tune.storage_path={tmp_path}/ray", f"mlflow.tracking_uri={uri}",
               f"hydra.run.dir={tmp_path}/hydra"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "4 trials in" in out.stdout
    failed = re.findall(r"failed trial (\S+): (.*)", out.stdout)
    assert len(failed) == 1 and "unknown activation_fn 'sigmoid'" in failed[0][1]
    best = Path(re.search(r"best config: (\S+)", out.stdout).group(1))
    assert best.is_file() and best.name == "best.yaml"

    # MLflow: the sweep is a parent run, every trial a nested run with its params and metrics
    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("mpsched").experiment_id])
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(trials) == 4 and parent.info.status == "FINISHED"
    assert parent.data.metrics["failed_trials"] == 1 and parent.data.metrics["trials"] == 4
    by_status = sorted(r.info.status for r in trials)
    assert by_status.count("FAILED") == 1 and set(by_status) <= {"FAILED", "FINISHED", "KILLED"}
    (bad,) = [r for r in trials if r.info.status == "FAILED"]
    assert "sigmoid" in bad.data.tags["error"]
    for r in trials:
        assert "agent.hyperparams.learning_rate" in r.data.params
        if r.info.status != "FAILED":
            assert "tune/objective" in r.data.metrics
    assert parent.data.metrics["best_objective"] == max(r.data.metrics["tune/objective"] for r in trials
                                                        if r.info.status == "FINISHED")

    # resuming a finished sweep (the newest of the agent) reruns nothing and keeps its parent run
    again = subprocess.run([*command, "tune.resume=true"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"4 trials in {best.parent}" in again.stdout and f"MLflow sweep run: {parent.info.run_id}" in again.stdout
    assert len(client.search_runs([parent.info.experiment_id])) == 5

    # the best config is a train.py config: on the command line and composed into a short run
    shown = subprocess.run([sys.executable, "train.py", "--config-path", str(best.parent), "--config-name", "best",
                            "--cfg", "job"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "activation_fn: " in shown.stdout, shown.stderr[-2000:]
    from agents.training import run

    cfg = compose_config("best", "train.steps=400", "train.eval_runs=2", "train.eval_every=0", config_dir=best.parent)
    assert cfg.agent.hyperparams.policy_kwargs.activation_fn in ("relu", "tanh", "elu")
    result = run(cfg, tmp_path / "again")
    assert result["steps"] >= 400 and (tmp_path / "again" / "checkpoint" / "meta.json").is_file()


def test_search_space_distributions():
    space = search_space({"agent": {"hyperparams": {"learning_rate": {"loguniform": [1e-4, 1e-2]},
                                                    "net_arch": {"choice": [[6, 6], [32, 32]]},
                                                    "batch_size": {"randint": [16, 64]}, "gamma": 0.9}}})
    assert set(space) == {"agent.hyperparams.learning_rate", "agent.hyperparams.net_arch",
                          "agent.hyperparams.batch_size", "agent.hyperparams.gamma"}
    assert 1e-4 <= space["agent.hyperparams.learning_rate"].sample() <= 1e-2
    assert space["agent.hyperparams.net_arch"].sample() in ([6, 6], [32, 32])
    assert all(16 <= space["agent.hyperparams.batch_size"].sample() <= 64 for _ in range(50))
    assert space["agent.hyperparams.gamma"] == 0.9


@pytest.mark.parametrize("space, message", [
    ({"lr": {"logunifrom": [0.1, 1]}}, "unknown distribution at tune.space.lr: 'logunifrom'; valid: choice, grid"),
    ({"lr": {"loguniform": [0, 1]}}, r"tune.space.lr.loguniform must be \[lo, hi\]: two numbers with lo < hi and lo > 0"),
    ({"a": {"b": {"uniform": [2, 1]}}}, r"tune.space.a.b.uniform must be \[lo, hi\]: two numbers with lo < hi"),
    ({"n": {"randint": [1.5, 4]}}, "tune.space.n.randint must be .*two integers"),
    ({"x": {"choice": []}}, "tune.space.x.choice must be a non-empty list"),
])
def test_bad_search_spaces_are_refused(space, message):
    with pytest.raises(ConfigError, match=message):
        search_space(space)


@pytest.mark.parametrize("override, message", [
    ("tune.space.agent.hyperparams.learning_rate.loguniform=[0,1]", "tune.space.agent.hyperparams.learning_rate."
                                                                      "loguniform must be [lo, hi]"),
    ("tune.objective.name=fastest", "unknown tune.objective.name 'fastest'; valid: cc_robust, goodput"),
    ("+tune.space.agnt.lr={uniform:[0.1,0.2]}", "tune.space.agnt.lr: the training config has no section 'agnt'"),
])
def test_tune_py_names_bad_input_before_starting_ray(tmp_path, override, message):
    out = subprocess.run([sys.executable, "tune.py", "agent=dqn", override, f"tune.storage_path={tmp_path}/ray",
                          f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", f"hydra.run.dir={tmp_path}/hydra"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and message in out.stdout + out.stderr, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "ray").exists()


class _Stop:
    """Monitor that ends learning after the first batch of transitions."""

    def on_step(self, n, rewards, infos) -> bool:
        return False


@pytest.mark.parametrize("agent", sorted(p.stem for p in (ROOT / "configs" / "tune").glob("*.yaml")))
def test_every_shipped_search_space_gives_configs_its_agent_accepts(tmp_path, agent):
    from omegaconf import OmegaConf

    from agents.registry import make_agent
    from agents.sweep import apply_params, check_paths
    from agents.training import make_env, setup

    cfg = compose_config("tune", f"agent={agent}", "duration_s=1", "train.steps=64")
    base = OmegaConf.masked_copy(cfg, [k for k in cfg if k not in ("tune", "ray")])
    space = search_space(OmegaConf.to_container(cfg.tune.space, resolve=True))
    check_paths(base, space)
    for i in range(3):
        params = {k: v.sample() if hasattr(v, "sample") else v for k, v in space.items()}
        s = setup(apply_params(OmegaConf.to_container(base, resolve=True), params), tmp_path)
        env = make_env(s, 2, i)
        learner = make_agent(s.agent_spec, env.observation_space.shape[0], int(env.action_space.n), i)
        learner.learn(env, 64, _Stop())
        assert learner.act(env.reset()).shape == (2,)


def test_cc_robust_objective_is_the_worst_cc(tmp_path):
    from types import SimpleNamespace

    from agents.registry import make_agent
    from agents.sweep import objective
    from agents.training import make_env, setup

    cfg = compose_config("train", "agent=linucb", "cc=cubic", "duration_s=1")
    s = setup(cfg, tmp_path)
    env = make_env(s, 2, 0)
    agent = make_agent(s.agent_spec, env.observation_space.shape[0], int(env.action_space.n), 0)
    ccs = ["reno", "cubic", "bbr", "bbr2"]
    scores = objective(SimpleNamespace(s=s, agent=agent), [], {"name": "cc_robust", "ccs": ccs, "runs": 2})
    per_cc = [scores[f"goodput_mbps/{cc}"] for cc in ccs]
    assert all(g > 0 for g in per_cc) and scores["objective"] == min(per_cc)
    assert len(set(per_cc)) > 1  # the CCs really differ
    rows = [{"scenario": "ispras_s1", "cc": "cubic", "scheduler": "linucb", "goodput_mbps": 3.0},
            {"scenario": "ispras_s1", "cc": "cubic", "scheduler": "minrtt", "goodput_mbps": 9.0}]
    assert objective(SimpleNamespace(s=s, agent=agent), rows, {"name": "goodput"})["objective"] == 3.0
