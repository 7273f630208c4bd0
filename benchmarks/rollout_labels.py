"""What one blocked decision is worth to the whole transfer, under a policy's own continuation,
on a jittery, lossy path: ``python -m benchmarks.rollout_labels --scenario ispras_s2 --cc bbr
--policy-k 1.25 --tag-k 1.25 --seeds 20``.

The labels a rollout-based learner (approximate policy iteration: Lagoudakis & Parr, ICML 2003;
Lazaric, Ghavamzadeh & Munos, ICML 2010) would learn from. Every connection of the batch runs
connection 0's episode (``common_draws``: the same scenario and random streams), following the
headroom search's wait rule with ``--policy-k`` at the blocked decision (``inf``: minRTT). The
first connection is the reference; each of the others reverses one decision, number d of the
episode (every ``--every``-th), and follows the policy after it; another set instead moves its
network's random stream at decision d and keeps the decision (a placebo: what a changed draw
alone does to the rest of the transfer, which a reversed decision also causes). A decision's
effect is its goodput against the reference's, less the placebo's at the same decision; the
decisions are split by what ``wait_rule(--tag-k)`` answers there. The statistics are per seed
(each seed's decisions share its reference), t over seeds.

docs/cc_robustness.md, "One decision's worth, by rollouts", has the figures.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from envs.errors import out_of_range
from envs.multipath_env import build_process
from envs.sim.layout import CN_SND_NXT, CN_T
from envs.scenario import Scenario
from studies.headroom import WAIT_RULE, Candidate, blocked_answers, check_cells, check_counts

PLACEBO_SHIFT = np.uint64(12345)  # added to a connection's network stream: other draws from then on


@dataclass(frozen=True)
class Effects:
    """One seed's decisions (every ``every``-th): the tagging rule's answer (0 wait, 1 send) and
    the relative change of goodput when that decision alone is reversed, and with the placebo."""

    tag: np.ndarray
    reversed: np.ndarray
    placebo: np.ndarray


def _episode(scenario: str | Scenario, cc: str, seed: int, policy_k: float, tag_k: float,
             reverse_at: np.ndarray, shift_at: np.ndarray, hold: bool = False,
             switch_ms: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """All connections run connection 0's episode; connection i reverses its decision number
    ``reverse_at[i]`` and shifts its network stream at decision ``shift_at[i]`` (-1: none). With
    ``hold`` a send reversed into a wait keeps waiting at the decisions that follow until the
    packet it was about (the next new byte then) has left on some path. With ``switch_ms`` > 0 the
    connection instead follows the tagging rule from that decision for so much simulated time (an
    interval decision between two schedulers) and the policy again after it.
    Returns each connection's goodput and the tagging rule's answers along connection 0's episode."""
    n = len(reverse_at)
    process = build_process(n, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation="ispras_dqn",
                            common_draws=True)
    sim = process.sim
    policy = blocked_answers(process, Candidate(WAIT_RULE, (("k", policy_k),), blocked=False))
    tagger = blocked_answers(process, Candidate(WAIT_RULE, (("k", tag_k),), blocked=False))
    process.reset()
    count = np.zeros(n, dtype=np.int64)
    held = np.full(n, -1.0)  # the byte a held wait waits to see leave (-1: none)
    switched_until = np.full(n, -1.0)  # step until which a switched connection follows the tagging rule
    tags: list[int] = []
    while not sim.done.all():
        live = ~sim.done
        action = np.maximum(policy.answer(live), 0).copy()
        tag_now = np.maximum(tagger.answer(live), 0).copy()
        if live[0]:
            tags.append(int(tag_now[0]))
        reverse = live & (count == reverse_at)
        if switch_ms > 0.0:
            switched_until[reverse] = sim.cn[reverse, CN_T] + switch_ms / (sim.dt * 1000.0)
            following = live & (sim.cn[:, CN_T] < switched_until)
            action = np.where(following, tag_now, action)
            reverse = np.zeros(n, dtype=bool)
        if hold:
            held[reverse & (action == 1)] = sim.cn[reverse & (action == 1), CN_SND_NXT]
            holding = live & ~reverse & (held >= 0) & (sim.cn[:, CN_SND_NXT] <= held)
            held[live & ~reverse & (sim.cn[:, CN_SND_NXT] > held)] = -1.0
            action = np.where(holding, 0, action)
        action = np.where(reverse, 1 - action, action)
        sim.rng[:n][live & (count == shift_at)] += PLACEBO_SHIFT
        process.step(action)
        count += live
    return sim.results()["goodput_mbps"], np.array(tags, dtype=np.int64)


