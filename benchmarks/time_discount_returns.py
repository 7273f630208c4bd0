"""Which blocked-decision policy a learner's reward prefers, per decision or in simulated time.

``python -m benchmarks.time_discount_returns --preset dqn --scenario ispras_s2 --cc bbr --tau 10 40 160``
runs each member (minRTT, fast_only, ``wait_rule(k=1.25)``) on the same held-out connections in
the preset's environment (its reward) and prints, per member, its return under: no discount; the
preset's ``gamma`` once per decision (SB3's DQN as shipped); and ``gamma ** (dt / tau)`` per
decision, ``dt`` the simulated time the decision took (semi-MDP discounting, Bradtke & Duff,
NIPS 7, 1995; ``agents.time_discount``). Each discounted return is given twice: from the
episode's first decision (the value of its start state), and as the mean over the episode's
decisions of the return from each (what the Q-values the learner fits average to, on the states
the member visits). Mean and 95% CI over the connections. If the preferred member is not the one
with the better goodput, the objective, not the learning, falls short.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import yaml

from agents.registry import preset
from agents.time_discount import time_discount
from envs.decision import INFO_DT
from envs.errors import ConfigError, out_of_range
from envs.evaluation import EVAL_SEED_OFFSET
from envs.metrics import mean_ci
from envs.multipath_env import build_process
from envs.plugins import scheduler_values
from envs.scenario import resolve_scenarios
from envs.schema import EnvConfig
from studies.headroom import WAIT_RULE, Candidate, blocked_answers, check_cells, check_counts


def member(text: str) -> Candidate:
    """``minrtt``, ``fast_only`` or ``wait_rule:<k>`` (a heuristic by name), checked by the registry."""
    name, colon, k = text.partition(":")
    try:
        if (name == WAIT_RULE) != bool(colon):
            raise ConfigError("give a heuristic's name, or the wait rule as wait_rule:<k> (e.g. wait_rule:1.25)")
        params = {"k": float(k)} if colon else {}
        scheduler_values(name, params)  # an unknown name or a k out of range, with the valid ones
    except ValueError as err:  # a ConfigError too
        raise ConfigError(f"--members {text}: {err}") from None
    return Candidate(name, tuple(params.items()))


def trajectories(cand: Candidate, env: dict, scenario: str, cc: str, runs: int,
                 seed: int) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Per connection, its decisions' rewards and intervals (s), and every connection's goodput."""
    process = build_process(runs, scenario=resolve_scenarios([scenario]), cc=cc, seed=seed,
                            **{**env, "decision": "blocked"})
    s = process.sim
    answers = blocked_answers(process, cand)
    process.reset()
    rewards: list[list[float]] = [[] for _ in range(runs)]
    dts: list[list[float]] = [[] for _ in range(runs)]
    while not s.done.all():
        live = ~s.done
        r, _, _, infos = process.step(np.maximum(answers.answer(live), 0))
        for b in np.flatnonzero(live):
            rewards[b].append(float(r[b]))
            dts[b].append(float(infos.table[b, INFO_DT]))
    return [np.array(x) for x in rewards], [np.array(x) for x in dts], s.results()["goodput_mbps"]


