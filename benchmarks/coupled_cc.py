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
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.scenario import Scenario, scenario_from_dict  # noqa: E402
from envs.sim.layout import CN_T, OBS_ACKED  # noqa: E402
from envs.sim.simulator import SimConfig, Simulator  # noqa: E402

CCS = ("reno", "cubic", "lia", "olia", "balia", "wvegas")
SETTINGS = {"shared": (1, 1), "congested": (0, 2)}


def scenario(competing: tuple[int, int], duration_s: float) -> Scenario:
    paths = [{"bandwidth_mbps": 10.0, "delay_ms": 10.0, "queue_bdp": 1.0,
              "competing": {"flows": n, "cc": "reno"}} for n in competing]
    return scenario_from_dict({"name": "two_paths", "paths": paths, "jitter_reorders": False,
                               "workload": {"type": "bulk", "duration_s": duration_s}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    parser.add_argument("--batch", type=int, default=8, help="connections (independent runs) per CC")
    args = parser.parse_args()
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
    main()
