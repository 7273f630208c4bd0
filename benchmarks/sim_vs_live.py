"""Simulator versus live testbed: the same scenario files, the same metrics.

    python benchmarks/sim_vs_live.py [--runs 3] [--ccs reno,cubic,bbr] [--only ispras|laws|walltime]
                                     [--json out.json]

1. ISPRAS S1-S3 (10 MB files, two paths) under each CC: goodput, mean RTT and the share of path
   1, simulator (minRTT) against kernel MPTCP (its default scheduler), with relative errors; the
   simulator imitates the live backend's stack (``stack=linux`` for mptcp, ``xquic`` for xquic).
2. Single-path law checks (bulk transfers): Reno under 1 % random loss against Mathis et al.,
   CUBIC under 1 % loss against RFC 9438's response function (or its Reno-friendly window),
   BBRv1 under 5 % loss (near-full utilisation), and every CC on a loss-free path with a 1-BDP
   buffer (near-full utilisation).
3. The wall time of a 10 s live run (bulk, ISPRAS S1 paths), setup and teardown included.
4. The standing queue of two flows of one CC sharing one bottleneck (50 Mbit/s, 40 ms RTT, a 5
   and a 1 BDP drop-tail buffer; docs/transport.md after Scherrer et al., IMC 2022): the
   simulator (a subflow plus a competing flow, under stack linux and under stack xquic) against
   two kernel TCP flows and, where the
   ``mpsched_xquic`` extension is installed, two XQUIC connections (which have bbr2), the queue
   read from the bottleneck's counters and averaged over 10-30 s.

Needs root and the live dependencies (``python -m envs.live.setup``); about 40 minutes at 3 runs (the
queue section alone, ``--only queue --ccs bbr``: 9 minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.evaluation import evaluate_heuristic, shared_bottleneck, standing_queue_bdp, summary  # noqa: E402
from envs.live.bottleneck import two_flow_queue  # noqa: E402
from envs.live.evaluation import LiveOptions, evaluate_live, relative_error  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.system import LiveError  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.scenario import load_scenario, scenario_from_dict  # noqa: E402
from envs.sim.simulator import SimConfig  # noqa: E402
from envs.sim.stacks import BACKEND_STACK, PROFILES  # noqa: E402

MSS = 1448
WIRE_EFFICIENCY = MSS / 1514  # TCP payload per byte on the wire (timestamps option, Ethernet)


def law_scenarios() -> list[tuple[str, str, dict, callable]]:
    """(name, cc, scenario mapping, law(goodput) -> (expected Mbit/s, text))."""
    def path(bw, delay, loss, **kw):
        return {"bandwidth_mbps": bw, "delay_ms": delay, "loss_pct": loss, "queue_bdp": 1.0, **kw}

    def mathis(bw, rtt_s, p):
        rate = MSS * 8 / rtt_s * math.sqrt(1.5 / p) / 1e6
        return min(rate, bw * WIRE_EFFICIENCY), "Mathis: MSS/RTT * sqrt(3/(2p))"

    def cubic(bw, rtt_s, p):
        w_cubic = 1.054 * (rtt_s ** 0.75) / (p ** 0.75)
        w_reno = math.sqrt(1.5 / p)
        w = max(w_cubic, w_reno)
        which = "RFC 9438 CUBIC region" if w_cubic >= w_reno else "RFC 9438 Reno-friendly region"
        return min(w * MSS * 8 / rtt_s / 1e6, bw * WIRE_EFFICIENCY), which

    def utilisation(bw, p=0.0):
        return bw * WIRE_EFFICIENCY * (1 - p), "near-full utilisation (wire efficiency x (1 - p))"

    out = [
        ("reno_1pct_loss", "reno", path(50, 20, 1.0), lambda: mathis(50, 0.04, 0.01)),
        ("cubic_1pct_loss", "cubic", path(50, 20, 1.0), lambda: cubic(50, 0.04, 0.01)),
        ("bbr_5pct_loss", "bbr", path(20, 20, 5.0), lambda: utilisation(20, 0.05)),
    ]
    for cc in ("reno", "cubic", "bbr"):
        out.append((f"{cc}_no_loss_1bdp", cc, path(50, 20, 0.0), lambda: utilisation(50)))
    return out


def fmt(x: float, spec: str = ".2f") -> str:
    return "n/a" if x is None or not math.isfinite(x) else format(x, spec)


def pct(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:+.0f} %"


def sim_stack(opts: LiveOptions) -> SimConfig:
    """The simulator imitating the live backend's stack (xquic: xquic, mptcp: linux)."""
    return SimConfig(stack=BACKEND_STACK[opts.backend])


