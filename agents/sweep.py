"""Hyperparameter sweeps on Ray Tune (``tune.py``): every trial is a ``train.py`` run
(``agents.training.run``) of the composed config with sampled values, reporting an objective at
each evaluation to an early-stopping scheduler (ASHA: Li et al., "A System for Massively
Parallel Hyperparameter Tuning", MLSys 2020); the sweep is an MLflow parent run, each trial a
nested run."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import mlflow
import numpy as np
import ray
import yaml
from mlflow.entities import Param
from omegaconf import DictConfig, OmegaConf
from ray import tune

from envs import config
from agents import cluster, tracking
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.plugins import cc_id
from envs.sim import stacks

if TYPE_CHECKING:
    from agents.training import Progress

STATE_FILE = "sweep.json"  # the sweep's MLflow parent run, kept for resuming
BEST_FILE = "best.yaml"
SPACE_DIR = Path(__file__).resolve().parents[1] / "configs" / "tune"  # the search spaces, one per agent
METRIC = "objective"
TIME_ATTR = "steps"


# ---------------------------------------------------------------------------------- search space
def _bounds(path: str, name: str, args: Any, integer: bool = False, positive: bool = False) -> tuple:
    ok = isinstance(args, list) and len(args) == 2 and all(
        isinstance(a, int) if integer else isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
    if not ok or not args[0] < args[1] or (positive and args[0] <= 0):
        kind = "integers" if integer else "numbers"
        raise out_of_range(f"tune.space.{path}.{name}", args,
                           f"[lo, hi]: two {kind} with lo < hi" + (" and lo > 0" if positive else ""))
    return tuple(args)


def _choices(path: str, name: str, args: Any) -> list:
    if not isinstance(args, list) or not args:
        raise out_of_range(f"tune.space.{path}.{name}", args, "a non-empty list of values")
    return args


# name -> (args -> Ray Tune domain); bounds are refused before Ray sees them
DISTRIBUTIONS = {
    "uniform": lambda p, a: tune.uniform(*_bounds(p, "uniform", a)),
    "loguniform": lambda p, a: tune.loguniform(*_bounds(p, "loguniform", a, positive=True)),
    "randint": lambda p, a: tune.randint(_bounds(p, "randint", a, integer=True)[0], a[1] + 1),  # hi included
    "choice": lambda p, a: tune.choice(_choices(p, "choice", a)),
    "grid": lambda p, a: tune.grid_search(_choices(p, "grid", a)),
}


def search_space(space: Any, prefix: str = "") -> dict[str, Any]:
    """``tune.space`` (nested config keys ending in ``{distribution: args}``; any other leaf is a
    fixed value) as Ray Tune's flat param space keyed by dotted config paths."""
    if not isinstance(space, dict):
        raise ConfigError(f"tune.space{'.' + prefix if prefix else ''}: expected a mapping of config keys, "
                          f"got {space!r}")
    out: dict[str, Any] = {}
    for key, node in space.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(node, dict) and len(node) == 1 and (
                next(iter(node)) in DISTRIBUTIONS or isinstance(next(iter(node.values())), list)):
            (name, args), = node.items()
            if name not in DISTRIBUTIONS:
                raise unknown_name(f"distribution at tune.space.{path}:", name, DISTRIBUTIONS)
            out[path] = DISTRIBUTIONS[name](path, args)
        elif isinstance(node, dict):
            out.update(search_space(node, path))
        else:
            out[path] = node
    return out


