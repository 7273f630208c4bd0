"""Studies (evaluate.py study=... or lists): statistics on known data, every output of a tiny
study, training through agents.training with a cache, per-cell errors and bad input, Ray tasks
against a serial run, training seeds, and cells whose worker dies."""

import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from omegaconf import OmegaConf, open_dict

from agents.training import run as train
from envs.errors import ConfigError
from envs.metrics import mean_ci
from envs.plugins import cc_names, scheduler_names
from envs.scenario import list_scenarios
from agents import cluster
from studies import robustness, runner, spec
from studies.runner import run_study
from conftest import ROOT, compose_config

STUDIES = sorted(p.stem for p in (ROOT / "configs" / "study").glob("*.yaml"))


def evaluate_cfg(tmp_path: Path, *overrides: str, study: dict | None = None, tracking: Path | None = None):
    db = tracking or tmp_path / "mlflow.db"
    cfg = compose_config("evaluate", f"mlflow.tracking_uri=sqlite:///{db}", *overrides)
    if study is not None:
        with open_dict(cfg):
            cfg.study = OmegaConf.create(study)
    return cfg


# ---------------------------------------------------------------------------------- statistics
def test_mean_ci_on_known_data():
    mean, half = mean_ci(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    # t(0.975, 4) = 2.776445; s = sqrt(2.5)
    assert mean == 3.0 and half == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-5)
    assert mean_ci(np.array([7.0, np.nan]))[1] == 0.0


def test_normalised_score_regret_and_ranks():
    # [scheduler, scenario, cc]: 3 schedulers, 1 scenario, 2 CCs; the third cannot run under cc 2
    means = np.array([[[10.0, 5.0]], [[5.0, 10.0]], [[2.5, np.nan]]])
    score = robustness.normalised(means)
    np.testing.assert_allclose(score[:, 0, 0], [1.0, 0.5, 0.25])
    np.testing.assert_allclose(score[:2, 0, 1], [0.5, 1.0])
    assert np.isnan(score[2, 0, 1])
    np.testing.assert_allclose(robustness.regret(means)[:, 0, 0], [0.0, 5.0, 7.5])
    # lower is better (a completion time): best / value
    np.testing.assert_allclose(robustness.normalised(means, higher_is_better=False)[:, 0, 0], [0.25, 0.5, 1.0])
    np.testing.assert_allclose(robustness.regret(means, higher_is_better=False)[:, 0, 0], [7.5, 2.5, 0.0])
    rk = robustness.ranks(np.array([[3.0, 1.0], [3.0, 2.0], [1.0, np.nan]]))
    np.testing.assert_allclose(rk[:, 0], [1.5, 1.5, 3.0])  # ties share the average rank
    np.testing.assert_allclose(rk[:2, 1], [2.0, 1.0])
    assert np.isnan(rk[2, 1])


def test_kendall_w_and_rank_range():
    same = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3]], dtype=float)  # three CCs agree
    assert robustness.kendall_w(same) == pytest.approx(1.0)
    assert robustness.kendall_w(np.array([[1, 2], [2, 1]], dtype=float)) == pytest.approx(0.0)
    # 4 items, 3 judges: R = (4, 7, 8, 11), S = 25, W = 12 * 25 / (9 * 60) = 0.5556
    w = robustness.kendall_w(np.array([[1, 2, 1], [2, 1, 4], [3, 3, 2], [4, 4, 3]], dtype=float))
    assert w == pytest.approx(12 * 25 / (9 * 60))
    cube = np.array([[[1, 1, 1], [1, 3, 2]], [[2, 2, 2], [2, 1, 1]]], dtype=float)  # [sched, scen, cc]
    np.testing.assert_allclose(robustness.rank_range(cube), [2.0, 1.0])


def test_summary_worst_case_and_mean_across_cells():
    means = np.array([[[10.0, 8.0]], [[9.0, 10.0]]])
    s = robustness.summary(means)
    np.testing.assert_allclose(s["worst_score"], [0.8, 0.9])
    np.testing.assert_allclose(s["mean_score"], [0.9, 0.95])
    np.testing.assert_allclose(s["max_regret"], [2.0, 1.0])
    np.testing.assert_allclose(s["per_cc"], [[1.0, 0.8], [0.9, 1.0]])
    np.testing.assert_allclose(s["rank_range"], [1.0, 1.0])
    assert s["kendall_w"][0] == pytest.approx(0.0)


