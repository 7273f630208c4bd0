"""Spurious loss declarations caused by reordering jitter, for each stack's loss detection.

With netem-style jitter every packet gets an independent delay ``N(0, sigma^2)``, so packets of
one path overtake each other when sigma exceeds their spacing. A sender declares a packet lost
although it was only late when its loss detection fires before the packet arrives
(docs/transport.md, "Stacks differ"). The fluid core moves packets in per-step segments, so it
cannot reorder them one by one; instead it draws, per packet, whether it would be declared
lost, with the probability tabulated here as a function of two ratios to sigma: the packet
spacing ``r`` and the detection's time window ``w``. Two rules (``RULES``):

- ``rfc9002`` (XQUIC): lost when ``k`` later packets arrived first (packet threshold,
  RFC 9002 sec. 6.1.1, kPacketThreshold = 3; XQUIC's source declares when one packet ``k`` or more
  later is acknowledged, which is more often: docs/transport.md, "Reordering"), or when one later packet arrived first and the
  packet is more than ``w`` late (time threshold, sec. 6.1.2: 9/8 of the RTT, so ``w`` is the
  RTT/8 a packet may lag its expected arrival).
- ``rack`` (Linux RACK, RFC 8985 sec. 6.2): lost when a packet sent after it arrived and it is
  more than ``w`` (the reordering window, ``reo_wnd``) later than that packet; a packet ``j``
  later is waited for at least its own spacing ``j r`` (its ACK cannot come earlier).

Conditional on the packet's own delay ``x``, the ``j``-th later packet overtakes it with
probability ``Phi(x - j r)`` (by more than ``w``: ``Phi(x - max(j r, w))``), independently; the
probability is integrated over ``x`` on a fine grid.

Two spacings (``spurious_table`` and ``train_table``):

- evenly spaced packets, an endless stream at spacing ``r``: a paced sender's;
- trains: a sender that does not pace releases what each ACK frees at once, so its packets cross
  the bottleneck back to back (``r`` is the bottleneck's per-packet time) in one train per round
  trip, as long as its window (ACK clocking; Jacobson 1988). A packet then has only the later
  packets of its own train to be overtaken by (the next train is a round trip behind): the
  probability is averaged over the positions of a train of ``n`` packets, ``n`` on ``TRAIN_GRID``.

Beside each probability, the mean lead of a declaration (``lead_table``, ``lead_train_table``), in
the same units: ``E[x - D | declared]``, how long before the packet's ACK the rule declares it
(at ``D``). A sender that drops a queued copy whose original is acknowledged before the copy
leaves (XQUIC ``xqc_send_ctl_indirectly_ack_or_drop_po``; Linux skips a SACKed segment in
``tcp_xmit_retransmit_queue``) has the lead to send the copy. ``D`` depends on the later packets
only, so with ``F`` its distribution function (the rows integrate ``F(x)``, the probability of a
declaration by time x) ``E[(x - D)+ | x]`` is the integral of ``F`` up to ``x``.

And the probability that a copy sent for a spurious declaration is acknowledged indirectly
(``indirect_table``): XQUIC counts a packet as delivered (its rate sample, its CC's acknowledged
bytes) only when an ACK names it; once its original is acknowledged, a copy that a later packet's
ACK overtakes first leaves loss detection as acknowledged without either
(``xqc_send_ctl_indirectly_ack_or_drop_po``), which is the rule above with k = 1. Linux counts the
SACKed segment once and the copy's arrival is a DSACK: every copy is acknowledged indirectly.
"""

from pathlib import Path

import numpy as np
from scipy.special import log_ndtr, ndtr

RULES = ("rfc9002", "rack")
DETECTION_BLOCKS = 5  # the blocks of detection_tables
PACKET_THRESHOLD = 3  # RFC 9002 kPacketThreshold (XQUIC xqc_send_ctl.h XQC_kPacketThreshold)
GRID = np.logspace(-3.0, 2.0, 201)  # r = packet spacing / jitter standard deviation
W_GRID = np.linspace(0.0, 16.0, 65)  # w = detection time window / jitter standard deviation
_X = np.linspace(-9.0, 9.0, 1441)  # the packet's own delay, in standard deviations
_PDF = np.exp(-_X ** 2 / 2.0) / np.sqrt(2.0 * np.pi) * (_X[1] - _X[0])
_MAX_TERMS = 20000
TRAINS_PER_OCTAVE = 2
TRAIN_GRID = 2.0 ** (np.arange(21) / TRAINS_PER_OCTAVE)  # n = packets in a train, 1 .. 1024
_W_INDEX = np.searchsorted(_X, W_GRID, side="right")  # x > w from this index of _X on
# weights of F on _X giving P(declared) and E[(x - D)+], the latter as
# sum over x of pdf(x) * sum over t <= x of F(t) dt = sum over t of F(t) * dt * P(x >= t)
_WEIGHTS = np.stack([_PDF, np.cumsum(_PDF[::-1])[::-1] * (_X[1] - _X[0])])


