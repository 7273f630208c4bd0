"""Does the blocked decision's own packet tell a learner where waiting pays? ``python -m
benchmarks.own_ack_outcome --scenario ispras_s2 --cc bbr --k 1.25``.

A per-decision outcome a learner could regress on instead of a reward: the time from a blocked
decision until the packet it is about (the connection's next new byte, ``CN_SND_NXT`` at the
decision) is acknowledged, whichever path carried it (its segment's arrival, ``SEG_ARRIVE``, plus
the flow's reverse delay ``FL_DREV``). After a send it went on the second path (unless the fast
path freed within the decision's step and took it first); after a wait it leaves on whichever
path frees first, the fast one nearly always. The policy follows the headroom
search's wait rule (``wait_rule(k)``) and takes its other answer with probability ``--eps``, so
both actions are seen in the states where the rule waits and in those where it sends; the
outcomes are split by the rule's answer and the action taken (mean, spread, and the difference's
Welch t).

Packets whose segment lost bytes (their acknowledgement is a retransmission's) are counted apart,
and so are decisions whose packet was acknowledged and its segment freed before the decision
process returned (it steps to the next decision, several simulator steps at times), by the rule's
answer and the action: they are left out of the means.
docs/cc_robustness.md, "The decision's own packet", has the figures.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agents.diagnostics import HeuristicAnswers
from envs.errors import out_of_range
from envs.multipath_env import build_process
from envs.scenario import Scenario
from envs.sim.layout import (CN_SND_NXT, CN_T, FL_DREV, SEG_ARRIVE, SEG_LOST, SEG_NEW, SEG_SEQ, SI_HEAD, SI_TAIL)
from studies.headroom import WAIT_RULE, Candidate, blocked_answers, check_cells, check_counts


@dataclass
class Outcomes:
    """Per resolved decision: the rule's answer, the action taken (0 wait, 1 send) and the own
    acknowledgement delay (ms); and the decisions set apart."""

    rule: list[int] = field(default_factory=list)
    action: list[int] = field(default_factory=list)
    delay_ms: list[float] = field(default_factory=list)
    lost: int = 0
    unresolved: dict[tuple[int, int], int] = field(default_factory=dict)  # (rule, action) -> decisions


def _resolve(sim, b: int, pending: dict[float, list[tuple[float, int, int]]], out: Outcomes) -> None:
    """Move connection ``b``'s pending decisions whose packet has arrived into ``out``."""
    q = sim.seg.shape[2]
    flows = []
    for f in range(sim.seg.shape[1]):
        idx = np.arange(sim.segi[b, f, SI_HEAD], sim.segi[b, f, SI_TAIL]) % q
        if len(idx):
            flows.append((f, sim.seg[b, f, idx]))
    for seq in list(pending):
        for f, sg in flows:
            hit = np.flatnonzero((sg[:, SEG_NEW] > 0) & (sg[:, SEG_SEQ] <= seq) & (seq < sg[:, SEG_SEQ] + sg[:, SEG_NEW]))
            if not hit.size:
                continue
            seg = sg[hit[0]]
            if np.isfinite(seg[SEG_ARRIVE]) and seg[SEG_ARRIVE] > 0:
                acked = seg[SEG_ARRIVE] + sim.fl[b, f, FL_DREV]
                for t0, rule, action in pending.pop(seq):
                    if seg[SEG_LOST] > 0:
                        out.lost += 1
                    else:
                        out.rule.append(rule)
                        out.action.append(action)
                        out.delay_ms.append((acked - t0) * sim.dt * 1000.0)
            break


def collect(scenario: str | Scenario, cc: str, runs: int, k: float, eps: float, seed: int) -> tuple[Outcomes, float]:
    """One episode per connection of the wait rule with random reversals: the outcomes and the
    mean goodput."""
    process = build_process(runs, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation="ispras_dqn")
    sim = process.sim
    answers: HeuristicAnswers = blocked_answers(process, Candidate(WAIT_RULE, (("k", k),), blocked=False))
    rng = np.random.default_rng(seed + 1)
    pending: list[dict[float, list[tuple[float, int, int]]]] = [{} for _ in range(runs)]
    out = Outcomes()
    process.reset()
    while not sim.done.all():
        live = ~sim.done
        rule = np.maximum(answers.answer(live), 0).copy()
        action = np.where(rng.random(runs) < eps, 1 - rule, rule).astype(np.int64)
        for b in np.flatnonzero(live):
            pending[b].setdefault(float(sim.cn[b, CN_SND_NXT]), []).append(
                (float(sim.cn[b, CN_T]), int(rule[b]), int(action[b])))
        process.step(action)
        for b in range(runs):
            _resolve(sim, b, pending[b], out)
    for p in pending:
        for decisions in p.values():
            for _, rule_b, action_b in decisions:
                out.unresolved[rule_b, action_b] = out.unresolved.get((rule_b, action_b), 0) + 1
    return out, float(sim.results()["goodput_mbps"].mean())


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.own_ack_outcome", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", nargs="+", default=["ispras_s2"])
    ap.add_argument("--cc", default="bbr")
    ap.add_argument("--k", type=float, default=1.25, help="the wait rule's k, >= 0 (its answers split the states)")
    ap.add_argument("--eps", type=float, default=0.2, help="probability of taking the rule's other answer, in [0, 1]")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=100)
    a = ap.parse_args(argv)
    check_counts(("--runs", a.runs))
    if not a.k >= 0.0:
        raise out_of_range("--k", a.k, ">= 0 (inf: minRTT)")
    if not 0.0 <= a.eps <= 1.0:
        raise out_of_range("--eps", a.eps, "in [0, 1]")
    check_cells(a.scenario, [a.cc])
    for scenario in a.scenario:
        out, goodput = collect(scenario, a.cc, a.runs, a.k, a.eps, a.seed)
        rule, action, delay = np.array(out.rule), np.array(out.action), np.array(out.delay_ms)
        print(f"{scenario} / {a.cc}, wait_rule(k={a.k:g}) reversed at {a.eps:.0%}: goodput {goodput:.2f} Mbit/s; "
              f"{len(delay)} decisions resolved, {out.lost} with a lost packet, {sum(out.unresolved.values())} not seen "
              "arriving (" + ", ".join(f"{n} {'sends' if a_ else 'waits'} where the rule {'sends' if r_ else 'waits'}"
                                      for (r_, a_), n in sorted(out.unresolved.items())) + ")")
        for value, where in ((0, "where the rule waits"), (1, "where the rule sends")):
            wait = delay[(rule == value) & (action == 0)]
            send = delay[(rule == value) & (action == 1)]
            if min(len(wait), len(send)) < 2:
                print(f"  {where}: too few of one action ({len(wait)} waits, {len(send)} sends)")
                continue
            diff = wait.mean() - send.mean()
            se = np.sqrt(wait.var(ddof=1) / len(wait) + send.var(ddof=1) / len(send))
            print(f"  {where}: own ACK after a wait {wait.mean():.1f} ms (sd {wait.std(ddof=1):.1f}, n {len(wait)}), "
                  f"after a send {send.mean():.1f} ms (sd {send.std(ddof=1):.1f}, n {len(send)}); "
                  f"wait - send {diff:+.1f} ms, t {diff / se:+.1f}")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