# ---------------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def ray_session():
    """One local Ray instance (2 CPUs) for the module's studies with workers > 1: a study uses a
    session already open and leaves it open."""
    import ray
    started = cluster.connect({"num_cpus": 2})
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def two_path_agent(tmp_path_factory) -> Path:
    """A small LinUCB agent trained on two paths (agents.training, the code of train.py)."""
    tmp = tmp_path_factory.mktemp("agent")
    cfg = spec.compose_train(["agent=linucb", "cc=bbr", "scenario=ispras_s3", "file_mb=1", "train.steps=300",
                              "train.eval_every=0", "train.eval_runs=2", f"mlflow.tracking_uri=sqlite:///{tmp}/m.db"])
    return train(cfg, tmp / "run")["checkpoint"]


@pytest.mark.slow
def test_tiny_study_writes_every_output(tmp_path, two_path_agent, ray_session):
    cfg = evaluate_cfg(tmp_path, f"scheduler=[minrtt,rr,{two_path_agent}]", "scenario=[ispras_s1,ispras_s3]",
                       "cc=[cubic,bbr]", "runs=3", "duration_s=1")
    result = run_study(cfg, tmp_path / "out")
    files = result["files"]
    assert set(files) == {"cells.csv", "results.csv", "results.md", "robustness.csv", "robustness.md",
                          "transfer.csv", "transfer.md", "transfer.png", "bars.png", "heatmap.png",
                          "diagnostics.md", "diagnostics.csv", "worst_cc.md", "worst_cc.png"}
    for path in files.values():
        assert path.parent == tmp_path / "out" and path.stat().st_size > 0, path
    cells = pd.read_csv(files["cells.csv"])
    assert len(cells) == 3 * 2 * 2 and cells["error"].isna().all()
    assert (cells["goodput_mbps"] > 0).all()
    wide = pd.read_csv(files["results.csv"], header=[0, 1, 2], index_col=0)
    assert list(wide.index) == ["minrtt", "rr", "linucb_bbr"]
    assert wide[("ispras_s3", "bbr", "mean")].notna().all()
    assert "| **cubic** | **bbr** |" in files["results.md"].read_text()
    rob = pd.read_csv(files["robustness.csv"])
    assert ((rob["worst_score"] > 0) & (rob["worst_score"] <= rob["mean_score"]) & (rob["mean_score"] <= 1)).all()
    assert list(rob.columns[4:6]) == ["score_cubic", "score_bbr"]
    assert "linucb_bbr (trained bbr)" in files["transfer.md"].read_text()
    worst = files["worst_cc.md"].read_text()  # one trained seed: its worst cell's CI over the runs
    assert "| scheduler | ispras_s1 | ispras_s3 |" in worst and "| linucb_bbr | " in worst
    diag = pd.read_csv(files["diagnostics.csv"])  # the learned policy's cells only
    assert len(diag) == 2 * 2 and (diag["scheduler"] == "linucb_bbr").all() and (diag["decisions"] > 0).all()
    assert ((diag["share_wait"] + diag["share_send_second"]).round(9) == 1.0).all()
    assert ((diag["agree_minrtt"] - diag["share_send_second"]).abs() < 1e-9).all()  # blocked: minRTT always sends
    run = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").get_run(result["run_id"])
    assert run.info.status == "FINISHED" and run.data.params["study"] == "study"
    assert any(k.startswith("robustness/minrtt/") for k in run.data.metrics)
    assert any(k.startswith("diag/ispras_s1/bbr/linucb_bbr/agree/") for k in run.data.metrics)
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    artifacts = {a.path for a in client.list_artifacts(result["run_id"])}
    assert {"results.md", "robustness.md", "bars.png"} <= artifacts


