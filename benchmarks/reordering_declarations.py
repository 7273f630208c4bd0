"""How many packets live XQUIC declares lost under reordering jitter, beside what the simulator's
reordering tables and the whole loop's Monte Carlo give at the same sending rate
(docs/transport.md, "Reordering"; issue "Transport profiles").

    python benchmarks/reordering_declarations.py [--record tests/data/declarations_xquic_live.json]

The record holds live transfers on the grid's path (``benchmarks/xquic_cubic_live.py --record``):
per transfer the packets XQUIC sent and declared lost (``ctl_lost_pkts_number``) after its first
second, its window and srtt. Per cell (jitter, CC) this prints the live share declared (mean and
range over the runs) and, at the live's own mean spacing ``r`` (jitters) and XQUIC's time window
(``time_window``: 9/8 of the srtt XQUIC reported, less the path's round trip, RFC 9002 sec. 6.1.2):

- ``table``: the shipped table (``envs/sim/reordering.py``, the whole loop's at XQUIC's receiver and
  rule since 2026-11-30), as the core reads it for an evenly spaced flow;
- ``loop xquic`` and ``loop three_later``: the whole loop (``envs/sim/ack_loop.py``: XQUIC's receiver,
  each ACK's own jitter back), an evenly spaced stream, under XQUIC's source (a packet 3 or more
  later acknowledged) and under the integral's reading (3 later packets acknowledged);
- ``bursts k``: the whole loop under XQUIC's rule, the packets leaving in bursts of k back to back
  at the bottleneck (1 ms of XQUIC's pacer, ``xqc_pacing.c`` ``XQC_CLOCK_GRANULARITY_US``; its burst
  budget ``XQC_MAX_BURST_NUM`` 10 packets) at the same mean spacing; for an unpaced CC the
  window's train per round trip (k = its mean window);
- ``own departures xquic`` and ``own departures three_later``: for the runs recorded with
  ``--pattern``, the whole loop on the packets as they left the bottleneck in that very transfer
  (captured before the delay line), beside those runs' own live share (``live, captured runs``);
  ``own departures xquic, copies exempt``: the same with the copies of declared packets (the share
  ``copies, captured runs`` of what those transfers sent) never declared, as XQUIC never declares a
  copy whose original was acknowledged;
- ``dispersion``: how bursty those departures are at the jitter's own scale, the variance over
  the mean of the packets counted per jitter (1 for random departures, 0 for evenly spaced ones).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.fidelity import GRID_DELAY_MS, GRID_MBPS  # noqa: E402
from envs.sim.ack_loop import EDGE, SendPattern, bursts, declarations, stream  # noqa: E402
from envs.sim import kernel  # noqa: E402
from envs.sim.reordering import GRID, W_GRID, detection_tables  # noqa: E402

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "declarations_xquic_live.json"
PATTERNS = RECORD.parent / "declarations_patterns"  # the captures of runs recorded with --pattern
PACED = ("bbr", "bbr2")  # XQUIC paces these (bindings/: pacing on for BBR and BBRv2)
HEADERS = 28  # IPv4 + UDP bytes on the bottleneck beside the UDP payload
BURSTS = (2, 4, 10)


def _window_index(w: float) -> int:
    """The nearest window of ``W_GRID``."""
    return min(int(round(w / (W_GRID[1] - W_GRID[0]))), W_GRID.size - 1)


def time_window(srtt_ms: float, jitter_ms: float) -> float:
    """XQUIC's time threshold beyond a packet's expected arrival, in jitters: a packet is lost once
    older than 9/8 max(srtt, latest RTT) (xqc_send_ctl.c ``XQC_kTimeThresholdShift``), which with
    the srtt the transfer reported (its samples early under reordering, envs/sim/ack_loop.py) is
    that much beyond the grid path's round trip, or none; the latest sample's spread is left out."""
    return max(srtt_ms * 9.0 / 8.0 - 2.0 * GRID_DELAY_MS, 0.0) / jitter_ms


def table_value(r: float, w: float) -> float:
    """The shipped rfc9002 table at spacing r and window w, both over the round trip's jitter,
    interpolated as the core reads it for an evenly spaced flow (``kernel._table_pos``, ``_lookup_at``)."""
    return float(kernel._lookup_at(*kernel._table_pos(r, w, np.log(GRID), W_GRID), -1.0, detection_tables("rfc9002")))


def cells(record: dict) -> dict[tuple[float, str], list[dict]]:
    """The record's transfers by cell (jitter in ms, CC)."""
    out: dict[tuple[float, str], list[dict]] = defaultdict(list)
    for rec in record["recordings"]:
        for run in rec["runs"]:
            out[(float(run["jitter_ms"]), str(run["cc"]))].append(run)
    return out


