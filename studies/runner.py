"""Run a study: train the agents it asks for (``agents.training.run``, the code of train.py,
once per training seed), then evaluate every scheduler x scenario x CC cell as one batch of
``runs`` connections. Training jobs and cells are tasks (``studies.tasks``): on Ray, ``workers``
at a time, on this machine or on a cluster (``agents.cluster``), or in this process (``workers=1``,
or a heuristics-only study on this machine). A cell whose scheduler cannot act in its scenario
(number of paths, feature set) is reported as n/a, one whose task failed (an exception, or its
worker died ``ray.max_retries + 1`` times) as failed, and the others still run."""

from __future__ import annotations

import time
import warnings
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from agents import checkpoint, cluster
from agents.diagnostics import BLOCKED_ACTIONS, pool_seeds
from agents.tracking import mlflow_key
from envs import compilation, config
from envs.errors import ConfigError
from envs.evaluation import EVAL_SEED_OFFSET, evaluate_heuristic
from envs.metrics import metric_names
from envs.multipath_env import build_process
from envs.scenario import Scenario
from envs.sim.simulator import SimConfig
from studies import report, spec, tasks
from studies.spec import HEURISTIC, TRAIN, Entry, Study
from studies.tasks import Backend, Task

CellKey = tuple[str, str, str]  # (scheduler label, scenario name, cc)


