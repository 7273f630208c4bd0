"""Spurious loss declarations caused by reordering jitter.

With netem-style jitter every packet gets an independent delay ``N(0, sigma^2)``, so packets of
one path overtake each other when sigma exceeds their spacing. A sender using QUIC's packet
threshold (RFC 9002, kPacketThreshold = 3) or TCP's three duplicate ACKs declares a packet lost
when 3 packets sent after it arrive first, although it was only late (docs/transport.md,
"Connection level"). The fluid core moves packets in per-step segments, so it cannot reorder
them one by one; instead it draws, per packet, whether it would be declared lost, with the
probability computed here as a function of ``r = spacing / sigma`` only.
"""

from pathlib import Path

import numpy as np
from scipy.special import ndtr

PACKET_THRESHOLD = 3
GRID = np.logspace(-3.0, 2.0, 201)  # r = packet spacing / jitter standard deviation


def spurious_loss_probability(r: float, k: int = PACKET_THRESHOLD) -> float:
    """P(at least k later packets overtake a packet) for iid N(0, 1) delays and spacing r.

    Conditional on the packet's own delay x, the j-th later packet overtakes it with
    probability Phi(x - j r) independently; the count is Poisson-binomial. Integrated over x by
    Gauss-Hermite quadrature.
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    total = 0.0
    for x, w in zip(nodes, weights):
        n_terms = int(min(20000, np.ceil((x + 9.0) / r))) if x + 9.0 > 0 else 0
        if n_terms <= 0:
            continue
        p = ndtr(x - r * np.arange(1, n_terms + 1))
        dist = np.zeros(k + 1)  # P(count = 0..k-1), and mass at >= k in the last cell
        dist[0] = 1.0
        for pj in p:
            if pj < 1e-15 or dist[:k].sum() < 1e-15:
                break
            tail = dist[k] + dist[k - 1] * pj
            dist[1:k] = dist[1:k] * (1 - pj) + dist[0:k - 1] * pj
            dist[0] *= 1 - pj
            dist[k] = tail
        total += w * dist[k]
    return float(total)


TABLE_FILE = Path(__file__).with_name("spurious_table.npy")


def build_table() -> np.ndarray:
    """Probabilities on ``GRID`` (several seconds; the result ships as ``spurious_table.npy``,
    regenerate with ``python -m envs.sim.reordering``)."""
    return np.array([spurious_loss_probability(r) for r in GRID])


def spurious_table() -> np.ndarray:
    return np.load(TABLE_FILE)


if __name__ == "__main__":
    np.save(TABLE_FILE, build_table())
