"""Evaluate a heuristic scheduler on a scenario and CC over independent runs (one batch of the
compiled core), and present the metrics as a table or JSON."""

from __future__ import annotations

import json
import math

import numpy as np

from envs.metrics import mean_ci
from envs.scenario import Scenario
from envs.sim.simulator import SimConfig, Simulator

EVAL_SEED_OFFSET = 1_000_000  # evaluation episodes never reuse training seeds
REPORTED = ("goodput_mbps", "completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes")


def evaluate_heuristic(scenario: Scenario, cc: str, scheduler: str, runs: int, seed: int = 0,
                       config: SimConfig | None = None, cc_params: dict | None = None,
                       scheduler_params: dict | None = None) -> dict[str, np.ndarray]:
    """Per-run metrics (arrays of length ``runs``) of ``scheduler`` under ``cc``."""
    sim = Simulator(scenario, cc, scheduler=scheduler, batch=runs, seed=seed, config=config,
                    cc_overrides={cc: cc_params} if cc_params else None, scheduler_overrides=scheduler_params)
    sim.reset()
    sim.run()
    return sim.results()


def summary(per_run: dict[str, np.ndarray]) -> dict[str, dict]:
    """Mean, 95% CI half-width and the per-run values of each reported metric."""
    out = {}
    for key in (*REPORTED, "per_path_goodput_mbps"):
        values = np.asarray(per_run[key], dtype=float)
        if values.ndim == 2:
            out[key] = {"mean": [mean_ci(values[:, i])[0] for i in range(values.shape[1])],
                        "ci95": [mean_ci(values[:, i])[1] for i in range(values.shape[1])],
                        "per_run": values.tolist()}
        else:
            mean, half = mean_ci(values)
            out[key] = {"mean": mean, "ci95": half, "per_run": values.tolist()}
    return out


def _num(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x


def to_json(header: dict, stats: dict[str, dict]) -> str:
    clean = {k: {kk: (_num(vv) if not isinstance(vv, list) else
                      [(_num(v) if not isinstance(v, list) else [_num(w) for w in v]) for v in vv])
                  for kk, vv in d.items()} for k, d in stats.items()}
    return json.dumps({**header, **clean})


def to_table(header: dict, stats: dict[str, dict]) -> str:
    cols = [("goodput_mbps", "goodput Mbit/s", "{:.2f}"), ("completion_s", "completion s", "{:.3f}"),
            ("mean_rtt_ms", "mean RTT ms", "{:.1f}"), ("loss_rate", "loss %", "{:.2f}"),
            ("reorder_max_bytes", "max reorder KB", "{:.1f}")]
    scale = {"loss_rate": 100.0, "reorder_max_bytes": 1e-3}
    title = ", ".join(f"{k}={v}" for k, v in header.items())
    lines = [title, "run | " + " | ".join(c[1] for c in cols)]
    n = len(stats["goodput_mbps"]["per_run"])
    for i in range(n):
        cells = [fmt.format(stats[k]["per_run"][i] * scale.get(k, 1.0)) for k, _, fmt in cols]
        lines.append(f"{i:>3} | " + " | ".join(cells))
    cells = [(fmt + " ± " + fmt).format(stats[k]["mean"] * scale.get(k, 1.0), stats[k]["ci95"] * scale.get(k, 1.0))
             for k, _, fmt in cols]
    lines.append("mean ± 95% CI | " + " | ".join(cells))
    per_path = ", ".join(f"path {i + 1}: {m:.2f}" for i, m in enumerate(stats["per_path_goodput_mbps"]["mean"]))
    lines.append(f"per-path goodput Mbit/s (mean): {per_path}")
    return "\n".join(lines)
