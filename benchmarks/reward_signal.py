"""What a reward tells a learner about the blocked decision (wait for the fast path / send on the
second): why the published ISPRAS reward lets the DQN and the bandits collapse to one action.

A policy that sends with probability 1/2 at every decision, independently of the state, runs one
episode per connection; the decisions it meets and the rewards that follow are then split by the
action taken. Because the action is drawn independently of the state, the difference of the
means by action is the action's average effect on what the learner sees:

- ``decisions/s``: how often the blocked decision occurs (per second of transfer);
- ``dt wait / send ms``: how long until the next decision after each action;
- ``r wait / r send``: the immediate reward after each action (what a bandit learns from), and
  ``effect r (t)``: their difference over its standard error;
- ``G wait / G send`` and ``effect G (t)``: the same for the discounted return over the following
  decisions with the agent's ``gamma`` per decision (what the DQN's Q-values estimate under this
  policy).

``python benchmarks/reward_signal.py --reward ispras --reward ispras_credit --cc bbr bbr2``
(``--preset dqn`` reads the reward and gamma of ``configs/agent/dqn.yaml``). ``--coin-at-waits-of
blest --heuristic-param lambda=1`` asks instead whether the reward sees a heuristic's waits pay:
the policy follows the heuristic's answer at the blocked decision (``studies.headroom``'s
``blest@blocked``) and tosses the coin only where it would wait, and the effects are taken over
those decisions (docs/cc_robustness.md, "ispras_s3 under BBRv1 and BBRv2"); ``--coin-at-waits-of
wait_rule --heuristic-param k=0.75`` does so for the headroom search's wait rule. With
``--checkpoint <dir>`` of a trained DQN it prints instead, on the features of the same decisions,
the network's Q-values per action and the gap ``Q(send) - Q(wait)``, beside the size of the
action's effect on the return that the gap should reflect.

``--flip-each-decision-of minrtt`` (or ``wait_rule --heuristic-param k=0.75``, ...) measures instead
what one decision is worth, exactly, in a cell whose runs are identical (no jitter, no random loss,
e.g. ispras_s3): the policy follows the heuristic at the blocked decision, and in connection ``i``
only its ``i``-th decision is reversed; the change of goodput per reversed wait and per reversed
send (docs/cc_robustness.md, "The failing clones with XQUIC's 32-packet initial windows"); with
``--ascend ROUNDS`` it reverses, round after round, the one decision that raises goodput most: a
greedy search over the open-loop sequence of blocked decisions, what any policy deciding there
could reach from that start.

``--imitate wait_rule --heuristic-param k=0.5 --observation ispras_dqn peekaboo ispras_backlog`` asks
whether a learner's state can tell the decisions where a heuristic waits from those where it sends:
per feature set, a classifier (a random forest) fitted to the heuristic's answers on episodes of
seed ``--seed`` predicts them on other episodes (held-out accuracy), then runs as the policy, waiting
where it gives the wait at least a probability ``p`` (0.5, 0.8, 0.9): its goodput beside the heuristic's and
minRTT's on the same episodes. An imitation that reaches the heuristic's goodput shows the features
suffice; one that stays at minRTT's with every ``p`` shows that no policy on them waits as the heuristic does
(docs/cc_robustness.md, "Why the learners trained under BBRv1 miss the wait rule on ispras_s1").
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from agents.diagnostics import HeuristicAnswers
from agents.registry import preset as agent_preset
from envs.decision import DecisionProcess
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.features import compute, feature_set
from envs.multipath_env import build_process
from envs.plugins import scheduler_values
from envs.rewards import REWARDS
from envs.scenario import Scenario
from envs.schema import EnvConfig
from envs.sim.layout import CN_N_SUB
from envs.sim.simulator import MAX_PATHS
from studies.headroom import WAIT_RULE, Candidate, blocked_answers, check_cells, check_counts

PUBLISHED = {"name": "ispras", "alpha": 1.0, "beta": 0.1, "gamma": 0.0}


def key_values(flag: str, items: list[str]) -> dict[str, float]:
    """``flag``'s ``KEY=VALUE`` arguments as numbers."""
    try:
        return {k: float(v) for k, v in (kv.split("=", 1) for kv in items)}
    except ValueError:
        raise ConfigError(f"{flag} takes KEY=NUMBER items, got {' '.join(items)!r}") from None


