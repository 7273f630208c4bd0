"""Headroom per cell: how much better than minRTT any scheduler of a parametric family does in a
scenario x CC cell, so that a learner's score can be read against what was there to gain.

The family (``candidates``) holds the heuristics with parameters worth searching and one rule of
our own for the blocked decision (the one the ISPRAS learners and Peekaboo answer):

- ``wait_rule(k)``: when the fast path F has no window and the second path S has, send on S only
  if the next packet would reach the receiver over S within ``k`` times the time it would take over
  F (one-way delay ``srtt / 2``; over F after the data ahead of it, what exceeds F's window and the
  connection's backlog, has gone out at F's rate ``cwnd / srtt``: the earliest-arrival estimate of
  OTIAS/ATLB). ``k = inf`` is minRTT, ``k = 0`` is fast_only, ``k = 1`` earliest arrival. Its
  one definition is the registered heuristic ``envs/schedulers/wait_rule.py`` (which XQUIC runs
  too, ``scheduler=wait_rule``), asked here at the blocked decision only;
- ECF with hysteresis ``beta``, BLEST with a fixed ``lambda`` (the ECF/BLEST thresholds: how
  much waiting for the fast path is worth), WRR with per-path weights or by rate, and minRTT and
  fast_only themselves;
- ECF's and BLEST's rules asked at the blocked decision instead (``ecf@blocked``,
  ``blest@blocked``): the heuristic answers wait or send only where the learners are asked, and
  its answer holds for the rest of the simulator step as theirs does (``envs.decision``), where
  the heuristic itself decides at every packet.

The learners of the ISPRAS family and Peekaboo decide only at the blocked decision, so a schedule
that sends on a slower path while the fast one has window (WRR) or decides packet by packet is
outside what any of them can do. ``Headroom.blocked_best`` is therefore the best of the members a
blocked-decision policy can express (minRTT, fast_only, the wait rule, the ``@blocked`` rules),
re-evaluated on the held-out seeds beside the overall best.

``search`` evaluates every candidate as one batch of ``search_runs`` connections per cell on
search seeds (a grid, plus ``samples`` random draws of the continuous parameters from a seeded
generator), then re-evaluates the best one and minRTT on held-out seeds (the evaluation seeds
every study and train.py use), so that the reported headroom is not the noise the search
selected. ``python -m studies.headroom --scenario ispras_s1 --cc bbr bbr2`` prints the table;
a study with ``headroom: true`` adds it to its report beside its learners (``studies.report``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents.diagnostics import HeuristicAnswers
from envs.decision import DecisionProcess
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.evaluation import EVAL_SEED_OFFSET, evaluate_heuristic
from envs.metrics import ALL_METRICS, LOWER_IS_BETTER, mean_ci
from envs.multipath_env import build_process
from envs.plugins import cc_id, scheduler_values
from envs.scenario import Scenario, resolve_scenarios
from envs.sim.simulator import SimConfig
from envs.sim.stacks import DEFAULT_STACK, check_ccs

SEARCH_SEED_OFFSET = 2_000_000  # search episodes: neither training nor evaluation seeds
WAIT_RULE = "wait_rule"
K_GRID = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, math.inf)


@dataclass(frozen=True)
class Candidate:
    """One member of the family: a registered heuristic (``scheduler``, ``params``), the same
    asked only at the blocked decision (``blocked``), or the blocked-mode ``wait_rule`` with
    ``params = {"k": ...}``."""

    scheduler: str
    params: tuple[tuple[str, float | tuple[float, ...]], ...] = ()
    blocked: bool = False

    @property
    def label(self) -> str:
        name = f"{self.scheduler}@blocked" if self.blocked else self.scheduler
        if not self.params:
            return name
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.params)
        return f"{name}({shown})"

    @property
    def in_blocked_mode(self) -> bool:
        """Whether a policy that decides only at blocked decisions can act as this member does."""
        return self.blocked or self.scheduler in (WAIT_RULE, "minrtt", "fast_only")

    @property
    def kwargs(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params}


def _short(v: float | tuple[float, ...]) -> str:
    if isinstance(v, tuple):
        return ":".join(f"{x:g}" for x in v)
    return "inf" if math.isinf(v) else f"{v:.3g}"


def candidates(n_paths: int, samples: int = 0, seed: int = 0) -> list[Candidate]:
    """The grid (and ``samples`` random draws: k log-uniform in [0.25, 8], ECF beta in [0, 2],
    BLEST lambda in [0.25, 4]) for scenarios of ``n_paths`` paths."""
    if samples < 0:
        raise out_of_range("samples", samples, "an integer >= 0")
    out = [Candidate("minrtt"), Candidate("fast_only")]
    out += [Candidate(WAIT_RULE, (("k", k),)) for k in K_GRID if 0.0 < k < math.inf]
    out += [Candidate("ecf", (("beta", b),)) for b in (0.0, 0.25, 0.5, 1.0, 2.0)]
    out += [Candidate("blest", (("lambda", lam), ("step", 0.0), ("lambda_max", lam))) for lam in (0.5, 1.0, 1.5, 2.0, 3.0)]
    out += [Candidate(c.scheduler, c.params, blocked=True) for c in out if c.scheduler in ("ecf", "blest")]
    out += [Candidate("wrr", (("by_rate", 1.0),))]
    if n_paths == 2:
        out += [Candidate("wrr", (("weights", w),)) for w in ((1.0, 3.0), (1.0, 1.0), (3.0, 1.0))]
    rng = np.random.default_rng(seed)
    for _ in range(samples):
        kind = rng.integers(3)
        if kind == 0:
            out.append(Candidate(WAIT_RULE, (("k", float(np.exp(rng.uniform(np.log(0.25), np.log(8.0))))),)))
        elif kind == 1:
            out.append(Candidate("ecf", (("beta", float(rng.uniform(0.0, 2.0))),)))
        else:
            lam = float(rng.uniform(0.25, 4.0))
            out.append(Candidate("blest", (("lambda", lam), ("step", 0.0), ("lambda_max", lam))))
    return out


def evaluate_candidate(cand: Candidate, scenario: Scenario, cc: str, runs: int, seed: int, sim: SimConfig,
                       cc_params: dict | None = None) -> dict[str, np.ndarray]:
    """Per-run metrics of one candidate: ``runs`` connections in one batch."""
    if cand.scheduler != WAIT_RULE and not cand.blocked:
        return evaluate_heuristic(scenario, cc, cand.scheduler, runs, seed, sim, cc_params, cand.kwargs)
    process = build_process(runs, scenario=scenario, cc=cc, seed=seed, decision="blocked", observation="ispras_dqn",
                            dt_ms=sim.dt_ms, mss=sim.mss, max_duration_s=sim.max_duration_s,
                            ooo_limit_bytes=sim.ooo_limit_bytes, end_on_ooo=sim.end_on_ooo,
                            cc_params={cc: cc_params} if cc_params else None)
    run_blocked(process, cand)
    return process.sim.results()


def run_blocked(process: DecisionProcess, cand: Candidate) -> np.ndarray:
    """Run every connection of ``process`` to its end with ``cand`` answering at its blocked
    decisions; returns each connection's rewards summed over its episode (``process``'s reward)."""
    s = process.sim
    answers = blocked_answers(process, cand)
    process.reset()
    total = np.zeros(s.done.shape[0])
    while not s.done.all():
        live = ~s.done
        rewards = process.step(np.maximum(answers.answer(live), 0))[0]  # finished connections: any action
        total += np.where(live, rewards, 0.0)
    return total


def blocked_member(scheduler: str) -> Candidate:
    """Heuristic ``scheduler`` as the member a blocked-decision policy copies: as it is where its own
    rule is a blocked-decision rule (minRTT, fast_only), else asked at the blocked decision."""
    plain = Candidate(scheduler)
    return plain if plain.in_blocked_mode else Candidate(scheduler, blocked=True)


def blocked_answers(process: DecisionProcess, cand: Candidate) -> HeuristicAnswers:
    """A blocked-mode member of the family asked at ``process``'s blocked decisions: the wait rule
    (``envs/schedulers/wait_rule.py``; its ``k`` is required here, a family given by hand may miss
    it), or a heuristic's rule (``cand.blocked``)."""
    if cand.scheduler == WAIT_RULE:
        params = dict(cand.params)
        scheduler_values(WAIT_RULE, {key: v for key, v in params.items() if key != "k"})  # a parameter it lacks, named
        k = params.get("k")
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not k >= 0.0:
            raise out_of_range("wait_rule k", k, "a number >= 0")
        return HeuristicAnswers(process, WAIT_RULE, {"k": float(k)})
    return HeuristicAnswers(process, cand.scheduler, cand.kwargs)


