"""The compiled core's random streams (envs/sim/rng.py)."""

import numpy as np
from numba import njit
from scipy import stats

from envs.sim.rng import normal, uniform


@njit(cache=True)
def _draws(kind: int, n: int, seed: int) -> np.ndarray:
    state = np.array([np.uint64(seed)])
    out = np.empty(n)
    for k in range(n):
        out[k] = normal(state, 0) if kind else uniform(state, 0)
    return out


def test_uniform_is_uniform():
    x = _draws(0, 200_000, 7)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert stats.kstest(x, "uniform").pvalue > 1e-3


def test_table_normal_matches_the_standard_normal():
    """Mean 0 and standard deviation 1 within 1e-3, two-sided 2- and 3-sigma tails within 3% of
    the true mass, and Kolmogorov-Smirnov distance to N(0, 1) below 1e-3 over 4 million draws."""
    x = _draws(1, 4_000_000, 11)
    assert abs(x.mean()) < 1e-3 and abs(x.std() - 1.0) < 1e-3
    for k in (2.0, 3.0):
        true = 2.0 * stats.norm.sf(k)
        assert abs((np.abs(x) > k).mean() / true - 1.0) < 0.03, k
    assert stats.kstest(x, "norm").statistic < 1e-3


def test_same_state_same_draws():
    assert np.array_equal(_draws(1, 1000, 3), _draws(1, 1000, 3))
    assert not np.array_equal(_draws(1, 1000, 3), _draws(1, 1000, 4))
