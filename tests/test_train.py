"""train.py: the main job end to end, checkpoints, resume, MLflow status, bad input."""

import json
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch

from agents import checkpoint
from agents.training import run
from envs.errors import ConfigError
from conftest import ROOT, compose_config


def compose_cfg(tmp_path: Path, *overrides: str):
    return compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "train.eval_every=0",
                          "train.eval_runs=3", *overrides)


@pytest.mark.slow
def test_main_job_runs_and_prints_the_comparison(tmp_path):
    out = subprocess.run([sys.executable, "train.py", "agent=dqn", "cc=cubic", "train.steps=3000",
                          "train.eval_runs=3", "train.checkpoint_every=1000",
                          f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", f"hydra.run.dir={tmp_path}/run"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| ispras_s1 | cubic | dqn |" in out.stdout and "| ispras_s1 | cubic | minrtt |" in out.stdout
    assert "checkpoint:" in out.stdout and "MLflow run:" in out.stdout
    meta = json.loads((tmp_path / "run" / "checkpoint" / "meta.json").read_text())
    assert meta["finished"] and meta["steps_done"] >= 3000
    assert "%" in out.stderr  # the progress bar
    assert "time: start-up" in out.stdout  # the time split


def test_compile_stage_comes_before_the_bar_and_the_time_split_is_logged(tmp_path, monkeypatch, capfd):
    """A cold cache (as compilation.cached reports it) is announced, with its time, before the
    progress bar starts; the run's time split adds up and is logged to MLflow."""
    from envs import compilation

    monkeypatch.setattr(compilation, "cached", lambda: False)
    cfg = compose_cfg(tmp_path, "agent=dqn", "cc=bbr", "train.steps=800", "train.eval_every=400")
    start = time.perf_counter()
    result = run(cfg, tmp_path / "run", started=start)
    wall = time.perf_counter() - start
    err = capfd.readouterr().err
    first_bar = err.index("/800")
    assert 0 <= err.index("compiling the simulator core (first run only") < err.index("compiled the simulator core in")
    assert err.index("compiled the simulator core in") < first_bar
    split = result["time"]
    parts = [split.startup, split.simulator, split.agent, split.evaluation, split.other]
    assert all(p >= 0 for p in parts) and 0 < split.compile <= split.startup
    assert split.simulator > 0 and split.evaluation > 0  # the env stepped; two evaluations ran
    assert split.total == pytest.approx(sum(parts)) and split.total <= wall
    metrics = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").get_run(result["run_id"]).data.metrics
    names = ("startup", "compile", "simulator", "agent", "evaluation", "other", "total")
    assert {f"time/{k}_s" for k in names} <= set(metrics)
    assert metrics["time/total_s"] == pytest.approx(split.total)


def test_the_last_step_is_evaluated_and_checkpointed_once(tmp_path, monkeypatch):
    """A periodic evaluation or checkpoint falling on the last step is left to the final ones, and
    a step that is both an evaluation (which checkpoints for the sweep's hook) and a checkpoint
    step is saved once."""
    saved = []
    save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", lambda d, agent, meta, cfg: (saved.append(meta), save(d, agent, meta, cfg)))
    evaluated = []
    cfg = compose_cfg(tmp_path, "cc=cubic", "train.steps=800", "train.eval_every=400", "train.checkpoint_every=400",
                      "file_mb=1")
    result = run(cfg, tmp_path / "run", on_eval=lambda progress, rows: evaluated.append(progress.steps))
    assert evaluated == [400, 800]  # the periodic one, then the final one
    assert [(m["steps_done"], m["finished"]) for m in saved] == [(400, False), (800, True)]
    history = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").get_metric_history(
        result["run_id"], "eval/ispras_s1/cubic/dqn/goodput_mbps")
    assert [m.step for m in history] == [400]


def test_the_bar_ends_at_100_percent_when_the_connections_overshoot_train_steps(tmp_path, capfd):
    """train.steps=100 over 8 connections stepping together ends at 104 transitions: the bar's
    total follows (before: tqdm printed "104step" without a total or a percentage)."""
    result = run(compose_cfg(tmp_path, "cc=cubic", "train.steps=100", "train.n_envs=8", "file_mb=1"), tmp_path / "run")
    assert result["steps"] == 104
    err = capfd.readouterr().err
    assert "100%|" in err and "104/104" in err


def test_a_local_store_is_not_waited_for_before_training(tmp_path, monkeypatch):
    """The run's id is asked of the run log (a call that waits for the helper process, which creates
    a new local store meanwhile) at the first checkpoint, after training started; every checkpoint
    still names the run; a tracking server is asked before (tests/test_failures.py refuses one)."""
    from agents import tracking, training

    events: list[str] = []
    on_step = training.Progress.on_step
    monkeypatch.setattr(training.Progress, "on_step", lambda self, *a: (events.append("step"), on_step(self, *a))[1])
    monkeypatch.setattr(tracking.RunLog, "where", lambda self, where=tracking.RunLog.where: (
        events.append("where"), where(self))[1])
    saved = []
    save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", lambda d, agent, meta, cfg: (saved.append(meta), save(d, agent, meta, cfg)))
    cfg = compose_cfg(tmp_path, "cc=cubic", "train.steps=800", "train.checkpoint_every=400", "file_mb=1")
    result = run(cfg, tmp_path / "run", run_log=tracking.RunLog())
    assert events.index("step") < events.index("where")
    assert [m["mlflow_run_id"] for m in saved] == [result["run_id"]] * 2
    assert tracking.is_local(f"sqlite:///{tmp_path}/mlflow.db") and tracking.is_local("mlruns")
    assert not tracking.is_local("http://localhost:5000")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.is_local(None)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://tracking.example")
    assert not tracking.is_local(None)


@pytest.mark.parametrize("agent", ["dqn", "dqn_backlog", "dqn_modes", "ppo", "a2c"])
def test_sb3_agents_train_checkpoint_load_and_act(tmp_path, agent):
    cfg = compose_cfg(tmp_path, f"agent={agent}", "cc=bbr", "train.steps=800", "train.checkpoint_every=400",
                      "file_mb=1")
    result = run(cfg, tmp_path / "run")
    loaded, meta = checkpoint.load(result["checkpoint"])
    obs = np.random.default_rng(0).uniform(0, 2, size=(16, meta["n_features"])).astype(np.float32)
    assert loaded.act(obs).shape == (16,)
    assert set(np.unique(loaded.act(obs))) <= {0, 1}
    if agent == "dqn_modes":  # what its actions mean, for the exported header
        assert meta["modes"] == ["minrtt", "wait_rule"] and meta["interval_ms"] == 50.0
    else:
        assert "modes" not in meta
    # what the policy's weights depend on beside its seed
    assert meta["software"]["torch"] == torch.__version__.split("+")[0]  # without the local build tag
    assert set(meta["software"]) == {*checkpoint.LIBRARIES, "torch_cpu_capability"}
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    run_info = client.get_run(result["run_id"])
    assert run_info.info.status == "FINISHED"
    assert any(k.startswith("final/") for k in run_info.data.metrics)


def test_resume_continues_and_a_finished_run_says_so(tmp_path):
    first = run(compose_cfg(tmp_path, "cc=cubic", "train.steps=800", "file_mb=1"), tmp_path / "a")
    ckpt = str(first["checkpoint"])
    with pytest.raises(ConfigError, match="already finished its 800 steps"):
        run(compose_cfg(tmp_path, "cc=cubic", "train.steps=800", "file_mb=1", f"train.resume={ckpt}"), tmp_path / "b")
    more = run(compose_cfg(tmp_path, "cc=cubic", "train.steps=1600", "file_mb=1", f"train.resume={ckpt}"),
               tmp_path / "c")
    assert checkpoint.read_meta(more["checkpoint"])["steps_done"] >= 1600


def test_checkpoint_of_another_agent_or_feature_set_is_refused(tmp_path):
    first = run(compose_cfg(tmp_path, "cc=cubic", "train.steps=400", "file_mb=1"), tmp_path / "a")
    ckpt = str(first["checkpoint"])
    with pytest.raises(ConfigError, match="agent: checkpoint has 'dqn', this run needs 'ppo'"):
        run(compose_cfg(tmp_path, "agent=ppo", "train.steps=800", f"train.resume={ckpt}"), tmp_path / "b")
    with pytest.raises(ConfigError, match="observation: checkpoint has 'ispras_dqn', this run needs 'peekaboo'"):
        run(compose_cfg(tmp_path, "env.observation=peekaboo", "train.steps=800", f"train.resume={ckpt}"), tmp_path / "c")
    with pytest.raises(ConfigError, match="n_paths: checkpoint has 2, this run needs 5"):
        run(compose_cfg(tmp_path, "scenario=mptcp_tut_e0", "train.steps=800", f"train.resume={ckpt}"), tmp_path / "d")


def test_a_crash_marks_the_run_failed_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    from agents import training

    calls = {"n": 0}
    original = training.Progress.on_step

    def crashing(self, n, rewards, infos):
        calls["n"] += 1
        if calls["n"] == 300:
            raise RuntimeError("simulated crash")
        return original(self, n, rewards, infos)

    monkeypatch.setattr(training.Progress, "on_step", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(compose_cfg(tmp_path, "cc=cubic", "train.steps=4000", "train.checkpoint_every=800", "file_mb=1"),
            tmp_path / "run")
    meta = checkpoint.read_meta(tmp_path / "run" / "checkpoint")
    assert not meta["finished"] and 800 <= meta["steps_done"] < 4000
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    (failed,) = client.search_runs([client.get_experiment_by_name("mpsched").experiment_id])
    assert failed.info.status == "FAILED"


@pytest.mark.parametrize("override, message", [
    ("agent=telepathy", "Could not find 'agent/telepathy'"),
    ("cc=bbr9", "Could not find 'cc/bbr9'"),
    ("train.steps=-5", "train.steps must be an integer >= 1"),
    ("agent.algorithm=XYZ", "unknown Stable-Baselines3 algorithm 'XYZ'; valid: A2C, DDPG, DQN"),
])
def test_bad_input_is_named_without_traceback(override, message):
    out = subprocess.run([sys.executable, "train.py", override], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and message in out.stdout + out.stderr
    assert "Traceback" not in out.stderr


def test_learning_is_real_dqn_learns_to_wait_for_the_fast_path(tmp_path):
    """On a path pair where the slow path's data blocks delivery of a small file, the trained DQN
    completes the file clearly faster than a random policy (and than minRTT)."""
    from agents.training import evaluate_agent, setup

    cfg = compose_cfg(tmp_path, f"scenario_file={ROOT / 'tests' / 'data' / 'wait_matters.yaml'}", "cc=cubic",
                      "env.reward.name=completion", "train.steps=20000")
    result = run(cfg, tmp_path / "run")
    agent, _ = checkpoint.load(result["checkpoint"])
    s = setup(cfg, tmp_path)

    class RandomPolicy:
        rng = np.random.default_rng(0)

        def act(self, obs, deterministic=True):
            return self.rng.integers(0, 2, size=len(obs))

    trained = np.nanmean(evaluate_agent(agent, s, s.scenarios[0], "cubic", 10, 99)["completion_s"])
    random = np.nanmean(evaluate_agent(RandomPolicy(), s, s.scenarios[0], "cubic", 10, 99)["completion_s"])
    minrtt = [r for r in result["rows"] if r["scheduler"] == "minrtt"][0]["completion_s"]
    assert trained < 0.9 * random and trained < 0.9 * minrtt


@pytest.mark.parametrize("where", ["here", "helper"])
def test_the_run_log_records_the_same_in_its_helper_process(tmp_path, where):
    """``tracking.RunLogProcess`` (the helper process train.py starts, so that MLflow's import
    overlaps the run's start-up) records what ``tracking.RunLog`` records in this process; an
    exception leaving its block ends the run FAILED, and an error in a call that does not wait
    is raised by the next call that does."""
    from agents import tracking

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    make = tracking.RunLog if where == "here" else tracking.RunLogProcess
    spec = tracking.RunSpec(uri, "mpsched", "dqn-bbr2", None, {"seed": "0", "steps": "800"})
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "meta.json").write_text("{}")
    with make() as log:
        log.start(spec)
        log.log_batch([("episode/return", 1.5, 1000, 8), ("episode/return", 2.5, 2000, 16)])
        log.log_metrics({"final/x": 3.0})
        log.log_artifacts(str(tmp_path / "ckpt"), "checkpoint")
        log.log_text("a: 1\n", "config.yaml")
        run_id, store = log.where()
    assert store == uri
    client = mlflow.MlflowClient(uri)
    done = client.get_run(run_id)
    assert done.info.status == "FINISHED" and done.data.params == {"seed": "0", "steps": "800"}
    assert done.data.tags["mlflow.runName"] == "dqn-bbr2" and done.data.metrics["final/x"] == 3.0
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, "episode/return")] == [(8, 1.5), (16, 2.5)]
    assert sorted(a.path for a in client.list_artifacts(run_id)) == ["checkpoint", "config.yaml"]

    with pytest.raises(RuntimeError, match="crash"):
        with make() as log:
            log.start(spec)
            crashed_id = log.where()[0]
            raise RuntimeError("crash")
    assert client.get_run(crashed_id).info.status == "FAILED"

    with pytest.raises(Exception, match="nowhere"):
        with make() as log:
            log.start(spec)
            failing_id = log.where()[0]
            log.log_artifact(str(tmp_path / "nowhere.txt"))  # fails in the helper without waiting
            log.end("FINISHED")  # the first call that waits raises it
    assert client.get_run(failing_id).info.status == "FAILED"
