"""The metrics the studies report, computed once from a simulator's state and shared by every
tool (``evaluate.py``, training, benchmarks), plus their summary statistics."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from envs.sim.layout import (CN_DONE_STEP, CN_N_SUB, CN_RCV_NXT, CN_REORDER_MAX, CN_REORDER_SUM,
                             CN_SND_LIMIT, CN_T, CN_OOO_EXCEEDED, FL_GOOD, FL_LOST_PKTS, FL_RTT_CNT,
                             FL_RTT_SUM, FL_SENT_PKTS)

if TYPE_CHECKING:
    from envs.sim.simulator import Simulator

METRICS = ("goodput_mbps", "completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes",
           "reorder_mean_bytes", "ooo_exceeded")
# metrics where a smaller value is better (a study's normalised score and ranks read them so)
LOWER_IS_BETTER = frozenset({"completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes", "reorder_mean_bytes",
                             "ooo_exceeded"})


def connection_metrics(sim: Simulator) -> dict[str, np.ndarray]:
    """Per-connection metrics of the current episodes.

    goodput: bytes delivered in order to the application over the episode time (a file's size
    over its completion time); completion_s: NaN when the transfer did not finish;
    mean_rtt_ms: mean of all RTT samples of the subflows; loss_rate: packets lost in the network
    over packets sent; per_path_goodput_mbps: unique bytes each path delivered.
    """
    cn, fl, dt = sim.cn, sim.fl, sim.dt
    B, P = cn.shape[0], sim.P
    elapsed = np.maximum(cn[:, CN_T], 1.0) * dt
    done_step = cn[:, CN_DONE_STEP]
    finished = done_step >= 0
    completion = np.where(finished, np.maximum(done_step, 1.0) * dt, np.nan)
    delivered = np.minimum(cn[:, CN_RCV_NXT], cn[:, CN_SND_LIMIT])
    span = np.where(finished, completion, elapsed)
    sub = np.arange(P)[None, :] < cn[:, CN_N_SUB][:, None]  # [B, P] mask of real subflows
    flp = fl[:, :P]
    rtt_cnt = np.where(sub, flp[..., FL_RTT_CNT], 0).sum(1)
    rtt_sum = np.where(sub, flp[..., FL_RTT_SUM], 0).sum(1)
    sent = np.where(sub, flp[..., FL_SENT_PKTS], 0).sum(1)
    lost = np.where(sub, flp[..., FL_LOST_PKTS], 0).sum(1)
    return {
        "goodput_mbps": delivered * 8 / span / 1e6,
        "per_path_goodput_mbps": np.where(sub, flp[..., FL_GOOD], 0) * 8 / span[:, None] / 1e6,
        "completion_s": completion,
        "mean_rtt_ms": np.where(rtt_cnt > 0, rtt_sum / np.maximum(rtt_cnt, 1) * 1000, np.nan),
        "loss_rate": np.where(sent > 0, lost / np.maximum(sent, 1), 0.0),
        "reorder_max_bytes": cn[:, CN_REORDER_MAX].copy(),
        "reorder_mean_bytes": cn[:, CN_REORDER_SUM] / np.maximum(cn[:, CN_T], 1.0),
        "ooo_exceeded": cn[:, CN_OOO_EXCEEDED].copy(),
    }


def mean_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its Student-t confidence interval (NaNs ignored; 0 for n < 2)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan, math.nan
    if x.size < 2:
        return float(x.mean()), 0.0
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


def transfer_metrics(delivered_bytes: float, span_s: float, completion_s: float, path_bytes: np.ndarray,
                     rtt_sum_s: float, rtt_count: float, sent_pkts: float, lost_pkts: float,
                     reorder_max_bytes: float = math.nan) -> dict[str, np.ndarray]:
    """The metrics of ``connection_metrics`` for one connection measured from counters rather than
    a simulator's state (a live run), as arrays of length 1 with the same definitions:
    goodput = delivered bytes over ``span_s`` (the completion time of a finished file, else the
    elapsed time); per-path goodput = bytes each path delivered over the same span; mean RTT =
    ``rtt_sum_s / rtt_count``; loss rate = lost over sent packets. Metrics the measurement cannot
    see (the receiver's reorder buffer) are NaN."""
    span = max(float(span_s), 1e-9)
    paths = np.asarray(path_bytes, dtype=float)[None, :]
    return {
        "goodput_mbps": np.array([delivered_bytes * 8 / span / 1e6]),
        "per_path_goodput_mbps": paths * 8 / span / 1e6,
        "completion_s": np.array([completion_s], dtype=float),
        "mean_rtt_ms": np.array([rtt_sum_s / rtt_count * 1000 if rtt_count > 0 else math.nan]),
        "loss_rate": np.array([lost_pkts / sent_pkts if sent_pkts > 0 else 0.0]),
        "reorder_max_bytes": np.array([reorder_max_bytes], dtype=float),
        "reorder_mean_bytes": np.array([math.nan]),
        "ooo_exceeded": np.array([0.0]),
    }