def reward_returns(members: Sequence[Candidate], scenario: Scenario, cc: str, runs: int, seed: int,
                   env: dict, cc_params: dict | None = None) -> dict[str, tuple[float, float]]:
    """Each blocked-mode member's return under a learner's reward: the rewards of its decisions
    summed over an episode, in the learner's environment (``env``: its ``env`` settings, reward
    included), mean and 95% CI over ``runs`` connections. Which of two policies a learner's reward
    prefers says whether a learner that settled on the other fell short of its reward or its
    reward falls short of the score (README "Where learning pays")."""
    return {cand.label: mean_ci(run_blocked(build_process(runs, scenario=scenario, cc=cc, seed=seed, cc_params=cc_params,
                                                         **{**env, "decision": "blocked"}), cand))
            for cand in members}


def gain(mean: float, base: float, higher_is_better: bool = True) -> float:
    """Relative gain of a score ``mean`` over minRTT's ``base`` (0.1 = 10% better; negative: worse)."""
    return (1.0 if higher_is_better else -1.0) * (mean - base) / abs(base)


@dataclass
class Headroom:
    """One cell: the search (every candidate's mean on the search seeds) and, on held-out
    seeds, the best candidate and minRTT (mean and 95% CI of ``metric``)."""

    scenario: str
    cc: str
    metric: str
    best: Candidate
    best_mean: float
    best_ci: float
    minrtt_mean: float
    minrtt_ci: float
    search: list[tuple[str, float]] = field(default_factory=list)
    higher_is_better: bool = True
    blocked_best: Candidate | None = None  # the best member a blocked-decision policy can express
    blocked_best_mean: float = math.nan
    blocked_best_ci: float = math.nan
    # half-width of the 95% CI of the per-run difference best - minRTT on the same held-out seeds
    # (common random numbers: the runs are paired); NaN: not paired, the two CIs are added instead
    diff_ci: float = math.nan

    @property
    def blocked_headroom(self) -> float:
        """``headroom`` of ``blocked_best``: what a policy deciding only at blocked decisions could gain."""
        return gain(self.blocked_best_mean, self.minrtt_mean, self.higher_is_better)

    @property
    def headroom(self) -> float:
        """Relative gain of the best found over minRTT on the held-out seeds (0.1 = 10%);
        negative when the search's winner does not hold up there."""
        return gain(self.best_mean, self.minrtt_mean, self.higher_is_better)

    @property
    def significant(self) -> bool:
        """Whether the best found beats minRTT beyond the 95% confidence interval of their paired
        difference (``diff_ci``), or of both means where the runs are not paired. Paired, the
        network draws both share cancel: on ispras_s2 under BBRv1 the wait rule's +4% over minRTT
        is within the two means' CIs at 10 runs (each about +-4%) and beyond the paired one (+-0.8%)."""
        sign = 1.0 if self.higher_is_better else -1.0
        margin = self.diff_ci if math.isfinite(self.diff_ci) else self.best_ci + self.minrtt_ci
        return sign * (self.best_mean - self.minrtt_mean) > margin

    def recovered(self, learner_mean: float) -> float:
        """Share of the headroom a learner scoring ``learner_mean`` recovers (1 = all of it, 0 =
        minRTT's score, negative = worse than minRTT); NaN when there is no headroom beyond the
        confidence intervals (a share of noise says nothing)."""
        if not self.significant:
            return math.nan
        return (learner_mean - self.minrtt_mean) / (self.best_mean - self.minrtt_mean)