def first_point(space: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One point of ``tune.space`` (as ``search_space`` reads it): each searched key at its first
    value (a range's lower end, the first choice), each fixed key at its value."""
    out: dict[str, Any] = {}
    for key, node in space.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(node, dict) and len(node) == 1 and next(iter(node)) in DISTRIBUTIONS:
            out[path] = next(iter(node.values()))[0]
        elif isinstance(node, dict):
            out.update(first_point(node, path))
        else:
            out[path] = node
    return out


def check_paths(base: DictConfig, space: dict[str, Any]) -> None:
    """Every searched key must sit in a section the training config has (``agent.hyperparams.tau``
    may be new, ``agnt.lr`` may not)."""
    for path in space:
        parent = path.rpartition(".")[0]
        if parent and not isinstance(OmegaConf.select(base, parent), DictConfig):
            raise ConfigError(f"tune.space.{path}: the training config has no section {parent!r}")


def apply_params(base: dict[str, Any], params: dict[str, Any]) -> DictConfig:
    """The training config of one trial: ``base`` with the sampled values at their paths."""
    cfg = OmegaConf.create(base)
    for path, value in params.items():
        OmegaConf.update(cfg, path, value, merge=False, force_add=True)
    return cfg


# ---------------------------------------------------------------------------------- objective
def objective(progress: Progress, rows: list[dict[str, Any]], spec: dict[str, Any]) -> dict[str, float]:
    """The score a trial reports: ``goodput`` is the agent's mean goodput over the training
    scenarios and CCs (the evaluation rows just computed); ``cc_robust`` is the worst, over
    ``spec['ccs']``, of its mean goodput on the training scenarios under that CC."""
    from agents.training import EVAL_SEED_OFFSET, evaluate_agent

    s, agent = progress.s, progress.agent
    name = s.agent_spec.get("name", "agent")
    if spec["name"] == "goodput":
        per = {f"goodput_mbps/{r['scenario']}/{r['cc']}": r["goodput_mbps"] for r in rows if r["scheduler"] == name}
        return {METRIC: float(np.mean(list(per.values()))), **per}
    per = {}
    for cc in spec["ccs"]:
        runs = [evaluate_agent(agent, s, scen, cc, int(spec["runs"]), s.seed + EVAL_SEED_OFFSET)["goodput_mbps"]
                for scen in s.scenarios]
        per[f"goodput_mbps/{cc}"] = float(np.mean(runs))
    return {METRIC: min(per.values()), **per}


def trial(params: dict[str, Any], base: dict[str, Any], spec: dict[str, Any]) -> None:
    """One trial (runs in a Ray worker): a training run reporting ``objective`` with a checkpoint at
    every evaluation; a restored trial resumes from its last checkpoint."""
    from agents.training import run

    cfg = apply_params(base, params)
    context = tune.get_context()
    cfg.mlflow.run_name = run_name(context.get_trial_id())
    out_dir = Path(context.get_trial_dir()) / "run"

    final: dict[str, Any] = {}

    def on_eval(progress: Progress, rows: list[dict[str, Any]]) -> None:
        metrics = {**objective(progress, rows, spec), TIME_ATTR: progress.steps}
        progress.tracker.log({f"tune/{k}": v for k, v in metrics.items() if k != TIME_ATTR}, progress.steps)
        progress.tracker.flush()
        if progress.steps >= progress.s.steps:  # reported once the run has closed: Ray ends the trial there
            final.update(metrics)
            return
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(out_dir / "checkpoint")))

    restored = tune.get_checkpoint()
    if restored is None:
        run(cfg, out_dir, on_eval)
    else:
        with restored.as_directory() as directory:
            cfg.train.resume = str(directory)
            run(cfg, out_dir, on_eval)
    tune.report(final, checkpoint=tune.Checkpoint.from_directory(str(out_dir / "checkpoint")))


def trial_dirname(t: tune.experiment.Trial) -> str:
    return t.trial_id


def run_name(trial_id: str) -> str:
    return f"trial-{trial_id}"


# ---------------------------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    path: Path                # the sweep's directory (Ray's experiment, sweep.json, best.yaml)
    best_config: Path | None  # best.yaml (None when no trial finished an evaluation)
    best_objective: float
    best_params: dict[str, Any]
    trials: int
    stopped_early: int        # trials the scheduler ended before their budget
    failed: dict[str, str]    # trial id -> its error
    interrupted: bool
    parent_run_id: str
    tracking_uri: str


def _validate(cfg: DictConfig) -> None:
    """The schema's ranges (``envs.schema.TuneConfig``) and what depends on more than one key."""
    config.validate(cfg)
    t, train = cfg.tune, cfg.train
    if t.objective.name == "cc_robust" and not list(t.objective.ccs or []):
        raise ConfigError("tune.objective.ccs: cc_robust needs a list of CCs, e.g. [reno, cubic, bbr, bbr2]")
    try:  # known CCs, also while another objective leaves them unread; of the simulated stack where they are read
        for cc in t.objective.ccs or []:
            cc_id(str(cc))  # an unknown name lists the valid ones, also where the stack check below does not run
        if t.objective.name == "cc_robust":
            stacks.check_ccs(str(cfg.env.stack), list(t.objective.ccs))
    except ConfigError as err:
        raise ConfigError(f"tune.objective.ccs: {err}") from None
    if train.eval_every < 1:
        raise out_of_range("train.eval_every", train.eval_every,
                           "an integer >= 1 in a sweep (each evaluation reports the objective)")
    if t.scheduler.name == "asha" and not t.scheduler.grace_steps <= train.steps:
        raise out_of_range("tune.scheduler.grace_steps", t.scheduler.grace_steps,
                           f"an integer in [1, train.steps={train.steps}]")