def _prob_and_lead(sums: np.ndarray) -> np.ndarray:
    """(probability, mean lead per declared packet) from the weighted sums of ``_WEIGHTS`` (axis
    0); the lead is 0 where no packet is declared."""
    prob = sums[0]
    return np.array([prob, np.where(prob > 1e-12, sums[1] / np.maximum(prob, 1e-300), 0.0)])


def _later(r: float) -> np.ndarray:
    """(x, j) offsets ``x - j r`` of the later packets that can overtake (j = 1 .. J)."""
    n_terms = int(min(_MAX_TERMS, np.ceil(18.0 / r)))
    return _X[:, None] - r * np.arange(1, n_terms + 1)[None, :]


def rfc9002_row(r: float, k: int = PACKET_THRESHOLD) -> np.ndarray:
    """P(declared lost) at spacing r for every w of ``W_GRID`` under the RFC 9002 rule, and the
    mean lead of a declaration (shape 2 x W)."""
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
    return _prob_and_lead(_WEIGHTS @ np.where(_X[:, None] > W_GRID[None, :], some[:, None], dist[:, k:k + 1]))


def rack_row(r: float) -> np.ndarray:
    """P(declared lost) at spacing r for every reordering window w of ``W_GRID`` (RACK), and the
    mean lead of a declaration (shape 2 x W)."""
    z = _later(r)
    logs = log_ndtr(-z)  # log P(the j-th later packet does not overtake by its own spacing)
    suffix = np.concatenate([np.cumsum(logs[:, ::-1], axis=1)[:, ::-1], np.zeros((_X.size, 1))], axis=1)
    out = []
    for w in W_GRID:
        n_w = min(int(np.floor(w / r)), logs.shape[1])  # later packets whose spacing is below w
        log_none = n_w * log_ndtr(-(_X - w)) + suffix[:, n_w]
        out.append(1.0 - np.exp(log_none))
    return _prob_and_lead(_WEIGHTS @ np.array(out).T)


def _train_average(per_m: np.ndarray) -> np.ndarray:
    """P(declared) of a train of n packets for every n of ``TRAIN_GRID`` (rows: w), from
    ``per_m[w, m]``, the probability of a packet with m later packets in its train: the mean over
    the train's positions, linear between whole train lengths (so for each weighted sum)."""
    whole = np.cumsum(per_m, axis=-1) / np.arange(1, per_m.shape[-1] + 1)  # n = 1 .. N
    n = np.arange(1, per_m.shape[-1] + 1)
    return np.apply_along_axis(lambda row: np.interp(TRAIN_GRID, n, row), -1, whole)


def rfc9002_train_row(r: float, k: int = PACKET_THRESHOLD) -> np.ndarray:
    """P(declared lost) at spacing r, for every w of ``W_GRID`` and train length of
    ``TRAIN_GRID``, under the RFC 9002 rule, and the mean lead of a declaration (shape 2 x W x N)."""
    n_max = int(TRAIN_GRID[-1])
    per_m = np.zeros((len(_WEIGHTS), W_GRID.size, n_max))  # the weighted sums of a packet with m later packets
    dist = np.zeros((_X.size, k + 1))
    dist[:, 0] = 1.0
    for m in range(n_max):  # m later packets in the train: the first m of the stream
        if m > 0:
            pj = ndtr(_X - r * m)
            if pj.max() < 1e-15:
                per_m[..., m:] = per_m[..., m - 1:m]
                break
            tail = dist[:, k] + dist[:, k - 1] * pj
            dist[:, 1:k] = dist[:, 1:k] * (1 - pj[:, None]) + dist[:, 0:k - 1] * pj[:, None]
            dist[:, 0] *= 1 - pj
            dist[:, k] = tail
        # x > w: one overtaking packet suffices; else k of them
        for i, weight in enumerate(_WEIGHTS):
            some = np.concatenate([[0.0], np.cumsum((weight * (1.0 - dist[:, 0]))[::-1])])[::-1]
            most = np.concatenate([[0.0], np.cumsum(weight * dist[:, k])])
            per_m[i, :, m] = some[_W_INDEX] + most[_W_INDEX]
    return _prob_and_lead(_train_average(per_m))


def rack_train_row(r: float) -> np.ndarray:
    """P(declared lost) at spacing r, for every reordering window w of ``W_GRID`` and train
    length of ``TRAIN_GRID``, under RACK, and the mean lead of a declaration (shape 2 x W x N)."""
    n_max = int(TRAIN_GRID[-1])
    per_m = np.zeros((len(_WEIGHTS), W_GRID.size, n_max))
    by_window = log_ndtr(-(_X[:, None] - W_GRID[None, :]))  # a later packet within w: must lead by w
    log_none = np.zeros((_X.size, W_GRID.size))
    for m in range(1, n_max):
        own = log_ndtr(-(_X - r * m))
        if own.max() > -1e-15 and r * m > W_GRID[-1]:
            per_m[..., m:] = per_m[..., m - 1:m]
            break
        log_none += np.where(r * m > W_GRID[None, :], own[:, None], by_window)
        per_m[:, :, m] = _WEIGHTS @ (1.0 - np.exp(log_none))
    return _prob_and_lead(_train_average(per_m))