def search(scenario: Scenario, cc: str, *, runs: int = 10, search_runs: int = 5, samples: int = 0, seed: int = 0,
           metric: str = "goodput_mbps", sim: SimConfig | None = None, cc_params: dict | None = None,
           family: Sequence[Candidate] | None = None) -> Headroom:
    """The best candidate of ``family`` (default ``candidates``) in one cell; see the module
    docstring. Reproducible: ``seed`` fixes the random draws and every simulation."""
    for name, value in (("runs", runs), ("search_runs", search_runs)):
        if not isinstance(value, int) or value < 1:
            raise out_of_range(name, value, "an integer >= 1")
    if metric not in ALL_METRICS:
        raise unknown_name("metric", metric, ALL_METRICS)
    sim = sim or SimConfig()
    higher = metric not in LOWER_IS_BETTER
    n_paths = len(scenario.paths) if scenario.n_paths is None else scenario.n_paths
    family = list(family) if family is not None else candidates(n_paths, samples, seed)  # type: ignore[arg-type]
    if not family:
        raise ConfigError("headroom: the family of candidates is empty")
    scored = []
    for cand in family:
        r = evaluate_candidate(cand, scenario, cc, search_runs, seed + SEARCH_SEED_OFFSET, sim, cc_params)
        scored.append((cand, float(np.nanmean(r[metric]))))
    sign = 1.0 if higher else -1.0

    def top(members: list[tuple[Candidate, float]]) -> Candidate:
        return max(members, key=lambda x: -math.inf if math.isnan(x[1]) else sign * x[1])[0]
    best = top(scored)
    held = seed + EVAL_SEED_OFFSET
    best_runs = evaluate_candidate(best, scenario, cc, runs, held, sim, cc_params)[metric]
    base_runs = evaluate_heuristic(scenario, cc, "minrtt", runs, held, sim, cc_params)[metric]
    best_mean, best_ci = mean_ci(best_runs)
    base_mean, base_ci = mean_ci(base_runs)
    out = Headroom(scenario.name, cc, metric, best, best_mean, best_ci, base_mean, base_ci,
                   [(c.label, v) for c, v in scored], higher, diff_ci=mean_ci(best_runs - base_runs)[1])
    blocked = [x for x in scored if x[0].in_blocked_mode]
    if blocked:
        out.blocked_best = top(blocked)
        out.blocked_best_mean, out.blocked_best_ci = (
            (best_mean, best_ci) if out.blocked_best == best else
            (base_mean, base_ci) if out.blocked_best == Candidate("minrtt") else
            mean_ci(evaluate_candidate(out.blocked_best, scenario, cc, runs, held, sim, cc_params)[metric]))
    return out


