"""Simulator speed and memory: ``python benchmarks/sim_speed.py``.

Prints simulated seconds per wall-clock second and peak memory (each case in its own process)
for ispras_s1 under bbr with a 1 ms step:
- one env driven through the Gymnasium API with random actions (each decision mode);
- the batched core (minRTT inside the kernel) at B = 1, 64, 1024;
- how cost grows with the number of paths (2, 4, 8) and with B;
- cold start: the first call in a process with an empty numba cache (compilation) and with a
  warm cache.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

SIM_S = 10.0  # simulated seconds per case


def scenario(n_paths: int = 2):
    from envs.scenario import load_scenario, scenario_from_dict
    base = load_scenario("ispras_s1").model_dump(exclude_none=True)
    base["paths"] = [base["paths"][i % 2] for i in range(n_paths)]
    base["workload"] = {"type": "bulk", "duration_s": SIM_S}
    return scenario_from_dict(base)


def case_core(batch: int, n_paths: int) -> dict:
    from envs.sim.simulator import Simulator
    sim = Simulator(scenario(n_paths), "bbr", batch=batch, seed=0)
    sim.reset()
    sim.advance(1)  # compile / load outside the timing
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "sim_s_per_wall_s": batch * SIM_S / wall}


def case_gym(decision: str) -> dict:
    import gymnasium as gym
    import envs  # noqa: F401
    env = gym.make("mpsched/Multipath-v0", scenario=scenario(), cc="bbr", decision=decision)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.reset(seed=0)
    t0 = time.perf_counter()
    steps, done = 0, False
    while not done:
        *_, term, trunc, info = env.step(env.action_space.sample())
        steps, done = steps + 1, term or trunc
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "sim_s_per_wall_s": SIM_S / wall, "env_steps": steps,
            "us_per_env_step": wall / steps * 1e6}


def case_cold() -> dict:
    t0 = time.perf_counter()
    from envs.sim.simulator import Simulator
    sim = Simulator(scenario(), "bbr", batch=1, seed=0)
    sim.reset()
    sim.advance(1)
    return {"first_call_s": time.perf_counter() - t0}


def run_case(args: list[str], env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--case", *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"ispras_s1, cc=bbr, dt=1 ms, {SIM_S:.0f} simulated s per case; peak RSS per process\n")
    with tempfile.TemporaryDirectory() as empty:
        cold = run_case(["cold"], {"NUMBA_CACHE_DIR": empty})
    warm = run_case(["cold"])
    print(f"cold start (empty numba cache, compiles): {cold['first_call_s']:.1f} s; "
          f"warm cache: {warm['first_call_s']:.1f} s (includes imports)\n")
    print("single env through the Gymnasium API, random actions:")
    for decision in ("blocked", "interval", "packet"):
        r = run_case(["gym", decision])
        print(f"  {decision:>8}: {r['sim_s_per_wall_s']:8.1f} x real time, {r['env_steps']} steps, "
              f"{r['us_per_env_step']:.1f} us/step, peak {r['peak_mb']:.0f} MB")
    print("\nbatched core (minRTT in the kernel), aggregate simulated s per wall s:")
    for n_paths in (2, 4, 8):
        for batch in (1, 64, 1024):
            if n_paths > 2 and batch == 1024:
                batch = 256
            r = run_case(["core", str(batch), str(n_paths)])
            print(f"  paths={n_paths} B={batch:>5}: {r['sim_s_per_wall_s']:10.0f} x real time "
                  f"({r['sim_s_per_wall_s'] / batch:8.1f} x per connection), peak {r['peak_mb']:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", nargs="+")
    ns = parser.parse_args()
    if ns.case is None:
        main()
    else:
        kind, *rest = ns.case
        result = {"core": lambda: case_core(int(rest[0]), int(rest[1])), "gym": lambda: case_gym(rest[0]),
                  "cold": case_cold}[kind]()
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