def run_study(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    """Validate, train, evaluate, write the report into ``out_dir`` and log it to MLflow (one run
    per study). Returns the study, its cell results and the written files."""
    study = spec.from_config(cfg, out_dir)  # every name and checkpoint checked before any work
    if tasks.use_ray(study.workers, study.ray, heavy=bool(study.learned)):
        cluster.probe(study.ray)  # before any work (a study on this machine never asks the cluster)
    out_dir.mkdir(parents=True, exist_ok=True)
    import mlflow

    from agents import tracking
    # the store is created (under its lock) before the workers; a server that does not answer fails fast
    tracking.open_store(study.mlflow.get("tracking_uri"), study.mlflow["experiment"])
    start = time.perf_counter()
    if not compilation.cached():  # once here, not in every worker at the same time
        compilation.prepare(lambda: build_process(1, scenario=study.scenarios[0], cc=next(iter(study.ccs)),
                                                  seed=study.seed, cc_params=study.ccs))
    with backend(study) as tasks_backend:
        train_runs = train_agents(study, tasks_backend)
        results = evaluate_cells(study, tasks_backend)
        cells_headroom = search_headroom(study, tasks_backend) if study.headroom else None
    if cells_headroom:
        check_rewards(study, results, cells_headroom)
    elapsed = time.perf_counter() - start
    failed = {key: r["error"] for key, r in results.items() if r.get("failed")}
    files = report.write(study, results, out_dir, cells_headroom)
    with mlflow.start_run(run_name=f"study-{study.name}") as active:
        mlflow.log_params({"study": study.name, "metric": study.metric, "runs": study.runs, "seed": study.seed,
                           "seeds": study.seeds, "workers": study.workers, "backend": tasks_backend.name,
                           "schedulers": ",".join(e.label for e in study.schedulers)[:500],
                           "scenarios": ",".join(s.name for s in study.scenarios)[:500],
                           "ccs": ",".join(study.ccs)[:500], "stack": study.sim.stack})
        mlflow.set_tags({mlflow_key(f"train_run/{label}"): run_id
                         for label, run_id in train_runs.items() if run_id})
        mlflow.log_metrics({"wall_s": elapsed, "failed_cells": len(failed), **report.mlflow_metrics(study, results)})
        for path in files.values():
            mlflow.log_artifact(str(path))
        run_id = active.info.run_id
    return {"study": study, "results": results, "files": files, "run_id": run_id, "wall_s": elapsed,
            "tracking_uri": mlflow.get_tracking_uri(), "failed": failed}


def backend(study: Study) -> AbstractContextManager[Backend]:
    """Where the study's tasks run (``studies.tasks.backend``): learned agents make it heavy work."""
    return tasks.backend(study.workers, study.ray, heavy=bool(study.learned))


# ---------------------------------------------------------------------------------- training
def train_agents(study: Study, backend: Backend) -> dict[str, str | None]:
    """Train every seed of every TRAIN entry whose checkpoint is not there yet (as tasks side by
    side); returns the MLflow run id of each trained agent (``label``, or ``label/seed<k>`` with
    several seeds). A learner with a seed that failed to train is reported failed in all its cells."""
    import mlflow

    todo = []
    for entry in study.schedulers:
        if entry.kind != TRAIN:
            continue
        for seed, yaml, ckpt in zip(entry.seeds, entry.train_yamls, entry.checkpoints):
            name = entry.label if len(entry.seeds) == 1 else f"{entry.label} seed {seed}"
            done = Path(ckpt) / "meta.json"
            if done.is_file() and checkpoint.read_meta(done.parent).get("finished"):
                tasks.say(f"[study] {name}: reusing {ckpt}")
            else:
                tasks.say(f"[study] training {name}: train.py {' '.join(entry.train)}"
                          + (f" seed={seed}" if len(entry.seeds) > 1 else ""))
                todo.append(Task((entry.label, seed), train_one,
                                 (yaml, str(Path(ckpt).parent), mlflow.get_tracking_uri())))
    by_label = {e.label: e for e in study.schedulers}
    for outcome in tasks.run(backend, todo, "training"):
        if outcome.error is not None:  # reported in the entry's cells; the rest of the study goes on
            label, seed = outcome.key
            entry = by_label[label]
            where = f" (seed {seed})" if len(entry.seeds) > 1 else ""
            entry.error = "; ".join(filter(None, [entry.error, f"training failed{where}: {outcome.error}"]))
            tasks.say(f"[study] {label}: {entry.error}")
    out = {}
    for entry in study.learned:
        for i, (seed, ckpt) in enumerate(zip(entry.seeds, entry.checkpoints)):
            if not Path(ckpt, "meta.json").is_file():
                continue
            meta = checkpoint.read_meta(Path(ckpt))
            if i == 0:
                entry.meta = meta
            out[entry.label if len(entry.seeds) == 1 else f"{entry.label}/seed{seed}"] = meta.get("mlflow_run_id")
    return out


def train_one(train_yaml: str, out_dir: str, tracking_uri: str) -> str:
    """train.py's run as a task, into the study's MLflow store unless its config names one;
    returns the checkpoint directory."""
    import mlflow

    from agents.training import run
    mlflow.set_tracking_uri(tracking_uri)
    cfg = OmegaConf.create(train_yaml)
    assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
    result = run(cfg, Path(out_dir))
    return str(result["checkpoint"])


# ---------------------------------------------------------------------------------- evaluation
def evaluate_cells(study: Study, backend: Backend) -> dict[CellKey, dict[str, Any]]:
    """Every cell's per-run metrics (``metrics``; with several training seeds also each seed's
    mean, ``seed_means``) or the reason it has none (``error``; ``failed`` when its task raised or
    its worker died, not because the scheduler cannot act there), in the study's order."""
    seed = study.seed + EVAL_SEED_OFFSET  # all schedulers of a cell see the same seeds
    keys: list[CellKey] = []
    parts: dict[CellKey, dict[int, dict[str, Any]]] = {}
    todo = []
    for entry in study.schedulers:
        for scen in study.scenarios:
            for cc in study.ccs:
                key = (entry.label, scen.name, cc)
                keys.append(key)
                if entry.error:
                    parts[key] = {0: {"metrics": {}, "error": entry.error, "failed": True}}  # training failed
                    continue
                parts[key] = {}
                for i in range(max(1, len(entry.checkpoints))):
                    todo.append(Task((key, i), evaluate_cell,
                                     (entry, scen, cc, study.ccs, study.runs, seed, study.sim, i)))
    entries = {e.label: e for e in study.schedulers}
    for outcome in tasks.run(backend, todo, "cells"):
        key, i = outcome.key
        parts[key][i] = outcome.value if outcome.error is None else {"metrics": {}, "error": outcome.error,
                                                                     "failed": True}
        seeds = entries[key[0]].seeds
        if len(parts[key]) == max(1, len(seeds)):
            parts[key] = {0: merge_seeds(parts[key], seeds)}
            tasks.say(f"[study] {' / '.join(key)}: {_outcome(parts[key][0], study.metric)}")
    return {key: parts[key][0] for key in keys}


def _outcome(r: dict[str, Any], metric: str) -> str:
    note = f" ({r['error']})" if r["error"] else ""
    if metric in r["metrics"]:
        return f"{np.nanmean(r['metrics'][metric]):.3f} {metric}{note}"
    return ("failed" if r.get("failed") else "n/a") + note


def merge_seeds(per_seed: dict[int, dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """One cell from its cells per training seed (keyed by the index into ``seeds``): the runs of
    the seeds that ran side by side in ``metrics``, each one's mean in ``seed_means`` (what a
    report's CI is taken over), the errors of the others, naming their seed, and a learned policy's
    diagnostics pooled over the seeds with each seed's own flags (``agents.diagnostics.pool_seeds``)."""
    if len(per_seed) == 1:
        return next(iter(per_seed.values()))
    ok = [per_seed[i] for i in sorted(per_seed) if not per_seed[i]["error"]]
    errors = [f"seed {seeds[i]}: {per_seed[i]['error']}" for i in sorted(per_seed) if per_seed[i]["error"]]
    names = [m for m in (ok[0]["metrics"] if ok else {}) if all(m in r["metrics"] for r in ok)]
    diags = {seeds[i]: per_seed[i]["diagnostics"] for i in sorted(per_seed)
             if not per_seed[i]["error"] and per_seed[i].get("diagnostics") is not None}
    with warnings.catch_warnings():  # a metric a seed has no value of (NaN runs) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return {"metrics": {m: np.concatenate([r["metrics"][m] for r in ok]) for m in names},
                "seed_means": {m: np.array([np.nanmean(r["metrics"][m]) for r in ok]) for m in names},
                "seeds": len(ok),
                "error": "; ".join(errors) or None,
                "failed": any(r.get("failed") for r in per_seed.values()),
                "seconds": sum(r.get("seconds", 0.0) for r in per_seed.values()),
                "diagnostics": pool_seeds(diags) if diags else None}  # pooled, and each seed flagged on its own


def search_headroom(study: Study, backend: Backend) -> list[Any]:
    """``studies.headroom.search`` in every scenario x CC cell, as tasks; a cell whose search
    failed is said and left out of the headroom report."""
    todo = [Task((scen.name, cc), _search_cell, (scen, cc, study.runs, study.seed, study.metric, study.sim,
                                                 study.ccs.get(cc), study.headroom))
            for scen in study.scenarios for cc in study.ccs]
    found = {}
    for outcome in tasks.run(backend, todo, "headroom"):
        if outcome.error is not None:
            tasks.say(f"[study] headroom {' / '.join(outcome.key)}: failed ({outcome.error})")
            continue
        h = found[outcome.key] = outcome.value
        tasks.say(f"[study] headroom {h.scenario} / {h.cc}: {100 * h.headroom:+.1f}% over minRTT ({h.best.label})")
    return [found[key] for key in ((scen.name, cc) for scen in study.scenarios for cc in study.ccs) if key in found]


def check_rewards(study: Study, results: dict[CellKey, dict[str, Any]], cells: list[Any]) -> None:
    """For every learner cell whose policy (pooled over its seeds) is a clone at the blocked
    decision: the return of each heuristic it copies and of the cell's best blocked-decision
    policy under the learner's own reward and environment, on the held-out seeds
    (``studies.headroom.reward_returns``), kept as the cell's ``reward_check``."""
    from studies.headroom import blocked_member, reward_returns

    found = {(h.scenario, h.cc): h for h in cells}
    for entry in study.learned:
        env: dict[str, Any] | None = None
        for scen in study.scenarios:
            for cc in study.ccs:
                r, h = results.get((entry.label, scen.name, cc)), found.get((scen.name, cc))
                d = r.get("diagnostics") if r else None
                if r is None or d is None or not d.clone_of or d.action_names != BLOCKED_ACTIONS or h is None \
                        or h.blocked_best is None or not entry.checkpoints:
                    continue
                if env is None:
                    cfg = OmegaConf.load(Path(entry.checkpoints[0]) / checkpoint.CONFIG)
                    assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
                    env = config.env_kwargs(cfg.env)
                members = {c.label: c for c in [*map(blocked_member, d.clone_of), h.blocked_best]}
                r["reward_check"] = reward_returns(list(members.values()), scen, cc, study.runs,
                                                   study.seed + EVAL_SEED_OFFSET, env, study.ccs)


def _search_cell(scen: Scenario, cc: str, runs: int, seed: int, metric: str, sim: SimConfig,
                 cc_params: dict[str, float] | None, options: dict[str, int]) -> Any:
    """One cell's headroom search, as a task (``studies.headroom.search``)."""
    from studies.headroom import search
    return search(scen, cc, runs=runs, seed=seed, metric=metric, sim=sim, cc_params=cc_params,
                  search_runs=options["search_runs"], samples=options["samples"])


def evaluate_cell(entry: Entry, scenario: Scenario, cc: str, ccs: dict[str, dict[str, float]], runs: int,
                  seed: int, sim: SimConfig, which: int = 0) -> dict[str, Any]:
    """One cell (of a learner: with its ``which``-th training seed's checkpoint), as a task:
    per-run values of every reported metric (and, for a learned policy, its ``diagnostics``:
    ``agents.diagnostics``), or the error that kept the scheduler from acting here (a checkpoint
    made for another number of paths or feature set)."""
    start = time.perf_counter()
    try:
        if entry.kind == HEURISTIC:
            per_run = evaluate_heuristic(scenario, cc, entry.scheduler, runs, seed, sim, ccs.get(cc),
                                         entry.params)
            diagnostics = None
        else:
            per_run, diagnostics = _evaluate_checkpoint(entry.checkpoints[which], scenario, cc, ccs, runs, seed, sim)
    except ConfigError as err:
        return {"metrics": {}, "error": str(err), "seconds": time.perf_counter() - start}
    metrics = {k: np.asarray(per_run[k], dtype=float) for k in metric_names(scenario.workload) if k in per_run}
    return {"metrics": metrics, "error": None, "seconds": time.perf_counter() - start, "diagnostics": diagnostics}


_LOADED: dict[str, tuple] = {}  # checkpoint directory -> (agent, meta, setup), per worker process


# what a checkpoint is evaluated in that is the study's, not the checkpoint's: the simulated network
# (envs.schema.EnvConfig's SimConfig fields); its observation, decision and reward stay its own
SIM_SETTINGS = ("dt_ms", "mss", "max_duration_s", "ooo_limit_bytes", "end_on_ooo", "record_bin_ms", "stack")


def _evaluate_checkpoint(directory: str, scenario: Scenario, cc: str, ccs: dict[str, dict[str, float]],
                         runs: int, seed: int, sim: SimConfig) -> tuple[dict[str, np.ndarray], Any]:
    """A checkpoint's cell, run in the study's simulator (``SIM_SETTINGS``: a policy trained under
    one stack profile is measured under the study's, beside the heuristics of the same cell)."""
    from agents.training import apply_runtime, evaluate_policy, interface, setup

    if directory not in _LOADED:
        agent, meta = checkpoint.load(Path(directory))
        cfg = OmegaConf.load(Path(directory) / checkpoint.CONFIG)
        assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
        s = setup(cfg, Path(directory).parent)
        apply_runtime(s)
        _LOADED[directory] = (agent, meta, s)
    agent, meta, s = _LOADED[directory]
    s = replace(s, ccs=ccs, env_kwargs={**s.env_kwargs, **{k: getattr(sim, k) for k in SIM_SETTINGS}})
    probe = build_process(1, scenario=scenario, cc=cc, seed=seed, cc_params=ccs, **s.env_kwargs)
    checkpoint.check_compatible(meta, interface(s, probe, [scenario]), directory)
    return evaluate_policy(agent, s, scenario, cc, runs, seed)