def heuristic_of(flag: str, name: str, items: list[str]) -> tuple[str, dict]:
    """``flag name --heuristic-param items`` as (name, parameters), checked by the registry
    (``envs.plugins.scheduler_values``: an unknown scheduler or parameter, with the valid ones)."""
    params = key_values("--heuristic-param", items)
    given = f"{flag} {name}" + (f" --heuristic-param {' '.join(items)}" if items else "")
    try:
        scheduler_values(name, params)
    except ConfigError as err:
        raise ConfigError(f"{given}: {err}") from None
    if name == WAIT_RULE and "k" not in params:
        raise ConfigError(f"{given}: give the rule's k, --heuristic-param k=<number> (inf: minRTT)")
    return name, params


def preset(name: str) -> tuple[dict, float]:
    """Reward and per-decision discount of an agent preset."""
    cfg = agent_preset(name)
    agent = cfg["agent"]
    gamma = (agent.get("hyperparams") or {}).get("gamma", (agent.get("params") or {}).get("gamma", 0.0))
    return cfg["env"]["reward"], float(gamma)


def collect(reward: dict, scenario: str, cc: str, runs: int, seed: int, p_send: float = 0.5,
            heuristic: tuple[str, dict] | None = None):
    """Per connection: actions, rewards and the time to the next decision, one episode each; with
    ``heuristic`` (name, parameters) the coin is tossed only where it would wait, it sends
    elsewhere, and only the coin's decisions are kept."""
    params = {k: v for k, v in reward.items() if k != "name"}
    p = build_process(runs, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation="ispras_dqn",
                      reward=reward["name"], reward_params=params)
    rng = np.random.default_rng(seed)
    answers = None if heuristic is None else heuristic_answers(p, heuristic)
    p.reset()
    acts, rews, dts = [[] for _ in range(runs)], [[] for _ in range(runs)], [[] for _ in range(runs)]
    kept = [[] for _ in range(runs)]
    feats = []
    while not p.sim.done.all():
        live = ~p.sim.done
        feats.append(p.last_obs[live].copy())
        t0 = p.sim.cobs[:, 2].copy()
        coin = np.ones(runs, dtype=bool) if answers is None else answers.answer(live) == 0
        a = np.where(coin, rng.random(runs) < p_send, True).astype(np.int64)
        r, _, _, _ = p.step(a)
        for b in np.flatnonzero(live):
            acts[b].append(a[b])
            rews[b].append(r[b])
            dts[b].append(p.sim.cobs[b, 2] - t0[b])
            kept[b].append(coin[b])
    seconds = float(np.sum(p.sim.cobs[:, 2]))
    collect.features = np.concatenate(feats)  # decision order, not connection order
    collect.kept = [np.array(x, dtype=bool) for x in kept]
    return [np.array(x) for x in acts], [np.array(x) for x in rews], [np.array(x) for x in dts], seconds


def heuristic_answers(p: DecisionProcess, heuristic: tuple[str, dict]) -> HeuristicAnswers:
    """``(name, params)``'s answers at ``p``'s blocked decisions: the headroom search's wait rule or
    a heuristic's rule there (``studies.headroom.blocked_answers``)."""
    name, prm = heuristic
    return blocked_answers(p, Candidate(name, tuple(prm.items()), blocked=name != WAIT_RULE))