def test_a_clone_is_scored_under_the_learners_own_reward_beside_the_cells_blocked_best(tmp_path, two_path_agent):
    """runner.check_rewards: for a learner cell that clones minRTT at the blocked decision, the
    return per episode of minRTT and of the cell's best blocked-decision policy under the
    checkpoint's own reward and environment (studies.headroom.reward_returns, held-out seeds)."""
    from agents.diagnostics import BLOCKED_ACTIONS, summarise
    from studies.headroom import Candidate, Headroom, reward_returns

    cfg = evaluate_cfg(tmp_path, f"scheduler=[minrtt,{two_path_agent}]", "scenario=ispras_s3", "cc=bbr", "runs=3",
                       "file_mb=1")
    study = spec.from_config(cfg, tmp_path / "out")
    entry = study.learned[0]
    clone = summarise(BLOCKED_ACTIONS, np.array([0, 100]), {"minrtt": 100, "fast_only": 0})
    key = (entry.label, "ispras_s3", "bbr")
    results = {key: {"metrics": {}, "error": None, "diagnostics": clone}}
    best = Candidate("wait_rule", (("k", 1.0),))
    h = Headroom("ispras_s3", "bbr", "goodput_mbps", best, 1.0, 0.0, 1.0, 0.0, [], blocked_best=best)
    runner.check_rewards(study, results, [h])
    got = results[key]["reward_check"]
    assert list(got) == ["minrtt", "wait_rule(k=1)"] and all(np.isfinite(m) for m, _ in got.values())
    env = OmegaConf.to_container(OmegaConf.load(Path(entry.checkpoints[0]) / "config.yaml").env)
    assert env["reward"]["name"] == "ispras"  # the LinUCB preset's reward, not the study's
    again = reward_returns([Candidate("minrtt"), best], study.scenarios[0], "bbr", 3, study.seed + 1_000_000, env,
                           study.ccs)
    assert again == got


def test_checkpoint_that_fits_no_scenario_is_refused_before_any_work(tmp_path, two_path_agent):
    """Trained on 2 paths, asked for 3-path scenarios only: one line before Ray or any cell starts
    (before, every cell ended in the interface error and the run in "no cell could be evaluated")."""
    cfg = evaluate_cfg(tmp_path, f"scheduler=[minrtt,{two_path_agent}]", "scenario=[sod_2,sod_3]", "cc=[bbr]",
                       "runs=2", "duration_s=1", "workers=1")
    with pytest.raises(ConfigError, match=r"acts on 2 paths; no scenario of this run has 2 \(paths: sod_2 3, "
                                          r"sod_3 3\)"):
        spec.from_config(cfg, tmp_path / "out")


def test_checkpoint_that_cannot_act_is_reported_per_cell(tmp_path, two_path_agent):
    cfg = evaluate_cfg(tmp_path, f"scheduler=[minrtt,{two_path_agent}]", "scenario=[ispras_s3,sod_2]", "cc=[bbr]",
                       "runs=2", "duration_s=1", "workers=1")
    result = run_study(cfg, tmp_path / "out")
    res = result["results"]
    assert "n_paths" in res[("linucb_bbr", "sod_2", "bbr")]["error"]  # 3 paths, trained on 2
    assert res[("linucb_bbr", "ispras_s3", "bbr")]["error"] is None
    assert res[("minrtt", "sod_2", "bbr")]["error"] is None
    text = result["files"]["results.md"].read_text()
    assert "n/a" in text and "linucb_bbr / sod_2 / bbr" in text


