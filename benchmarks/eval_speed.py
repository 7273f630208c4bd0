"""Wall time of a heuristics-only study: 6 schedulers x ispras_s1-s3 x cubic, bbr, bbr2 x 10 runs
(10 MB files), cells run as a study runs them (``studies.runner.backend``: heuristics only, so in this
process unless ``ray.tasks=always`` or a cluster):
``python benchmarks/eval_speed.py [workers]`` (issue target: under 60 s on 2 cores). The 6 schedulers: minRTT, ECF, BLEST, RR, LTS
and HSR (the ISPRAS baselines and three per-packet rules). Prints the time to validate, evaluate and write the report
(MLflow logging excluded), and the summed per-cell time (the serial cost)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from studies import report, runner, spec

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ["minrtt", "ecf", "blest", "rr", "lts", "hsr"]


def main(workers: int) -> None:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose(config_name="evaluate", overrides=[f"workers={workers}"])
    with open_dict(cfg):
        cfg.study = OmegaConf.create({"name": "eval_speed", "runs": 10, "scenarios": ["ispras_s1", "ispras_s2",
                                      "ispras_s3"], "ccs": ["cubic", "bbr", "bbr2"], "schedulers": SCHEDULERS})
    out = Path(tempfile.mkdtemp(prefix="eval_speed-"))
    start = time.perf_counter()
    study = spec.from_config(cfg, out)
    with runner.backend(study) as backend:
        results = runner.evaluate_cells(study, backend)
    evaluated = time.perf_counter()
    report.write(study, results, out)
    done = time.perf_counter()
    serial = sum(r["seconds"] for r in results.values())
    labels = ", ".join(e.label for e in study.schedulers)
    print(f"\nstudy: {len(study.schedulers)} schedulers ({labels}) x {len(study.scenarios)} scenarios x "
          f"{len(study.ccs)} CCs x {study.runs} runs = {len(results)} cells, {workers} workers, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    where = "incl. Ray's start" if backend.name == "ray" else "in this process"
    print(f"evaluate ({where}): {evaluated - start:.1f} s   report: {done - evaluated:.1f} s   "
          f"total: {done - start:.1f} s   (summed cell time {serial:.1f} s)   outputs: {out}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
