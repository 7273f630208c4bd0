"""Environment steps per second during training, for every agent in configs/agent:
``python benchmarks/train_speed.py [steps]``. Each agent trains on its default setup (ispras_s1,
cc=bbr, 8 parallel connections) for ``steps`` transitions after a short warm-up."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hydra import compose, initialize_config_dir

from agents.registry import make_agent
from agents.training import apply_runtime, make_env, setup

ROOT = Path(__file__).resolve().parents[1]


class Counter:
    def __init__(self, limit: int) -> None:
        self.steps, self.limit = 0, limit

    def on_step(self, n, rewards, infos) -> bool:
        self.steps += n
        return self.steps < self.limit


def main(steps: int) -> None:
    agents = sorted(p.stem for p in (ROOT / "configs" / "agent").glob("*.yaml"))
    print(f"{'agent':<16} {'env steps/s':>12}   (ispras_s1, bbr, 8 connections, {steps} steps)")
    for name in agents:
        with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
            cfg = compose(config_name="train", overrides=[f"agent={name}", "cc=bbr"])
        s = setup(cfg, ROOT / "outputs" / "bench")
        apply_runtime(s)
        env = make_env(s, s.n_envs, s.seed)
        agent = make_agent(s.agent_spec, env.observation_space.shape[0], int(env.action_space.n), s.seed)
        agent.learn(env, 2000, Counter(2000))  # warm-up: compilation, buffers
        counter = Counter(steps)
        t0 = time.perf_counter()
        agent.learn(env, steps, counter)
        print(f"{name:<16} {counter.steps / (time.perf_counter() - t0):12.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