def test_a_checkpoint_is_measured_in_the_studys_simulator(tmp_path, two_path_agent):
    """``stack=linux`` on the command line runs the checkpoint (trained under the default XQUIC
    profile) under Linux's profile too, beside the heuristics of the same cell: its cells equal
    ``evaluate_policy`` in an env of the study's stack, where they once ran the checkpoint's own."""
    from agents import checkpoint
    from agents.training import evaluate_policy, setup
    from envs.evaluation import EVAL_SEED_OFFSET
    from envs.scenario import load_scenario, scenario_from_dict
    assert OmegaConf.load(two_path_agent / checkpoint.CONFIG).env.stack == "xquic"
    got = {}
    for stack in ("xquic", "linux"):
        cfg = evaluate_cfg(tmp_path, f"scheduler=[minrtt,{two_path_agent}]", "scenario=[ispras_s3]", "cc=[bbr]",
                           "runs=2", "duration_s=1", "workers=1", f"stack={stack}")
        got[stack] = run_study(cfg, tmp_path / stack)["results"][("linucb_bbr", "ispras_s3", "bbr")]["metrics"]
    agent, _ = checkpoint.load(two_path_agent)
    s = setup(OmegaConf.load(two_path_agent / checkpoint.CONFIG), two_path_agent.parent)
    scen = scenario_from_dict({**load_scenario("ispras_s3").model_dump(exclude_none=True),
                               "workload": {"type": "bulk", "duration_s": 1.0}})  # duration_s=1 (envs.config)
    for stack in ("xquic", "linux"):
        s_stack = replace(s, env_kwargs={**s.env_kwargs, "stack": stack})
        expect = evaluate_policy(agent, s_stack, scen, "bbr", 2, EVAL_SEED_OFFSET)[0]["goodput_mbps"]
        np.testing.assert_array_equal(got[stack]["goodput_mbps"], expect)
    assert not np.array_equal(got["xquic"]["goodput_mbps"], got["linux"]["goodput_mbps"])


def test_checkpoint_by_mlflow_run_id(tmp_path, two_path_agent):
    run_id = spec.checkpoint.read_meta(two_path_agent)["mlflow_run_id"]
    db = two_path_agent.parents[1] / "m.db"
    for ref in (f"mlflow:{run_id}", f"runs:/{run_id}/checkpoint"):
        study = spec.from_config(evaluate_cfg(tmp_path, f"scheduler=[minrtt,'{ref}']", "cc=[bbr,cubic]", tracking=db),
                                 tmp_path / "out")
        entry = study.schedulers[1]
        assert entry.label == "linucb_bbr" and entry.kind == spec.CHECKPOINT
        assert Path(entry.checkpoint).is_relative_to(tmp_path / "out" / "agents" / "downloads")
        assert (Path(entry.checkpoint) / "meta.json").is_file()
    with pytest.raises(ConfigError, match="cannot fetch checkpoint mlflow:0123abc"):
        spec.from_config(evaluate_cfg(tmp_path, "scheduler=[minrtt,'mlflow:0123abc']", "cc=[bbr,cubic]", tracking=db),
                         tmp_path / "out")


def test_study_trains_with_agents_training_and_reuses_the_checkpoint(tmp_path, capfd, ray_session):
    """The second run logs to another MLflow store: where a run is logged is not what it trains,
    so the agent is reused (``agents.training.identity_hash``)."""
    study = {"name": "tiny", "scenarios": ["ispras_s3"], "ccs": ["bbr"], "runs": 2,
             "train_overrides": ["scenario=ispras_s3", "file_mb=1", "train.steps=300", "train.eval_every=0",
                                 "train.eval_runs=2"],
             "schedulers": ["minrtt", {"label": "lin", "train": ["agent=linucb", "cc=bbr"]}]}
    cfg = evaluate_cfg(tmp_path, "duration_s=1", f"agents_dir={tmp_path}/agents", study=study)
    first = run_study(cfg, tmp_path / "a")
    (entry,) = [e for e in first["study"].schedulers if e.label == "lin"]
    meta = spec.checkpoint.read_meta(Path(entry.checkpoint))
    assert meta["finished"] and meta["ccs"] == ["bbr"] and Path(entry.checkpoint).parent.parent == tmp_path / "agents"
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    assert client.get_run(meta["mlflow_run_id"]).info.status == "FINISHED"  # train.py's own MLflow run
    stamp = (Path(entry.checkpoint) / "meta.json").stat().st_mtime_ns
    capfd.readouterr()
    other_store = evaluate_cfg(tmp_path, "duration_s=1", f"agents_dir={tmp_path}/agents", study=study,
                               tracking=tmp_path / "other.db")
    second = run_study(other_store, tmp_path / "b")
    assert "lin: reusing" in capfd.readouterr().err
    assert (Path(entry.checkpoint) / "meta.json").stat().st_mtime_ns == stamp
    np.testing.assert_allclose(second["results"][("lin", "ispras_s3", "bbr")]["metrics"]["goodput_mbps"],
                               first["results"][("lin", "ispras_s3", "bbr")]["metrics"]["goodput_mbps"])


