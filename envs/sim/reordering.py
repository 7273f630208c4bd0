"""Spurious loss declarations caused by reordering jitter, for each stack's loss detection.

With netem-style jitter every packet gets an independent delay ``N(0, sigma^2)``, so packets of
one path overtake each other when sigma exceeds their spacing. A sender declares a packet lost
although it was only late when its loss detection fires before the packet arrives
(docs/transport.md, "Stacks differ"). The fluid core moves packets in per-step segments, so it
cannot reorder them one by one; instead it draws, per packet, whether it would be declared
lost, with the probability tabulated here as a function of two ratios to sigma: the packet
spacing ``r`` and the detection's time window ``w``. Two rules (``RULES``):

- ``rfc9002`` (XQUIC): lost when ``k`` later packets arrived first (packet threshold,
  RFC 9002 sec. 6.1.1, kPacketThreshold = 3), or when one later packet arrived first and the
  packet is more than ``w`` late (time threshold, sec. 6.1.2: 9/8 of the RTT, so ``w`` is the
  RTT/8 a packet may lag its expected arrival).
- ``rack`` (Linux RACK, RFC 8985 sec. 6.2): lost when a packet sent after it arrived and it is
  more than ``w`` (the reordering window, ``reo_wnd``) later than that packet; a packet ``j``
  later is waited for at least its own spacing ``j r`` (its ACK cannot come earlier).

Conditional on the packet's own delay ``x``, the ``j``-th later packet overtakes it with
probability ``Phi(x - j r)`` (by more than ``w``: ``Phi(x - max(j r, w))``), independently; the
probability is integrated over ``x`` on a fine grid.
"""

from pathlib import Path

import numpy as np
from scipy.special import log_ndtr, ndtr

RULES = ("rfc9002", "rack")
PACKET_THRESHOLD = 3  # RFC 9002 kPacketThreshold (XQUIC xqc_send_ctl.h XQC_kPacketThreshold)
GRID = np.logspace(-3.0, 2.0, 201)  # r = packet spacing / jitter standard deviation
W_GRID = np.linspace(0.0, 16.0, 65)  # w = detection time window / jitter standard deviation
_X = np.linspace(-9.0, 9.0, 1441)  # the packet's own delay, in standard deviations
_PDF = np.exp(-_X ** 2 / 2.0) / np.sqrt(2.0 * np.pi) * (_X[1] - _X[0])
_MAX_TERMS = 20000


def _later(r: float) -> np.ndarray:
    """(x, j) offsets ``x - j r`` of the later packets that can overtake (j = 1 .. J)."""
    n_terms = int(min(_MAX_TERMS, np.ceil(18.0 / r)))
    return _X[:, None] - r * np.arange(1, n_terms + 1)[None, :]


def rfc9002_row(r: float, k: int = PACKET_THRESHOLD) -> np.ndarray:
    """P(declared lost) at spacing r for every w of ``W_GRID`` under the RFC 9002 rule."""
    z = _later(r)
    p = ndtr(z)
    # P(no later packet overtakes | x), and P(at least k overtake | x) (Poisson-binomial)
    none = np.exp(log_ndtr(-z).sum(axis=1))
    dist = np.zeros((_X.size, k + 1))
    dist[:, 0] = 1.0
    for j in range(p.shape[1]):
        pj = p[:, j]
        if pj.max() < 1e-15:
            break
        tail = dist[:, k] + dist[:, k - 1] * pj
        dist[:, 1:k] = dist[:, 1:k] * (1 - pj[:, None]) + dist[:, 0:k - 1] * pj[:, None]
        dist[:, 0] *= 1 - pj
        dist[:, k] = tail
    some = 1.0 - none
    return np.array([np.sum(_PDF * np.where(_X > w, some, dist[:, k])) for w in W_GRID])


def rack_row(r: float) -> np.ndarray:
    """P(declared lost) at spacing r for every reordering window w of ``W_GRID`` (RACK)."""
    z = _later(r)
    logs = log_ndtr(-z)  # log P(the j-th later packet does not overtake by its own spacing)
    suffix = np.concatenate([np.cumsum(logs[:, ::-1], axis=1)[:, ::-1], np.zeros((_X.size, 1))], axis=1)
    out = []
    for w in W_GRID:
        n_w = min(int(np.floor(w / r)), logs.shape[1])  # later packets whose spacing is below w
        log_none = n_w * log_ndtr(-(_X - w)) + suffix[:, n_w]
        out.append(np.sum(_PDF * (1.0 - np.exp(log_none))))
    return np.array(out)


def table_file(rule: str) -> Path:
    return Path(__file__).with_name(f"spurious_{rule}.npy")


def build_table(rule: str) -> np.ndarray:
    """Probabilities on ``W_GRID`` x ``GRID`` (seconds; shipped as ``spurious_<rule>.npy``,
    regenerate with ``python -m envs.sim.reordering``)."""
    row = rfc9002_row if rule == "rfc9002" else rack_row
    return np.ascontiguousarray(np.clip(np.array([row(r) for r in GRID]).T, 0.0, 1.0))


def spurious_table(rule: str) -> np.ndarray:
    return np.load(table_file(rule))


if __name__ == "__main__":
    for name in RULES:
        np.save(table_file(name), build_table(name))
