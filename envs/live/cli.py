"""``evaluate.py backend=live ...`` and ``evaluate.py compare=[sim,live] ...``: the command-line side
of live runs, kept here so that ``evaluate.py`` stays a thin dispatcher.

``configs/evaluate.yaml`` declares ``backend`` (sim | live), ``compare``, ``transport`` (short for
``live.backend``) and the live options ``live.*`` (``configs/live/default.yaml``, schema
``envs.schema.LiveOptions``). The live backend fixes the stack: the simulator side of ``compare``
imitates ``xquic`` for ``live.backend=xquic`` and ``linux`` for ``mptcp`` (``envs/sim/stacks.py``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from envs import config
from envs.errors import ConfigError, Interrupted
from envs.evaluation import dumps, summary, to_table
from envs.live.backends import get_backend
from envs.live.evaluation import LiveOptions, compare, compare_rows, compare_table, evaluate_live
from envs.sim import stacks


def wants_live(cfg: DictConfig) -> bool:
    return cfg.backend != "sim" or bool(cfg.compare)


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class RunLog:
    """Each live run's metrics, one JSON line in ``runs.jsonl`` of the output directory as soon
    as the run ends: measured runs survive a crash or Ctrl-C in what follows."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "runs.jsonl"
        self.done = 0

    def __call__(self, run: int, metrics: dict[str, np.ndarray]) -> None:
        with self.path.open("a") as f:
            f.write(dumps({"run": run, **{k: v[0] for k, v in metrics.items()}}) + "\n")
        self.done += 1


def run(cfg: DictConfig) -> None:
    """Run ``backend=live`` or ``compare=...`` from a composed evaluate config; prints the result.
    Bad input raises ConfigError (evaluate.py prints it); Ctrl-C tears the testbed down and says
    where the finished runs are."""
    runs_log = RunLog(Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else Path.cwd())
    try:
        _run(cfg, runs_log)
    except KeyboardInterrupt:
        raise Interrupted(f"{runs_log.done} of {cfg.runs} live runs finished"
                          + (f", their metrics are in {runs_log.path}" if runs_log.done else "")
                          + "; the testbed was torn down") from None


def _stack(cfg: DictConfig, backend: str) -> str:
    """The stack the simulator side imitates: the live backend's (xquic: xquic, mptcp: linux). A
    ``stack=`` / ``env.stack=`` given on the command line that names another is refused."""
    stack = stacks.BACKEND_STACK[backend]
    given = [o.split("=", 1)[1] for o in (HydraConfig.get().overrides.task if HydraConfig.initialized() else [])
             if o.split("=", 1)[0].lstrip("+") in ("stack", "env.stack")]
    if given and given[-1] != stack:
        raise ConfigError(f"stack={given[-1]} and live.backend={backend} disagree: live runs on {backend} are "
                          f"stack {stack} (the simulator side of compare takes the live backend's stack); "
                          "give one of them")
    return stack


def _run(cfg: DictConfig, runs_log: RunLog) -> None:
    scen, cc, cc_params = config.evaluation_request(cfg)
    opts = LiveOptions.from_mapping(config.plain(cfg.get("live")))
    transport = cfg.get("transport")
    if transport:
        if transport != opts.backend and cfg.live.backend != LiveOptions.backend:
            raise ConfigError(f"transport={transport} and live.backend={opts.backend} disagree; give one of them")
        opts = dataclasses.replace(opts, backend=transport)
    stack = _stack(cfg, opts.backend)
    if cc_params:
        raise ConfigError(f"live runs use {opts.backend}'s own {cc}, whose parameters cannot be set per run "
                          f"(got cc.{cc}.params: {', '.join(sorted(cc_params))})")
    own = get_backend(opts.backend).controls_scheduler
    live_sched = cfg.scheduler if own else "kernel default"
    sched_params = config.plain(cfg.scheduler_params) or None  # KATO's alpha, ECF's beta, ...: on both sides
    header = {"scenario": scen.name, "cc": cc, "runs": cfg.runs, "seed": cfg.seed,
              **({"scheduler_params": sched_params} if sched_params else {})}
    quiet = cfg.format == "json"
    compare_to = cfg.get("compare")
    if compare_to:
        wanted = sorted(config.plain(compare_to) if not isinstance(compare_to, str) else compare_to.split(","))
        if wanted != ["live", "sim"]:
            raise ConfigError(f"compare takes sim,live, got {','.join(wanted)}")
        sim_cfg = dataclasses.replace(config.sim_config(cfg.env), stack=stack)
        sim, live, info = compare(scen, cc, cfg.runs, cfg.seed, sim_cfg, cc_params,
                                  cfg.scheduler, opts, None if quiet else _progress, runs_log, sched_params)
        header |= {"sim_scheduler": cfg.scheduler, "sim_stack": stack, "live": f"{opts.backend} ({live_sched} scheduler)",
                   "emulation": info.emulation}
        if quiet:
            rows = [{"quantity": r[0], "sim": r[1], "live": r[3], "relative_error": r[5]}
                    for r in compare_rows(sim, live)]
            print(dumps({**header, "sim": sim, "live": live, "comparison": rows}))
        else:
            print(compare_table(header, sim, live))
        return
    per_run, info = evaluate_live(scen, cc, cfg.runs, cfg.seed, opts, None if quiet else _progress, cfg.scheduler,
                                  runs_log, sched_params)
    header |= {"backend": f"live/{opts.backend}", "stack": stack, "scheduler": live_sched,
               "emulation": info.emulation}
    stats = summary(per_run)
    if quiet:
        extra = {"verification": [[c.__dict__ | {"ok": c.ok} for c in v.checks] for v in info.verifications],
                 "timings": info.timings, "wall_s": info.wall_s}
        if own:
            extra["outcomes"] = [r.extra.get("outcome") for r in info.results]
        print(dumps({**header, **stats, **extra}))
    else:
        print(to_table(header, stats))
        print(f"wall time {info.wall_s:.1f} s (" + "; ".join(
            ", ".join(f"{k} {v:.2f} s" for k, v in t.items()) for t in info.timings) + ")")