SEEDED = {"name": "seeded", "scenarios": ["ispras_s1", "ispras_s3"], "ccs": ["cubic", "bbr"], "runs": 2, "seeds": 2,
          "train_overrides": ["scenario=ispras_s3", "file_mb=1", "train.steps=300", "train.eval_every=0",
                              "train.eval_runs=2"],
          "schedulers": ["minrtt", "rr", {"label": "dqn", "train": ["agent=dqn", "cc=bbr"]}]}


def test_ray_study_with_two_workers_gives_the_serial_numbers(tmp_path, ray_session):
    """Training jobs (two seeds of a learner) and cells as Ray tasks on 2 workers: every number of
    the report as in a serial run in this process; the learner's CI is taken over its seeds."""
    out = {}
    for workers in (1, 2):
        cfg = evaluate_cfg(tmp_path, "duration_s=1", f"workers={workers}", f"agents_dir={tmp_path}/agents{workers}",
                           study=SEEDED)
        out[workers] = run_study(cfg, tmp_path / f"w{workers}")
    serial, ray_run = (pd.read_csv(out[w]["files"]["cells.csv"]) for w in (1, 2))
    pd.testing.assert_frame_equal(serial, ray_run)
    assert len(serial) == 3 * 2 * 2 and not serial["failed"].any() and serial["error"].isna().all()
    (entry,) = [e for e in out[2]["study"].schedulers if e.label == "dqn"]
    assert entry.seeds == [0, 1] and len(set(entry.checkpoints)) == 2
    assert [spec.checkpoint.read_meta(Path(c))["seed"] for c in entry.checkpoints] == [0, 1]
    cell = out[2]["results"][("dqn", "ispras_s3", "bbr")]
    assert cell["metrics"]["goodput_mbps"].shape == (2 * 2,)  # both seeds' runs
    means = cell["seed_means"]["goodput_mbps"]
    assert means.shape == (2,)
    nets = [spec.checkpoint.load(Path(c))[0].model.policy.state_dict() for c in entry.checkpoints]
    assert any(not torch.equal(nets[0][k], nets[1][k]) for k in nets[0])  # two differently trained agents
    row = serial[(serial.scheduler == "dqn") & (serial.scenario == "ispras_s3") & (serial.cc == "bbr")].iloc[0]
    assert row["seeds"] == 2
    assert (row["goodput_mbps"], row["goodput_mbps_ci95"]) == pytest.approx(mean_ci(means))
    assert "over their 2 training seeds' means" in out[2]["files"]["results.md"].read_text()


def test_a_cell_whose_worker_dies_is_retried_or_reported_failed(tmp_path, monkeypatch, ray_session):
    """The worker of one cell exits once (its retry succeeds with the same numbers); the worker of
    another exits on every attempt: that cell is reported failed and every other cell completes."""
    marker = tmp_path / "died-once"
    evaluate = runner.evaluate_cell

    def dying(entry, scenario, cc, *args):
        if (entry.label, scenario.name, cc) == ("rr", "ispras_s1", "bbr") and not marker.exists():
            marker.touch()
            os._exit(1)
        if (entry.label, scenario.name, cc) == ("rr", "ispras_s3", "bbr"):
            os._exit(1)
        return evaluate(entry, scenario, cc, *args)

    monkeypatch.setattr(runner, "evaluate_cell", dying)
    cfg = evaluate_cfg(tmp_path, "scheduler=[minrtt,rr]", "scenario=[ispras_s1,ispras_s3]", "cc=[cubic,bbr]",
                       "runs=2", "duration_s=1", "workers=2", "ray.max_retries=1", "ray.tasks=always")
    result = run_study(cfg, tmp_path / "out")
    res = result["results"]
    assert marker.exists()
    assert list(result["failed"]) == [("rr", "ispras_s3", "bbr")]
    assert "WorkerCrashedError" in result["failed"][("rr", "ispras_s3", "bbr")]
    assert res[("rr", "ispras_s3", "bbr")]["failed"] and not res[("rr", "ispras_s3", "bbr")]["metrics"]
    for key, cell in res.items():
        if key != ("rr", "ispras_s3", "bbr"):
            assert cell["error"] is None and (cell["metrics"]["goodput_mbps"] > 0).all(), key
    study = result["study"]
    rr = study.schedulers[1]
    again = evaluate(rr, study.scenarios[0], "bbr", study.ccs, study.runs, study.seed + runner.EVAL_SEED_OFFSET,
                     study.sim)
    np.testing.assert_array_equal(res[("rr", "ispras_s1", "bbr")]["metrics"]["goodput_mbps"],
                                  again["metrics"]["goodput_mbps"])
    text = result["files"]["results.md"].read_text()
    assert "Failed cells" in text and "- rr / ispras_s3 / bbr: WorkerCrashedError" in text
    cells = pd.read_csv(result["files"]["cells.csv"])
    assert cells["failed"].sum() == 1
    run = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").get_run(result["run_id"])
    assert run.data.metrics["failed_cells"] == 1


