"""A study's outputs: the results table in the ISPRAS layout (scenarios as column groups, CCs as
columns; markdown and CSV), every metric of every cell (``cells.csv``), the robustness summary
(``studies.robustness``), the transfer matrix of the learned agents (train CC x test CC) and the
figures (grouped bars with 95% CIs, heatmap of normalised scores, transfer matrix)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from agents.diagnostics import BLOCKED_ACTIONS, format_table  # noqa: E402
from agents.tracking import mlflow_key  # noqa: E402
from envs.metrics import ALL_METRICS, mean_ci  # noqa: E402
from studies import headroom, robustness  # noqa: E402
from studies.spec import HEURISTIC, TRAIN, Study  # noqa: E402


def spread(result: dict[str, Any], metric: str) -> np.ndarray | None:
    """The values a cell's mean and CI are taken over: the runs, or for a learner trained with
    several seeds its seeds' means (the CI then covers the training seed too)."""
    return result.get("seed_means", result["metrics"]).get(metric)


def cube(study: Study, results: dict, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and 95% CI half-width of ``metric`` as arrays [scheduler, scenario, cc] (NaN: n/a)."""
    shape = (len(study.schedulers), len(study.scenarios), len(study.ccs))
    means, cis = np.full(shape, np.nan), np.full(shape, np.nan)
    for i, e in enumerate(study.schedulers):
        for k, s in enumerate(study.scenarios):
            for c, cc in enumerate(study.ccs):
                values = spread(results[(e.label, s.name, cc)], metric)
                if values is not None:
                    means[i, k, c], cis[i, k, c] = mean_ci(values)
    return means, cis


def train_ccs(study: Study) -> dict[str, str]:
    """Label -> the CC(s) each learned agent was trained under."""
    return {e.label: "+".join(e.meta.get("ccs", [])) or "?" for e in study.learned}


def _fmt(x: float, digits: int = 2) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:.{digits}f}"


def _md(header: list[str], rows: list[list[str]], groups: list[str] | None = None) -> str:
    """A markdown table; with ``groups``, the group names form the header and ``header`` the
    first (bold) row, so the table reads as a two-level header."""
    top = groups if groups else header
    lines = ["| " + " | ".join(top) + " |", "|" + "---|" * len(top)]
    if groups:
        lines.append("| " + " | ".join(f"**{h}**" if h else "" for h in header) + " |")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def write(study: Study, results: dict, out_dir: Path, cells_headroom: list | None = None) -> dict[str, Path]:
    """Write every output into ``out_dir`` (with ``cells_headroom``, ``studies.headroom``'s
    search per cell, also ``headroom.md``); returns name -> path."""
    out_dir = Path(out_dir)
    labels = [e.label for e in study.schedulers]
    scen, ccs = [s.name for s in study.scenarios], list(study.ccs)
    means, cis = cube(study, results, study.metric)
    summ = robustness.summary(means, study.higher_is_better)
    score = robustness.normalised(means, study.higher_is_better)
    files: dict[str, Path] = {}

    # every metric of every cell, one row per cell
    rows = []
    present = {m for r in results.values() for m in r["metrics"]}
    for (label, s, cc), r in results.items():
        row: dict[str, Any] = {"scheduler": label, "scenario": s, "cc": cc, "runs": study.runs,
                               "seeds": r.get("seeds", 1),
                               "failed": bool(r.get("failed")), "error": r["error"] or ""}
        for m in (m for m in ALL_METRICS if m in present):
            values = spread(r, m) if m in r["metrics"] else None
            mean, half = mean_ci(values) if values is not None else (math.nan, math.nan)
            row[m], row[f"{m}_ci95"] = mean, half
        rows.append(row)
    files["cells.csv"] = out_dir / "cells.csv"
    pd.DataFrame(rows).sort_values(["scheduler", "scenario", "cc"]).to_csv(files["cells.csv"], index=False)

    # the results table, ISPRAS layout
    cols = pd.MultiIndex.from_tuples([(s, cc, stat) for s in scen for cc in ccs for stat in ("mean", "ci95")],
                                     names=["scenario", "cc", "stat"])
    data = np.stack([means, cis], axis=-1).reshape(len(labels), -1)
    files["results.csv"] = out_dir / "results.csv"
    pd.DataFrame(data, index=pd.Index(labels, name="scheduler"), columns=cols).to_csv(files["results.csv"])
    groups = ["scheduler"] + [s if c == 0 else "" for s in scen for c in range(len(ccs))]
    header = [""] + [cc for _ in scen for cc in ccs]
    body = [[label] + [f"{_fmt(means[i, k, c])} ± {_fmt(cis[i, k, c])}" if np.isfinite(means[i, k, c]) else "n/a"
                       for k in range(len(scen)) for c in range(len(ccs))] for i, label in enumerate(labels)]
    na = [f"- {' / '.join(key)}: {r['error']}" for key, r in results.items() if r["error"] and not r.get("failed")]
    failed = [f"- {' / '.join(key)}: {r['error']}" for key, r in results.items() if r.get("failed")]
    over = f"{study.runs} runs" + (f" (learners trained here: over their {study.seeds} training seeds' means)"
                                   if study.seeds > 1 and any(e.kind == TRAIN for e in study.schedulers) else "")
    text = (f"# Study {study.name}: {study.metric}, mean ± 95% CI over {over} (simulated stack: {study.sim.stack})\n\n"
            + _md(header, body, groups) + "\n")
    if na:
        text += "\nn/a: the scheduler could not run in that cell:\n\n" + "\n".join(na) + "\n"
    if failed:
        text += ("\nFailed cells (the task raised, or its worker died on every attempt; a cell with a value "
                 "lost some training seeds):\n\n" + "\n".join(failed) + "\n")
    degenerate = [f"- {' / '.join(key)}: {'; '.join(r['diagnostics'].warnings)}" for key, r in results.items()
                  if r.get("diagnostics") is not None and r["diagnostics"].warnings]
    if degenerate:
        text += ("\nWARNING: degenerate learned policies (action shares and agreement in diagnostics.md):\n\n"
                 + "\n".join(degenerate) + "\n")
    if cells_headroom:
        learners = {e.label: {(sc, cc): means[i, k, c] for k, sc in enumerate(scen) for c, cc in enumerate(ccs)}
                    for i, e in enumerate(study.schedulers) if e.kind != HEURISTIC}
        lines = headroom.summary_lines(cells_headroom, learners)
        text += "\nHeadroom (headroom.md):\n\n" + "\n".join(f"- {line}" for line in lines) + "\n"
        text += "\n" + learning_verdict(study, results, cells_headroom, means, cis) + "\n"
        files["headroom.md"] = out_dir / "headroom.md"
        files["headroom.md"].write_text(
            f"# Headroom: study {study.name}\n\nThe best scheduler of a searched parametric family "
            f"(studies/headroom.py) per cell, selected on search seeds, then scored with minRTT on the study's "
            f"held-out seeds ({study.metric}, mean ± 95% CI over {study.runs} runs); a learner recovers the share "
            "(learner - minRTT) / (best - minRTT) of the headroom.\n\n"
            + headroom.format_table(cells_headroom, learners) + "\n")
    files["results.md"] = out_dir / "results.md"
    files["results.md"].write_text(text)

    # robustness
    direction = "higher" if study.higher_is_better else "lower"
    cells = [(s, cc) for s in scen for cc in ccs]
    rob = pd.DataFrame({
        "scheduler": labels,
        "mean_score": summ["mean_score"], "worst_score": summ["worst_score"],
        "worst_cell": ["/".join(cells[j]) if j >= 0 else "" for j in summ["worst_cell"]],
        **{f"score_{cc}": summ["per_cc"][:, c] for c, cc in enumerate(ccs)},
        "mean_regret": summ["mean_regret"], "max_regret": summ["max_regret"],
        "mean_rank": summ["mean_rank"], "rank_range": summ["rank_range"]})
    files["robustness.csv"] = out_dir / "robustness.csv"
    rob.to_csv(files["robustness.csv"], index=False)
    order = np.argsort(-np.nan_to_num(summ["worst_score"], nan=-1.0), kind="stable")
    head = ["scheduler", "worst score", "worst cell", "mean score", *[f"mean under {cc}" for cc in ccs],
            f"mean regret ({study.metric})", "max regret", "mean rank", "rank range"]
    body = [[labels[i], _fmt(summ["worst_score"][i], 3), rob["worst_cell"][i], _fmt(summ["mean_score"][i], 3),
             *[_fmt(summ["per_cc"][i, c], 3) for c in range(len(ccs))], _fmt(summ["mean_regret"][i]),
             _fmt(summ["max_regret"][i]), _fmt(summ["mean_rank"][i]), _fmt(summ["rank_range"][i], 1)] for i in order]
    w = ", ".join(f"{s} {_fmt(summ['kendall_w'][k], 3)}" for k, s in enumerate(scen))
    text = (f"# Robustness across CCs: study {study.name}\n\n"
            f"Score: {study.metric} ({direction} is better) normalised by the best scheduler of each "
            f"scenario x CC cell (1 = best). Worst score: the lowest over all {len(cells)} cells; regret: "
            f"distance to the cell's best in {study.metric}; rank range: the largest spread of a "
            "scheduler's rank across CCs within one scenario (0 = same rank under every CC). Sorted by "
            "worst score.\n\n" + _md(head, body)
            + f"\n\nRank agreement across CCs (Kendall's W per scenario; 1 = every CC ranks the schedulers "
              f"alike): {w}\n")
    files["robustness.md"] = out_dir / "robustness.md"
    files["robustness.md"].write_text(text)

    # transfer matrix of the learned agents: train CC x test CC
    learned = [i for i, e in enumerate(study.schedulers) if e.kind != HEURISTIC]
    trained = train_ccs(study)
    if learned:
        names = [f"{labels[i]} (trained {trained[labels[i]]})" for i in learned]
        matrix = summ["per_cc"][learned]
        files["transfer.csv"] = out_dir / "transfer.csv"
        pd.DataFrame(matrix, index=pd.Index(names, name="agent (train cc)"),
                     columns=pd.Index(ccs, name="test cc")).to_csv(files["transfer.csv"])
        files["transfer.md"] = out_dir / "transfer.md"
        files["transfer.md"].write_text(
            f"# Transfer matrix: study {study.name}\n\nMean normalised {study.metric} over the scenarios, per "
            "learned agent (rows, with the CC it was trained under) and evaluation CC (columns).\n\n"
            + _md(["agent (train cc)", *ccs], [[n, *[_fmt(v, 3) for v in row]] for n, row in zip(names, matrix)])
            + "\n")
        files["transfer.png"] = _heatmap(matrix, names, ccs, "test CC", f"transfer: normalised {study.metric}",
                                         out_dir / "transfer.png")

    diagnosed = [(key, r["diagnostics"]) for key, r in results.items() if r.get("diagnostics") is not None]
    if diagnosed:
        files["diagnostics.md"] = out_dir / "diagnostics.md"
        files["diagnostics.md"].write_text(
            f"# Policy diagnostics: study {study.name}\n\nPer learned scheduler and cell, over the cell's "
            "episodes: the share of each action at its decisions, and how often each reference heuristic, "
            "shown the same sender state, would have decided the same. A learner trained with several seeds: "
            "its seeds' decisions pooled, and (seeds flagged) how many of its seeds' own policies are constant "
            "or a clone.\n\n"
            + format_table([key for key, _ in diagnosed], [d for _, d in diagnosed]) + "\n")
        rows_d = [{"scheduler": k[0], "scenario": k[1], "cc": k[2], "decisions": d.decisions,
                   **{f"share_{a}": v for a, v in zip(d.action_names, d.action_shares)},
                   **{f"agree_{h}": v for h, v in d.agreement.items()},
                   **({"seeds": len(d.per_seed), "seeds_flagged": len(d.seeds_flagged)} if d.per_seed else {}),
                   "warnings": "; ".join(d.warnings)}
                  for k, d in diagnosed]
        files["diagnostics.csv"] = out_dir / "diagnostics.csv"
        pd.DataFrame(rows_d).to_csv(files["diagnostics.csv"], index=False)

    if len(ccs) > 1:
        files["worst_cc.md"] = out_dir / "worst_cc.md"
        files["worst_cc.md"].write_text(worst_cc_table(study, results, cells_headroom) + "\n")
        files["worst_cc.png"] = _worst_bars(study, results, out_dir / "worst_cc.png")
    files["bars.png"] = _bars(study, means, cis, out_dir / "bars.png")
    files["heatmap.png"] = _heatmap(score.reshape(len(labels), -1), labels, [f"{s}\n{cc}" for s, cc in cells],
                                    "scenario / CC", f"normalised {study.metric} (1 = best in cell)",
                                    out_dir / "heatmap.png")
    return files


RECOVER_SHARE = 0.5  # a learner "finds" a cell's headroom when it recovers at least this share of it
HEADROOM_MATTERS = 0.10  # a cell where the searched best beats minRTT by more than this: scheduling matters
CLONE_TOLERANCE = 0.02  # a clone of a heuristic within this of the cell's searched best is no failure


def learning_verdict(study: Study, results: dict, cells: list, means: np.ndarray, cis: np.ndarray) -> str:
    """Two checks of the learners against the searched headroom (``cells``: studies.headroom
    per cell): every degenerate policy (constant or a clone) with how far the heuristic it
    copies is from the cell's searched best (held-out; a heuristic outside the study's schedulers
    at its search-seed score against the search's, ``Copied``), pooled over a learner's training seeds
    and, when it has several, each seed's policy on its own; and for every cell whose headroom
    exceeds ``HEADROOM_MATTERS`` beyond its CI (``Headroom.significant``), the learners' recovered share with its interval
    (the learner's 95% CI, over its training seeds when it has several)."""
    found = {(h.scenario, h.cc): h for h in cells}
    index = {e.label: i for i, e in enumerate(study.schedulers)}
    scen = [s.name for s in study.scenarios]
    out = ["Degenerate policies against the searched best (a clone is a failure unless the heuristic it copies "
           f"is within {100 * CLONE_TOLERANCE:.0f}% of the cell's best; per seed: how many of the learner's "
           "training seeds' own policies are flagged, and how many of those fail):", ""]
    bad = outside = seeded = seeds_total = seeds_bad = cells_seed_bad = 0
    for (label, s, cc), r in results.items():
        d = r.get("diagnostics")
        h = found.get((s, cc))
        if d is None or h is None:
            continue
        k, c = scen.index(s), list(study.ccs).index(cc)
        failing = [seed for seed, part in d.per_seed.items()
                   if part.clone_of and not _clone_ok(_clone_gaps(part.clone_of, h, means, index, k, c))]
        seeded += bool(d.per_seed)
        seeds_total += len(d.per_seed)
        seeds_bad += len(failing)
        cells_seed_bad += bool(failing)
        per_seed = (f" [per seed: {d.seeds_note} flagged, {len(failing)} fail"
                    + (f" (seed {', '.join(map(str, failing))})" if failing else "") + "]") if d.per_seed else ""
        if not d.clone_of:
            if d.seeds_flagged:
                out.append(f"- {label} / {s} / {cc}: pooled over its seeds no clone" + per_seed)
            continue
        gaps = _clone_gaps(d.clone_of, h, means, index, k, c)
        ok = _clone_ok(gaps)
        bad += not ok
        shown = ", ".join(f"{g.name} {100 * g.gap:+.1f}% below" if np.isfinite(g.gap) else f"{g.name} not scored"
                          for g in gaps)
        note = "" if ok or h.significant else " (the best beats minRTT only within the 95% CI of their paired difference)"
        if not ok and d.action_names == BLOCKED_ACTIONS and h.blocked_best is not None:
            # the learner decides only at blocked decisions: how far is it from what such a policy reaches?
            within = any(g.blocked_gap <= CLONE_TOLERANCE for g in gaps)
            outside += within
            note += (f"; within {100 * CLONE_TOLERANCE:.0f}% of the best a blocked-decision policy reaches "
                     f"({h.blocked_best.label}, {h.blocked_best_mean:.2f}): the cell's best is outside the "
                     "learner's action space" if within else
                     f"; the best a blocked-decision policy reaches: {h.blocked_best.label}, {h.blocked_best_mean:.2f}")
        if not ok and r.get("reward_check") and h.blocked_best is not None:
            note += "; " + reward_note(r["reward_check"], h.blocked_best.label)
        out.append(f"- {label} / {s} / {cc}: clone of {', '.join(d.clone_of)} ({shown} the best): "
                   + ("ok" if ok else "FAILS") + note + per_seed)
    if len(out) == 2:
        out.append("- none")
    out += ["", f"{bad} degenerate cell(s) copy a heuristic more than {100 * CLONE_TOLERANCE:.0f}% below the best; "
            f"{outside} of them copy one within {100 * CLONE_TOLERANCE:.0f}% of the best a policy deciding only at "
            "blocked decisions (the learners' action space) reaches."]
    if seeded:
        out.append(f"Per training seed: {seeds_bad} of {seeds_total} seed policies in {seeded} learner cells copy a "
                   f"heuristic more than {100 * CLONE_TOLERANCE:.0f}% below the best, in {cells_seed_bad} cell(s).")
    out += ["", f"Cells where scheduling matters (headroom over minRTT > {100 * HEADROOM_MATTERS:.0f}% beyond the 95% CI) "
            f"and the learners' recovered share (>= {100 * RECOVER_SHARE:.0f}% counts as found):", ""]
    matters = [h for h in cells if h.significant and h.headroom > HEADROOM_MATTERS]
    for h in matters:
        k, c = scen.index(h.scenario), list(study.ccs).index(h.cc)
        parts = []
        for e in study.schedulers:
            if e.kind == HEURISTIC:
                continue
            m, ci = means[index[e.label], k, c], cis[index[e.label], k, c]
            if np.isfinite(m):
                lo, hi = h.recovered(m - ci), h.recovered(m + ci)
                parts.append(f"{e.label} {100 * h.recovered(m):.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]")
        top = max((h.recovered(means[index[e.label], k, c]) for e in study.schedulers if e.kind != HEURISTIC),
                  default=math.nan)
        verdict = "found" if top >= RECOVER_SHARE else "NOT found by any learner"
        out.append(f"- {h.scenario} / {h.cc}: {100 * h.headroom:+.1f}% ({h.best.label}); {verdict}: " + ", ".join(parts))
    if not matters:
        out.append("- none")
    return "\n".join(out)


def reward_note(returns: dict[str, tuple[float, float]], best: str) -> str:
    """Which policy the learner's own reward prefers over an episode (``runner.check_rewards``):
    a heuristic it copies, or the cell's best blocked-decision policy ``best``."""
    copied = {k: v for k, v in returns.items() if k != best}
    if best not in returns or not copied:
        return ""
    top = max(copied, key=lambda k: copied[k][0])
    shown = ", ".join(f"{k} {m:.4g} ± {ci:.2g}" for k, (m, ci) in returns.items())
    verdict = ("its reward prefers the heuristic it copies: the reward, not the learning, falls short of the score"
               if copied[top][0] >= returns[best][0] else
               f"its reward prefers {best}: the learner falls short of its own reward (its training, or what it observes)")
    return f"its own reward per episode: {shown}; {verdict}"


class Copied(NamedTuple):
    """A heuristic a degenerate policy copies, with its score and the cell's references measured on
    the same seeds: the held-out ones when it is one of the study's schedulers, else the search's."""

    name: str
    score: float
    best: float  # the cell's searched best on those seeds
    blocked_best: float  # the best a blocked-decision policy reaches on those seeds (NaN: none searched)
    higher_is_better: bool = True  # the study's metric: goodput (higher) or a completion time (lower)

    def _below(self, reference: float) -> float:
        """How far below ``reference`` it scores, relative to ``reference`` (0.1 = 10% worse)."""
        return (1.0 if self.higher_is_better else -1.0) * (reference - self.score) / abs(reference)

    @property
    def gap(self) -> float:
        """How far below the cell's best it scores (0.1 = 10%)."""
        return self._below(self.best)

    @property
    def blocked_gap(self) -> float:
        """How far below the best blocked-decision policy it scores."""
        return self._below(self.blocked_best)


def _clone_gaps(clone_of: tuple[str, ...], h: Any, means: np.ndarray, index: dict[str, int], k: int,
                c: int) -> list[Copied]:
    """Each copied heuristic against the cell's searched best and blocked-decision best: its
    held-out score against theirs when it is one of the study's schedulers, else its search-seed
    score against theirs on the search seeds (the best in the metric's direction)."""
    search = dict(h.search)
    scored = [v for v in search.values() if np.isfinite(v)]
    top = (max(scored) if h.higher_is_better else min(scored)) if scored else math.nan
    blocked_top = search.get(h.blocked_best.label, math.nan) if h.blocked_best is not None else math.nan
    out = []
    for name in clone_of:
        if name in index and np.isfinite(means[index[name], k, c]):
            out.append(Copied(name, means[index[name], k, c], h.best_mean, h.blocked_best_mean, h.higher_is_better))
        else:
            out.append(Copied(name, search.get(name, math.nan), top, blocked_top, h.higher_is_better))
    return out


def _clone_ok(gaps: list[Copied]) -> bool:
    """A clone is no failure when a heuristic it copies is within ``CLONE_TOLERANCE`` of the best."""
    return any(g.gap <= CLONE_TOLERANCE for g in gaps)


def worst_cc(study: Study, results: dict) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Per scheduler and scenario, ``study.metric`` under the CC where it does worst: for a
    learner trained with several seeds, each seed's worst CC (its minimum over the CCs of that
    seed's mean), then mean and 95% CI half-width over the seeds; for a heuristic, the worst CC's
    mean and CI over the runs. Arrays [scheduler, scenario] (NaN: n/a) and the worst CCs."""
    scen, ccs = [s.name for s in study.scenarios], list(study.ccs)
    sign = 1.0 if study.higher_is_better else -1.0
    means, cis = np.full((len(study.schedulers), len(scen)), np.nan), np.full((len(study.schedulers), len(scen)), np.nan)
    where = [["" for _ in scen] for _ in study.schedulers]
    for i, e in enumerate(study.schedulers):
        for k, s in enumerate(scen):
            per_cc = [results[(e.label, s, cc)] for cc in ccs]
            if any(study.metric not in r["metrics"] for r in per_cc):
                continue
            seeds = [r.get("seed_means", {}).get(study.metric) for r in per_cc]
            if all(x is not None for x in seeds) and len({len(x) for x in seeds}) == 1:  # type: ignore[arg-type]
                stack = np.stack(seeds)  # type: ignore[arg-type]
                j = np.argmin(sign * stack, axis=0)
                means[i, k], cis[i, k] = mean_ci(stack[j, np.arange(stack.shape[1])])
                where[i][k] = "/".join(sorted({ccs[x] for x in j}, key=ccs.index))
            else:
                cell = [mean_ci(spread(r, study.metric)) for r in per_cc]  # type: ignore[arg-type]
                j0 = int(np.argmin([sign * mc[0] for mc in cell]))
                (means[i, k], cis[i, k]), where[i][k] = cell[j0], ccs[j0]
    return means, cis, where


def worst_cc_table(study: Study, results: dict, cells: list | None) -> str:
    """``worst_cc`` as markdown; with ``cells`` (the headroom search), the searched best's worst
    cell per scenario as the last row."""
    scen, ccs = [s.name for s in study.scenarios], list(study.ccs)
    means, cis, where = worst_cc(study, results)
    rows = [[e.label] + [f"{_fmt(means[i, k])} ± {_fmt(cis[i, k])} ({where[i][k]})" if np.isfinite(means[i, k])
                         else "n/a" for k in range(len(scen))] for i, e in enumerate(study.schedulers)]
    if cells:
        sign = 1.0 if study.higher_is_better else -1.0
        found = {(h.scenario, h.cc): h for h in cells}
        row = ["searched best (per cell)"]
        for s in scen:
            hs = [found[(s, cc)] for cc in ccs if (s, cc) in found]
            h = min(hs, key=lambda x: sign * x.best_mean) if hs else None
            row.append(f"{_fmt(h.best_mean)} ± {_fmt(h.best_ci)} ({h.cc}: {h.best.label})" if h else "n/a")
        rows.append(row)
    return (f"# Worst CC: study {study.name}\n\nPer scheduler and scenario, {study.metric} under the CC where it "
            f"does worst, mean ± 95% CI: for a learner trained with {study.seeds} seed(s), over the seeds of each "
            "seed's worst CC (in parentheses: the CCs that were worst for some seed); for a heuristic, over the "
            "runs of its worst cell.\n\n" + _md(["scheduler", *scen], rows))


def _worst_bars(study: Study, results: dict, path: Path) -> Path:
    """One panel per scenario: every scheduler's worst-CC value with its 95% CI (``worst_cc``)."""
    means, cis, _ = worst_cc(study, results)
    labels = [e.label for e in study.schedulers]
    fig, axes = plt.subplots(1, len(study.scenarios), figsize=(4.2 * len(study.scenarios), 0.28 * len(labels) + 1.6),
                             sharey=True, squeeze=False)
    colours = ["tab:grey" if e.kind == HEURISTIC else "tab:blue" for e in study.schedulers]
    for k, (ax, s) in enumerate(zip(axes[0], study.scenarios)):
        y = np.arange(len(labels))
        ax.barh(y, np.nan_to_num(means[:, k]), xerr=np.nan_to_num(cis[:, k]), color=colours, capsize=2)
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_title(s.name)
        ax.set_xlabel(f"worst-CC {study.metric}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _bars(study: Study, means: np.ndarray, cis: np.ndarray, path: Path) -> Path:
    """One panel per scenario: CCs on the x axis, a bar per scheduler with its 95% CI."""
    n_s, n_k, n_c = means.shape
    fig, axes = plt.subplots(1, n_k, figsize=(max(3.0, 0.2 * n_s * n_c + 1.0) * n_k + 1.5, 3.6), squeeze=False,
                             sharey=True)
    width = 0.8 / n_s
    x = np.arange(n_c)
    colors = plt.get_cmap("tab10" if n_s <= 10 else "tab20")
    for k, ax in enumerate(axes[0]):
        for i, e in enumerate(study.schedulers):
            ax.bar(x + (i - (n_s - 1) / 2) * width, np.nan_to_num(means[i, k]), width, yerr=np.nan_to_num(cis[i, k]),
                   capsize=2, label=e.label, color=colors(i % colors.N))
        ax.set_xticks(x, list(study.ccs))
        ax.set_title(study.scenarios[k].name)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(f"{study.metric} (mean ± 95% CI)")
    axes[0][-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _heatmap(matrix: np.ndarray, rows: list[str], cols: list[str], xlabel: str, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(cols) + 2.5), max(2.5, 0.4 * len(rows) + 1.5)))
    shown = np.ma.masked_invalid(matrix)
    image = ax.imshow(shown, cmap="viridis", vmin=np.nanmin(matrix) if np.isfinite(matrix).any() else 0, vmax=1.0,
                      aspect="auto")
    ax.set_xticks(range(len(cols)), cols, fontsize="small")
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    if matrix.size <= 300:
        for (r, c), v in np.ndenumerate(matrix):
            ax.text(c, r, "n/a" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if np.isfinite(v) and v < np.nanmean(matrix) else "black")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def mlflow_metrics(study: Study, results: dict) -> dict[str, float]:
    """Cell means and per-scheduler robustness as MLflow metrics (keys in MLflow's character set)."""
    means, _ = cube(study, results, study.metric)
    summ = robustness.summary(means, study.higher_is_better)
    out = {}
    for i, e in enumerate(study.schedulers):
        for key in ("mean_score", "worst_score", "mean_regret", "max_regret", "mean_rank", "rank_range"):
            out[f"robustness/{e.label}/{key}"] = summ[key][i]
        for k, s in enumerate(study.scenarios):
            for c, cc in enumerate(study.ccs):
                out[f"cell/{s.name}/{cc}/{e.label}/{study.metric}"] = means[i, k, c]
    for (label, s, cc), r in results.items():
        if r.get("diagnostics") is not None:
            out.update(r["diagnostics"].metrics(f"diag/{s}/{cc}/{label}"))
    return {mlflow_key(k): float(v) for k, v in out.items() if np.isfinite(v)}
