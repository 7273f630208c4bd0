"""The main job's start and its time split: ``python benchmarks/train_start.py [train.py overrides]``
runs ``python train.py agent=dqn cc=bbr2`` as a new user meets it, each run in a temporary numba
cache (``NUMBA_CACHE_DIR``) and MLflow store:
- installed: after the install step's ``python -m envs.compilation`` (timed on its own), the first
  run (its MLflow store is created);
- warm: the second run, same cache and store (a user's every later run);
- cold: with an empty cache (the install step skipped, or the compiled sources edited since): the
  run compiles the simulator core itself.
It prints for each the time split the run reports (start-up to the first training step and the
compile stage within it, simulator, agent updates, evaluation), its wall time and its CPU time
(user + system, which a busy machine inflates less than wall time), with the load average."""

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


def timed(command: list[str], cache: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``command`` in this checkout with numba's cache in ``cache``: the process, its wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NUMBA_CACHE_DIR": cache})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return proc, wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def run(overrides: list[str], cache: str, store: str, out: str) -> dict[str, float]:
    proc, wall, cpu = timed(["train.py", "agent=dqn", "cc=bbr2", *overrides, f"hydra.run.dir={out}",
                             f"mlflow.tracking_uri=sqlite:///{store}/mlflow.db"], cache)
    match = SPLIT.search(proc.stdout)
    if match is None:
        sys.exit(f"train.py printed no time split:\n{proc.stdout[-3000:]}")
    keys = ("startup", "compile", "simulator", "agent", "evaluation", "other", "total")
    return {**dict(zip(keys, map(float, match.groups()))), "wall": wall, "cpu": cpu}


def main(overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="train_start-") as tmp:
        _, install_wall, install_cpu = timed(["-m", "envs.compilation"], f"{tmp}/numba")
        rows = {"installed": run(overrides, f"{tmp}/numba", f"{tmp}/store", f"{tmp}/installed"),
                "warm": run(overrides, f"{tmp}/numba", f"{tmp}/store", f"{tmp}/warm"),
                "cold": run(overrides, f"{tmp}/numba-empty", f"{tmp}/store-cold", f"{tmp}/cold")}
    print(f"python train.py agent=dqn cc=bbr2 {' '.join(overrides)}  (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs)")
    print(f"install step (python -m envs.compilation): wall {install_wall:.1f} s, CPU {install_cpu:.1f} s")
    for name, r in rows.items():
        print(f"{name}: start-up {r['startup']:.1f} s (compile stage {r['compile']:.1f} s), simulator "
              f"{r['simulator']:.1f} s, agent updates {r['agent']:.1f} s, evaluation {r['evaluation']:.1f} s, "
              f"other {r['other']:.1f} s; wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