# ---------------------------------------------------------------------------------- bad input
BASE = {"name": "bad", "scenarios": ["ispras_s1"], "ccs": ["bbr"], "schedulers": ["minrtt"]}


def test_study_seeds_on_the_command_line_trains_each_learner_that_many_times(tmp_path):
    study = spec.from_config(evaluate_cfg(tmp_path, "study=ispras", "study.seeds=3"), tmp_path / "out")
    assert study.seeds == 3
    trained = [e for e in study.schedulers if e.kind == spec.TRAIN]
    assert len(trained) == 5  # Q-learning, DQN, LinUCB, the policy search and the DQN over heuristics
    for e in trained:
        assert e.seeds == [0, 1, 2] and len(set(e.checkpoints)) == 3
        assert [yaml.safe_load(y)["seed"] for y in e.train_yamls] == [0, 1, 2]
    one = spec.from_config(evaluate_cfg(tmp_path, "study=ispras"), tmp_path / "out")
    assert [e.checkpoints for e in one.schedulers if e.kind == spec.TRAIN] == [e.checkpoints[:1] for e in trained]


def test_unknown_ray_tasks_mode_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="unknown ray.tasks 'sometimes'; valid: always, auto, never"):
        spec.from_config(evaluate_cfg(tmp_path, "ray.tasks=sometimes", study=BASE), tmp_path / "out")


