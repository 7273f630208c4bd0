"""Cost of the workloads in the compiled core: ``python benchmarks/workload_speed.py``
(``--quick`` for a short run, ``--batch`` to change B).

Prints simulated seconds per CPU second (and microseconds per connection-step) of B = 256
connections on leeyoo_static's paths (20 / 15 Mbit/s, 5 / 77 ms) under cubic and minRTT, for the
same simulated time with each workload: bulk (backlogged), bulk messages (MPTCP-TUT), dash
(LEEYOO's client) and web (small objects). Every workload goes through the same per-step hook
(``envs/sim/workload.py``), so the difference between bulk and the others is what the app model
and its idle periods cost or save; with ``--baseline /path/to/checkout`` the bulk case is also
run on another checkout (e.g. one without the hook) in a subprocess with its own numba cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's packages, not an installed copy

WORKLOADS = {
    "bulk": {"type": "bulk"},
    "messages": {"type": "bulk", "messages": 500, "message_mb": 3},
    "dash": {"type": "dash", "chunks": 100_000},
    "web": {"type": "web", "objects": 100_000, "object_kb": 20},
}


def case(work: dict, batch: int, sim_s: float) -> dict:
    from envs.scenario import load_scenario, scenario_from_dict
    from envs.sim.simulator import Simulator
    spec = load_scenario("leeyoo_static").model_dump(exclude_none=True)
    spec["workload"] = {**work, "duration_s": sim_s}
    sim = Simulator(scenario_from_dict(spec), "cubic", batch=batch, seed=0)
    sim.reset()
    sim.advance(1)  # compile / load outside the timing
    c0 = time.process_time()
    sim.run()
    cpu = time.process_time() - c0
    m = sim.results()
    return {"sim_s_per_cpu_s": batch * sim_s / cpu, "us_per_conn_step": cpu / (batch * sim_s / sim.dt) * 1e6,
            "goodput_mbps": float(m["goodput_mbps"].mean()), "items_done": float(m["items_done"].mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 simulated seconds instead of 10")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--baseline", help="another checkout to time the bulk case on (subprocess)")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sim_s = 2.0 if args.quick else 10.0
    if args.case:
        print(json.dumps(case(WORKLOADS[args.case], args.batch, sim_s)))
        return
    print(f"B={args.batch}, {sim_s:g} simulated s, leeyoo_static paths, cubic, minrtt")
    print(f"{'workload':<22} {'sim-s/CPU-s':>12} {'us/conn-step':>13} {'goodput Mbit/s':>15} {'items':>8}")
    rows = [(name, case(work, args.batch, sim_s)) for name, work in WORKLOADS.items()]
    if args.baseline:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "PYTHONPATH": args.baseline, "NUMBA_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", _BASELINE, str(args.batch), str(sim_s)], cwd=args.baseline,
                                 env=env, capture_output=True, text=True, check=True)
            rows.append((f"bulk @ {Path(args.baseline).name}", json.loads(out.stdout.splitlines()[-1])))
    for name, r in rows:
        print(f"{name:<22} {r['sim_s_per_cpu_s']:>12.1f} {r['us_per_conn_step']:>13.3f} {r['goodput_mbps']:>15.2f}"
              f" {r.get('items_done', float('nan')):>8.1f}")


# the bulk case on a checkout that may predate workloads (only the Simulator API it had)
_BASELINE = """
import json, sys, time
from envs.scenario import load_scenario, scenario_from_dict
from envs.sim.simulator import Simulator
batch, sim_s = int(sys.argv[1]), float(sys.argv[2])
spec = load_scenario("leeyoo_static").model_dump(exclude_none=True)
spec["workload"] = {"type": "bulk", "duration_s": sim_s}
sim = Simulator(scenario_from_dict(spec), "cubic", batch=batch, seed=0)
sim.reset(); sim.advance(1)
c0 = time.process_time(); sim.run(); cpu = time.process_time() - c0
print(json.dumps({"sim_s_per_cpu_s": batch * sim_s / cpu, "us_per_conn_step": cpu / (batch * sim_s / sim.dt) * 1e6,
                  "goodput_mbps": float(sim.results()["goodput_mbps"].mean())}))
"""

if __name__ == "__main__":
    main()
