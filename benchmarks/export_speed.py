"""Decision latency of an exported policy: nanoseconds per ``decide()`` in C (a C timing loop
over simulator states where the fast path is blocked, so every call runs the path roles, the
feature construction and the network) against microseconds per decision through the Python
policy, for the ISPRAS DQN (6 inputs, 6x6 ReLU, 2 actions; target <= 100 ns in C).

``python benchmarks/export_speed.py [checkpoint=<dir or MLflow run id>] [iterations=20000000]``;
without a checkpoint a tiny DQN is trained first (``agents.training.run``, a few seconds of
training plus the simulator's one-off compilation)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_NS = 100.0


def train_tiny_dqn(work: Path) -> Path:
    from hydra import compose, initialize_config_dir

    from agents.training import run

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose(config_name="train", overrides=[f"mlflow.tracking_uri=sqlite:///{work}/mlflow.db", "agent=dqn",
                                                      "cc=cubic", "train.steps=2000", "train.eval_every=0",
                                                      "train.eval_runs=1", "file_mb=1"])
    return Path(run(cfg, work / "run")["checkpoint"])


def decision_states(agent, meta, n: int = 4096) -> tuple[np.ndarray, ...]:
    """Raw counters and features at the simulator's decision points (fast path blocked)."""
    from envs.multipath_env import build_process
    from envs.sim.layout import CN_N_SUB
    from envs.transport import to_raw

    pr, cr, ns, xs, seed = [], [], [], [], 0
    while sum(len(x) for x in xs) < n:
        p = build_process(8, scenario=["ispras_s1", "ispras_s2", "ispras_s3"], cc=["cubic", "bbr"], seed=seed,
                          observation=meta["observation"], decision="blocked", reward="ispras", max_duration_s=3.0)
        p.reset()
        while not p.sim.done.all() and sum(len(x) for x in xs) < n:
            live = ~p.sim.done
            a, b = to_raw(p.sim.obs[live, :p.sim.P], p.sim.cobs[live])
            pr.append(a)
            cr.append(b)
            ns.append(p.sim.cn[live, CN_N_SUB].astype(np.int32))
            f = p.observe()
            xs.append(f[live])
            p.step(agent.act(f))
        seed += 1
    return tuple(np.concatenate(v)[:n] for v in (pr, cr, ns, xs))


def main(argv: list[str]) -> None:
    args = dict(a.split("=", 1) for a in argv)
    iterations = int(args.get("iterations", 20_000_000))
    from agents import checkpoint as ckpt
    from export import export_checkpoint
    from export.api import resolve_checkpoint
    from export.runtime import ExportedPolicy, Harness

    work = Path(tempfile.mkdtemp(prefix="mpsched-export-bench-"))
    try:
        source = args.get("checkpoint")
        if source is None:
            print("training a tiny ISPRAS DQN (agents.training.run, 2000 steps) ...", flush=True)
            directory = train_tiny_dqn(work)
        else:
            directory = resolve_checkpoint(source)
        agent, meta = ckpt.load(directory)
        torch_threads(1)
        pr, cr, ns, x = decision_states(agent, meta)
        print(f"\nISPRAS DQN ({meta['observation']}, {meta['n_features']} features, spec "
              f"{meta['spec']['hyperparams']['policy_kwargs']}); {len(ns)} recorded decision states\n")
        print(f"{'implementation':<44} {'per decision':>14}")
        rows = []
        for fixed in (False, True):
            h = work / ("dqn_q.h" if fixed else "dqn.h")
            export_checkpoint(directory, h, prefix="dqn_q" if fixed else "dqn", fixed_point=fixed)
            for cc in [c for c in ("gcc", "clang") if shutil.which(c)]:
                harness = Harness(h, cc, work / f"h_{cc}_{int(fixed)}")
                harness.bench(pr, cr, ns, 200_000)  # warm-up
                best = min(harness.bench(pr, cr, ns, iterations) for _ in range(3))
                label = f"C decide(), {'int32 fixed point' if fixed else 'float32'}, {cc} -O2"
                rows.append((label, best))
                print(f"{label:<44} {best:11.1f} ns", flush=True)
            pol = ExportedPolicy(h)
            agree = float(np.mean((pol.decide(pr, cr, ns) >= 0).astype(int) == agent.act(x)))
            print(f"{'':<4}(decide() vs the Python policy on the recorded states: {100 * agree:.2f}% identical)")
        # Python: one decision per call, as a per-packet scheduler would ask
        n_py = 2000
        t0 = time.perf_counter()
        for i in range(n_py):
            agent.act(x[i % len(x)][None], deterministic=True)
        py_us = (time.perf_counter() - t0) / n_py * 1e6
        t0 = time.perf_counter()
        agent.act(x, deterministic=True)
        batch_us = (time.perf_counter() - t0) / len(x) * 1e6
        pol = ExportedPolicy(work / "dqn.h")
        t0 = time.perf_counter()
        for i in range(n_py):
            pol.decide(pr[i % len(x)][None], cr[i % len(x)][None], ns[i % len(x)][None])
        ct_us = (time.perf_counter() - t0) / n_py * 1e6
        print(f"{'Python policy (SB3 predict), one decision':<44} {py_us:11.1f} us")
        print(f"{'Python policy, batch of ' + str(len(x)) + ' (per decision)':<44} {batch_us:11.2f} us")
        print(f"{'compiled header through ctypes, one call':<44} {ct_us:11.1f} us")
        fastest = min(r[1] for r in rows)
        print(f"\ntarget <= {TARGET_NS:.0f} ns per decision in C: {'met' if fastest <= TARGET_NS else 'NOT met'} "
              f"(float32 gcc {rows[0][1]:.1f} ns; {py_us * 1000 / rows[0][1]:.0f}x faster than the Python policy)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def torch_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


if __name__ == "__main__":
    main(sys.argv[1:])
