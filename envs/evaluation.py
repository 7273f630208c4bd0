"""Evaluate a heuristic scheduler on a scenario and CC over independent runs (one batch of the
compiled core), and present the metrics (``envs.metrics``) as a table or JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from envs.errors import out_of_range
from envs.metrics import capped, mean_ci
from envs.scenario import Scenario, scenario_from_dict
from envs.sim.simulator import SimConfig, Simulator

EVAL_SEED_OFFSET = 1_000_000  # evaluation episodes never reuse training seeds
MAX_BATCH = 2048  # connections simulated at once by evaluate_heuristic (about 0.2 MB each at 2 paths, 10 s)
REPORTED = ("goodput_mbps", "completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes")
"""What a table shows when no metric list is given (and what live runs compare)."""

# table heading, format and scale of each metric (envs.metrics.ALL_METRICS)
_COLUMNS = {
    "goodput_mbps": ("goodput Mbit/s", "{:.2f}", 1.0),
    "completion_s": ("completion s", "{:.3f}", 1.0),
    "mean_rtt_ms": ("mean RTT ms", "{:.1f}", 1.0),
    "loss_rate": ("loss %", "{:.2f}", 100.0),
    "reorder_max_bytes": ("max reorder KB", "{:.1f}", 1e-3),
    "reorder_mean_bytes": ("mean reorder KB", "{:.1f}", 1e-3),
    "ooo_exceeded": ("ooo exceeded", "{:.0f}", 1.0),
    "reorder_p50_bytes": ("reorder p50 KB", "{:.1f}", 1e-3),
    "reorder_p90_bytes": ("reorder p90 KB", "{:.1f}", 1e-3),
    "reorder_p99_bytes": ("reorder p99 KB", "{:.1f}", 1e-3),
    "throughput_mean_mbps": ("thr mean Mbit/s", "{:.2f}", 1.0),
    "throughput_var_mbps2": ("thr var (Mbit/s)^2", "{:.2f}", 1.0),
    "aggregation_benefit": ("aggr. benefit", "{:.3f}", 1.0),
    "items_done": ("items done", "{:.0f}", 1.0),
    "download_time_s": ("download s", "{:.3f}", 1.0),
    "avg_bitrate_mbps": ("bitrate Mbit/s", "{:.2f}", 1.0),
    "rebuffer_s": ("rebuffer s", "{:.3f}", 1.0),
}


def evaluate_heuristic(scenario: Scenario, cc: str, scheduler: str, runs: int, seed: int = 0,
                       config: SimConfig | None = None, cc_params: dict | None = None,
                       scheduler_params: dict | None = None, window_s: float = 1.0) -> dict[str, np.ndarray]:
    """Per-run metrics (arrays of length ``runs``) of ``scheduler`` under ``cc``; more than
    ``MAX_BATCH`` runs are simulated ``MAX_BATCH`` at a time, each run as in one batch
    (``SimConfig.first_connection``), so that memory stays bounded."""
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise out_of_range("runs", runs, "an integer >= 1")
    config = config or SimConfig()
    parts = []
    for first in range(0, runs, MAX_BATCH):
        sim = Simulator(scenario, cc, scheduler=scheduler, batch=min(MAX_BATCH, runs - first), seed=seed,
                        config=replace(config, first_connection=config.first_connection + first),
                        cc_overrides={cc: cc_params} if cc_params else None, scheduler_overrides=scheduler_params)
        sim.reset()
        sim.run()
        parts.append(sim.results(window_s))
        del sim  # before the next chunk's state is made
    return parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# When the live harness's second flow starts, after its first (``envs.live.bottleneck.two_flow_queue``):
# kernel TCP flows connect first and start sending together (``BulkFlows``), an XQUIC connection starts
# once the one before it has finished its handshake (``XquicTransfer.start`` waits for it), so the
# second sends one connection setup and handshake later: 0.07-0.12 s in four live runs (50 Mbit/s,
# 40 ms RTT, load average 4-8; the difference of the two connections' handshake ends). Two flows of
# one CC started in the same step run in lockstep, which live flows never do; XQUIC's ProbeRTT
# (0.75 BDP at an inflated min_rtt) empties a standing queue only when both flows are in it at once
# (docs/transport.md, "Laws a faithful model reproduces").
SECOND_FLOW_START_S = {"xquic": 0.1, "linux": 0.0}


def shared_bottleneck(queue_bdp: float, competing_cc: str | None = None, *, bandwidth_mbps: float = 50.0,
                      delay_ms: float = 20.0, duration_s: float = 41.0, competing_start_s: float = 0.0) -> Scenario:
    """One loss-free, jitter-free path with a drop-tail buffer of ``queue_bdp``, bulk traffic; with
    ``competing_cc``, one competing flow of that CC shares the bottleneck with the connection's
    subflow from ``competing_start_s`` on: the two-flow setting of docs/transport.md's
    standing-queue laws (Scherrer et al., IMC 2022). The competing flow runs the connection's
    stack's CC constants (``stack: connection``): the live testbed runs its two flows itself
    (``envs.live.bottleneck``), two kernel TCP flows for Linux and two XQUIC connections for XQUIC."""
    path: dict[str, object] = {"bandwidth_mbps": bandwidth_mbps, "delay_ms": delay_ms, "jitter_ms": 0.0, "loss_pct": 0.0,
            "queue_bdp": queue_bdp}
    if competing_cc is not None:  # a second connection of the simulated stack, as live runs two
        later = {"flows_schedule": [[0.0, 0], [competing_start_s, 1]]} if competing_start_s > 0.0 else {}
        path["competing"] = {"flows": 1, "cc": competing_cc, "stack": "connection", **later}
    return scenario_from_dict({"name": "shared_bottleneck", "paths": [path], "jitter_reorders": False,
                               "workload": {"type": "bulk", "duration_s": duration_s}})


def standing_queue_bdp(cc: str, queue_bdp: float = 5.0, *, bandwidth_mbps: float = 50.0, delay_ms: float = 20.0,
                       warmup_s: float = 20.0, measure_s: float = 20.0, batch: int = 4, seed: int = 1,
                       config: SimConfig | None = None, cc_params: dict | None = None,
                       second_start_s: float | None = None) -> float:
    """Two simulated flows of ``cc`` on ``shared_bottleneck``: the bottleneck queue in BDPs, sampled
    every 10 ms from ``warmup_s`` for ``measure_s`` and averaged, mean of ``batch`` connections
    (``config``: the simulator's settings, its stack among them; ``cc_params``: overrides of the
    CC's parameters). The second flow starts ``second_start_s`` after the first; None: as the
    live harness starts it for the stack's backend (``SECOND_FLOW_START_S``)."""
    config = config or SimConfig()
    if second_start_s is None:
        second_start_s = SECOND_FLOW_START_S[config.stack]
    scen = shared_bottleneck(queue_bdp, cc, bandwidth_mbps=bandwidth_mbps, delay_ms=delay_ms,
                             duration_s=warmup_s + measure_s + 1.0, competing_start_s=second_start_s)
    sim = Simulator(scen, cc, batch=batch, seed=seed, config=config, cc_overrides={cc: cc_params} if cc_params else None)
    sim.reset()
    sim.advance(round(warmup_s / sim.dt))
    bdp = bandwidth_mbps * 125_000 * 2 * delay_ms / 1000
    # the queue in the link's bytes, headers included, as the live testbed's qdisc counts it
    return float((sim.queue_samples(measure_s, 0.01)[:, :, 0] / sim.payload_share).mean()) / bdp


def summary(per_run: dict[str, np.ndarray], names: Sequence[str] = REPORTED) -> dict[str, dict]:
    """Mean, 95% CI half-width and the per-run values of each metric in ``names`` (and the
    per-path goodput)."""
    out = {}
    for key in (*names, "per_path_goodput_mbps"):
        values = np.asarray(per_run[key], dtype=float)
        if values.ndim == 2:
            out[key] = {"mean": [mean_ci(values[:, i])[0] for i in range(values.shape[1])],
                        "ci95": [mean_ci(values[:, i])[1] for i in range(values.shape[1])],
                        "per_run": values.tolist()}
        else:
            mean, half = mean_ci(values)
            out[key] = {"mean": mean, "ci95": half, "per_run": values.tolist()}
    return out


def plain_json(obj: object) -> object:
    """``obj`` with numpy scalars and arrays as Python numbers and lists, NaN and infinity as
    None, tuples as lists: what strict JSON can hold."""
    if isinstance(obj, dict):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [plain_json(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: object) -> str:
    """Strict JSON of results (``plain_json``); any other object as its string."""
    return json.dumps(plain_json(obj), allow_nan=False, default=str)


def to_json(header: dict, stats: dict[str, dict]) -> str:
    return dumps({**header, **stats})


def capped_note(scenario: Scenario, completion_s: np.ndarray, max_duration_s: float) -> str | None:
    """One sentence when runs ended before their workload completed (``envs.metrics.capped``)."""
    n = int(capped(scenario.workload, completion_s).sum())
    if not n:
        return None
    cap = min(max_duration_s, scenario.workload.duration_s or math.inf)
    return (f"capped: {n} of {len(completion_s)} runs ended at the episode cap ({cap:g} s, env.max_duration_s "
            f"or the workload's duration_s) before the {scenario.workload.type} completed; completion_s is n/a")


def to_table(header: dict, stats: dict[str, dict], note: str | None = None) -> str:
    """One row per run and a mean ± 95% CI row, one column per metric in ``stats``, and the
    ``note`` (e.g. ``capped_note``) last."""
    cols = [(k, *_COLUMNS[k]) for k in stats if k in _COLUMNS]
    title = ", ".join(f"{k}={v}" for k, v in header.items())
    lines = [title, "run | " + " | ".join(c[1] for c in cols)]
    n = len(stats["per_path_goodput_mbps"]["per_run"])
    for i in range(n):
        cells = [fmt.format(_scaled(stats[k]["per_run"][i], scale)) for k, _, fmt, scale in cols]
        lines.append(f"{i:>3} | " + " | ".join(cells))
    if n < 2:  # a CI needs two runs (mean_ci gives 0, which would read as a certain value)
        cells = [fmt.format(_scaled(stats[k]["mean"], scale)) for k, _, fmt, scale in cols]
        lines.append("mean (one run: no CI) | " + " | ".join(cells))
    else:
        cells = [(fmt + " ± " + fmt).format(_scaled(stats[k]["mean"], scale), _scaled(stats[k]["ci95"], scale))
                 for k, _, fmt, scale in cols]
        lines.append("mean ± 95% CI | " + " | ".join(cells))
    per_path = ", ".join(f"path {i + 1}: {m:.2f}" for i, m in enumerate(stats["per_path_goodput_mbps"]["mean"]))
    lines.append(f"per-path goodput Mbit/s (mean): {per_path}")
    if note:
        lines.append(note)
    return "\n".join(lines)


def _scaled(x: float | None, scale: float) -> float:
    return math.nan if x is None else x * scale
