"""Run a study: train the agents it asks for (``agents.training.run``, the code of train.py),
then evaluate every scheduler x scenario x CC cell as one batch of ``runs`` connections, cells
spread over a process pool (``workers``, default both cores). A cell whose scheduler cannot act
in its scenario (number of paths, feature set) is reported and the others still run."""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from agents import checkpoint
from envs.errors import ConfigError
from envs.evaluation import EVAL_SEED_OFFSET, evaluate_heuristic
from envs.metrics import metric_names
from envs.scenario import Scenario
from envs.sim.simulator import SimConfig
from studies import report, spec
from studies.spec import HEURISTIC, TRAIN, Entry, Study

CellKey = tuple[str, str, str]  # (scheduler label, scenario name, cc)


def run_study(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    """Validate, train, evaluate, write the report into ``out_dir`` and log it to MLflow (one run
    per study). Returns the study, its cell results and the written files."""
    study = spec.from_config(cfg, out_dir)  # every name and checkpoint checked before any work
    out_dir.mkdir(parents=True, exist_ok=True)
    import mlflow
    if study.mlflow.get("tracking_uri"):
        mlflow.set_tracking_uri(study.mlflow["tracking_uri"])
    mlflow.set_experiment(study.mlflow.get("experiment") or "mpsched")  # create the store before the workers
    start = time.perf_counter()
    with _pool(study.workers) as pool:
        train_runs = train_agents(study, pool)
        results = evaluate_cells(study, pool)
        cells_headroom = search_headroom(study, pool) if study.headroom else None
    elapsed = time.perf_counter() - start
    files = report.write(study, results, out_dir, cells_headroom)
    with mlflow.start_run(run_name=f"study-{study.name}") as active:
        mlflow.log_params({"study": study.name, "metric": study.metric, "runs": study.runs, "seed": study.seed,
                           "schedulers": ",".join(e.label for e in study.schedulers)[:500],
                           "scenarios": ",".join(s.name for s in study.scenarios)[:500],
                           "ccs": ",".join(study.ccs)[:500]})
        mlflow.set_tags({report.mlflow_key(f"train_run/{label}"): run_id
                         for label, run_id in train_runs.items() if run_id})
        mlflow.log_metrics({"wall_s": elapsed, **report.mlflow_metrics(study, results)})
        for path in files.values():
            mlflow.log_artifact(str(path))
        run_id = active.info.run_id
    return {"study": study, "results": results, "files": files, "run_id": run_id, "wall_s": elapsed,
            "tracking_uri": mlflow.get_tracking_uri()}


def _pool(workers: int) -> Executor:
    # spawn: workers start clean (no copy of a parent that loaded torch); numba's on-disk cache
    # makes their first simulator call cheap
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- training
def train_agents(study: Study, pool: Executor) -> dict[str, str | None]:
    """Train every TRAIN entry whose checkpoint is not there yet (side by side in the pool);
    returns the MLflow run id of each trained agent."""
    todo = {}
    for entry in study.schedulers:
        if entry.kind != TRAIN:
            continue
        done = Path(entry.checkpoint) / "meta.json"
        if done.is_file() and checkpoint.read_meta(done.parent).get("finished"):
            _say(f"[study] {entry.label}: reusing {entry.checkpoint}")
        else:
            _say(f"[study] training {entry.label}: train.py {' '.join(entry.train)}")
            todo[pool.submit(train_one, entry.train_yaml, str(Path(entry.checkpoint).parent))] = entry
    for fut in as_completed(todo):
        entry = todo[fut]
        try:
            fut.result()
        except Exception as err:  # reported in the entry's cells; the rest of the study goes on
            entry.error = f"training failed: {type(err).__name__}: {err}"
            _say(f"[study] {entry.label}: {entry.error}")
    out = {}
    for entry in study.learned:
        if Path(entry.checkpoint, "meta.json").is_file():
            entry.meta = checkpoint.read_meta(Path(entry.checkpoint))
        out[entry.label] = entry.meta.get("mlflow_run_id")
    return out


def train_one(train_yaml: str, out_dir: str) -> str:
    """train.py's run in a worker process; returns the checkpoint directory."""
    from agents.training import run
    cfg = OmegaConf.create(train_yaml)
    assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
    result = run(cfg, Path(out_dir))
    return str(result["checkpoint"])


# ---------------------------------------------------------------------------------- evaluation
def evaluate_cells(study: Study, pool: Executor) -> dict[CellKey, dict[str, Any]]:
    """Every cell's per-run metrics (``metrics``) or the reason it could not run (``error``)."""
    seed = study.seed + EVAL_SEED_OFFSET  # all schedulers of a cell see the same seeds
    results: dict[CellKey, dict[str, Any]] = {}
    futures = {}
    for entry in study.schedulers:
        for scen in study.scenarios:
            for cc in study.ccs:
                key = (entry.label, scen.name, cc)
                if entry.error:
                    results[key] = {"metrics": {}, "error": entry.error}
                    continue
                futures[pool.submit(evaluate_cell, entry, scen, cc, study.ccs, study.runs, seed, study.sim)] = key
    for i, fut in enumerate(as_completed(futures), 1):
        key = futures[fut]
        results[key] = fut.result()
        err = results[key]["error"]
        _say(f"[study] {i}/{len(futures)} {' / '.join(key)}: "
             + (f"n/a ({err})" if err else f"{np.nanmean(results[key]['metrics'][study.metric]):.3f} {study.metric}"))
    return results


def search_headroom(study: Study, pool: Executor) -> list[Any]:
    """``studies.headroom.search`` in every scenario x CC cell (side by side in the pool)."""
    from studies.headroom import search
    futures = [pool.submit(search, scen, cc, runs=study.runs, seed=study.seed, metric=study.metric, sim=study.sim,
                           cc_params=study.ccs.get(cc), **study.headroom)
               for scen in study.scenarios for cc in study.ccs]
    out = [f.result() for f in futures]
    for h in out:
        _say(f"[study] headroom {h.scenario} / {h.cc}: {100 * h.headroom:+.1f}% over minRTT ({h.best.label})")
    return out


def evaluate_cell(entry: Entry, scenario: Scenario, cc: str, ccs: dict[str, dict[str, float]], runs: int,
                  seed: int, sim: SimConfig) -> dict[str, Any]:
    """One cell, in a worker: per-run values of every reported metric (and, for a learned policy,
    its ``diagnostics``: ``agents.diagnostics``), or the error that kept the scheduler from acting
    here (a checkpoint made for another number of paths or feature set)."""
    start = time.perf_counter()
    try:
        if entry.kind == HEURISTIC:
            per_run = evaluate_heuristic(scenario, cc, entry.scheduler, runs, seed, sim, ccs.get(cc),
                                         entry.params)
            diagnostics = None
        else:
            per_run, diagnostics = _evaluate_checkpoint(entry.checkpoint, scenario, cc, ccs, runs, seed)
    except ConfigError as err:
        return {"metrics": {}, "error": str(err), "seconds": time.perf_counter() - start}
    metrics = {k: np.asarray(per_run[k], dtype=float) for k in metric_names(scenario.workload) if k in per_run}
    return {"metrics": metrics, "error": None, "seconds": time.perf_counter() - start, "diagnostics": diagnostics}


_LOADED: dict[str, tuple] = {}  # checkpoint directory -> (agent, meta, setup), per worker process


def _evaluate_checkpoint(directory: str, scenario: Scenario, cc: str, ccs: dict[str, dict[str, float]],
                         runs: int, seed: int) -> tuple[dict[str, np.ndarray], Any]:
    from agents.training import apply_runtime, evaluate_policy, interface, setup
    from envs.multipath_env import build_process

    if directory not in _LOADED:
        agent, meta = checkpoint.load(Path(directory))
        cfg = OmegaConf.load(Path(directory) / checkpoint.CONFIG)
        assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
        s = setup(cfg, Path(directory).parent)
        apply_runtime(s)
        _LOADED[directory] = (agent, meta, s)
    agent, meta, s = _LOADED[directory]
    s = replace(s, ccs=ccs)
    probe = build_process(1, scenario=scenario, cc=cc, seed=seed, cc_params=ccs, **s.env_kwargs)
    checkpoint.check_compatible(meta, interface(s, probe, [scenario]), directory)
    return evaluate_policy(agent, s, scenario, cc, runs, seed)