def _paired(h: Headroom) -> str:
    """`` ± x%``: the 95% CI of the paired difference relative to minRTT, where the runs are paired."""
    return f" ± {100 * h.diff_ci / abs(h.minrtt_mean):.1f}%" if math.isfinite(h.diff_ci) and h.minrtt_mean else ""


def format_table(cells: list[Headroom], learners: dict[str, dict[tuple[str, str], float]] | None = None) -> str:
    """Markdown, one row per cell: minRTT and the best found (held-out mean ± 95% CI), the
    headroom (± the 95% CI of the paired difference, relative to minRTT), and for each learner its
    score and the share of the headroom it recovers."""
    learners = learners or {}
    head = ["scenario", "cc", "minrtt", "best found", "best (held-out)", "headroom over minRTT",
            "best at the blocked decision (held-out)", "its headroom"]
    for name in learners:
        head += [name, f"{name} recovers"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for h in cells:
        row = [h.scenario, h.cc, f"{h.minrtt_mean:.2f} ± {h.minrtt_ci:.2f}", h.best.label,
               f"{h.best_mean:.2f} ± {h.best_ci:.2f}", f"{100 * h.headroom:+.1f}%" + _paired(h)]
        row += (["n/a", "n/a"] if h.blocked_best is None else
                [f"{h.blocked_best.label}: {h.blocked_best_mean:.2f} ± {h.blocked_best_ci:.2f}",
                 f"{100 * h.blocked_headroom:+.1f}%"])
        for scores in learners.values():
            v = scores.get((h.scenario, h.cc), math.nan)
            rec = h.recovered(v)
            row += ["n/a" if math.isnan(v) else f"{v:.2f}",
                    f"{100 * rec:.0f}%" if math.isfinite(rec) else "n/a (no headroom beyond the CI)"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary_lines(cells: list[Headroom], learners: dict[str, dict[tuple[str, str], float]]) -> list[str]:
    """"headroom over minRTT X%, learner recovers Y%" per cell and learner."""
    out = []
    for h in cells:
        parts = [f"{name} recovers {100 * h.recovered(s[(h.scenario, h.cc)]):.0f}%" for name, s in learners.items()
                 if (h.scenario, h.cc) in s and math.isfinite(h.recovered(s[(h.scenario, h.cc)]))]
        note = "" if h.significant else ", within the 95% CI of the paired difference: no headroom to recover"
        out.append(f"{h.scenario} / {h.cc}: headroom over minRTT {100 * h.headroom:+.1f}%{_paired(h)} "
                   f"({h.best.label}){note}"
                   + (", " + ", ".join(parts) if parts else ""))
    return out


@dataclass(frozen=True)
class LiveScheduler:
    """One scheduler's live runs in one cell: mean and 95% CI of goodput over its finished runs,
    its gain over minRTT's mean, and whether that gain lies beyond both CIs."""

    scenario: str
    cc: str
    scheduler: str
    runs: int
    mean: float
    ci: float
    gain: float
    significant: bool


def live_cells(records: Sequence[dict]) -> list[LiveScheduler]:
    """Per record of ``benchmarks/headroom_live.py`` (one cell's batch on one testbed) and
    scheduler: its goodput over the finished runs against minRTT's in the same batch."""
    out = []
    for rec in records:
        by: dict[str, list[float]] = {}
        for run in rec["runs"]:
            if run["outcome"] == "finished" and not run["error"]:
                by.setdefault(run["scheduler"], []).append(run["goodput_mbps"])
        if "minrtt" not in by:
            raise ConfigError(f"live headroom record {rec['scenario']} / {rec['cc']} ({rec['date']}) has no "
                              "finished minrtt run to compare with")
        base, base_ci = mean_ci(np.array(by["minrtt"]))
        for name in rec["schedulers"]:
            m, h = mean_ci(np.array(by.get(name, [])))
            out.append(LiveScheduler(rec["scenario"], rec["cc"], name, len(by.get(name, [])), m, h, gain(m, base),
                                     m - base > h + base_ci))
    return out


def format_live(records: Sequence[dict]) -> str:
    """Markdown: per live cell and scheduler, goodput (mean ± 95% CI over its runs) and the gain
    over minRTT, with each batch's date, kernel, stack and load average."""
    lines = ["| scenario | cc | scheduler | runs | goodput Mbit/s | vs minRTT | beyond both CIs |", "|" + "---|" * 7]
    for c in live_cells(records):
        lines.append(f"| {c.scenario} | {c.cc} | {c.scheduler} | {c.runs} | {c.mean:.2f} ± {c.ci:.2f} | "
                     f"{100 * c.gain:+.1f}% | {'yes' if c.significant else '-'} |")
    lines.append("")
    lines += [f"- {r['scenario']} / {r['cc']}: {r['date']}, kernel {r['kernel']}, {r['stack']}, load average "
              f"{r['load_before'][0]:.1f} before, {r['load_after'][0]:.1f} after; `{r['command']}`" for r in records]
    return "\n".join(lines)


def check_cells(scenarios: Sequence[str], ccs: Sequence[str], stack: str = DEFAULT_STACK) -> list[Scenario]:
    """A script's ``--scenario`` and ``--cc`` before any simulation: the scenarios, or a ConfigError
    naming the flag and the valid names."""
    try:
        found = resolve_scenarios(list(scenarios))
    except ConfigError as err:
        raise ConfigError(f"--scenario: {err}") from None
    try:
        for cc in ccs:
            cc_id(cc)  # an unknown name lists the valid ones (the stack lets a plug-in of another name through)
        check_ccs(stack, ccs)
    except ConfigError as err:
        raise ConfigError(f"--cc: {err}") from None
    return found


def check_counts(*counts: tuple[str, int]) -> None:
    """Refuse a count below 1, naming its flag: ``check_counts(("--runs", args.runs))``."""
    for flag, n in counts:
        if n < 1:
            raise out_of_range(flag, n, "an integer >= 1")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.headroom", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", nargs="+", default=["ispras_s1"], help="names or YAML files")
    parser.add_argument("--cc", nargs="+", default=["bbr"])
    parser.add_argument("--runs", type=int, default=10, help="held-out runs of the best and of minRTT")
    parser.add_argument("--search-runs", type=int, default=5, help="runs per candidate in the search")
    parser.add_argument("--samples", type=int, default=0, help="random candidates beside the grid")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", default="goodput_mbps", help="a metric of envs.metrics (lower is better for some)")
    parser.add_argument("--verbose", action="store_true", help="print every candidate's search score")
    parser.add_argument("--live", metavar="JSON", help="print the live runs of benchmarks/headroom_live.py instead")
    args = parser.parse_args(argv)
    if args.live:
        try:
            print(format_live(json.loads(Path(args.live).read_text())["cells"]))
        except (OSError, ValueError, KeyError, ConfigError) as err:
            raise SystemExit(f"error: {args.live}: {err}") from None
        return
    check_counts(("--runs", args.runs), ("--search-runs", args.search_runs))
    if args.samples < 0:
        raise out_of_range("--samples", args.samples, "an integer >= 0")
    if args.metric not in ALL_METRICS:
        raise unknown_name("--metric", args.metric, ALL_METRICS)
    scenarios = check_cells(args.scenario, args.cc)
    cells = [search(sc, cc, runs=args.runs, search_runs=args.search_runs, samples=args.samples, seed=args.seed,
                    metric=args.metric) for sc in scenarios for cc in args.cc]
    if args.verbose:
        for h in cells:
            print(f"{h.scenario} / {h.cc} search ({args.search_runs} runs): "
                  + ", ".join(f"{label} {v:.2f}" for label, v in h.search))
    print(format_table(cells))


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):  # a refused flag: one line naming it, not a traceback
        main(debug_argv(sys.argv[1:]))
