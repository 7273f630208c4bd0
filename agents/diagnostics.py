"""Policy diagnostics: what a learned scheduler actually does at its decisions.

Wherever a policy is evaluated (train.py's final comparison, the study reports, evaluate.py on a
checkpoint) the same episodes also yield, per scenario and CC:

- the share of each action over all decisions (``wait`` / ``send_second`` in the blocked mode);
- the agreement with each reference heuristic (minRTT, fast_only, ECF, BLEST): the share of the
  policy's decisions at which that heuristic, shown the same sender state (the simulator's
  sender-observable ``obs``/``cobs`` at the decision point, as the agent saw it), would have
  answered the same. A heuristic's own state (ECF's waiting flag, BLEST's lambda) runs along the
  policy's episode, updated at each decision point only;
- warnings: a constant policy (one action at ``CONSTANT_SHARE`` of its decisions or more) and a
  clone of a heuristic (agreement ``CLONE_AGREEMENT`` or more).

A learner trained with several seeds is reported in a cell both pooled (its seeds' decisions
summed, ``combine``) and per seed (``pool_seeds``): each seed's policy is flagged on its own by the
same rules, and the report says how many of the seeds are flagged. Pooling alone can hide a
degenerate seed: the pool is decision-weighted, and a seed that always sends makes few decisions
beside one that waits at some, so the pool of the two is neither constant nor a clone.

In the blocked mode a decision point is a moment when the fast path has no window and another
path has: minRTT would send on the second path there (action 1) and fast_only would wait (action
0), so a constant policy is also a clone of one of them. The packet mode compares paths (action
i = path i, the last action = wait). In the interval mode every action is a heuristic (a mode,
which schedules the interval): the policy agrees with a mode's heuristic at the intervals it picks
it, so a policy that keeps one mode is a clone of that heuristic (``mode_heuristics``) and is
judged like any clone against the cell's searched best.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from agents.tracking import mlflow_key
from envs.decision import mode_labels, mode_specs
from envs.plugins import scheduler_id, scheduler_label, scheduler_params, scheduler_values
from envs.plugins.dispatch import pick
from envs.sim.layout import CN_N_SUB, N_SCHED, SCHED_STATE

if TYPE_CHECKING:
    from envs.decision import DecisionProcess

REFERENCES = ("minrtt", "fast_only", "ecf", "blest")
"""The heuristics every policy is compared with."""
CONSTANT_SHARE = 0.99  # a policy taking one action this often is reported as constant
CLONE_AGREEMENT = 0.95  # ... and one agreeing this often with a heuristic as its clone
NO_ANSWER = -1  # the heuristic's answer has no action (several paths at once)
BLOCKED_ACTIONS = ("wait", "send_second")  # the actions of the blocked decision mode


@njit(cache=True)
def _answers(sid, prm, st, obs, cobs, nsub, mss, rng, live, blocked, n_actions, out):
    """Each live connection's answer of heuristic ``sid`` at its decision point, as an action of
    the decision mode: blocked (0 = wait, 1 = send on the second path) or packet (path index,
    ``n_actions - 1`` = wait); ``NO_ANSWER`` for a mask of several paths."""
    for b in range(obs.shape[0]):
        out[b] = NO_ANSWER
        if not live[b]:
            continue
        mask = pick(sid, prm, st[b], obs[b], cobs[b], int(nsub[b]), mss[b], rng, b)
        if mask == 0:
            out[b] = 0 if blocked else n_actions - 1
        elif blocked:
            out[b] = 1
        elif (mask & (mask - 1)) == 0:
            i = 0
            while (mask >> i) != 1:
                i += 1
            out[b] = i


@dataclass
class PolicyDiagnostics:
    """What a policy did over ``decisions`` decisions (see the module docstring)."""

    decisions: int
    action_names: tuple[str, ...]
    action_counts: tuple[int, ...]
    agree_counts: dict[str, int] = field(default_factory=dict)  # heuristic -> decisions answered alike
    constant: str | None = None  # the action a constant policy takes
    clone_of: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    per_seed: dict[int, PolicyDiagnostics] = field(default_factory=dict)  # training seed -> its own policy's

    @property
    def degenerate(self) -> bool:
        """Constant or a clone of a heuristic."""
        return bool(self.constant or self.clone_of)

    @property
    def seeds_flagged(self) -> list[int]:
        """The training seeds whose own policy is degenerate (empty when not pooled over seeds)."""
        return [seed for seed, d in self.per_seed.items() if d.degenerate]

    @property
    def seeds_note(self) -> str:
        """``"k of N"`` seeds flagged, or ``"-"`` when not pooled over seeds."""
        return f"{len(self.seeds_flagged)} of {len(self.per_seed)}" if self.per_seed else "-"

    @property
    def action_shares(self) -> tuple[float, ...]:
        return tuple(c / self.decisions if self.decisions else math.nan for c in self.action_counts)

    @property
    def agreement(self) -> dict[str, float]:
        """Heuristic -> share of the decisions at which it would have answered alike."""
        return {h: c / self.decisions if self.decisions else math.nan for h, c in self.agree_counts.items()}

    def metrics(self, prefix: str) -> dict[str, float]:
        """Flat numbers for MLflow: ``<prefix>/share/<action>``, ``<prefix>/agree/<heuristic>``,
        ``<prefix>/decisions``, ``<prefix>/degenerate`` (1 when constant or a clone) and, pooled over
        training seeds, ``<prefix>/seeds`` and ``<prefix>/seeds_degenerate`` (how many are)."""
        out = {f"{prefix}/decisions": float(self.decisions), f"{prefix}/degenerate": float(self.degenerate)}
        if self.per_seed:
            out.update({f"{prefix}/seeds": float(len(self.per_seed)),
                        f"{prefix}/seeds_degenerate": float(len(self.seeds_flagged))})
        out.update({f"{prefix}/share/{mlflow_key(a)}": s for a, s in zip(self.action_names, self.action_shares)})
        out.update({f"{prefix}/agree/{mlflow_key(h)}": v for h, v in self.agreement.items()})
        return {k: v for k, v in out.items() if math.isfinite(v)}


def action_names(process: DecisionProcess) -> tuple[str, ...]:
    mode = process.decision.mode
    if mode == "blocked":
        return BLOCKED_ACTIONS
    if mode == "packet":
        return (*[f"path{i + 1}" for i in range(process.n_actions - 1)], "wait")
    return tuple(f"{i}:{label}" for i, label in enumerate(mode_labels(process.decision.modes)))


class HeuristicAnswers:
    """A heuristic asked at the decision points of ``process`` (blocked or packet mode): its answer
    as an action of the mode, from the sender state there. Its own state (ECF's waiting flag,
    BLEST's lambda) runs along the process's episodes, updated at the decision points only; its
    random numbers come from a generator of its own, never the simulator's."""

    def __init__(self, process: DecisionProcess, name: str, params: dict | None = None) -> None:
        self.process = process
        B = process.sim.B
        self._sid = scheduler_id(name)
        self._prm = scheduler_params(name, params, process.sim.n_paths)
        self._state = np.zeros((B, N_SCHED - SCHED_STATE))
        self._rng = np.random.default_rng(0).integers(1, 2**63, size=2 * B, dtype=np.uint64)
        self._answer = np.zeros(B, dtype=np.int64)

    def answer(self, live: np.ndarray) -> np.ndarray:
        """Every connection's answer (``NO_ANSWER`` where not ``live`` or for a mask of several paths)."""
        s, p = self.process.sim, self.process
        _answers(self._sid, self._prm, self._state, s.obs[:, :s.P], s.cobs, s.cn[:, CN_N_SUB], s.mss, self._rng,
                 live, p.decision.mode == "blocked", p.n_actions, self._answer)
        return self._answer


def mode_heuristics(process: DecisionProcess) -> tuple[str, ...]:
    """The interval mode's modes as heuristics, each with every parameter (its defaults filled
    in), as one label (``envs.plugins.scheduler_label``: ``minrtt``, ``wait_rule(k=1)``), the
    form ``studies.headroom`` names its searched members in."""
    return tuple(scheduler_label(name, scheduler_values(name, params))
                 for name, params in mode_specs(process.decision.modes))


class DecisionLog:
    """Collects a policy's decisions on ``process`` and, beside them, each reference heuristic's
    answer on the same sender state. Call ``record(actions)`` before every ``process.step`` of
    an evaluation whose episodes all start with ``process.reset()`` (one episode per connection)."""

    def __init__(self, process: DecisionProcess, references: tuple[str, ...] = REFERENCES) -> None:
        self.process = process
        self.names = action_names(process)
        self.counts = np.zeros(process.n_actions, dtype=np.int64)
        mode = process.decision.mode
        self.compared = references if mode in ("blocked", "packet") else ()
        self._heuristics = {h: HeuristicAnswers(process, h) for h in self.compared}
        self._modes = mode_heuristics(process) if mode == "interval" else ()
        self._same = dict.fromkeys((*self.compared, *self._modes), 0)

    def record(self, actions: np.ndarray) -> None:
        s = self.process.sim
        live = ~s.done
        acts = np.asarray(actions, dtype=np.int64).reshape(-1)
        self.counts += np.bincount(acts[live], minlength=self.process.n_actions)[: self.process.n_actions]
        for h, heuristic in self._heuristics.items():
            self._same[h] += int(np.count_nonzero(heuristic.answer(live)[live] == acts[live]))
        for i, h in enumerate(self._modes):  # picking mode i is its heuristic's decision
            self._same[h] += int(np.count_nonzero(acts[live] == i))

    def result(self) -> PolicyDiagnostics:
        return summarise(self.names, self.counts, self._same)


def summarise(names: tuple[str, ...], counts: np.ndarray, same: dict[str, int]) -> PolicyDiagnostics:
    """Shares, agreement and warnings from action counts and per-heuristic agreeing decisions
    (several logs of one policy add up: sum their counts first)."""
    per_action = tuple(int(c) for c in counts)
    n = sum(per_action)
    if n == 0:
        return PolicyDiagnostics(0, names, per_action, dict(same),
                                 warnings=("never asked: no decision point in these episodes",))
    top = int(np.argmax(per_action))
    constant = names[top] if per_action[top] >= CONSTANT_SHARE * n else None
    clones = tuple(h for h, v in same.items() if v >= CLONE_AGREEMENT * n)
    warnings = []
    if constant:
        warnings.append(f"constant policy: '{constant}' at {100 * per_action[top] / n:.1f}% of {n} decisions")
    if clones:
        warnings.append("clone of " + ", ".join(f"{h} ({100 * same[h] / n:.1f}% same decisions)" for h in clones)
                        + f" over {n} decisions")
    return PolicyDiagnostics(n, names, per_action, dict(same), constant, clones, tuple(warnings))


def combine(parts: list[PolicyDiagnostics]) -> PolicyDiagnostics:
    """One learner's diagnostics over several logs (cells, or its training seeds' policies), decision-weighted."""
    names = parts[0].action_names
    counts = np.sum([p.action_counts for p in parts], axis=0)
    same = {h: sum(p.agree_counts[h] for p in parts) for h in parts[0].agree_counts}
    return summarise(names, counts, same)


def pool_seeds(per_seed: dict[int, PolicyDiagnostics]) -> PolicyDiagnostics:
    """One learner's diagnostics in a cell over its training seeds' policies (training seed ->
    that seed's diagnostics): pooled as ``combine`` does, each seed kept in ``per_seed`` with its
    own flags, and a warning per flagged seed naming it and why (how many of the seeds are
    flagged, ``seeds_note``, is the tables' "seeds flagged" column, not repeated here)."""
    pooled = combine(list(per_seed.values()))
    pooled.per_seed = dict(per_seed)
    pooled.warnings += tuple(f"seed {seed}: " + ", ".join(per_seed[seed].warnings) for seed in pooled.seeds_flagged)
    return pooled


def format_table(rows: list[tuple[str, ...]], diags: list[PolicyDiagnostics]) -> str:
    """Markdown: one row per (labels..., diagnostics), the label columns being
    ``scheduler | scenario | cc``; action shares, agreement with each heuristic, how many training
    seeds' own policies are flagged (when pooled over seeds), warnings."""
    if not diags:
        return ""
    actions = list(dict.fromkeys(a for d in diags for a in d.action_names))  # every policy's own actions
    refs = list(dict.fromkeys(h for d in diags for h in d.agreement))
    seeded = any(d.per_seed for d in diags)
    head = ["scheduler", "scenario", "cc", "decisions", *[f"{a} %" for a in actions], *[f"= {h} %" for h in refs],
            *(["seeds flagged"] if seeded else []), "warning"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for labels, d in zip(rows, diags):
        shares = dict(zip(d.action_names, d.action_shares))
        cells = [*labels, str(d.decisions), *[_pct(shares.get(a, math.nan)) for a in actions],
                 *[_pct(d.agreement.get(h, math.nan)) for h in refs], *([d.seeds_note] if seeded else []),
                 "; ".join(d.warnings) or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.1f}"