def effects(scenario: str | Scenario, cc: str, seed: int, policy_k: float, tag_k: float, every: int,
            hold: bool = False, switch_ms: float = 0.0) -> Effects:
    """One seed: every ``every``-th decision reversed, and placebo-shifted, one per connection."""
    none = np.array([-1])
    _, tags = _episode(scenario, cc, seed, policy_k, tag_k, none, none)
    at = np.arange(1, len(tags), every)
    m = len(at)
    goodput, tags_again = _episode(scenario, cc, seed, policy_k, tag_k, np.concatenate([none, at, np.full(m, -1)]),
                                   np.concatenate([none, np.full(m, -1), at]), hold, switch_ms)
    assert np.array_equal(tags, tags_again)  # the reference repeats the first run: common draws
    change = goodput / goodput[0] - 1.0
    return Effects(tags[at], change[1:1 + m], change[1 + m:])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.rollout_labels", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="ispras_s2")
    ap.add_argument("--cc", default="bbr")
    ap.add_argument("--policy-k", type=float, default=1.25, help="the continuation: wait_rule(k) (inf: minRTT)")
    ap.add_argument("--tag-k", type=float, default=1.25, help="the rule whose answers split the decisions")
    ap.add_argument("--every", type=int, default=4, help="reverse every n-th decision of the episode")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=100, help="the first seed")
    ap.add_argument("--hold", action="store_true",
                    help="a send reversed into a wait keeps waiting until its packet has left (a committed wait)")
    ap.add_argument("--switch-ms", type=float, default=0.0,
                    help="instead of reversing a decision, follow the tagging rule from it for so long (an interval decision)")
    a = ap.parse_args(argv)
    check_counts(("--every", a.every), ("--seeds", a.seeds))
    for flag, k in (("--policy-k", a.policy_k), ("--tag-k", a.tag_k)):
        if not k >= 0.0:
            raise out_of_range(flag, k, ">= 0 (inf: minRTT)")
    if not a.switch_ms >= 0.0:
        raise out_of_range("--switch-ms", a.switch_ms, ">= 0 (0: reverse the decision instead)")
    check_cells([a.scenario], [a.cc])
    per_seed: dict[int, list[float]] = {0: [], 1: []}
    pooled: dict[int, list[Effects]] = {0: [], 1: []}
    for seed in range(a.seed, a.seed + a.seeds):
        e = effects(a.scenario, a.cc, seed, a.policy_k, a.tag_k, a.every, a.hold, a.switch_ms)
        for tag in (0, 1):
            sel = e.tag == tag
            if sel.any():
                per_seed[tag].append(float(e.reversed[sel].mean() - e.placebo[sel].mean()))
                pooled[tag].append(Effects(e.tag[sel], e.reversed[sel], e.placebo[sel]))
    print(f"{a.scenario} / {a.cc}, continuation wait_rule(k={a.policy_k:g}), {f'the rule followed for {a.switch_ms:g} ms' if a.switch_ms else ('held reversals' if a.hold else 'reversals')}, "
          "decisions split by "
          f"wait_rule(k={a.tag_k:g}), every {a.every}th decision of {a.seeds} seeds:")
    for tag, where in ((0, "where it waits"), (1, "where it sends")):
        if not pooled[tag]:
            print(f"  {where}: no decision")
            continue
        rev = np.concatenate([e.reversed for e in pooled[tag]])
        pla = np.concatenate([e.placebo for e in pooled[tag]])
        x = np.array(per_seed[tag])
        t = x.mean() / (x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 and x.std() > 0 else float("nan")
        print(f"  {where}: {len(rev)} decisions; reversed {100 * rev.mean():+.2f}% (better {np.mean(rev > 0):.0%}, "
              f"worse {np.mean(rev < 0):.0%}, unchanged {np.mean(rev == 0):.0%}), placebo {100 * pla.mean():+.2f}% "
              f"(unchanged {np.mean(pla == 0):.0%}); reversed - placebo {100 * x.mean():+.2f}% over {len(x)} seeds, "
              f"t {t:+.1f}, below 0 in {np.mean(x < 0):.0%} of them")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
