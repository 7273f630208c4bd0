"""The exported DQN inside XQUIC: cost per decision in get_path (ns) and goodput with the policy
against XQUIC's built-in minRTT on ispras_s3 (10 MB files, alternating runs on one testbed).

    python benchmarks/xquic_policy.py [--header policy.h | --checkpoint DIR] [--runs 5] [--cc cubic]
                                      [--train-steps 60000] [--file-mb 10]

--header takes an exported header, --checkpoint a train.py checkpoint (exported here). Without
either, an ISPRAS DQN (configs/agent/dqn.yaml) is trained on the simulator for --train-steps
decisions on ispras_s3 and exported twice: as trained (its goodput shows its decisions and its
cost together) and with its output bias shifted so that it always answers "send on the second
path", which is minRTT's decision: the same network runs for every packet, so the goodput
difference to minRTT is the cost of running it. The time per decision is measured inside
get_path around the policy call (features from XQUIC's per-path state, the network, the blocked
rule), clock reads included. Needs root, the live dependencies and the mpsched_xquic extension.

How the acceptance figures (issue 9) were produced:

    python train.py agent=dqn scenario=ispras_s3 cc=cubic train.steps=60000 hydra.run.dir=RUN
        # final comparison in the simulator: dqn 115.94 Mbit/s = minrtt 115.94 Mbit/s (10 seeds)
    python -m export checkpoint=RUN/checkpoint out=dqn_s3.h
    python benchmarks/xquic_policy.py --header dqn_s3.h --runs 5
        # minrtt 109.89 +- 0.63, policy 108.01 +- 0.12 Mbit/s (-1.7 %), 131 ns per decision

Without arguments (60,000 steps trained here, 3 runs): minrtt 109.69, policy 108.16 (-1.4 %),
always-send policy 110.15 Mbit/s (+0.4 %), about 125 ns per decision. A DQN trained for only
3,000 steps had learnt to wait for the fast path when the two identical paths take turns being
faster (61 against 103 Mbit/s): too little training, not the cost of running the network.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from envs.metrics import mean_ci  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.testbed import verified  # noqa: E402
from envs.live.xquic import XquicBackend, extension  # noqa: E402
from envs.scenario import resolve_scenarios  # noqa: E402


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


def trained_headers(steps: int, out: Path) -> dict[str, Path]:
    import torch
    from omegaconf import OmegaConf

    from agents.registry import make_agent
    from envs.vector_env import SB3VecEnv
    from export import export_agent
    root = Path(__file__).resolve().parents[1]
    cfg = OmegaConf.to_container(OmegaConf.load(root / "configs" / "agent" / "dqn.yaml"))
    spec, env = cfg["agent"], cfg["env"]
    torch.manual_seed(0)
    agent = make_agent(spec, 6, 2, seed=0)
    venv = SB3VecEnv(8, scenario="ispras_s3", cc="cubic", seed=1, decision=env["decision"],
                     observation=env["observation"], reward=env["reward"]["name"],
                     reward_params={k: v for k, v in env["reward"].items() if k != "name"})
    agent.learn(venv, steps, Always())
    meta = {"agent": "dqn", "kind": "sb3", "observation": env["observation"], "n_features": 6, "n_actions": 2,
            "n_paths": 2, "decision": env["decision"], "spec": spec, "seed": 0, "steps_done": steps,
            "finished": True, "config_hash": "benchmark", "scenarios": ["ispras_s3"], "ccs": ["cubic"]}
    export_agent(agent, meta, out / "dqn.h", prefix="dqn_bench")
    last = [m for m in agent.model.q_net.q_net if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.bias[1] += 1e6  # action 1 (send on the second path) always wins
    export_agent(agent, meta, out / "dqn_send.h", prefix="dqn_send")
    return {"policy": out / "dqn.h", "policy_as_minrtt": out / "dqn_send.h"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--header")
    ap.add_argument("--checkpoint")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--train-steps", type=int, default=60000)
    ap.add_argument("--file-mb", type=float, default=10.0)
    a = ap.parse_args()
    reason = unavailable_reason()
    if reason:
        sys.exit(f"live runs unavailable: {reason}")
    extension()
    tmp = Path(tempfile.mkdtemp(prefix="mpsched-xquic-"))
    if a.header:
        headers = {"policy": Path(a.header)}
    elif a.checkpoint:
        from export import export_checkpoint
        headers = {"policy": tmp / "policy.h"}
        export_checkpoint(a.checkpoint, headers["policy"])
    else:
        headers = trained_headers(a.train_steps, tmp)
    scen = resolve_scenarios("ispras_s3")[0].with_workload(file_mb=a.file_mb)
    scheds = {"minrtt": "minrtt", **{k: f"policy={h}" for k, h in headers.items()}}
    goodput: dict[str, list[float]] = {k: [] for k in scheds}
    ns: dict[str, list[float]] = {k: [] for k in headers}
    with verified(scen) as tb:
        for run in range(a.runs):
            for name, sched in scheds.items():
                r = XquicBackend.transfer(tb, a.cc, scen.workload, 10.0, sched).run()
                if r.error or r.extra["outcome"] != "finished":
                    sys.exit(f"run {run} {name}: {r.extra['outcome']} {r.error or ''}")
                goodput[name].append(float(r.metrics()["goodput_mbps"][0]))
                if name in ns:
                    ns[name].append(r.extra["policy_ns"])
                print(f"run {run} {name:16s}: {goodput[name][-1]:7.2f} Mbit/s"
                      + (f", {r.extra['policy_ns']:.0f} ns per policy call" if name in ns else ""), flush=True)
    print(f"\nispras_s3, {a.cc}, {a.file_mb:g} MB, {a.runs} runs each (alternating)")
    base = np.mean(goodput["minrtt"])
    for name, g in goodput.items():
        m, h = mean_ci(np.array(g))
        extra = f", {100 * (m / base - 1):+.1f} % vs minrtt, {np.mean(ns[name]):.0f} ns per decision" if name in ns else ""
        print(f"  {name:16s}: goodput {m:7.2f} ± {h:5.2f} Mbit/s{extra}")


if __name__ == "__main__":
    from envs.errors import ending

    with ending():  # a failed verification or a refused input: one line, not a traceback
        main()
