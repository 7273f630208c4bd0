"""The metrics the studies report, computed once from a simulator's state and shared by every
tool (``evaluate.py``, training, benchmarks), plus their summary statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
from scipy.special import stdtrit  # Student t's quantile (what scipy.stats.t.ppf calls), without scipy.stats' import

from envs.errors import out_of_range
from envs.sim.layout import (CN_DONE, CN_DONE_STEP, CN_N_SUB, CN_OOO_EXCEEDED, CN_RCV_NXT, CN_REORDER_MAX,
                             CN_REORDER_SUM, CN_SND_LIMIT, CN_T, FL_GOOD, FL_LOST_PKTS, FL_RTT_CNT, FL_RTT_SUM,
                             FL_SENT_PKTS, ITEM_DONE, ITEM_RATE, ITEM_REQ, REC_DELIVERED, REC_REORDER, WL_ITEMS,
                             WL_REBUF)

if TYPE_CHECKING:
    from envs.scenario import Scenario, WorkloadSpec


class Simulator(Protocol):
    """What the metrics read of a simulator after a run (``envs.sim.simulator.Simulator``, which
    imports this module, not the other way round)."""

    B: int
    P: int
    dt: float
    bin_steps: int
    fl: np.ndarray
    cn: np.ndarray
    rec: np.ndarray
    wl: np.ndarray
    item: np.ndarray

    @property
    def current(self) -> Sequence[Scenario | None]: ...


METRICS = ("goodput_mbps", "completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes",
           "reorder_mean_bytes", "ooo_exceeded")
"""Every measurement reports these, live runs included (``transfer_metrics``)."""
SIM_METRICS = ("reorder_p50_bytes", "reorder_p90_bytes", "reorder_p99_bytes", "throughput_mean_mbps",
               "throughput_var_mbps2", "aggregation_benefit")
"""The simulator adds these for every workload."""
ITEM_METRICS = ("items_done", "download_time_s")
"""Workloads of items (bulk messages, dash chunks, web objects)."""
DASH_METRICS = ("avg_bitrate_mbps", "rebuffer_s")
ALL_METRICS = METRICS + SIM_METRICS + ITEM_METRICS + DASH_METRICS
MAY_BE_NAN = ("completion_s", "mean_rtt_ms", "throughput_mean_mbps", "throughput_var_mbps2",
              "aggregation_benefit", "download_time_s", "avg_bitrate_mbps")
"""NaN where undefined: not completed, no RTT sample, no whole window, one path, no item delivered."""
REORDER_PERCENTILES = (50, 90, 99)
# metrics where a smaller value is better (a study's normalised score and ranks read them so)
LOWER_IS_BETTER = frozenset({"completion_s", "mean_rtt_ms", "loss_rate", "reorder_max_bytes", "reorder_mean_bytes",
                             "ooo_exceeded", "reorder_p50_bytes", "reorder_p90_bytes", "reorder_p99_bytes",
                             "throughput_var_mbps2", "download_time_s", "rebuffer_s"})


def metric_names(workload: WorkloadSpec) -> tuple[str, ...]:
    """The metrics that mean something for this workload, in reporting order."""
    names: tuple[str, ...] = METRICS + SIM_METRICS
    if workload.items() > 1 or workload.type in ("dash", "web"):
        names += ITEM_METRICS
    if workload.type == "dash":
        names += DASH_METRICS
    return names


def capped(workload: WorkloadSpec, completion_s: np.ndarray) -> np.ndarray:
    """Runs of a workload that completes (a file, messages, dash, web) that ended before
    completing: at the episode cap (``env.max_duration_s`` or the workload's ``duration_s``), or
    at the reorder limit with ``env.end_on_ooo``."""
    completes = workload.type != "bulk" or bool(workload.messages)
    return np.isnan(np.asarray(completion_s, dtype=float)) & completes


def aggregation_benefit(goodput: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Kaspar's aggregation benefit (D. Kaspar, "Multipath aggregation of heterogeneous access
    networks", PhD thesis, Univ. Oslo 2012; as MPTCP-TUT uses it, docs/scenarios.md): with g the
    multipath goodput and c_i the paths' capacities, c_max = max c_i:
    ``(g - c_max) / (sum c_i - c_max)`` if g >= c_max, else ``(g - c_max) / c_max``; in [-1, 1]
    (1: the sum of the capacities, 0: as good as the best path alone, -1: nothing). NaN for one
    path. ``capacities`` is [B, P] with NaN (or 0) for absent paths."""
    g = np.asarray(goodput, dtype=float)
    c = np.nan_to_num(np.asarray(capacities, dtype=float), nan=0.0)
    c_max, c_sum = c.max(axis=-1), c.sum(axis=-1)
    rest = c_sum - c_max
    with np.errstate(divide="ignore", invalid="ignore"):
        above = np.where(rest > 0, (g - c_max) / rest, np.nan)
        below = (g - c_max) / c_max
    return np.where(g >= c_max, above, below)


def window_throughput(delivered: np.ndarray, bin_s: float, window_s: float) -> np.ndarray:
    """Throughput (Mbit/s) of each whole window of ``window_s`` from the cumulative bytes delivered
    at the end of each bin of ``bin_s`` (a trailing partial window is left out)."""
    per = int(round(window_s / bin_s))
    if per < 1 or not math.isclose(per * bin_s, window_s, rel_tol=1e-6):
        raise out_of_range("window_s", window_s, f"a whole multiple of the record bin ({bin_s:g} s)")
    cum = np.asarray(delivered, dtype=float)[per - 1::per]
    return np.diff(cum, prepend=0.0) * 8 / window_s / 1e6


def connection_metrics(sim: Simulator, window_s: float = 1.0) -> dict[str, np.ndarray]:
    """Per-connection metrics of the current episodes.

    goodput: bytes delivered in order to the application over the episode time (a file's size
    over its completion time); completion_s: NaN when the workload did not complete;
    mean_rtt_ms: mean of all RTT samples of the subflows; loss_rate: packets lost in the network
    over packets sent; per_path_goodput_mbps: unique bytes each path delivered; reorder
    percentiles: of the reorder buffer's mean occupancy per record bin (its distribution over
    time, SOD; ``reorder_histogram`` gives all of it); NaN marks what is undefined (MAY_BE_NAN); throughput mean and variance (Mbit/s,
    (Mbit/s)^2) over whole windows of ``window_s`` (KATO); aggregation_benefit: Kaspar's, against
    the paths' nominal capacities; items_done and download_time_s: items (messages, chunks,
    objects) delivered and their mean time from request to last byte in order (messages, offered
    back to back: from the previous one's delivery); avg_bitrate_mbps of the chunks delivered and
    rebuffer_s, the time playback stalled (dash).
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
    goodput = delivered * 8 / span / 1e6
    out = {
        "goodput_mbps": goodput,
        "per_path_goodput_mbps": np.where(sub, flp[..., FL_GOOD], 0) * 8 / span[:, None] / 1e6,
        "completion_s": completion,
        "mean_rtt_ms": np.where(rtt_cnt > 0, rtt_sum / np.maximum(rtt_cnt, 1) * 1000, np.nan),
        "loss_rate": np.where(sent > 0, lost / np.maximum(sent, 1), 0.0),
        "reorder_max_bytes": cn[:, CN_REORDER_MAX].copy(),
        "reorder_mean_bytes": cn[:, CN_REORDER_SUM] / np.maximum(cn[:, CN_T], 1.0),
        "ooo_exceeded": cn[:, CN_OOO_EXCEEDED].copy(),
    }
    bin_s = sim.bin_steps * dt
    pct = np.full((B, len(REORDER_PERCENTILES)), np.nan)
    thr_mean, thr_var = np.full(B, np.nan), np.full(B, np.nan)
    n_items = sim.wl[:, WL_ITEMS].astype(int)
    items_done = np.zeros(B)
    download = np.full(B, np.nan)
    bitrate = np.full(B, np.nan)
    capacities = np.full((B, P), np.nan)
    for b in range(B):
        occupancy = _bin_occupancy(sim, b)
        if occupancy.size:
            pct[b] = np.percentile(occupancy, REORDER_PERCENTILES)
        windows = window_throughput(sim.rec[b, :_whole_bins(sim, b), REC_DELIVERED], bin_s, window_s)
        if windows.size:
            thr_mean[b], thr_var[b] = windows.mean(), windows.var()
        scen = sim.current[b]
        if scen is not None:
            capacities[b, :len(scen.paths)] = scen.network().capacities_mbps()  # each path's bottleneck
        rows = sim.item[b, :n_items[b]]
        ok = rows[:, ITEM_DONE] >= 0
        items_done[b] = ok.sum()
        if ok.any():
            start = rows[:, ITEM_REQ]
            if scen is not None and scen.workload.type == "bulk":  # back to back: from the previous delivery
                start = np.concatenate(([0.0], rows[:-1, ITEM_DONE]))
            download[b] = ((rows[ok, ITEM_DONE] - start[ok]) * dt).mean()
            bitrate[b] = rows[ok, ITEM_RATE].mean() * 8 / dt / 1e6
    for i, q in enumerate(REORDER_PERCENTILES):
        out[f"reorder_p{q}_bytes"] = pct[:, i]
    out["throughput_mean_mbps"] = thr_mean
    out["throughput_var_mbps2"] = thr_var
    out["aggregation_benefit"] = aggregation_benefit(goodput, capacities)
    out["items_done"] = items_done
    out["download_time_s"] = download
    out["avg_bitrate_mbps"] = bitrate
    out["rebuffer_s"] = sim.wl[:, WL_REBUF] * dt
    return out


def _recorded_steps(sim: Simulator, b: int) -> int:
    """Steps of connection b's episode the records cover (the step it ends on is recorded too)."""
    steps = int(sim.cn[b, CN_T]) + (1 if sim.cn[b, CN_DONE] > 0 else 0)
    return min(steps, sim.rec.shape[1] * sim.bin_steps)


def _whole_bins(sim: Simulator, b: int) -> int:
    """Record bins of connection b whose every step has run."""
    return _recorded_steps(sim, b) // sim.bin_steps


def _bin_occupancy(sim: Simulator, b: int) -> np.ndarray:
    """Mean reorder-buffer occupancy (bytes) of each bin with a recorded step (a last partial bin
    over its own steps)."""
    steps = _recorded_steps(sim, b)
    n = -(-steps // sim.bin_steps)
    per_bin = np.full(n, float(sim.bin_steps))
    if n:
        per_bin[-1] = steps - (n - 1) * sim.bin_steps
    return sim.rec[b, :n, REC_REORDER] / per_bin


def reorder_histogram(sim: Simulator, edges_bytes: np.ndarray) -> np.ndarray:
    """Fraction of record bins whose mean reorder-buffer occupancy falls in each bin of
    ``edges_bytes`` ([B, len(edges) - 1]; the CDF of SOD's output-queue plots)."""
    out = np.zeros((sim.B, len(edges_bytes) - 1))
    for b in range(sim.B):
        occupancy = _bin_occupancy(sim, b)
        if occupancy.size:
            out[b] = np.histogram(occupancy, bins=edges_bytes)[0] / occupancy.size
    return out


def mean_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its Student-t confidence interval (NaNs ignored; 0 for n < 2)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan, math.nan
    if x.size < 2:
        return float(x.mean()), 0.0
    half = stdtrit(x.size - 1, 0.5 + confidence / 2) * x.std(ddof=1) / math.sqrt(x.size)
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
