"""XQUIC on the ISPRAS cells: every CC x scheduler on ispras_s1-s3 (10 MB files), live goodput
(XQUIC in the Mininet testbed, the scheduler inside XQUIC) beside the simulator's (the same
scheduler where the simulator has it).

    python benchmarks/xquic_ispras.py [--runs 1] [--scenarios ispras_s1,ispras_s2,ispras_s3]
                                      [--ccs reno,cubic,bbr,bbr2] [--schedulers minrtt,...]
                                      [--file-mb 10] [--json out.json]

Needs root, the live dependencies (``python -m envs.live.setup``) and the mpsched_xquic
extension (README, "XQUIC"). One testbed per scenario, verified once.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from envs.plugins import scheduler_names  # noqa: E402
from envs.evaluation import evaluate_heuristic  # noqa: E402
from envs.sim.simulator import SimConfig  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.testbed import verified  # noqa: E402
from envs.live.xquic import CCS, SCHEDULERS, XquicBackend, extension  # noqa: E402
from envs.scenario import resolve_scenarios  # noqa: E402
from envs.sim.stacks import profile  # noqa: E402


XQUIC_SIM = SimConfig(stack="xquic")  # the simulator imitating XQUIC (envs/sim/stacks.py)

def live_cell(tb, cc: str, sched: str, runs: int) -> dict:
    goodput, outcomes, shares = [], [], []
    for _ in range(runs):
        r = XquicBackend.transfer(tb, cc, tb.scenario.workload, 10.0, sched).run()
        m = r.metrics()
        goodput.append(float(m["goodput_mbps"][0]))
        outcome = r.extra["outcome"] if not r.error else f"error: {r.error}"
        if min(r.extra["path_recv"]) == 0:  # say why a path carried nothing: never created, never validated, not active
            active = "/".join(f"{x:.2f}" for x in r.extra["path_active"])
            states = "/".join(f"{c}:{v}" for c, v in r.extra.get("path_state", []))  # client:server, 1 validating
            outcome += f" (paths {r.extra['paths_created']:d}, states {states}, active {active})"
        outcomes.append(outcome)
        p = m["per_path_goodput_mbps"][0]
        shares.append(float(p[0] / p.sum()) if p.sum() > 0 else math.nan)
    return {"goodput": goodput, "outcomes": outcomes, "share1": shares}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--scenarios", default="ispras_s1,ispras_s2,ispras_s3")
    # the CCs both sides run: XQUIC's own (the simulator's XQUIC profile has no coupled CC)
    ap.add_argument("--ccs", default=",".join(cc for cc in CCS if cc in profile("xquic").ccs))
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS))
    ap.add_argument("--file-mb", type=float, default=10.0)
    ap.add_argument("--sim-runs", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    reason = unavailable_reason()
    if reason:
        sys.exit(f"live runs unavailable: {reason}")
    extension()
    rows = []
    print(f"{'scenario':10s} {'cc':5s} {'scheduler':9s} | {'live Mbit/s':>12s} {'path1 %':>8s} {'outcome':10s} | "
          f"{'sim Mbit/s':>10s}", flush=True)
    for name in a.scenarios.split(","):
        scen = resolve_scenarios(name)[0].with_workload(file_mb=a.file_mb)
        with verified(scen) as tb:
            for cc in a.ccs.split(","):
                for sched in a.schedulers.split(","):
                    live = live_cell(tb, cc, sched, a.runs)
                    sim = math.nan
                    if sched in scheduler_names():
                        sim = float(np.mean(evaluate_heuristic(scen, cc, sched, a.sim_runs, 0, XQUIC_SIM)["goodput_mbps"]))
                    g = float(np.mean(live["goodput"]))
                    rows.append({"scenario": name, "cc": cc, "scheduler": sched, "live_goodput_mbps": live["goodput"],
                                 "live_path1_share": live["share1"], "outcomes": live["outcomes"],
                                 "sim_goodput_mbps": sim})
                    out = ",".join(sorted(set(live["outcomes"])))
                    print(f"{name:10s} {cc:5s} {sched:9s} | {g:12.2f} {100 * np.nanmean(live['share1']):8.1f} "
                          f"{out:10s} | " + (f"{sim:10.2f}" if math.isfinite(sim) else f"{'n/a':>10s}"), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    from envs.errors import ending

    with ending():  # a failed verification or a refused input: one line, not a traceback
        main()
