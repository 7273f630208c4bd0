"""Wall time and peak memory of a 16-trial DQN sweep on this machine (Linux):
``python benchmarks/tune_sweep.py [extra tune.py overrides]``. Runs ``tune.py`` with local Ray
and samples, every 0.5 s, the memory of its whole process tree (Ray's GCS, raylet and trial
workers included): the sum of RSS (shared pages counted in every process) and of PSS (shared
pages split between processes). Sweep files and MLflow runs go to a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["agent=dqn", "cc=cubic", "duration_s=5", "tune.num_samples=16", "train.steps=10000", "train.n_envs=8",
         "train.eval_every=2500", "train.eval_runs=3", "tune.scheduler.grace_steps=2500"]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _field_kb(path: str, name: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_memory_mb(root: int) -> tuple[float, float, list[tuple[float, str]]]:
    """(sum of RSS, sum of PSS, [(PSS, name) per process]) of ``root`` and all its descendants."""
    tree, todo, seen = _children(), [root], []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += tree.get(pid, [])
    rss = sum(_field_kb(f"/proc/{p}/status", "VmRSS") for p in seen)
    per = [(_field_kb(f"/proc/{p}/smaps_rollup", "Pss") / 1024, _name(p)) for p in seen]
    return rss / 1024, sum(m for m, _ in per), per


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:60].strip() or "?"
    except OSError:
        return "?"


def main(extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "tune.py", *SWEEP, *extra, "ray.num_cpus=2", f"tune.storage_path={tmp}/ray",
               f"mlflow.tracking_uri=sqlite:///{tmp}/mlflow.db", f"hydra.run.dir={tmp}/hydra"]
        print("python " + " ".join(cmd[1:-3]), flush=True)
        peak = {"rss": 0.0, "pss": 0.0, "per": []}
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def sample() -> None:
            while proc.poll() is None:
                rss, pss, per = tree_memory_mb(proc.pid)
                peak["rss"] = max(peak["rss"], rss)
                if pss > peak["pss"]:
                    peak["pss"], peak["per"] = pss, per
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out = proc.stdout.read()
        proc.wait()
        wall = time.perf_counter() - t0
        sampler.join()
    summary = out[out.rfind("\n16 trials in") if "\n16 trials in" in out else -3000:]
    print(summary.strip())
    if proc.returncode != 0:
        sys.exit(f"tune.py failed (exit {proc.returncode})")
    print(f"\nwall time: {wall:.0f} s for 16 trials ({os.cpu_count()} cores, ray.num_cpus=2)")
    print(f"peak memory of the process tree: {peak['rss']:.0f} MB RSS summed, {peak['pss']:.0f} MB PSS; "
          f"at the PSS peak ({len(peak['per'])} processes):")
    for mb, name in sorted(peak["per"], reverse=True):
        print(f"  {mb:7.0f} MB  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
