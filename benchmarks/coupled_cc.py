"""Coupled vs uncoupled congestion control on two paths: ``python benchmarks/coupled_cc.py``.

Two identical 10 Mbit/s paths (20 ms base RTT, 1 BDP drop-tail buffer), bulk transfer, minRTT.
Each path has its own bottleneck, so the shared bottleneck of RFC 6356's goals is a link the
connection shares with ordinary TCP (NewReno) flows:
- ``shared``: one competing TCP on each path. RFC 6356's goal: the connection's total is about one
  TCP's rate (ratio ~1), where uncoupled subflows take one TCP per path (ratio ~2).
- ``congested``: path 1 free, two competing TCPs on path 2. Coupled CCs move traffic off path 2
  (a smaller share on it than uncoupled NewReno).
Prints per CC: total goodput, each path's goodput and share, the competing TCPs' mean rate, the
total over that rate, and the mean RTT; means over a batch of connections with independent
random streams.

``--phases``: RFC 6356's shared bottleneck itself (``tests/test_network.py``): both subflows over
their own 1 Gbit/s access links into one 10 Mbit/s, 40 ms RTT link with one Reno flow, the
pair's rate over the Reno flow's from 10 to 60 s, under each phase of the deterministic model:
one access link's delay 0-5 ms, or the Reno flow's start 0-0.5 s, in 21 steps. Prints the
distribution per CC (a drop-tail queue phase-locks deterministic flows: Floyd and Jacobson, "On
traffic phase effects in packet-switched gateways", Internetworking 3(3), 1992).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.errors import out_of_range  # noqa: E402
from envs.scenario import Scenario, scenario_from_dict  # noqa: E402
from envs.sim.layout import CN_T, OBS_ACKED  # noqa: E402
from envs.sim.simulator import SimConfig, Simulator  # noqa: E402

CCS = ("reno", "cubic", "lia", "olia", "balia", "wvegas")
SETTINGS = {"shared": (1, 1), "congested": (0, 2)}
PHASE_CCS = ("lia", "olia", "balia", "reno")
PHASE_STEPS = np.linspace(0.0, 1.0, 21)  # of each sweep's range
PHASE_SWEEPS = {"access0 delay 0-5 ms": (5.0, 0.0, 0.0), "access1 delay 0-5 ms": (0.0, 5.0, 0.0),
                "Reno start 0-0.5 s": (0.0, 0.0, 0.5)}  # (access0 ms, access1 ms, start s) at the range's end
RFC6356_BOUNDS = (0.8, 1.35)  # tests/test_network.py's for a coupled pair


def scenario(competing: tuple[int, int], duration_s: float) -> Scenario:
    paths = [{"bandwidth_mbps": 10.0, "delay_ms": 10.0, "queue_bdp": 1.0,
              "competing": {"flows": n, "cc": "reno"}} for n in competing]
    return scenario_from_dict({"name": "two_paths", "paths": paths, "jitter_reorders": False,
                               "workload": {"type": "bulk", "duration_s": duration_s}})


def shared_bottleneck(access_ms: tuple[float, float], reno_start_s: float) -> Scenario:
    """tests/test_network.py's RFC 6356 network, its phase moved by the access delays and the
    Reno flow's start."""
    competing: dict = {"flows": 1, "cc": "reno"}
    if reno_start_s > 0:
        competing["flows_schedule"] = [[0, 0], [reno_start_s, 1]]
    links = {f"access{k}": {"bandwidth_mbps": 1000, "delay_ms": d} for k, d in enumerate(access_ms)}
    links["shared"] = {"bandwidth_mbps": 10, "delay_ms": 20, "queue_bdp": 1.0, "competing": competing}
    return scenario_from_dict({
        "name": "shared", "jitter_reorders": False, "workload": {"type": "bulk", "duration_s": 60.0},
        "links": links, "paths": [{"links": ["access0", "shared"]}, {"links": ["access1", "shared"]}]})


def pair_over_tcp(scen: Scenario, cc: str) -> float:
    """The pair's acknowledged bytes over the Reno flow's, 10-60 s (deterministic: one connection)."""
    sim = Simulator(scen, cc, batch=1, seed=0, config=SimConfig(stack="linux"))
    sim.reset()
    sim.advance(round(10.0 / sim.dt))
    before = sim.obs[0, :, OBS_ACKED].copy()
    sim.advance(round(50.0 / sim.dt))
    acked = sim.obs[0, :, OBS_ACKED] - before
    return float(acked[:2].sum() / acked[2])


def phases() -> None:
    low, high = RFC6356_BOUNDS
    for sweep, (d0, d1, start) in PHASE_SWEEPS.items():
        print(f"\n{sweep}: pair/Reno rate, 10-60 s, {len(PHASE_STEPS)} phases")
        print(f"{'cc':<6} {'mean':>5} {'median':>6} {'min':>5} {'max':>5} {'in 0.8-1.35':>11}  each phase")
        for cc in PHASE_CCS:
            r = np.array([pair_over_tcp(shared_bottleneck((d0 * x, d1 * x), start * x), cc) for x in PHASE_STEPS])
            inside = int(((r >= low) & (r <= high)).sum())
            print(f"{cc:<6} {r.mean():5.2f} {np.median(r):6.2f} {r.min():5.2f} {r.max():5.2f} "
                  f"{inside:>8}/{len(r)}  {' '.join(f'{x:.2f}' for x in r)}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.coupled_cc", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    parser.add_argument("--batch", type=int, default=8, help="connections (independent runs) per CC")
    parser.add_argument("--phases", action="store_true",
                        help="RFC 6356's shared bottleneck under 21 phases per sweep (see the module docstring)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        raise out_of_range("--batch", args.batch, "an integer >= 1")
    if not (args.duration > 0 and math.isfinite(args.duration)):
        raise out_of_range("--duration", args.duration, "> 0 (simulated seconds)")
    if args.phases:
        phases()
        return
    for setting, competing in SETTINGS.items():
        print(f"\n{setting}: competing NewReno flows per path {competing}, {args.duration:g} s, "
              f"batch {args.batch}")
        print(f"{'cc':<8} {'total':>7} {'path1':>7} {'path2':>7} {'share2':>7} {'tcp':>6} "
              f"{'total/tcp':>9} {'rtt_ms':>7} {'wall_s':>7}")
        for cc in CCS:
            start = time.perf_counter()
            sim = Simulator(scenario(competing, args.duration), cc, batch=args.batch, seed=0,
                            config=SimConfig(stack="linux"))  # the coupled CCs are Linux's
            sim.reset()
            sim.run()
            wall = time.perf_counter() - start
            res = sim.results()
            per_path = res["per_path_goodput_mbps"].mean(axis=0)
            total = float(res["goodput_mbps"].mean())
            elapsed = sim.cn[:, CN_T] * sim.dt
            tcp = float((sim.obs[:, sim.P:, OBS_ACKED] * 8 / elapsed[:, None] / 1e6).mean())
            print(f"{cc:<8} {total:7.2f} {per_path[0]:7.2f} {per_path[1]:7.2f} "
                  f"{per_path[1] / per_path.sum():7.3f} {tcp:6.2f} {total / tcp:9.2f} "
                  f"{np.nanmean(res['mean_rtt_ms']):7.1f} {wall:7.2f}")
    print("\nrates in Mbit/s; share2 = path 2's share of the connection's goodput; wall_s includes "
          "numba compilation on a cold cache")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
