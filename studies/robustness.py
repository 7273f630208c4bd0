"""Statistics of a study over its cells (scenario x CC): every array here is indexed
``[scheduler, scenario, cc]`` and holds the mean of the study's metric over the runs of that cell
(NaN where the scheduler could not run).

* **normalised score**: a cell's mean over the best scheduler's mean in that cell (for a metric
  where lower is better, best over mean), so the best scheduler scores 1 and the others less;
* **regret**: how far a scheduler is from the best one of the cell, in the metric's units (the
  quantity behind Savage's minimax-regret criterion, Savage 1951, JASA 46(253));
* **rank stability**: how much a scheduler's rank moves when only the CC changes. Per scenario,
  the CCs are treated as judges ranking the schedulers; Kendall's coefficient of concordance
  W = 12 S / (m^2 (n^3 - n) - m T) (Kendall & Babington Smith 1939, with the tie correction T =
  sum of (t^3 - t) over tied groups) is 1 when every CC ranks the schedulers alike and near 0 when
  the ranking under one CC says nothing about another. Per scheduler, the rank range is the largest
  (over scenarios) difference between its worst and best rank across CCs: 0 means the same rank
  under every CC.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import rankdata


def best(means: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """The best mean of each cell (over schedulers, NaNs ignored): shape ``means.shape[1:]``."""
    with warnings.catch_warnings():  # an all-NaN cell stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmax(means, axis=0) if higher_is_better else np.nanmin(means, axis=0)


def normalised(means: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Score in [0, 1] per scheduler and cell, 1 for the best scheduler of the cell."""
    top = best(means, higher_is_better)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = means / top if higher_is_better else top / means
    return np.where(means == top, 1.0, score)  # also 0/0 when every scheduler scored 0


def regret(means: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Distance to the cell's best scheduler in the metric's units (>= 0)."""
    top = best(means, higher_is_better)
    return top - means if higher_is_better else means - top


def ranks(means: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Rank of each scheduler within each cell, 1 = best, ties share their average rank; NaN
    (a scheduler that could not run) stays NaN and does not take a rank."""
    keyed = -means if higher_is_better else means
    return np.apply_along_axis(lambda col: rankdata(col, nan_policy="omit"), 0, keyed)


def kendall_w(rank_matrix: np.ndarray) -> float:
    """Kendall's W of ``rank_matrix[item, judge]`` (items ranked 1..n by each of m judges), with
    the tie correction; NaN when fewer than 2 items or judges."""
    r = np.asarray(rank_matrix, dtype=float)
    n, m = r.shape
    if n < 2 or m < 2 or np.isnan(r).any():
        return float("nan")
    totals = r.sum(axis=1)
    s = float(((totals - totals.mean()) ** 2).sum())
    ties = sum(float((c ** 3 - c).sum()) for c in (np.unique(r[:, j], return_counts=True)[1] for j in range(m)))
    denom = m ** 2 * (n ** 3 - n) - m * ties
    return s * 12 / denom if denom > 0 else 1.0


def rank_range(rank_cube: np.ndarray) -> np.ndarray:
    """Per scheduler: the largest (over scenarios) spread max - min of its ranks across CCs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.nanmax(rank_cube, axis=2) - np.nanmin(rank_cube, axis=2)
        return np.nanmax(spread, axis=1)


def summary(means: np.ndarray, higher_is_better: bool = True) -> dict[str, np.ndarray]:
    """Per scheduler (arrays of length n_schedulers): mean and worst normalised score over all
    cells, the mean normalised score under each CC (``per_cc``, [scheduler, cc], averaged over
    scenarios), mean and worst regret, mean rank and rank range; per scenario, Kendall's W
    across CCs (``kendall_w``)."""
    score = normalised(means, higher_is_better)
    reg = regret(means, higher_is_better)
    rk = ranks(means.reshape(means.shape[0], -1), higher_is_better).reshape(means.shape)
    flat = score.reshape(score.shape[0], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "mean_score": np.nanmean(flat, axis=1),
            "worst_score": np.nanmin(flat, axis=1),
            "worst_cell": np.array([int(np.nanargmin(row)) if np.isfinite(row).any() else -1 for row in flat]),
            "per_cc": np.nanmean(score, axis=1),
            "mean_regret": np.nanmean(reg.reshape(reg.shape[0], -1), axis=1),
            "max_regret": np.nanmax(reg.reshape(reg.shape[0], -1), axis=1),
            "mean_rank": np.nanmean(rk.reshape(rk.shape[0], -1), axis=1),
            "rank_range": rank_range(rk),
            "kendall_w": np.array([kendall_w(_complete(rk[:, k, :])) for k in range(means.shape[1])]),
        }


def _complete(rank_matrix: np.ndarray) -> np.ndarray:
    """The schedulers that ran under every CC of a scenario, ranked again among themselves (W
    needs complete rankings 1..n)."""
    kept = rank_matrix[~np.isnan(rank_matrix).any(axis=1)]
    return np.apply_along_axis(rankdata, 0, kept) if kept.size else kept