def build_indirect_table() -> np.ndarray:
    """P(a later packet is acknowledged first) under XQUIC's rule, on ``GRID``: row 0 the evenly
    spaced stream, rows 1 .. N the trains of ``TRAIN_GRID`` (shipped as ``indirect_rfc9002.npy``,
    single precision)."""
    even = np.array([rfc9002_row(r, 1)[0, 0] for r in GRID])
    trains = np.array([rfc9002_train_row(r, 1)[0, 0, :] for r in GRID]).T  # N x R
    return np.ascontiguousarray(np.clip(np.concatenate([even[None], trains]), 0.0, 1.0).astype(np.float32))


def indirect_table(rule: str) -> np.ndarray:
    """(1 + N) x R: the probability that a copy of a spurious declaration is acknowledged
    indirectly, so not counted as delivered (module docstring): XQUIC's by the later packets, 1
    for Linux."""
    if rule == "rack":
        return np.ones((1 + TRAIN_GRID.size, GRID.size))
    return np.load(table_file(rule, "indirect")).astype(np.float64)


def table_file(rule: str, kind: str = "spurious") -> Path:
    return Path(__file__).with_name(f"{kind}_{rule}.npy")


def build_tables(rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and mean leads on ``W_GRID`` x ``GRID`` (shipped as ``spurious_<rule>.npy``
    and ``lead_<rule>.npy``, regenerate with ``python -m envs.sim.reordering``)."""
    row = rfc9002_row if rule == "rfc9002" else rack_row
    table = np.array([row(r) for r in GRID])  # R x 2 x W
    return np.ascontiguousarray(np.clip(table[:, 0].T, 0.0, 1.0)), np.ascontiguousarray(table[:, 1].T)


def build_train_tables(rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and mean leads on ``TRAIN_GRID`` x ``W_GRID`` x ``GRID`` (shipped as
    ``train_<rule>.npy`` and ``lead_train_<rule>.npy`` in single precision)."""
    row = rfc9002_train_row if rule == "rfc9002" else rack_train_row
    table = np.array([row(r) for r in GRID]).transpose(1, 3, 2, 0)  # 2 x N x W x R
    return (np.ascontiguousarray(np.clip(table[0], 0.0, 1.0).astype(np.float32)),
            np.ascontiguousarray(table[1].astype(np.float32)))


def spurious_table(rule: str) -> np.ndarray:
    return np.load(table_file(rule))


def train_table(rule: str) -> np.ndarray:
    return np.load(table_file(rule, "train")).astype(np.float64)


def lead_table(rule: str) -> np.ndarray:
    return np.load(table_file(rule, "lead"))


def lead_train_table(rule: str) -> np.ndarray:
    return np.load(table_file(rule, "lead_train")).astype(np.float64)


def rtt_sample_table(rule: str) -> np.ndarray:
    """2 x (1 + N) x R: the mean and spread of the RTT samples the rule's stack takes over the
    path's mean round trip, in jitters of a round trip: XQUIC's, from the newly acknowledged
    largest packet only (``envs/sim/ack_loop.py`` build_rtt_sample_table); none for Linux, whose
    core samples are the segments' own (stacks.StackProfile.rtt_from_largest)."""
    if rule == "rack":
        return np.zeros((2, 1 + TRAIN_GRID.size, GRID.size))
    return np.load(table_file(rule, "rtt_sample")).astype(np.float64)


def detection_tables(rule: str) -> np.ndarray:
    """What the core reads (``kernel.Constants.spur_prob``): five blocks of N + 1 slices, the
    probabilities, the mean leads, the probabilities that a copy is acknowledged indirectly, and
    the mean and spread of the stack's RTT samples (the last three the same for every window); in
    each, slice 0 the evenly spaced table and slices 1 .. N the trains of ``TRAIN_GRID``."""
    shape = (1 + TRAIN_GRID.size, W_GRID.size, GRID.size)
    indirect = np.broadcast_to(indirect_table(rule)[:, None, :], shape)
    samples = [np.broadcast_to(block[:, None, :], shape) for block in rtt_sample_table(rule)]
    return np.ascontiguousarray(np.concatenate([spurious_table(rule)[None], train_table(rule),
                                                lead_table(rule)[None], lead_train_table(rule), indirect, *samples]))


if __name__ == "__main__":
    np.save(table_file("rfc9002", "indirect"), build_indirect_table())
    for name in RULES:
        prob, lead = build_tables(name)
        np.save(table_file(name), prob)
        np.save(table_file(name, "lead"), lead)
        prob, lead = build_train_tables(name)
        np.save(table_file(name, "train"), prob)
        np.save(table_file(name, "lead_train"), lead)
