"""Per-connection random streams for the compiled core (SplitMix64, Steele et al., OOPSLA 2014).

Each connection owns two 64-bit states, seeded from the run's seed and the connection's index,
so a connection's trajectory does not depend on which other connections share its batch:
the same seed gives the same numbers at B = 1 and at B = 1024. The array holds 2B states:
``rng[b]`` is the network's stream (random loss, jitter, which copies ACKs cancel, competing
flows' CCs) and ``rng[B + b]`` the sender's (its scheduler's and its CCs' own draws), so the sender's choices
never depend on how many draws the hidden network made (docs/transport.md: the scheduler sees
only what a real sender sees).
"""

from statistics import NormalDist

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0


@njit(inline="always", cache=True, _nrt=False)
def next_u64(rng: np.ndarray, b: int) -> np.uint64:
    z = rng[b] + _GOLDEN
    rng[b] = z
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always", cache=True, _nrt=False)
def uniform(rng: np.ndarray, b: int) -> float:
    """Uniform in [0, 1)."""
    return float(next_u64(rng, b) >> _S11) * _INV53


def _normal_quantiles(n: int) -> np.ndarray:
    """Standard normal quantiles at k/n, k = 0..n, for ``normal``'s linear interpolation. The two
    open-ended tail cells get the end value that gives them the tail's true conditional mean
    (E[X | X < q] = -pdf(q)/cdf(q)), so the draws keep mean 0 and standard deviation within
    1e-3 of 1 (tests/test_rng.py)."""
    dist = NormalDist()
    table = np.array([0.0] + [dist.inv_cdf(k / n) for k in range(1, n)] + [0.0])
    tail_mean = dist.pdf(table[1]) * n  # |E[X | X < q_1]|
    table[n] = 2.0 * tail_mean - table[n - 1]  # the cell's mean (ends averaged) is the tail's mean
    table[0] = -table[n]
    return table


_NQ = 4096
_QUANTILES = _normal_quantiles(_NQ)


@njit(inline="always", cache=True, _nrt=False)
def quantile(u: float) -> float:
    """The standard normal quantile at u in [0, 1), interpolated in a 4,097-entry table."""
    x = u * _NQ
    i = int(x)
    return _QUANTILES[i] + (x - i) * (_QUANTILES[i + 1] - _QUANTILES[i])


@njit(inline="always", cache=True, _nrt=False)
def normal(rng: np.ndarray, b: int) -> float:
    """Standard normal by inversion: one uniform, the quantile function interpolated in a
    4,097-entry table (a fifth of Box-Muller's cost, which dominated jittery paths' steps)."""
    return quantile(uniform(rng, b))


@njit(inline="always", cache=True, _nrt=False)
def quantile_min(u: float, k: float) -> float:
    """The least of ``k`` standard normals by inversion of a uniform u in its lower tail
    (P(min <= x) = 1 - (1 - Phi(x))^k, so min = quantile(1 - (1 - u)^(1/k))); the power's
    second-order series, within 2% of it for u <= 1/4, spares a libm call per draw."""
    return quantile(u / k * (1.0 + u * (k - 1.0) / (2.0 * k)))
