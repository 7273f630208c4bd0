"""A policy trained in the simulator to pick a scheduler every interval (``agent=dqn_modes``), live
in XQUIC, against the first of its modes run alone: ``sudo python -m benchmarks.modes_live
--checkpoint <dir> --scenario ispras_s2 --cc bbr --runs 30 --out tests/data/modes_live.json``.

``mpsched/Live-v0`` (``envs.live.env.LiveEnv``) runs one verified testbed; each run is one transfer
of the scenario's workload, in which the action of every ``interval_ms`` sets XQUIC's scheduler
(the checkpoint's ``modes``, by name) for the next interval. The policy's runs alternate with
runs that always take action 0 (minRTT for ``dqn_modes``) on the same testbed, the order swapped
every pair, so that the two see the same machine. Printed and recorded (with ``--out``, with the
provenance of ``envs.live.provenance``): each run's goodput, the share of the policy's intervals
in each mode, and the paired difference with its 95% CI. Run it alone
(``flock /tmp/mpsched-live.lock``): it needs root and the live setup.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import checkpoint  # noqa: E402
from envs.decision import mode_labels  # noqa: E402
from envs.errors import ConfigError  # noqa: E402
from envs.live.env import LiveEnv  # noqa: E402
from envs.live.provenance import load_average, provenance  # noqa: E402
from envs.metrics import mean_ci  # noqa: E402
from envs.scenario import resolve_scenarios  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, required=True, help="an interval-mode checkpoint (agent=dqn_modes)")
    ap.add_argument("--scenario", default="ispras_s2")
    ap.add_argument("--cc", default="bbr")
    ap.add_argument("--runs", type=int, default=30, help="runs of the policy, and as many of its first mode alone")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the runs and their provenance here (JSON)")
    a = ap.parse_args(argv)
    agent, meta = checkpoint.load(a.checkpoint)
    if meta.get("decision") != "interval":
        raise ConfigError(f"{a.checkpoint}: an interval-mode checkpoint is needed, got decision {meta.get('decision')!r}")
    config = OmegaConf.to_container(OmegaConf.load(a.checkpoint / "config.yaml"))
    if not isinstance(config, dict) or not isinstance(config.get("env"), dict):
        raise ConfigError(f"{a.checkpoint}/config.yaml has no env section")
    env_cfg: dict = config["env"]
    modes = mode_labels(env_cfg["modes"])  # as the checkpoint names them; LiveEnv runs each with its parameters
    reward = dict(env_cfg["reward"])
    env = LiveEnv(resolve_scenarios(a.scenario)[0], a.cc, backend="xquic", decision="interval",
                  interval_ms=float(env_cfg["interval_ms"]), modes=env_cfg["modes"], observation=str(meta["observation"]),
                  reward=reward.pop("name"), reward_params=reward, seed=a.seed)
    runs: list[dict] = []
    prov = provenance("python -m benchmarks.modes_live", argv if argv is not None else sys.argv[1:])
    try:
        for i in range(a.runs):
            for who in ("policy", "alone") if i % 2 == 0 else ("alone", "policy"):
                obs, _ = env.reset()
                actions: list[int] = []
                while True:
                    act = int(agent.act(obs[None, :], deterministic=True)[0]) if who == "policy" else 0
                    actions.append(act)
                    obs, _, terminated, truncated, info = env.step(act)
                    if terminated or truncated:
                        break
                m = info["episode_metrics"]
                share = np.bincount(actions, minlength=len(modes)) / len(actions)
                runs.append({"who": who, "pair": i, "goodput_mbps": float(m["goodput_mbps"]),
                             "completion_s": float(m["completion_s"]), "intervals": len(actions),
                             "mode_share": share.tolist(), "error": info.get("error", ""), "load1": load_average()})
                print(f"{i} {who}: {m['goodput_mbps']:.2f} Mbit/s"
                      + (f", modes {' '.join(f'{n} {s:.0%}' for n, s in zip(modes, share, strict=True))}"
                         if who == "policy" else ""), flush=True)
    finally:
        env.close()
    pol = [r["goodput_mbps"] for r in runs if r["who"] == "policy"]
    alone = [r["goodput_mbps"] for r in runs if r["who"] == "alone"]
    diff, half = mean_ci(np.asarray(pol) - np.asarray(alone))  # the paired difference, Student t
    print(f"{a.scenario} / {a.cc}, {a.runs} pairs: policy {np.mean(pol):.2f}, {modes[0]} alone {np.mean(alone):.2f} "
          f"Mbit/s; paired difference {diff:+.2f} +- {half:.2f} ({100 * diff / np.mean(alone):+.1f}%)")
    if a.out:
        a.out.write_text(json.dumps({"provenance": prov, "checkpoint": {k: meta.get(k) for k in
                                     ("agent", "seed", "steps_done", "config_hash", "scenarios", "ccs", "observation")},
                                     "scenario": a.scenario, "cc": a.cc, "modes": modes,
                                     "interval_ms": float(env_cfg["interval_ms"]), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