@pytest.mark.parametrize("change, message", [
    ({"schedulers": []}, "study.schedulers: give a non-empty list"),
    ({"scenarios": []}, "study.scenarios: give a non-empty list"),
    ({"schedulers": ["minrtt", "minrt"]}, "unknown scheduler 'minrt'; valid: atlb, blest, ecf"),
    ({"ccs": ["cubic", "bbr3"]}, "unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
    ({"scenarios": ["ispras_s9"]}, "unknown scenario 'ispras_s9'; valid: dynamic"),
    ({"metric": "goodputt"}, "unknown metric 'goodputt'; valid: aggregation_benefit, avg_bitrate_mbps"),
    ({"schedulers": [{"label": "x", "scheduler": "rr", "params": {"speed": 1}}]}, "has no parameter 'speed'"),
    ({"schedulers": ["minrtt", {"label": "minrtt", "scheduler": "minrtt"}]}, "repeated label(s) minrtt"),
    ({"schedulers": [{"label": "d", "train": ["agent=dqnn"]}]}, "Could not find 'agent/dqnn'"),
    ({"schedulers": [{"label": "d", "train": ["agent=dqn", "train.steps=0"]}]}, "train.steps must be"),
    ({"schedulers": ["no/such/checkpoint"]}, "not a checkpoint: no/such/checkpoint"),
    ({"runs": 0}, "runs must be an integer >= 1"),
    ({"seeds": 0}, "study.seeds must be an integer >= 1"),
    ({"typo": 1}, "study has unknown keys typo"),
])
def test_bad_study_fails_before_any_work_naming_the_problem(tmp_path, change, message):
    study = {**BASE, "schedulers": ["minrtt", {"label": "lin", "train": ["agent=linucb"]}], **change}
    cfg = evaluate_cfg(tmp_path, study=study)
    with pytest.raises(ConfigError) as err:
        run_study(cfg, tmp_path / "out")
    assert message in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing trained, evaluated or written


def test_command_line_study_with_a_typo_exits_with_the_valid_names():
    out = subprocess.run([sys.executable, "evaluate.py", "scheduler=[minrtt,rrr]", "cc=[cubic,bbr]",
                          "hydra.run.dir=/tmp/mpsched-study-typo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "unknown scheduler 'rrr'; valid: atlb, blest, ecf" in out.stderr
    out = subprocess.run([sys.executable, "evaluate.py", "scheduler=[]", "hydra.run.dir=/tmp/mpsched-study-typo"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "scheduler: the list is empty" in out.stderr


# ---------------------------------------------------------------------------------- study files
def referenced(name: str) -> dict[str, set[str]]:
    data = yaml.safe_load((ROOT / "configs" / "study" / f"{name}.yaml").read_text())
    heur = {e if isinstance(e, str) else e["scheduler"] for e in data["schedulers"]
            if isinstance(e, str) or "scheduler" in e}
    return {"schedulers": heur, "ccs": set(data["ccs"]), "scenarios": set(data["scenarios"])}


@pytest.mark.parametrize("name", STUDIES)
def test_study_files_compose_and_name_only_shipped_scenarios(tmp_path, name):
    cfg = evaluate_cfg(tmp_path, f"study={name}")
    assert cfg.study.name == name and cfg.study.schedulers and cfg.study.ccs
    assert referenced(name)["scenarios"] <= set(list_scenarios())


@pytest.mark.parametrize("name", STUDIES)
def test_study_files_validate(tmp_path, name):
    """Every name of the study is registered: validates in full (training configs composed, not
    run)."""
    refs = referenced(name)
    assert refs["schedulers"] <= set(scheduler_names()) and refs["ccs"] <= set(cc_names())
    study = spec.from_config(evaluate_cfg(tmp_path, f"study={name}"), tmp_path / "out")
    assert [e.label for e in study.schedulers]


@pytest.mark.parametrize("name", ["ispras", "cc_robustness"])
def test_study_training_entries_compose_into_train_configs(tmp_path, name):
    """The learners of the ISPRAS studies, with the heuristics reduced to registered ones."""
    cfg = evaluate_cfg(tmp_path, f"study={name}")
    with open_dict(cfg):
        cfg.study.schedulers = ["minrtt"] + [e for e in cfg.study.schedulers if not isinstance(e, str)
                                             and "train" in e]
    study = spec.from_config(cfg, tmp_path / "out")
    trained = [e for e in study.schedulers if e.kind == spec.TRAIN]
    # cc_robustness: 5 learners x 4 single CCs and mix, and the policy search under bbr and mix
    assert len(trained) == (5 if name == "ispras" else 27)
    for e in trained:
        train_cfg = yaml.safe_load(e.train_yaml)
        assert sorted(train_cfg["scenario"]) == ["ispras_s1", "ispras_s2", "ispras_s3"]
        trained_cc = e.label.rsplit("_", 1)[1]
        assert list(train_cfg["cc"]) == (["reno", "cubic", "bbr", "bbr2"] if trained_cc == "mix" else [trained_cc])
        assert train_cfg["agent"]["name"] == e.label.rsplit("_", 1)[0]
        # the policy search's budget is generations, the same under every CC (its decisions per generation
        # are not); train.steps, which counts every candidate's decision, its own upper bound after the shared one
        if e.label.startswith("policy_search"):
            assert train_cfg["agent"]["params"]["generations"] == 20 and train_cfg["train"]["steps"] == 20_000_000
        elif e.label.startswith("dqn_modes"):  # its preset's budget of interval decisions
            assert train_cfg["train"]["steps"] == 200_000 and train_cfg["env"]["decision"] == "interval"
        else:
            assert train_cfg["train"]["steps"] == 60_000


def test_the_agent_cache_key_is_what_is_trained_not_where_it_is_logged():
    from agents.training import identity_hash
    from studies.spec import compose_train
    base = identity_hash(compose_train(["agent=linucb"]))
    assert identity_hash(compose_train(["agent=linucb", "mlflow.tracking_uri=sqlite:////elsewhere.db",
                                        "mlflow.experiment=other"])) == base
    assert identity_hash(compose_train(["agent=linucb", "train.steps=1234"])) != base
    assert identity_hash(compose_train(["agent=linucb", "seed=1"])) != base