def _sweep_path(t: DictConfig, agent: str) -> Path:
    storage = Path(str(t.storage_path)).expanduser().resolve()
    if t.name:
        path = storage / str(t.name)
    elif t.resume:
        found = sorted((p.parent for p in storage.glob(f"*/{STATE_FILE}")
                        if json.loads(p.read_text()).get("agent") == agent), key=lambda p: p.stat().st_mtime)
        if not found:
            raise ConfigError(f"tune.resume: no sweep of agent {agent!r} in {storage}; name one with tune.name=")
        path = found[-1]
    else:
        path = storage / f"{agent}-{time.strftime('%Y%m%d-%H%M%S')}"
    if t.resume and not tune.Tuner.can_restore(str(path)):
        raise ConfigError(f"tune.resume: {path} holds no sweep to resume")
    if not t.resume and path.exists():
        raise ConfigError(f"sweep {path} exists: resume it with tune.resume=true or choose another tune.name")
    return path


def sweep(cfg: DictConfig) -> SweepResult:
    """Run (or resume) the sweep configured by ``configs/tune.yaml``."""
    t = cfg.tune
    train_keys = [str(k) for k in cfg if k not in ("tune", "ray")]
    base_cfg = OmegaConf.masked_copy(cfg, train_keys)
    _validate(cfg)
    space = search_space(OmegaConf.to_container(t.space, resolve=True))
    if not space:
        spaces = ", ".join(sorted(p.stem for p in SPACE_DIR.glob("*.yaml")))
        raise ConfigError(f"no search space for agent {cfg.agent.name!r}: tune=<name> picks one of configs/tune/ "
                          f"({spaces}; by default the agent's own, and a name without a file picks none); add "
                          f"configs/tune/{cfg.agent.name}.yaml or give keys on the command line, e.g. "
                          "tune.space.agent.params.lr='{uniform:[0.01,0.5]}'")
    check_paths(base_cfg, space)
    from agents.registry import make_agent
    from agents.training import prepare, setup
    s = prepare(base_cfg, Path.cwd())[0]  # the training config itself (seed, agent hyperparameters, ...) before Ray starts
    # and as a trial gets it, at one point of the space: a searched key the training config has no place for
    # (+tune.space.foo=...) or the agent does not take is refused here, not by every trial
    point = first_point(cast(dict[str, Any], OmegaConf.to_container(t.space, resolve=True)))
    try:
        at = setup(apply_params(cast(dict[str, Any], OmegaConf.to_container(base_cfg, resolve=True)), point), Path.cwd())
        make_agent(at.agent_spec, s.interface["n_features"], s.interface["n_actions"], at.seed)
    except ConfigError as err:
        raise ConfigError(f"tune.space: a trial's config (each searched key at its first value) is refused: {err}") \
            from None
    if base_cfg.get("scenario_file"):
        base_cfg.scenario_file = str(Path(base_cfg.scenario_file).resolve())
    path = _sweep_path(t, str(cfg.agent.name))
    cluster.probe(cfg.ray)  # before the sweep's MLflow run starts

    uri = tracking.open_store(cfg.mlflow.get("tracking_uri"), cfg.mlflow.experiment)
    state = json.loads((path / STATE_FILE).read_text()) if t.resume else {}
    with mlflow.start_run(run_id=state.get("parent_run_id"), run_name=f"sweep-{path.name}") as parent:
        if not t.resume:
            path.mkdir(parents=True)
            (path / STATE_FILE).write_text(json.dumps({"parent_run_id": parent.info.run_id, "agent": cfg.agent.name}))
            mlflow.log_params({"sweep": path.name, "agent": cfg.agent.name, "objective": t.objective.name,
                               "num_samples": t.num_samples, "scheduler": t.scheduler.name,
                               "steps_per_trial": cfg.train.steps, "stack": cfg.env.stack})
            mlflow.log_text(OmegaConf.to_yaml(t.space), "space.yaml")
        base_cfg.mlflow.tracking_uri = uri
        base_cfg.mlflow.parent_run_id = parent.info.run_id
        base = cast(dict[str, Any], OmegaConf.to_container(base_cfg, resolve=True))  # a mapping config
        spec = OmegaConf.to_container(t.objective, resolve=True)

        # trials checkpoint at every evaluation on purpose; Ray would warn about each snapshot
        os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
        cluster.connect(cfg.ray, env_vars={"RAY_CHDIR_TO_TRIAL_DIR": "0"})
        try:
            trainable = tune.with_resources(tune.with_parameters(trial, base=base, spec=spec),
                                            {"cpu": float(t.cpus_per_trial)})
            if t.resume:
                tuner = tune.Tuner.restore(str(path), trainable=trainable, resume_errored=False)
            else:
                scheduler = (tune.schedulers.ASHAScheduler(
                    time_attr=TIME_ATTR, max_t=cfg.train.steps, grace_period=t.scheduler.grace_steps,
                    reduction_factor=t.scheduler.reduction_factor) if t.scheduler.name == "asha"
                    else tune.schedulers.FIFOScheduler())
                tuner = tune.Tuner(
                    trainable, param_space=space,
                    tune_config=tune.TuneConfig(metric=METRIC, mode="max", num_samples=t.num_samples,
                                                scheduler=scheduler, trial_dirname_creator=trial_dirname,
                                                reuse_actors=True),
                    run_config=tune.RunConfig(
                        name=path.name, storage_path=str(path.parent), verbose=1,
                        failure_config=tune.FailureConfig(max_failures=t.max_failures),
                        checkpoint_config=tune.CheckpointConfig(num_to_keep=2)))
            grid = tuner.fit()
        finally:
            ray.shutdown()
        return _summarise(grid, path, base, uri, parent.info.run_id)


