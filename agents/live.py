"""Online learning on the real transport: an online learner (LinUCB, Q-learning, Peekaboo, FALCON:
``agents.base.OnlineAgent``) learns in ``mpsched/Live-v0`` over XQUIC, in the interval decision
mode (LEEYOO-style: every ``interval_ms`` the action picks XQUIC's scheduler for the next interval,
``modes``), with the same agent classes, ``learn`` loop and checkpoints as in the simulator.

The learners answer two-action questions; with ``modes = [ecf, minrtt]`` (the default) action 0
is the scheduler that waits for the fast path when that is quicker and action 1 the one that always
sends, the blocked decision taken per interval. A checkpoint trained in the simulator in the
same mode (``python train.py agent=linucb_classic env.decision=interval "env.modes=[ecf,minrtt]"``)
continues here (``--checkpoint``), and what is learnt here saves as a checkpoint of the same
agent (``meta.json``: ``backend: xquic``, the live steps), which the simulator loads back.

``--trace FILE`` keeps every transition (observation, action, reward, next observation, done) as
JSON with its provenance: the recorded trace replays into any learner of the same feature set
(``replay``), as ``tests/test_live_online.py`` does without a live setup.

    python -m agents.live --agent linucb_classic --scenario ispras_s1 --cc bbr2 --steps 400 \\
        --out live_linucb --trace trace.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from omegaconf import OmegaConf

from agents import checkpoint
from agents.base import OnlineAgent
from agents.registry import make_agent, preset
from envs.errors import ConfigError, make_writable_dir
from envs.live.provenance import load_average, provenance

DEFAULT_MODES = ("ecf", "minrtt")


class TraceRecorder(gym.Wrapper):
    """Keeps every transition of the wrapped environment (``transitions``) and each finished
    episode's metrics (``episodes``)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.transitions: list[dict[str, Any]] = []
        self.episodes: list[dict[str, Any]] = []
        self._obs: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._obs = np.asarray(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.transitions.append({"obs": self._obs.tolist() if self._obs is not None else None, "action": int(action),
                                 "reward": float(reward), "next_obs": np.asarray(obs).tolist(),
                                 "done": bool(terminated or truncated), "elapsed_s": info.get("elapsed_s")})
        if "episode_metrics" in info:
            self.episodes.append({"goodput_mbps": info["episode_metrics"]["goodput_mbps"],
                                  "decisions": info.get("decisions"), "load_avg": load_average()})
        self._obs = np.asarray(obs)
        return obs, reward, terminated, truncated, info


class LiveMonitor:
    """Prints each finished live episode; never stops training early."""

    def __init__(self) -> None:
        self.steps = 0
        self.episodes = 0

    def on_step(self, n: int, rewards: np.ndarray, infos: list[dict]) -> bool:
        self.steps += n
        for info in infos:
            if "episode_metrics" in info:
                self.episodes += 1
                print(f"episode {self.episodes}: {info['episode_metrics']['goodput_mbps']:.2f} Mbit/s after "
                      f"{self.steps} steps", flush=True)
        return True


def learn_live(agent: OnlineAgent, env: gym.Env, steps: int, monitor: Any | None = None) -> None:
    """``agent.learn`` on the live environment, one connection at a time (SB3's DummyVecEnv gives
    the loop the vector interface and the terminal observations it expects)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    agent.learn(DummyVecEnv([lambda: env]), steps, monitor or LiveMonitor())  # type: ignore[arg-type]


def replay(agent: OnlineAgent, trace: dict[str, Any]) -> int:
    """Feed a recorded trace's transitions to ``agent.update`` in order (as ``learn`` would have);
    returns how many."""
    for t in trace["transitions"]:
        agent.update(np.asarray([t["obs"]], dtype=np.float32), np.array([t["action"]]), np.array([t["reward"]]),
                     np.asarray([t["next_obs"]], dtype=np.float32), np.array([t["done"]]))
    return len(trace["transitions"])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m agents.live", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", default="linucb_classic", help="an online learner's preset (configs/agent)")
    ap.add_argument("--checkpoint", type=Path, help="continue a checkpoint of the same agent and modes")
    ap.add_argument("--scenario", default="ispras_s1")
    ap.add_argument("--cc", default="bbr2")
    ap.add_argument("--modes", nargs="+", default=list(DEFAULT_MODES),
                    help="XQUIC schedulers, one per action, with parameters as labels: wait_rule(k=1.25)")
    ap.add_argument("--interval-ms", type=float, default=50.0)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--file-mb", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="the checkpoint directory to write")
    ap.add_argument("--trace", type=Path, help="write every transition here (JSON)")
    a = ap.parse_args(argv)
    if a.steps < 1:
        raise ConfigError(f"--steps must be an integer >= 1, got {a.steps}")
    for flag, where in (("--out", a.out.parent), ("--trace", a.trace.parent if a.trace else None)):
        try:  # before the live session, whose steps would be lost at the end
            if where is not None:
                make_writable_dir(where)
        except OSError as err:
            raise ConfigError(f"{flag}: cannot write into {where} ({err.strerror or err})") from None
    if a.trace is not None and a.trace.is_dir():
        raise ConfigError(f"--trace {a.trace} is a directory; give the trace's file name")
    cfg = preset(a.agent)
    spec, env_cfg = cfg["agent"], cfg.get("env") or {}
    observation = env_cfg.get("observation", "peekaboo")
    reward = dict(env_cfg.get("reward") or {})
    from envs.live.env import LiveEnv
    from envs.scenario import resolve_scenarios

    scen = resolve_scenarios(a.scenario)[0].with_workload(file_mb=a.file_mb)
    live = LiveEnv(scen, a.cc, backend="xquic", decision="interval", interval_ms=a.interval_ms, modes=a.modes,
                   observation=observation, reward=reward.pop("name", "ispras"), reward_params=reward, seed=a.seed)
    interface = {"agent": spec.get("name"), "kind": spec.get("kind"), "observation": observation,
                 "n_features": len(live.features), "n_actions": len(a.modes),
                 "n_paths": live.P, "decision": "interval"}
    if a.checkpoint:
        loaded, meta = checkpoint.load(a.checkpoint, expect=interface)
    else:
        loaded, meta = make_agent(spec, interface["n_features"], interface["n_actions"], a.seed), {}
    if not isinstance(loaded, OnlineAgent):
        raise ConfigError(f"online learning on the live transport takes an online learner (LinUCB, Q-learning, "
                          f"Peekaboo, FALCON); {a.agent} is {type(loaded).__name__}")
    agent = loaded
    env = TraceRecorder(live)
    monitor = LiveMonitor()
    try:
        learn_live(agent, env, a.steps, monitor)
    finally:
        env.close()
    prov = {**provenance("python -m agents.live", argv if argv is not None else sys.argv[1:]),
            "scenario": scen.name, "cc": a.cc, "modes": a.modes, "interval_ms": a.interval_ms,
            "observation": observation, "reward": env_cfg.get("reward"), "file_mb": a.file_mb}
    meta = {**meta, **interface, "spec": spec, "seed": a.seed, "finished": True, "backend": "xquic",
            "modes": a.modes, "steps_done": int(meta.get("steps_done", 0)) + monitor.steps,
            "live_steps": monitor.steps, "live": prov, "config_hash": meta.get("config_hash", "live"),
            "scenarios": [scen.name], "ccs": [a.cc]}
    env_yaml = {**env_cfg, "decision": "interval", "interval_ms": a.interval_ms, "modes": list(a.modes)}
    checkpoint.save(a.out, agent, meta, OmegaConf.to_yaml(OmegaConf.create({**cfg, "env": env_yaml})))
    if a.trace:
        a.trace.write_text(json.dumps({"provenance": prov, "agent": a.agent, "feature_names":
                                       [f.name for f in live.features], "episodes": env.episodes,
                                       "transitions": env.transitions}, indent=None))
    print(f"{monitor.steps} live steps, {monitor.episodes} episodes; checkpoint {a.out}"
          + (f", trace {a.trace}" if a.trace else ""))


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending():
        main(debug_argv(sys.argv[1:]))