def ispras(runs: int, ccs: list[str], opts: LiveOptions, out: dict) -> None:
    print("\n## ISPRAS S1-S3, 10 MB file, sim (minRTT) vs live (kernel MPTCP)\n")
    print("| scenario | cc | goodput sim | goodput live | err | RTT sim ms | RTT live ms | err "
          "| path-1 share sim | live | loss % sim | live |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("ispras_s1", "ispras_s2", "ispras_s3"):
        scen = load_scenario(name)
        for cc in ccs:
            sim = summary(evaluate_heuristic(scen, cc, "minrtt", max(runs, 5), 0, sim_stack(opts)))
            live_runs, info = evaluate_live(scen, cc, runs, 0, opts)
            live = summary(live_runs)
            share = {}
            for key, st in (("sim", sim), ("live", live)):
                m = st["per_path_goodput_mbps"]["mean"]
                share[key] = m[0] / sum(m) if sum(m) else math.nan
            row = {k: (sim[k]["mean"], live[k]["mean"]) for k in ("goodput_mbps", "mean_rtt_ms", "loss_rate")}
            out.setdefault("ispras", []).append({"scenario": name, "cc": cc, **{k: list(v) for k, v in row.items()},
                                                 "path1_share": [share["sim"], share["live"]],
                                                 "live_per_run_goodput": live["goodput_mbps"]["per_run"],
                                                 "retried": info.retried})
            g, r, lo = row["goodput_mbps"], row["mean_rtt_ms"], row["loss_rate"]
            print(f"| {name} | {cc} | {fmt(g[0])} | {fmt(g[1])} ± {fmt(live['goodput_mbps']['ci95'])} | "
                  f"{pct(relative_error(*g))} | {fmt(r[0], '.1f')} | {fmt(r[1], '.1f')} | {pct(relative_error(*r))} | "
                  f"{fmt(100 * share['sim'], '.0f')} % | {fmt(100 * share['live'], '.0f')} % | "
                  f"{fmt(100 * lo[0])} | {fmt(100 * lo[1])} |", flush=True)


def laws(runs: int, opts: LiveOptions, duration_s: float, out: dict) -> None:
    print(f"\n## Single-path law checks, bulk {duration_s:g} s\n")
    print("| check | cc | law Mbit/s | sim | live | sim/law | live/law | sim vs live | law |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, cc, spec, law in law_scenarios():
        scen = scenario_from_dict({"name": name, "paths": [spec], "workload": {"type": "bulk",
                                                                                "duration_s": duration_s}})
        expected, text = law()
        sim = summary(evaluate_heuristic(scen, cc, "minrtt", max(runs, 5), 0, sim_stack(opts)))["goodput_mbps"]["mean"]
        live = summary(evaluate_live(scen, cc, runs, 0, opts)[0])["goodput_mbps"]["mean"]
        out.setdefault("laws", []).append({"check": name, "cc": cc, "law": expected, "sim": sim, "live": live,
                                           "law_text": text})
        print(f"| {name} | {cc} | {fmt(expected)} | {fmt(sim)} | {fmt(live)} | {fmt(sim / expected)} | "
              f"{fmt(live / expected)} | {pct(relative_error(sim, live))} | {text} |", flush=True)


def walltime(opts: LiveOptions, out: dict) -> None:
    scen = load_scenario("ispras_s1")
    scen = scen.model_copy(update={"workload": scen.workload.model_copy(update={"type": "bulk", "file_mb": None,
                                                                                 "duration_s": 10.0})})
    t = time.monotonic()
    _, info = evaluate_live(scen, "cubic", 1, 0, opts)
    wall = time.monotonic() - t
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in info.timings[0].items())
    out["walltime"] = {"wall_s": wall, **info.timings[0], "transfer_s": info.transfer_wall_s[0]}
    print(f"\n## A 10 s live run (ISPRAS S1 paths, bulk, cubic)\n\nwall time {wall:.1f} s "
          f"(transfer {info.transfer_wall_s[0]:.1f} s; {parts})")


QUEUE_MBPS, QUEUE_DELAY_MS, QUEUE_WARMUP_S, QUEUE_END_S = 50.0, 20.0, 10.0, 30.0


def live_queue_bdp(cc: str, queue_bdp: float, xquic: bool) -> tuple[float, float]:
    """Two live flows of ``cc`` (kernel TCP, or XQUIC connections): mean queue (BDP; frames on
    the wire over the BDP at the wire rate) and the flows' total goodput (Mbit/s)."""
    scen = shared_bottleneck(queue_bdp, bandwidth_mbps=QUEUE_MBPS, delay_ms=QUEUE_DELAY_MS, duration_s=QUEUE_END_S)
    with Testbed(scen, verify=False) as tb:
        return two_flow_queue(tb, cc, xquic, QUEUE_WARMUP_S, QUEUE_END_S)


def standing_queue(ccs: list[str], runs: int, out: dict) -> None:
    try:
        from envs.live.xquic import CCS as XQUIC_CCS, extension
        extension()
        xquic_ccs, xquic_note = XQUIC_CCS, ""
    except LiveError as err:
        xquic_ccs, xquic_note = (), f" (XQUIC: {err})"
    print(f"\n## Two flows of one CC on one bottleneck ({QUEUE_MBPS:g} Mbit/s, {2 * QUEUE_DELAY_MS:g} ms RTT): "
          f"standing queue in BDP, mean over {QUEUE_WARMUP_S:g}-{QUEUE_END_S:g} s; live: mean [min-max] of "
          f"{runs} runs{xquic_note}\n")
    print("| buffer | cc | sim (stack linux) | kernel TCP | sim (stack xquic) | XQUIC | goodput kernel / XQUIC Mbit/s |")
    print("|---|---|---|---|---|---|---|")

    def live(cc: str, queue_bdp: float, xquic: bool) -> tuple[list[float], list[float]]:
        if cc not in (xquic_ccs if xquic else ccs):
            return [], []
        queues, goodputs = zip(*(live_queue_bdp(cc, queue_bdp, xquic) for _ in range(runs)))
        return list(queues), list(goodputs)

    def cell(x: list[float]) -> str:
        return f"{fmt(np.mean(x))} [{fmt(min(x))}-{fmt(max(x))}]" if x else "n/a"

    for queue_bdp in (5.0, 1.0):
        for cc in dict.fromkeys([*ccs, "bbr2"]):
            sim = {stack: standing_queue_bdp(cc, queue_bdp, bandwidth_mbps=QUEUE_MBPS, delay_ms=QUEUE_DELAY_MS,
                                             warmup_s=QUEUE_WARMUP_S, measure_s=QUEUE_END_S - QUEUE_WARMUP_S,
                                             config=SimConfig(stack=stack))
                   if cc in PROFILES[stack].ccs else math.nan for stack in ("linux", "xquic")}
            (kq, kg), (xq, xg) = live(cc, queue_bdp, False), live(cc, queue_bdp, True)
            out.setdefault("standing_queue", []).append({"buffer_bdp": queue_bdp, "cc": cc, "sim": sim, "kernel": kq,
                                                         "xquic": xq, "goodput_kernel": kg, "goodput_xquic": xg})
            goodput = " / ".join(fmt(np.mean(g), ".1f") if g else "n/a" for g in (kg, xg))
            print(f"| {queue_bdp:g} BDP | {cc} | {fmt(sim['linux'])} | {cell(kq)} | {fmt(sim['xquic'])} | {cell(xq)} "
                  f"| {goodput} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="live runs per cell (the simulator runs at least 5)")
    ap.add_argument("--ccs", default="reno,cubic,bbr")
    ap.add_argument("--only", choices=("ispras", "laws", "walltime", "queue"))
    ap.add_argument("--law-seconds", type=float, default=8.0)
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    opts = LiveOptions()
    out: dict = {}
    t0 = time.monotonic()
    if args.only in (None, "ispras"):
        ispras(args.runs, args.ccs.split(","), opts, out)
    if args.only in (None, "laws"):
        laws(args.runs, opts, args.law_seconds, out)
    if args.only in (None, "walltime"):
        walltime(opts, out)
    if args.only in (None, "queue"):
        standing_queue(args.ccs.split(","), args.runs, out)
    print(f"\n(total {time.monotonic() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
