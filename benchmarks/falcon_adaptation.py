"""FALCON's claim (docs/schedulers.md): after a change of network conditions its meta-learned
model adapts faster than learning from scratch. ``python benchmarks/falcon_adaptation.py``.

Setting (blocked decision, ``peekaboo`` observation, ``throughput`` reward, CUBIC):

- before the change, A = "send matters": fast path 5 Mbit/s, 10 ms one-way; second path
  30 Mbit/s, 20 ms; a 2 MB file. Sending on the second path roughly doubles goodput.
- after the change, B = "wait matters": fast path 20 Mbit/s, 5 ms; second path 1 Mbit/s,
  150 ms; a 0.5 MB file. One packet on the second path delays completion by its RTT.

The best policy flips at the change. At the change every connection restarts in B.

Learners (same Q-network, DQN settings and online learner, ``agents.falcon``):
- ``falcon``: meta-trained offline (Reptile) over two condition classes that contain A and B
  as (unseen) members -- "send" (fast 3-10 Mbit/s, 5-15 ms; second 10-50 Mbit/s, 10-30 ms;
  2 MB) and "wait" (fast 10-50 Mbit/s, 2-10 ms; second 0.5-2 Mbit/s, 80-200 ms; 0.5 MB) --
  deployed on A, then B; the reward-drop CUSUM detects the change, resets to the meta-model and
  adapts.
- ``scratch``: the same network from a random initialisation, learning online on B from the
  change on (no meta-training, no change detection).
- ``scratch_on_A``: the same, but trained from a random initialisation on A first and carrying
  on after the change (a plain online DQN meeting a change).

Measure: the running mean of the per-decision reward (window ``--window`` batched steps of
8 connections). Converged reward R* on B = the best of the three learners' running means over
the last quarter of the post-change phase (all rewards are >= 0 here). Recovery = the number
of transitions after the change until the running mean first reaches ``0.9 R*`` (its first
value needs one full window, so ``--window`` x 8 transitions is the floor). For reference, a
uniformly random policy's mean reward on B (R_rand) is printed. Per seed, then the mean over
seeds; FALCON's detection delay and its false alarms before the change are printed too.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from agents.falcon import Falcon
from envs.errors import out_of_range
from envs.scenario import scenario_from_dict
from envs.vector_env import SB3VecEnv

N_ENVS = 8
CC = "cubic"
ENV = {"observation": "peekaboo", "reward": "throughput", "decision": "blocked"}

A = {"name": "send_matters", "paths": [{"bandwidth_mbps": 5, "delay_ms": 10}, {"bandwidth_mbps": 30, "delay_ms": 20}],
     "workload": {"type": "file", "file_mb": 2}}
B = {"name": "wait_matters", "paths": [{"bandwidth_mbps": 20, "delay_ms": 5}, {"bandwidth_mbps": 1, "delay_ms": 150}],
     "workload": {"type": "file", "file_mb": 0.5}}
TASKS = [
    {"name": "class_send", "workload": {"type": "file", "file_mb": 2},
     "paths": [{"bandwidth_mbps": {"loguniform": [3, 10]}, "delay_ms": {"uniform": [5, 15]}},
               {"bandwidth_mbps": {"loguniform": [10, 50]}, "delay_ms": {"uniform": [10, 30]}}]},
    {"name": "class_wait", "workload": {"type": "file", "file_mb": 0.5},
     "paths": [{"bandwidth_mbps": {"loguniform": [10, 50]}, "delay_ms": {"uniform": [2, 10]}},
               {"bandwidth_mbps": {"loguniform": [0.5, 2]}, "delay_ms": {"uniform": [80, 200]}}]},
]


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


def make_env(seed: int) -> SB3VecEnv:
    """One simulator sized for A, B and the task classes; the scenario list is swapped."""
    return SB3VecEnv(N_ENVS, scenario=[A, B, *TASKS], cc=CC, seed=seed, **ENV)


def use(env: SB3VecEnv, scenario: dict) -> np.ndarray:
    env.process.sim.scenarios = [scenario_from_dict(scenario)]
    return env.reset()


def run_online(agent: Falcon, env: SB3VecEnv, obs: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Online learning for ``steps`` transitions; per batched step mean reward."""
    rewards = []
    for _ in range(steps // N_ENVS):
        actions = agent.explore(obs)
        next_obs, rew, dones, infos = env.step(actions)
        final = np.array([i.get("terminal_observation", o) for o, i in zip(next_obs, infos)])
        agent.update(obs, actions, rew, final, dones)
        rewards.append(float(np.mean(rew)))
        obs = next_obs
    return np.array(rewards), obs


def random_reward(env: SB3VecEnv, steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    use(env, B)
    return float(np.mean([np.mean(env.step(rng.integers(0, 2, N_ENVS))[1]) for _ in range(steps // N_ENVS)]))


def running(x: np.ndarray, window: int) -> np.ndarray:
    c = np.cumsum(np.insert(x, 0, 0.0))
    out = np.full(len(x), np.nan)
    out[window - 1:] = (c[window:] - c[:-window]) / window
    return out


def recovery(curve: np.ndarray, target: float) -> float:
    hit = np.flatnonzero(curve >= target)
    return float((hit[0] + 1) * N_ENVS) if hit.size else float("nan")


def one_seed(seed: int, args) -> dict:
    spec = {"kind": "falcon", "params": {"tasks": TASKS, "meta_lr": args.meta_lr, "inner_steps": args.inner_steps,
                                         "adapt_steps": args.adapt_steps}}
    curves, info = {}, {}
    # FALCON: meta-train, deploy on A, change to B
    env = make_env(seed)
    falcon = Falcon(spec, 6, 2, seed)
    t0 = time.perf_counter()
    falcon.meta_train(env, args.meta_steps, Always())
    falcon.meta_done = True
    falcon.deploy()
    info["meta_s"] = time.perf_counter() - t0
    _, obs = run_online(falcon, env, use(env, A), args.pre_steps)
    switch = falcon.online_steps
    curves["falcon"], _ = run_online(falcon, env, use(env, B), args.post_steps)
    after = [c - switch for c in falcon.change_steps if c > switch]
    info["detected_after"] = after[0] if after else float("nan")
    info["false_alarms_before"] = sum(c <= switch for c in falcon.change_steps)
    # scratch: random initialisation, online on B from the change on
    env = make_env(seed)
    plain = {"kind": "falcon", "params": {"change_detection": False}}
    scratch = Falcon(plain, 6, 2, seed)
    scratch.deploy()
    curves["scratch"], _ = run_online(scratch, env, use(env, B), args.post_steps)
    # scratch_on_A: random initialisation, online on A, then carries on into B
    env = make_env(seed)
    on_a = Falcon(plain, 6, 2, seed)
    on_a.deploy()
    run_online(on_a, env, use(env, A), args.pre_steps)
    curves["scratch_on_A"], _ = run_online(on_a, env, use(env, B), args.post_steps)

    r_rand = random_reward(make_env(seed + 100), 4000, seed)
    smooth = {k: running(v, args.window) for k, v in curves.items()}
    tail = len(curves["falcon"]) * 3 // 4
    r_star = max(float(np.nanmean(v[tail:])) for v in smooth.values())
    target = 0.9 * r_star
    out = {k: recovery(v, target) for k, v in smooth.items()}
    return {**out, **info, "r_rand": r_rand, "r_star": r_star,
            "falcon_first_window": float(smooth["falcon"][args.window - 1]),
            "scratch_first_window": float(smooth["scratch"][args.window - 1])}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.falcon_adaptation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--meta-steps", type=int, default=24000, help="offline meta-training transitions")
    ap.add_argument("--inner-steps", type=int, default=512, help="transitions per task")
    ap.add_argument("--meta-lr", type=float, default=0.5)
    ap.add_argument("--adapt-steps", type=int, default=20, help="gradient steps right after a detected change")
    ap.add_argument("--pre-steps", type=int, default=6000, help="online transitions before the change")
    ap.add_argument("--post-steps", type=int, default=4000, help="online transitions after the change")
    ap.add_argument("--window", type=int, default=10, help="running-mean window, batched steps")
    args = ap.parse_args(argv)
    for flag, n in (("--seeds", args.seeds), ("--window", args.window)):
        if n < 1:
            raise out_of_range(flag, n, "an integer >= 1")
    if args.post_steps < args.window * N_ENVS:  # the running mean's first value needs one full window
        raise out_of_range("--post-steps", args.post_steps, f">= --window x {N_ENVS} = {args.window * N_ENVS}")
    rows = []
    print(f"A -> B change; recovery = transitions after the change until the running reward "
          f"(window {args.window * N_ENVS} transitions) reaches 90% of the converged reward R*")
    print("seed | falcon | scratch | scratch_on_A | falcon: detected after, false alarms before | R_rand | R* "
          "| meta-training s")
    for seed in range(args.seeds):
        r = one_seed(seed, args)
        rows.append(r)
        print(f"{seed:>4} | {r['falcon']:>6.0f} | {r['scratch']:>7.0f} | {r['scratch_on_A']:>12.0f} | "
              f"{r['detected_after']:>15.0f}, {r['false_alarms_before']} | {r['r_rand']:.3f} | {r['r_star']:.3f} | "
              f"{r['meta_s']:.1f}",
              flush=True)
    for k in ("falcon", "scratch", "scratch_on_A"):
        v = np.array([r[k] for r in rows])
        ok = v[~np.isnan(v)]
        txt = f"{ok.mean():.0f} ± {ok.std():.0f}" if ok.size else "never"
        print(f"{k:>13}: mean transitions to recover {txt} (recovered in {ok.size}/{len(v)} seeds)")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