def measured_pattern(path: Path, jitter_ms: float, skip_s: float = 1.0) -> SendPattern:
    """A run's captured departures (``xquic_cubic_live.py --pattern``) from ``skip_s`` after its
    first data packet, in jitters, the first and last ``EDGE`` jitters not counted."""
    t_us = np.cumsum(np.load(path)["gap_us"].astype(np.int64))
    send = t_us[t_us >= skip_s * 1e6] / 1e3 / jitter_ms
    send = send - send[0]
    counted = (send >= EDGE) & (send <= send[-1] - EDGE)
    return SendPattern(send, counted)


def dispersion(pattern: SendPattern) -> float:
    """Variance over mean of the departures counted per jitter (``pattern.send`` is in jitters)."""
    counts = np.histogram(pattern.send, bins=np.arange(0.0, pattern.send[-1], 1.0))[0]
    return float(counts.var() / counts.mean())


def _mean(runs: list[dict], field: str) -> float:
    return float(np.mean([run[field] for run in runs]))


def row(jitter_ms: float, cc: str, runs: list[dict], patterns: Path = PATTERNS) -> dict[str, float]:
    """The live figures of one cell and the models' at its mean spacing (keys as the module's
    docstring names them); ``patterns``: where the captured runs' departures are."""
    share = np.array([run["declared_lost"] / run["sent_pkts"] for run in runs])
    r = float(np.mean([run["span_s"] / run["sent_pkts"] for run in runs])) * 1e3 / jitter_ms
    w = time_window(_mean(runs, "srtt_ms"), jitter_ms)
    wi = _window_index(w)
    r_link = min((_mean(runs, "wire_bytes_per_packet") + HEADERS) * 8 / (GRID_MBPS * 1e6) * 1e3 / jitter_ms, r)
    out = {"live": float(share.mean()), "live_min": float(share.min()), "live_max": float(share.max()),
           "r": r, "table": table_value(r / math.sqrt(2), w / math.sqrt(2)),
           "loop xquic": float(declarations("xquic", stream(r))[0, wi]),
           "loop three_later": float(declarations("three_later", stream(r))[0, wi])}
    captured = [run for run in runs if run.get("pattern")]
    if captured:
        out["live, captured runs"] = float(np.mean([run["declared_lost"] / run["sent_pkts"] for run in captured]))
        own = [measured_pattern(patterns / run["pattern"], jitter_ms) for run in captured]
        for rule in ("xquic", "three_later"):
            out[f"own departures {rule}"] = float(np.mean([declarations(rule, pat)[0, wi] for pat in own]))
        # the captures hold the copies XQUIC sent of its declared packets too, which the loop counts
        # as packets like any other; XQUIC never declares a copy whose original was acknowledged
        # (xqc_send_ctl_indirectly_ack_or_drop_po), so of the packets sent only the others can be
        # declared: their share is 1 - copies / sent (ctl_lost_count over the packets sent; it holds
        # the copies of real losses too, few on the grid's loss-free path)
        copies = float(np.mean([run["retransmitted"] / run["sent_pkts"] for run in captured]))
        out["copies, captured runs"] = copies
        out["own departures xquic, copies exempt"] = out["own departures xquic"] * (1.0 - copies)
        out["dispersion"] = float(np.mean([dispersion(pat) for pat in own]))
    if cc in PACED:
        for k in BURSTS:
            out[f"bursts {k}"] = float(declarations("xquic", bursts(k, r_link, r))[0, wi])
    else:
        window = max(int(round(_mean(runs, "cwnd_mean_pkts"))), 1)
        out[f"train {window}"] = float(declarations("xquic", bursts(window, r_link, r))[0, wi])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", type=Path, default=RECORD)
    a = ap.parse_args()
    record = json.loads(a.record.read_text())
    patterns = a.record.parent / PATTERNS.name
    for rec in record["recordings"]:
        p = rec["provenance"]
        print(f"recorded {p['date']} (XQUIC {p['xquic_commit']}, kernel {p['kernel']}, mpsched {p['mpsched_commit']}): "
              f"{p['command']}")
    print("\nshare of sent packets declared lost (live: XQUIC's ctl_lost_pkts_number after the first second)")
    for (jitter, cc), runs in sorted(cells(record).items()):
        v = row(jitter, cc, runs, patterns)
        models = ", ".join(f"{k} {x:.3f}" for k, x in v.items() if k not in ("live", "live_min", "live_max", "r"))
        print(f"jitter {jitter:g} ms {cc:5s} ({len(runs)} runs): live {v['live']:.3f} [{v['live_min']:.3f}-"
              f"{v['live_max']:.3f}] at r {v['r']:.3f}; {models}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