def follow(heuristic: tuple[str, dict], scenario: str | Scenario, cc: str, seed: int,
           reversed_at: list[frozenset[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One episode per connection following the heuristic at the blocked decision, connection ``i``
    reversing its decisions numbered ``reversed_at[i]`` (counted along its episode): goodput per
    connection, connection 0's actions (what it did) and the decisions per connection."""
    p = build_process(len(reversed_at), scenario=scenario, cc=cc, seed=seed, decision="blocked",
                      observation="ispras_dqn")
    answers = heuristic_answers(p, heuristic)
    # reverse[b, j]: connection b reverses its decision j (decisions beyond the last column: none)
    reverse = np.zeros((len(reversed_at), max((max(r) for r in reversed_at if r), default=0) + 2), dtype=bool)
    for b, r in enumerate(reversed_at):
        reverse[b, list(r)] = True
    rows = np.arange(len(reversed_at))
    p.reset()
    n = np.zeros(len(reversed_at), dtype=np.int64)
    first = []
    while not p.sim.done.all():
        live = ~p.sim.done
        a = np.maximum(answers.answer(live), 0)
        flip = live & reverse[rows, np.minimum(n, reverse.shape[1] - 1)]
        a = np.where(flip, 1 - a, a)
        if live[0]:
            first.append(a[0])
        p.step(a)
        n += live
    return p.sim.results()["goodput_mbps"], np.array(first), n


def flip_each(heuristic: tuple[str, dict], scenario: str | Scenario, cc: str, seed: int,
              reversed_at: frozenset[int] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
    """The policy's decisions in one episode of a cell whose runs are identical (the heuristic, its
    decisions ``reversed_at`` reversed) and, per decision, the relative change of goodput when that
    decision alone is reversed as well."""
    base, acts, _ = follow(heuristic, scenario, cc, seed, [reversed_at, reversed_at])
    if base[0] != base[1]:
        raise SystemExit(f"error: {scenario} / {cc}: two runs of {heuristic[0]} differ ({base[0]:.3f} and "
                         f"{base[1]:.3f} Mbit/s: jitter or random loss), so one reversed decision's effect would be "
                         "confounded with the run's randomness; flip decisions in a deterministic cell")
    flipped, _, _ = follow(heuristic, scenario, cc, seed, [reversed_at ^ {i} for i in range(len(acts))])
    return acts, flipped / base[0] - 1.0


def ascend(heuristic: tuple[str, dict], scenario: str | Scenario, cc: str, seed: int,
           rounds: int) -> list[tuple[int, float, int, int]]:
    """Greedy ascent over the open-loop sequence of blocked decisions of a deterministic cell: from
    the heuristic, reverse each round the one decision (by its number along the episode) that
    raises goodput most, until none does. Per round: the decision, goodput, waits and decisions."""
    chosen: frozenset[int] = frozenset()
    out = []
    for _ in range(rounds):
        acts, change = flip_each(heuristic, scenario, cc, seed, chosen)
        j = int(np.argmax(change))
        if not change[j] > 0.0:
            break
        chosen = chosen ^ {j}
        goodput, acts, n = follow(heuristic, scenario, cc, seed, [chosen])
        out.append((j, float(goodput[0]), int((acts == 0).sum()), int(n[0])))
    return out


IMITATION_P_WAIT = (0.5, 0.8, 0.9)  # the imitation waits where the classifier gives the wait this probability


def imitation_data(heuristic: tuple[str, dict], observations: list[str], scenario: str | Scenario, cc: str,
                   runs: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """The heuristic followed at the blocked decision: per feature set the features of every decision
    [N, n], its answers [N] (1 = send), and its mean goodput."""
    p = build_process(runs, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation="ispras_dqn")
    tables = {n: feature_set(n, p.sim.P) for n in observations}
    answers = heuristic_answers(p, heuristic)
    s = p.sim
    p.reset()
    feats: dict[str, list[np.ndarray]] = {n: [] for n in observations}
    acts = []
    while not s.done.all():
        live = ~s.done
        a = np.maximum(answers.answer(live), 0)
        for n, tab in tables.items():
            feats[n].append(compute(tab, s.obs[:, :s.P], s.cobs, s.cn[:, CN_N_SUB])[live])
        acts.append(a[live])
        p.step(a)
    return ({n: np.concatenate(x) for n, x in feats.items()}, np.concatenate(acts),
            float(s.results()["goodput_mbps"].mean()))


def play_imitation(model, observation: str, p_wait: float, scenario: str | Scenario, cc: str, runs: int,
                   seed: int) -> float:
    """Mean goodput of the policy that waits where ``model`` (a fitted classifier of the answers, 0 =
    wait, on ``observation``'s features) gives the wait a probability of at least ``p_wait``;
    ``model`` None: always send (minRTT at the blocked decision)."""
    p = build_process(runs, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation=observation)
    s = p.sim
    p.reset()
    while not s.done.all():
        if model is None:
            a = np.ones(runs, dtype=np.int64)
        else:
            a = (wait_probability(model, p.last_obs) < p_wait).astype(np.int64)
        p.step(a)
    return float(s.results()["goodput_mbps"].mean())


def wait_probability(model, x: np.ndarray) -> np.ndarray:
    """P(wait) per row from a fitted classifier (one class seen in training: 0 or 1 throughout)."""
    classes = list(model.classes_)
    return model.predict_proba(x)[:, classes.index(0)] if 0 in classes else np.zeros(len(x))


def imitate(heuristic: tuple[str, dict], observations: list[str], scenario: str | Scenario, cc: str, runs: int,
            seed: int) -> list[dict]:
    """Per feature set: held-out accuracy of a random forest fitted to the heuristic's answers (fit on
    seed ``seed``, tested on ``seed + 1``) and the goodput of the imitation at each ``IMITATION_P_WAIT``
    on seed ``seed + 1``, beside the heuristic's and minRTT's there."""
    from sklearn.ensemble import RandomForestClassifier

    x_fit, y_fit, _ = imitation_data(heuristic, observations, scenario, cc, runs, seed)
    x_test, y_test, own = imitation_data(heuristic, observations, scenario, cc, runs, seed + 1)
    minrtt = play_imitation(None, observations[0], 0.5, scenario, cc, runs, seed + 1)
    rows = []
    for n in observations:
        model = RandomForestClassifier(n_estimators=50, max_depth=10, min_samples_leaf=5, random_state=seed, n_jobs=1)
        model.fit(x_fit[n], y_fit)
        rows.append({"observation": n, "features": x_fit[n].shape[1], "decisions": len(y_fit),
                     "waits": float((y_fit == 0).mean()), "accuracy": float(model.score(x_test[n], y_test)),
                     "heuristic": own, "minrtt": minrtt,
                     "imitation": {q: play_imitation(model, n, q, scenario, cc, runs, seed + 1)
                                   for q in IMITATION_P_WAIT}})
    return rows


def print_imitations(heuristic: tuple[str, dict], args: argparse.Namespace) -> None:
    """``--imitate``: per cell and feature set, how well the state tells the heuristic's waits."""
    shown = " ".join([heuristic[0], *args.heuristic_param])
    print("| scenario | cc | heuristic | observation | its waits | held-out accuracy | heuristic | minRTT | "
          + " | ".join(f"imitation p >= {q}" for q in IMITATION_P_WAIT) + " |")
    print("|" + "---|" * (8 + len(IMITATION_P_WAIT)))
    for scen in args.scenario:
        for cc in args.cc:
            for row in imitate(heuristic, args.observation, scen, cc, args.runs, args.seed):
                cols = " | ".join(f"{g:.2f} ({100 * (g / row['minrtt'] - 1):+.1f}%)" for g in row["imitation"].values())
                print(f"| {scen} | {cc} | {shown} | {row['observation']} | {100 * row['waits']:.0f}% | "
                      f"{row['accuracy']:.3f} | {row['heuristic']:.2f} | {row['minrtt']:.2f} | {cols} |", flush=True)


def q_values(directory: str, features: np.ndarray) -> np.ndarray:
    """Q-values [N, 2] of a Stable-Baselines3 DQN checkpoint."""
    import torch

    from agents import checkpoint
    agent, _ = checkpoint.load(Path(directory))
    with torch.no_grad():
        return agent.model.q_net(torch.as_tensor(features, dtype=torch.float32)).numpy()


def discounted(r: np.ndarray, gamma: float) -> np.ndarray:
    g = np.zeros_like(r, dtype=float)
    acc = 0.0
    for t in range(len(r) - 1, -1, -1):
        acc = r[t] + gamma * acc
        g[t] = acc
    return g


def effect(x: np.ndarray, a: np.ndarray) -> tuple[float, float, float]:
    """Mean after wait, mean after send, and their difference over its standard error."""
    w, s = x[a == 0], x[a == 1]
    if len(w) < 2 or len(s) < 2:
        return math.nan, math.nan, math.nan
    se = math.sqrt(w.var(ddof=1) / len(w) + s.var(ddof=1) / len(s))
    return float(w.mean()), float(s.mean()), float((s.mean() - w.mean()) / se) if se > 0 else math.nan


def print_flips(heuristic: tuple[str, dict], args: argparse.Namespace) -> None:
    """``--flip-each-decision-of``: per cell, the effect of each reversed decision, or with
    ``--ascend`` the rounds of the greedy search."""
    shown = " ".join([heuristic[0], *args.heuristic_param])
    if not args.ascend:
        print("| scenario | cc | policy | decisions | waits | one wait reversed: mean, min, max; better / worse "
              "| one send reversed: mean, min, max; better / worse |")
        print("|" + "---|" * 7)
    for scen in args.scenario:
        for cc in args.cc:
            if args.ascend:
                for j, goodput, waits, n in ascend(heuristic, scen, cc, args.seed, args.ascend):
                    print(f"{scen} / {cc} from {shown}: reverse decision {j} -> {goodput:.3f} Mbit/s "
                          f"({waits} waits of {n})", flush=True)
                continue
            acts, change = flip_each(heuristic, scen, cc, args.seed)
            cols = ["-" if not len(x) else f"{100 * x.mean():+.3f}%, {100 * x.min():+.2f}%, {100 * x.max():+.2f}%; "
                    f"{(x > 0).sum()} / {(x < 0).sum()}" for x in (change[acts == 0], change[acts == 1])]
            print(f"| {scen} | {cc} | {shown} | {len(acts)} | {(acts == 0).sum()} | {cols[0]} | {cols[1]} |",
                  flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reward_signal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reward", action="append", help="a reward name (published ISPRAS weights) ...")
    parser.add_argument("--preset", action="append", help="... or an agent preset (its reward and gamma)")
    parser.add_argument("--scenario", nargs="+", default=["ispras_s1", "ispras_s2", "ispras_s3"])
    parser.add_argument("--cc", nargs="+", default=["bbr", "bbr2"])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="reward parameters for --reward (e.g. credit=1 beta=0)")
    parser.add_argument("--gamma", type=float, default=0.9, help="discount per decision for --reward, in [0, 1]")
    parser.add_argument("--checkpoint", help="a trained DQN's checkpoint: print its Q-values on these decisions")
    follow_mode = parser.add_mutually_exclusive_group()
    follow_mode.add_argument("--coin-at-waits-of", metavar="HEURISTIC",
                             help="follow this heuristic at the blocked decision, tossing the coin only where it waits")
    follow_mode.add_argument("--flip-each-decision-of", metavar="HEURISTIC",
                             help="follow this heuristic and reverse one decision per connection (a deterministic cell)")
    follow_mode.add_argument("--imitate", metavar="HEURISTIC",
                             help="fit each --observation's features to this heuristic's answers and run the imitation")
    parser.add_argument("--observation", nargs="+", default=["ispras_dqn", "peekaboo", "ispras_q_roles", "ispras_backlog"],
                        help="with --imitate: the feature sets (envs/features.py) to fit")
    parser.add_argument("--ascend", type=int, default=0, metavar="ROUNDS",
                        help="with --flip-each-decision-of: reverse the best single decision, round after round")
    parser.add_argument("--heuristic-param", nargs="*", default=[], metavar="KEY=VALUE",
                        help="its parameters (e.g. lambda=1 step=0 lambda_max=1)")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    # every flag checked before the first simulation, each refusal naming its flag
    if args.ascend < 0 or (args.ascend and not args.flip_each_decision_of):
        raise ConfigError(f"--ascend takes a number of rounds >= 0, with --flip-each-decision-of; got {args.ascend}")
    check_counts(("--runs", args.runs))
    if not 0.0 <= args.gamma <= 1.0:
        raise out_of_range("--gamma", args.gamma, "in [0, 1]")
    check_cells(args.scenario, args.cc)
    names = args.reward or ([] if args.preset else ["ispras"])
    if args.set and not names:
        raise ConfigError("--set applies to --reward (a --preset's reward is its own)")
    for n in names:
        if n not in REWARDS:
            raise unknown_name("--reward", n, REWARDS)
    given = key_values("--set", args.set)
    rewards = [(" ".join([n, *args.set]), {**PUBLISHED, **given, "name": n}, args.gamma) for n in names]
    try:
        for _, reward, _ in rewards:
            EnvConfig.from_kwargs(reward=reward).reward_spec()  # the setting's name and range
    except ConfigError as err:
        raise ConfigError(f"--set: {err}") from None
    try:
        rewards += [(f"preset {n}", *preset(n)) for n in args.preset or []]
    except ConfigError as err:
        raise ConfigError(f"--preset: {err}") from None
    mode = next(((f, h) for f, h in (("--coin-at-waits-of", args.coin_at_waits_of), ("--imitate", args.imitate),
                                      ("--flip-each-decision-of", args.flip_each_decision_of)) if h), None)
    if mode is None and args.heuristic_param:
        raise ConfigError("--heuristic-param applies to --coin-at-waits-of, --flip-each-decision-of or --imitate")
    heuristic = None if mode is None else heuristic_of(*mode, args.heuristic_param)
    if args.imitate:
        try:
            for n in args.observation:
                feature_set(n, MAX_PATHS)
        except ConfigError as err:
            raise ConfigError(f"--observation: {err}") from None
    if args.checkpoint:
        from agents import checkpoint
        try:
            checkpoint.read_meta(Path(args.checkpoint))
        except ConfigError as err:
            raise ConfigError(f"--checkpoint: {err}") from None
    if args.flip_each_decision_of:
        print_flips(heuristic, args)
        return
    if args.imitate:
        print_imitations(heuristic, args)
        return
    if args.checkpoint:
        print("| scenario | cc | Q wait | Q send | gap Q(send) - Q(wait): mean ± sd | argmax wait % | G send - G wait |")
        print("|" + "---|" * 7)
        for scen in args.scenario:
            for cc in args.cc:
                label, reward, gamma = rewards[0]
                acts, rews, _, _ = collect(reward, scen, cc, args.runs, args.seed)
                q = q_values(args.checkpoint, collect.features)
                gap = q[:, 1] - q[:, 0]
                a = np.concatenate(acts)
                g = np.concatenate([discounted(x, gamma) for x in rews])
                print(f"| {scen} | {cc} | {q[:, 0].mean():.3f} | {q[:, 1].mean():.3f} | {gap.mean():+.4f} ± "
                      f"{gap.std():.4f} | {100 * (gap < 0).mean():.1f} | {g[a == 1].mean() - g[a == 0].mean():+.4f} |")
        return
    print("| reward | gamma | scenario | cc | decisions/s | dt wait / send ms | r wait | r send | effect r (t) "
          "| G wait | G send | effect G (t) |")
    print("|" + "---|" * 12)
    for label, reward, gamma in rewards:
        for scen in args.scenario:
            for cc in args.cc:
                acts, rews, dts, seconds = collect(reward, scen, cc, args.runs, args.seed, heuristic=heuristic)
                keep = np.concatenate(collect.kept)
                a = np.concatenate(acts)[keep]
                r = np.concatenate(rews)[keep]
                dt = np.concatenate(dts)[keep]
                g = np.concatenate([discounted(x, gamma) for x in rews])[keep]
                rw, rs, rt = effect(r, a)
                gw, gs, gt = effect(g, a)
                print(f"| {label} | {gamma} | {scen} | {cc} | {len(a) / seconds:.0f} | "
                      f"{1e3 * dt[a == 0].mean():.2f} / {1e3 * dt[a == 1].mean():.2f} | {rw:.4f} | {rs:.4f} | "
                      f"{rt:+.1f} | {gw:.3f} | {gs:.3f} | {gt:+.1f} |", flush=True)


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