def _summarise(grid, path: Path, base: dict[str, Any], uri: str, parent_run_id: str) -> SweepResult:
    """Close the trials' MLflow runs (early-stopped ones as KILLED), write the best trial's
    config as ``best.yaml`` and log the outcome on the parent run."""
    client = mlflow.MlflowClient(uri)
    active = mlflow.active_run()
    assert active is not None  # the sweep's parent run
    experiment_id = active.info.experiment_id
    runs: dict[str, Any] = {}  # trial's run name -> its newest run (a resumed trial starts another)
    for r in client.search_runs([experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
                                order_by=["attributes.start_time DESC"]):
        runs.setdefault(r.info.run_name, r)
    status = {t.trial_id: t.status for t in grid._experiment_analysis.trials}  # Ray's Result has no status
    failed = {}
    for r in grid:
        trial_id = Path(r.path).name
        nested = runs.get(run_name(trial_id))
        if r.error is not None:
            failed[trial_id] = str(r.error).strip().splitlines()[-1][:500]
            if nested is None:  # refused before its training run started: record it all the same
                nested = client.create_run(experiment_id, run_name=run_name(trial_id),
                                           tags={"mlflow.parentRunId": parent_run_id})
                client.log_batch(nested.info.run_id, params=[Param(k, str(v)[:500]) for k, v in r.config.items()])
            client.set_tag(nested.info.run_id, "error", failed[trial_id])
            if nested.info.status in ("RUNNING", "SCHEDULED"):
                client.set_terminated(nested.info.run_id, "FAILED")
        elif nested is not None and nested.info.status != "FINISHED":  # stopped by ASHA or by an interruption
            reason = "tune.stopped_early" if status.get(trial_id) == "TERMINATED" else "tune.interrupted"
            client.set_tag(nested.info.run_id, reason, "true")
            client.set_terminated(nested.info.run_id, "KILLED")
    interrupted = grid.num_terminated + grid.num_errors < len(grid)
    stopped_early = sum(status.get(Path(r.path).name) == "TERMINATED"
                        and (r.metrics or {}).get(TIME_ATTR, 0) < base["train"]["steps"] for r in grid)
    finished = [r for r in grid if r.error is None and r.metrics and math.isfinite(r.metrics.get(METRIC, math.nan))]
    best_config, best_objective, best_params = None, math.nan, {}
    if finished:  # trials that ran their whole budget first: an early-stopped score is a shorter run's
        full = [r for r in finished if r.metrics.get(TIME_ATTR, 0) >= base["train"]["steps"]]
        best = max(full or finished, key=lambda r: r.metrics[METRIC])
        best_objective = float(best.metrics[METRIC])
        best_params = {k: v for k, v in best.config.items()}
        cfg = apply_params(base, best_params)
        cfg.mlflow.parent_run_id = None
        text = OmegaConf.to_yaml(cfg) + "hydra:\n  job:\n    chdir: false\n"
        best_config = path / BEST_FILE
        best_config.write_text(f"# best trial of sweep {path.name} ({METRIC} {best_objective:.4g}); "
                               f"python train.py --config-path {path} --config-name best\n" + text)
        mlflow.log_metric("best_objective", best_objective)
        mlflow.log_artifact(str(best_config))
        mlflow.set_tag("best_trial", Path(best.path).name)
    mlflow.log_metrics({"trials": len(grid), "failed_trials": len(failed)})
    if failed:
        mlflow.log_text(yaml.safe_dump(failed, sort_keys=True), "failed_trials.yaml")
    if interrupted:
        mlflow.end_run(status="KILLED")
    return SweepResult(path, best_config, best_objective, best_params, len(grid), stopped_early, failed, interrupted,
                       parent_run_id, uri)
