"""Live evaluation and the sim-versus-live comparison, with the simulator's metrics and summaries
(``envs.metrics``, ``envs.evaluation.summary``).

``evaluate_live`` runs ``runs`` transfers of a scenario's workload on one verified testbed (a
distribution: one testbed per run, each drawn with the run's seed) and returns per-run metrics in
the simulator's format. ``compare`` runs the simulator (with minRTT, the heuristic closest to the
kernel's default MPTCP scheduler, or the requested scheduler) and the live backend on the same
scenario and CC; a backend that schedules itself (``xquic``) runs the same scheduler as the
simulator.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from envs.evaluation import REPORTED, evaluate_heuristic, summary
from envs.live.backends import get_backend
from envs.live.mptcp import MptcpFallback
from envs.live.system import LiveError
from envs.live.network_testbed import make_testbed
from envs.live.testbed import Testbed
from envs.live.verification import start_verified
from envs.scenario import Scenario
from envs.schema import LiveOptions  # configs/live: fields, defaults, ranges
from envs.sim.simulator import SimConfig


@dataclass
class LiveRun:
    """What ``evaluate_live`` did besides the metrics."""

    backend: str = ""
    emulation: str = ""
    testbeds: list[str] = field(default_factory=list)
    verifications: list = field(default_factory=list)
    timings: list[dict] = field(default_factory=list)  # per testbed: build, verify, teardown
    transfer_wall_s: list[float] = field(default_factory=list)
    retried: int = 0
    results: list = field(default_factory=list)  # TransferResult per run
    wall_s: float = 0.0


def _stack(per_run: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([m[k] for m in per_run], axis=0) for k in per_run[0]}


def live_scheduler(opts: LiveOptions, scheduler: str, params: Mapping[str, object] | None = None) -> str | None:
    """What the live backend schedules with: None for the kernel's own (mptcp); for xquic the
    scheduler name, or ``policy=<header>`` for ``scheduler=policy`` with ``live.policy``, checked
    with its parameters ``params`` (``scheduler_params``; the kernel's scheduler takes none)."""
    backend = get_backend(opts.backend)
    if not backend.controls_scheduler:
        if params:
            raise LiveError(f"live.backend={opts.backend} runs the kernel's own scheduler, whose parameters cannot "
                            f"be set (got scheduler_params: {', '.join(sorted(params))})")
        return None
    if scheduler == "policy":
        if not opts.policy:
            raise LiveError("scheduler=policy needs live.policy=<exported header> (python -m export)")
        scheduler = f"policy={opts.policy}"
    backend.check_scheduler(scheduler, params)
    return scheduler


def run_transfer(backend, testbed: Testbed, cc: str, workload, opts: LiveOptions,
                 scheduler_kw: dict | None = None) -> tuple:
    """One transfer of ``workload`` on a started testbed: (its result, how many times it was
    retried because the MPTCP connection fell back to plain TCP, at most ``opts.retries``)."""
    retried = 0
    for attempt in range(opts.retries + 1):
        transfer = backend.transfer(testbed, cc, workload, opts.telemetry_ms, **(scheduler_kw or {}))
        try:
            transfer.start()
            transfer.wait()
            result = transfer.result()
        except MptcpFallback:
            transfer.stop()
            retried += 1
            continue
        except BaseException:
            transfer.stop()
            raise
        if result.error and "fell back" in result.error and attempt < opts.retries:
            retried += 1
            continue
        return result, retried
    raise LiveError(f"the MPTCP connection fell back to plain TCP {opts.retries + 1} times")


def evaluate_live(scenario: Scenario, cc: str, runs: int, seed: int = 0, options: LiveOptions | None = None,
                  progress: Callable[[str], None] | None = None,
                  scheduler: str = "minrtt",
                  on_run: Callable[[int, dict[str, np.ndarray]], None] | None = None,
                  scheduler_params: Mapping[str, object] | None = None
                  ) -> tuple[dict[str, np.ndarray], LiveRun]:
    """Per-run metrics (arrays of length ``runs``, as ``evaluate_heuristic``) of live transfers;
    ``scheduler`` and its ``scheduler_params`` (as the simulator's: KATO's alpha, ECF's beta,
    BLEST's lambdas) are used by backends that schedule themselves (xquic). ``on_run(run,
    metrics)`` sees each run's metrics as soon as it ends (to keep them whatever happens next)."""
    opts = options or LiveOptions()
    backend = get_backend(opts.backend)
    sched = live_scheduler(opts, scheduler, scheduler_params)
    backend.check(cc)  # a CC the transport lacks is refused before anything is built
    sched_kw = {} if sched is None else {"scheduler": sched, "scheduler_params": dict(scheduler_params or {})}
    if not isinstance(runs, int) or runs < 1:
        raise LiveError(f"runs must be an integer >= 1, got {runs!r}")
    info = LiveRun(backend=opts.backend)
    t_start = time.monotonic()
    per_run: list[dict[str, np.ndarray]] = []
    testbed: Testbed | None = None

    def report_attempt(attempt: int, err: Exception) -> None:
        if progress:
            progress(f"verification attempt {attempt} of {opts.verify_attempts} failed: {str(err).splitlines()[0]}")

    try:
        for run in range(runs):
            concrete = scenario
            if scenario.is_distribution:
                concrete = scenario.sample(np.random.default_rng([seed, run]))
            if testbed is None or scenario.is_distribution:
                if testbed is not None:
                    testbed.close()
                    info.timings.append(dict(testbed.timings))
                testbed = start_verified(
                    partial(make_testbed, concrete, emulation=opts.emulation, seed=seed + run, mss=opts.mss,
                            verify=opts.verify),
                    opts.verify_attempts if opts.verify else 1, on_failure=report_attempt)
                info.emulation = testbed.emulation_mode
                info.testbeds.append(testbed.describe())
                if testbed.verification is not None:
                    info.verifications.append(testbed.verification)
                    if progress:
                        progress(testbed.verification.table())
            elif opts.verify and opts.verify_every_run:
                info.verifications.append(testbed.verify())
            try:
                result, retried = run_transfer(backend, testbed, cc, concrete.workload, opts, sched_kw)
            except LiveError as err:
                raise LiveError(f"run {run}: {err}") from None
            info.retried += retried
            if result.error:
                raise LiveError(f"run {run}: {result.error}")
            info.results.append(result)
            info.transfer_wall_s.append(result.wall_s)
            per_run.append(result.metrics())
            if on_run:
                on_run(run, per_run[-1])
            if progress:
                g = per_run[-1]["goodput_mbps"][0]
                outcome = result.extra.get("outcome")
                progress(f"run {run}: goodput {g:.2f} Mbit/s, paths "
                         + ", ".join(f"{x:.2f}" for x in per_run[-1]["per_path_goodput_mbps"][0])
                         + (f" ({outcome})" if outcome not in (None, "finished") else ""))
    finally:
        if testbed is not None:
            problems = testbed.close()
            info.timings.append(dict(testbed.timings))
            if problems:
                raise LiveError(f"teardown left: {', '.join(problems)}")
    info.wall_s = time.monotonic() - t_start
    return _stack(per_run), info


# --------------------------------------------------------------------------- comparison

COMPARED = (("goodput_mbps", "goodput Mbit/s", 1.0), ("completion_s", "completion s", 1.0),
            ("mean_rtt_ms", "mean RTT ms", 1.0), ("loss_rate", "loss %", 100.0))


def relative_error(sim: float, live: float) -> float:
    """(sim - live) / live: how far the simulator is from the live measurement."""
    if live is None or sim is None or not math.isfinite(live) or not math.isfinite(sim) or live == 0:
        return math.nan
    return (sim - live) / abs(live)


def compare_rows(sim_stats: dict, live_stats: dict) -> list[tuple[str, float, float, float, float, float]]:
    """(label, sim mean, sim ci, live mean, live ci, relative error) per compared quantity,
    including each path's goodput and share of the total."""
    rows = []
    for key, label, scale in COMPARED:
        s, l = sim_stats[key], live_stats[key]
        rows.append((label, s["mean"] * scale, s["ci95"] * scale, l["mean"] * scale, l["ci95"] * scale,
                     relative_error(s["mean"], l["mean"])))
    sp, lp = sim_stats["per_path_goodput_mbps"], live_stats["per_path_goodput_mbps"]
    for i, (s, l) in enumerate(zip(sp["mean"], lp["mean"])):
        rows.append((f"path {i + 1} goodput Mbit/s", s, sp["ci95"][i], l, lp["ci95"][i], relative_error(s, l)))
    s_tot, l_tot = sum(sp["mean"]), sum(lp["mean"])
    for i, (s, l) in enumerate(zip(sp["mean"], lp["mean"])):
        ss, ls = 100 * s / s_tot if s_tot else math.nan, 100 * l / l_tot if l_tot else math.nan
        rows.append((f"path {i + 1} share %", ss, math.nan, ls, math.nan, relative_error(ss, ls)))
    return rows


def compare_table(header: dict, sim_stats: dict, live_stats: dict) -> str:
    title = ", ".join(f"{k}={v}" for k, v in header.items())
    lines = [title, f"{'':24s} | {'sim':>17s} | {'live':>17s} | rel. error (sim-live)/live"]

    def cell(mean: float, ci: float) -> str:
        if mean is None or not math.isfinite(mean):
            return f"{'n/a':>17s}"
        return f"{mean:9.2f} ± {ci:5.2f}" if ci is not None and math.isfinite(ci) else f"{mean:17.2f}"

    for label, sm, sc, lm, lc, err in compare_rows(sim_stats, live_stats):
        e = f"{100 * err:+.1f} %" if math.isfinite(err) else "n/a"
        lines.append(f"{label:24s} | {cell(sm, sc)} | {cell(lm, lc)} | {e}")
    return "\n".join(lines)


def compare(scenario: Scenario, cc: str, runs: int, seed: int = 0, sim_config: SimConfig | None = None,
            cc_params: dict | None = None, scheduler: str = "minrtt", options: LiveOptions | None = None,
            progress: Callable[[str], None] | None = None,
            on_run: Callable[[int, dict[str, np.ndarray]], None] | None = None,
            scheduler_params: Mapping[str, object] | None = None) -> tuple[dict, dict, LiveRun]:
    """Summaries (``envs.evaluation.summary``) of the simulator and of the live backend, both
    running ``scheduler`` with ``scheduler_params`` (``on_run`` as in ``evaluate_live``)."""
    opts = options or LiveOptions()
    live_scheduler(opts, scheduler, scheduler_params)
    get_backend(opts.backend).check(cc)  # before spending time on the simulator
    sim = summary(evaluate_heuristic(scenario, cc, scheduler, runs, seed, sim_config, cc_params,
                                     dict(scheduler_params or {}) or None))
    live_per_run, info = evaluate_live(scenario, cc, runs, seed, opts, progress, scheduler, on_run,
                                       scheduler_params)
    return sim, summary(live_per_run), info


__all__ = ["LiveOptions", "LiveRun", "REPORTED", "compare", "compare_rows", "compare_table", "evaluate_live",
           "live_scheduler", "relative_error", "run_transfer"]
