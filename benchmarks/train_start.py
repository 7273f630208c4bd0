"""The main job's start and its time split: ``python benchmarks/train_start.py [train.py overrides]``
runs ``python train.py agent=dqn cc=bbr2`` twice, first with an empty numba cache (a temporary
``NUMBA_CACHE_DIR``: the simulator core compiles) and then warm (the same cache), and prints for
each the time split the run reports (start-up to the first training step and the compile stage
within it, simulator, agent updates, evaluation), its wall time and its CPU time (user + system,
which a busy machine inflates less than wall time), with the load average."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPLIT = re.compile(r"time: start-up ([\d.]+) s \(of which the simulator core ([\d.]+) s\), simulator ([\d.]+) s, "
                   r"agent updates ([\d.]+) s, evaluation ([\d.]+) s, other ([\d.]+) s; total ([\d.]+) s")


def run(overrides: list[str], cache: str, out: str) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "train.py", "agent=dqn", "cc=bbr2", *overrides, f"hydra.run.dir={out}",
                           f"mlflow.tracking_uri=sqlite:///{out}/mlflow.db"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "NUMBA_CACHE_DIR": cache})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    match = SPLIT.search(proc.stdout)
    if proc.returncode != 0 or match is None:
        sys.exit(f"train.py failed:\n{proc.stderr[-3000:]}")
    keys = ("startup", "compile", "simulator", "agent", "evaluation", "other", "total")
    return {**dict(zip(keys, map(float, match.groups()))), "wall": wall,
            "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime}


def main(overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="train_start-") as tmp:
        rows = {"cold": run(overrides, f"{tmp}/numba", f"{tmp}/cold"),
                "warm": run(overrides, f"{tmp}/numba", f"{tmp}/warm")}
    print(f"python train.py agent=dqn cc=bbr2 {' '.join(overrides)}  (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs)")
    for name, r in rows.items():
        print(f"{name}: start-up {r['startup']:.1f} s (compile stage {r['compile']:.1f} s), simulator "
              f"{r['simulator']:.1f} s, agent updates {r['agent']:.1f} s, evaluation {r['evaluation']:.1f} s, "
              f"other {r['other']:.1f} s; wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
