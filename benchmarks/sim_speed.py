"""Simulator speed and memory: ``python benchmarks/sim_speed.py`` (``--quick`` for a short run).

Prints simulated seconds per wall-clock second (and per CPU second of the process, which is less
sensitive to other load on the machine) and peak memory, each case in its own process, for
ispras_s1 under bbr with a 1 ms step:
- cold start: the first call in a process with an empty numba cache (compilation), and with a
  warm cache;
- one env driven through the Gymnasium API with random actions, per decision mode (drawn in
  advance, and by ``action_space.sample()`` in the loop; the blocked mode also on the paths of
  ispras_s2 and ispras_s3), with the share
  of the time spent in the one compiled call per env step (``envs.decision._step``: actions,
  simulation, reward, features) and its cost per call;
- the batched core (minRTT inside the kernel) at B = 1, 64, 1024 with 2 paths, and how the cost
  grows with the number of paths (2, 4, 8) and with B: per connection-step, per path-step and per
  packet sent, under the default stack profile (xquic) and, at B = 64, under each other profile
  (``envs/sim/stacks.py``), with the packets each declares lost and retransmits per
  connection-step (its loss path's work); at B = 64 also under cubic (unpaced) per profile.
  One case alone: ``--case core B PATHS SIM_S [STACK [CC]]``;
- a network: MPTCP-TUT's full mesh (mptcp_tut_mesh_e3: 6 subflows over 5 shared bottlenecks,
  LIA, minRTT) at B = 64;
- peak resident memory of each process and the size of the simulator's state arrays.
One core: the kernel is single-threaded (numba without ``parallel``).
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's envs
SIM_S = 10.0  # simulated seconds per case


def scenario(n_paths: int = 2, sim_s: float = SIM_S, name: str = "ispras_s1"):
    from envs.scenario import load_scenario, scenario_from_dict
    base = load_scenario(name).model_dump(exclude_none=True)
    base["paths"] = [base["paths"][i % 2] for i in range(n_paths)]
    base["workload"] = {"type": "bulk", "duration_s": sim_s}
    return scenario_from_dict(base)


def _state_mb(sim) -> float:
    return sum(v.nbytes for v in vars(sim).values() if hasattr(v, "nbytes")) / 1e6


def case_core(batch: int, n_paths: int, sim_s: float, stack: str | None = None, cc: str = "bbr") -> dict:
    from envs.sim.layout import FL_SENT_PKTS, OBS_LOSSES, OBS_RETRANS
    from envs.sim.simulator import SimConfig, Simulator
    sim = Simulator(scenario(n_paths, sim_s), cc, batch=batch, seed=0,
                    config=SimConfig() if stack is None else SimConfig(stack=stack))
    sim.reset()
    sim.advance(1)  # compile / load outside the timing
    t0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn_steps = batch * sim_s / sim.dt
    return {"wall_s": wall, "cpu_s": cpu, "sim_s_per_wall_s": batch * sim_s / wall,
            "sim_s_per_cpu_s": batch * sim_s / cpu, "us_per_conn_step": cpu / conn_steps * 1e6,
            "pkts_per_conn_step": float(sim.fl[:, :n_paths, FL_SENT_PKTS].sum() / conn_steps),
            "ns_per_packet": cpu / max(float(sim.fl[:, :n_paths, FL_SENT_PKTS].sum()), 1.0) * 1e9,
            "declared_per_conn_step": float(sim.obs[:, :n_paths, OBS_LOSSES].sum() / conn_steps),
            "retrans_per_conn_step": float(sim.obs[:, :n_paths, OBS_RETRANS].sum() / conn_steps),
            "state_mb": _state_mb(sim)}


def case_mesh(batch: int, sim_s: float) -> dict:
    from envs.scenario import load_scenario
    from envs.sim.layout import FL_SENT_PKTS
    from envs.sim.simulator import SimConfig, Simulator
    sim = Simulator(load_scenario("mptcp_tut_mesh_e3").with_workload(duration_s=sim_s), "lia", batch=batch, seed=0,
                    config=SimConfig(stack="linux"))  # LIA is the Linux stack's (envs/sim/stacks.py)
    sim.reset()
    sim.advance(1)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn_steps = batch * sim_s / sim.dt
    return {"sim_s_per_wall_s": batch * sim_s / wall, "sim_s_per_cpu_s": batch * sim_s / cpu,
            "us_per_conn_step": cpu / conn_steps * 1e6,
            "pkts_per_conn_step": float(sim.fl[:, :sim.P, FL_SENT_PKTS].sum() / conn_steps)}


def case_gym(decision: str, sim_s: float, sampled: bool, name: str = "ispras_s1") -> dict:
    import gymnasium as gym
    import numpy as np

    import envs  # noqa: F401
    from envs.decision import DecisionProcess
    kernel = {"s": 0.0, "calls": 0}
    compiled = DecisionProcess._compiled_step  # one compiled call per env step: simulation, reward, features

    def timed(self, actions):
        t = time.perf_counter()
        try:
            return compiled(self, actions)
        finally:
            kernel["s"] += time.perf_counter() - t
            kernel["calls"] += 1

    DecisionProcess._compiled_step = timed
    env = gym.make("mpsched/Multipath-v0", scenario=scenario(2, sim_s, name), cc="bbr", decision=decision)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.reset(seed=0)
    env.action_space.seed(0)
    drawn = np.random.default_rng(0).integers(env.action_space.n, size=10**6).tolist()
    kernel.update(s=0.0, calls=0)
    t0, c0 = time.perf_counter(), time.process_time()
    steps, done = 0, False
    while not done:
        action = env.action_space.sample() if sampled else drawn[steps]
        *_, term, trunc, info = env.step(action)
        steps, done = steps + 1, term or trunc
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "sim_s_per_wall_s": sim_s / wall, "sim_s_per_cpu_s": sim_s / cpu,
            "env_steps": steps, "us_per_env_step": cpu / steps * 1e6,
            "kernel_share": kernel["s"] / wall, "us_per_kernel_call": kernel["s"] / max(kernel["calls"], 1) * 1e6,
            "sim_s_per_kernel_s": sim_s / max(kernel["s"], 1e-9)}


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


def main(quick: bool) -> None:
    sim_s = 2.0 if quick else SIM_S
    load = os.getloadavg()
    print(f"ispras_s1, cc=bbr, dt=1 ms, {sim_s:.0f} simulated s per case; one core; peak RSS per process")
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start "
          "(other processes slow the wall-clock figures; the CPU-time figures much less)\n")
    with tempfile.TemporaryDirectory() as cache:
        cold = run_case(["cold"], {"NUMBA_CACHE_DIR": cache})  # compiles into the empty cache
        warm = run_case(["cold"], {"NUMBA_CACHE_DIR": cache})  # loads what the first run compiled
    run_case(["cold"])  # make sure the default cache is warm for the cases below
    print(f"cold start (empty numba cache, compiles): {cold['first_call_s']:.1f} s, peak {cold['peak_mb']:.0f} MB; "
          f"warm cache: {warm['first_call_s']:.1f} s, peak {warm['peak_mb']:.0f} MB (both include imports)\n")
    print("single env through the Gymnasium API, random actions (drawn in advance: the env's own cost; "
          "in the loop by action_space.sample(): a random agent's), CPU time:")
    for decision in ("blocked", "interval", "packet"):
        for how in ("drawn", "sample"):
            r = run_case(["gym", decision, str(sim_s), how])
            print(f"  {decision:>8} {how:>6}: {r['sim_s_per_cpu_s']:8.1f} x real time per CPU s "
                  f"({r['sim_s_per_wall_s']:.1f} per wall s), {r['env_steps']} steps, {r['us_per_env_step']:.1f} us/step, "
                  f"peak {r['peak_mb']:.0f} MB; compiled step: {100 * r['kernel_share']:.0f}% of the time, "
                  f"{r['us_per_kernel_call']:.1f} us/call ({r['sim_s_per_kernel_s']:.0f} x real time on its own)")
    for name in ("ispras_s2", "ispras_s3"):
        for how in ("drawn", "sample"):
            r = run_case(["gym", "blocked", str(sim_s), how, name])
            print(f"  {name} blocked {how:>6}: {r['sim_s_per_cpu_s']:8.1f} x real time per CPU s "
                  f"({r['sim_s_per_wall_s']:.1f} per wall s), {r['env_steps']} steps, {r['us_per_env_step']:.1f} us/step")
    print("\nbatched core (minRTT in the kernel), aggregate simulated s per wall s (per CPU s):")
    grid = [(2, 1), (2, 64), (2, 1024), (4, 1), (4, 64), (4, 1024), (8, 1), (8, 64), (8, 1024)]
    if quick:
        grid = [(2, 1), (2, 64), (2, 1024), (4, 64), (8, 64)]
    from envs.sim.stacks import DEFAULT_STACK, STACKS
    runs = [(n_paths, batch, DEFAULT_STACK, "bbr") for n_paths, batch in grid]
    runs += [(2, 64, stack, "bbr") for stack in STACKS if stack != DEFAULT_STACK]
    runs += [(2, 64, stack, "cubic") for stack in STACKS]  # unpaced: no path buffer at work
    for n_paths, batch, stack, cc in runs:
        r = run_case(["core", str(batch), str(n_paths), str(sim_s), stack, cc])
        print(f"  stack={stack} cc={cc} paths={n_paths} B={batch:>5}: {r['sim_s_per_wall_s']:9.0f} x real time "
              f"({r['sim_s_per_cpu_s']:9.0f}), {r['us_per_conn_step']:6.3f} us per connection-step, "
              f"{r['us_per_conn_step'] / n_paths:6.3f} per path, {r['ns_per_packet']:5.1f} ns per packet "
              f"({r['pkts_per_conn_step']:.1f} packets, {r['declared_per_conn_step']:.2f} declared lost, "
              f"{r['retrans_per_conn_step']:.2f} retransmitted), state {r['state_mb']:6.1f} MB, peak {r['peak_mb']:5.0f} MB")
    r = run_case(["mesh", "64", str(sim_s)])
    print(f"\nnetwork, MPTCP-TUT full mesh (mptcp_tut_mesh_e3, 6 subflows over 5 shared bottlenecks, lia) B=   64: "
          f"{r['sim_s_per_wall_s']:9.0f} x real time ({r['sim_s_per_cpu_s']:9.0f}), "
          f"{r['us_per_conn_step']:6.3f} us per connection-step ({r['pkts_per_conn_step']:.1f} packets)")


# ``--case KIND ARGS...``: each kind's arguments, as (name, type) in order; the ones after the
# required count may be left out
CASES = {"core": ([("B", int), ("PATHS", int), ("SIM_S", float), ("STACK", str), ("CC", str)], 3),
         "gym": ([("DECISION", str), ("SIM_S", float), ("drawn|sample", str), ("SCENARIO", str)], 3),
         "cold": ([], 0), "mesh": ([("B", int), ("SIM_S", float)], 2)}


def case_args(parser: argparse.ArgumentParser, words: list[str]) -> tuple[str, list]:
    """``--case``'s kind and its arguments converted, or the parser's usage error naming what is
    wrong (a bad word ended in a KeyError or IndexError of the dispatch below)."""
    kind, *rest = words
    if kind not in CASES:
        parser.error(f"--case: unknown case {kind!r}; valid: {', '.join(CASES)}")
    spec, required = CASES[kind]
    usage = f"--case {kind} {' '.join(n if i < required else f'[{n}]' for i, (n, _) in enumerate(spec))}".rstrip()
    if not required <= len(rest) <= len(spec):
        parser.error(f"{usage}: expected {required}{'' if required == len(spec) else f'-{len(spec)}'} "
                     f"arguments, got {len(rest)}")
    values = []
    for (name, kind_of), word in zip(spec, rest):
        try:
            values.append(kind_of(word))
        except ValueError:
            parser.error(f"{usage}: {name} must be {'an integer' if kind_of is int else 'a number'}, got {word!r}")
    if kind == "gym" and values[2] not in ("drawn", "sample"):  # actions drawn in advance, or by action_space.sample()
        parser.error(f"{usage}: the third argument must be drawn or sample, got {values[2]!r}")
    return kind, values


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", nargs="+")
    parser.add_argument("--quick", action="store_true", help="2 simulated s per case and a smaller grid")
    ns = parser.parse_args()
    if ns.case is None:
        main(ns.quick)
    else:
        from envs.errors import ending

        kind, v = case_args(parser, ns.case)
        with ending(bad_input_code=2):  # a value the simulator refuses (batch 0, an unknown stack): its one line
            result = {"core": lambda: case_core(*v), "gym": lambda: case_gym(v[0], v[1], v[2] == "sample", *v[3:]),
                      "cold": case_cold, "mesh": lambda: case_mesh(*v)}[kind]()
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