def returns(rewards: np.ndarray, discounts: np.ndarray) -> np.ndarray:
    """The return from each decision: ``G_i = r_i + d_i G_{i+1}``, 0 after the last."""
    out = np.zeros(len(rewards))
    g = 0.0
    for i in range(len(rewards) - 1, -1, -1):
        g = rewards[i] + discounts[i] * g
        out[i] = g
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.time_discount_returns",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="dqn", help="configs/agent preset: its env (reward) and gamma")
    parser.add_argument("--scenario", default="ispras_s2")
    parser.add_argument("--cc", default="bbr")
    parser.add_argument("--members", nargs="+", default=["minrtt", "wait_rule:1.25", "fast_only"])
    parser.add_argument("--tau", nargs="+", type=float, default=[10.0, 40.0, 160.0], help="time constants, ms (> 0)")
    parser.add_argument("--gamma", type=float,
                        help="discount per decision and per time constant, in [0, 1] (the preset's)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="reward settings over the preset's (beta=0: without the RTT term)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    check_counts(("--runs", args.runs))
    for tau in args.tau:
        if not tau > 0.0:
            raise out_of_range("--tau", tau, "> 0 (ms)")
    if args.gamma is not None and not 0.0 <= args.gamma <= 1.0:
        raise out_of_range("--gamma", args.gamma, "in [0, 1]")
    members = [member(text) for text in args.members]
    try:
        spec = preset(args.preset)
    except ConfigError as err:
        raise ConfigError(f"--preset: {err}") from None
    agent = spec["agent"]
    gamma = args.gamma if args.gamma is not None else \
        (agent.get("hyperparams") or {}).get("gamma", (agent.get("params") or {}).get("gamma"))
    if gamma is None:
        raise ConfigError(f"--preset {args.preset} has no gamma; give --gamma")
    gamma = float(gamma)
    env = dict(spec["env"])
    if any("=" not in kv for kv in args.set):
        raise ConfigError(f"--set takes KEY=VALUE items, got {' '.join(args.set)!r}")
    try:
        env["reward"] = {**env["reward"], **{k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.set)}}
        settings = EnvConfig.from_kwargs(**{**env, "decision": "blocked"})
        settings.reward_spec()  # each setting's name and range
    except (ValueError, yaml.YAMLError) as err:  # a ConfigError too
        raise ConfigError(f"--set {' '.join(args.set)}: {err}") from None
    check_cells([args.scenario], [args.cc], str(settings.stack))
    heads = ["undiscounted", f"{gamma} per decision"] + [f"{gamma} per {t:g} ms" for t in args.tau]
    print(f"{args.preset} ({env['reward']}), {args.scenario} / {args.cc}, {args.runs} connections "
          f"(seed {args.seed + EVAL_SEED_OFFSET}); each return: from the first decision | mean over decisions\n")
    print("| member | goodput Mbit/s | decisions | mean dt ms | " + " | ".join(heads) + " |")
    print("|" + "---|" * (4 + len(heads)))
    starts: dict[str, list[np.ndarray]] = {}
    for cand in members:
        rewards, dts, goodput = trajectories(cand, env, args.scenario, args.cc, args.runs,
                                             args.seed + EVAL_SEED_OFFSET)
        cells = []
        for kind in ["none", "decision", *args.tau]:
            first, mean = [], []
            for r, dt in zip(rewards, dts):
                d = (np.ones_like(dt) if kind == "none" else np.full_like(dt, gamma) if kind == "decision"
                     else time_discount(dt, gamma, float(kind)))
                g = returns(r, d)
                first.append(g[0])
                mean.append(g.mean())
            starts.setdefault(cand.label, []).append(np.array(first))
            (m0, c0), (m1, c1) = mean_ci(np.array(first)), mean_ci(np.array(mean))
            cells.append(f"{m0:.2f} ± {c0:.2f} \\| {m1:.3f} ± {c1:.3f}")
        gm, gc = mean_ci(goodput)
        n = np.mean([len(r) for r in rewards])
        dt_ms = 1000 * np.mean([dt.mean() for dt in dts])
        print(f"| {cand.label} | {gm:.2f} ± {gc:.2f} | {n:.0f} | {dt_ms:.2f} | " + " | ".join(cells) + " |")
    base, *others = starts
    print(f"\nReturn from the first decision less {base}'s on the same connections (paired; mean ± 95% CI):\n")
    print("| member | " + " | ".join(heads) + " |")
    print("|" + "---|" * (1 + len(heads)))
    for label in others:
        diffs = [mean_ci(a - b) for a, b in zip(starts[label], starts[base])]
        print(f"| {label} | " + " | ".join(f"{m:+.2f} ± {c:.2f}" for m, c in diffs) + " |")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
