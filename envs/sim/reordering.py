"""Spurious loss declarations caused by reordering jitter, for each stack's loss detection.

With netem-style jitter every packet gets an independent delay ``N(0, sigma^2)``, so packets of
one path overtake each other when sigma exceeds their spacing. A sender declares a packet lost
although it was only late when its loss detection fires before the packet arrives
(docs/transport.md, "Stacks differ"). The fluid core moves packets in per-step segments, so it
cannot reorder them one by one; instead it draws, per packet, whether it would be declared
lost, with a probability tabulated as a function of two ratios to the round trip's jitter: the
packet spacing ``r`` and the detection's time window ``w``. Two rules (``RULES``):

- ``rfc9002`` (XQUIC, ``xqc_send_ctl.c`` ``xqc_send_ctl_detect_lost``): lost once a packet sent 3
  or more after it is acknowledged (packet threshold, RFC 9002 sec. 6.1.1, kPacketThreshold = 3),
  or once a later packet is acknowledged and it is more than ``w`` late (time threshold, sec.
  6.1.2: 9/8 of the larger of srtt and the latest RTT sample, ``w`` what that leaves beyond the
  packet's expected round trip: ``recovery.reorder_window``).
- ``rack`` (Linux RACK, RFC 8985 sec. 6.2): lost when a packet sent after it is acknowledged and
  it is more than ``w`` (the reordering window, ``reo_wnd``) later than that packet.

The tables are the whole ACK loop's, packet by packet (``envs/sim/ack_loop.py``, regenerated with
``python -m envs.sim.ack_loop``): each packet and each ACK its own jitter, the stack's receiver
(XQUIC an ACK every second packet and at once for one below the largest received; Linux at once
for one out of order), the sender learning of an arrival from the first ACK covering it. An ACK
covers every packet received before it left, so the way back cannot show the sender an order
the receiver did not see. ``rfc9002_row`` and ``rack_row`` below integrate the loop's one
simplification, the sender seeing each arrival as it happens (one ACK per packet, no jitter
back; the packet threshold read as 3 later packets arrived first): the loop reduces to them
(``tests/test_ack_loop.py``), and at the stacks' own receivers declares fewer
(docs/transport.md, "Reordering").

Two spacings (``spurious_table`` and ``train_table``), the rows of each table:

- evenly spaced packets, an endless stream at spacing ``r``: a paced sender's;
- trains: a sender that does not pace releases what each ACK frees at once, so its packets cross
  the bottleneck back to back (``r`` is the bottleneck's per-packet time) in one train per round
  trip, as long as its window (ACK clocking; Jacobson 1988), ``n`` packets on ``TRAIN_GRID``.

Beside each probability, the mean lead of a declaration (``lead_table``, ``lead_train_table``), in
the same units: how long before the sender learns of the packet's arrival the rule declares it.
A sender that drops a queued copy whose original is acknowledged before the copy leaves (XQUIC
``xqc_send_ctl_indirectly_ack_or_drop_po``; Linux skips a SACKed segment in
``tcp_xmit_retransmit_queue``) has the lead to send the copy.

And the probability that a copy sent for a spurious declaration is acknowledged indirectly
(``indirect_table``): XQUIC counts a packet as delivered (its rate sample, its CC's acknowledged
bytes) only when an ACK names it; once its original is acknowledged, its loss detection drops the
copy as acknowledged without either as soon as it reaches it, once the packet sent just before
the copy or any after it is acknowledged (``ack_loop.acknowledged_indirectly``). Linux counts the
SACKed segment once and the copy's arrival is a DSACK: every copy is acknowledged indirectly.

And, for kernel MPTCP, whose ACKs name one SACK block, the share of packets that no ACK names
while a real loss's hole holds the cumulative ACK, which RACK declares besides (``hidden_table``,
``ack_loop.hidden_row``; docs/transport.md, "One SACK block per ACK").
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
COMP_GRID = np.logspace(-2.0, 2.0, 9)  # c = a receiver's ACK compression delay / jitter (hidden_table)
RTT_GRID = 2.0 ** np.arange(2.0, 7.5, 0.5)  # a path's mean round trip / jitter, 4 .. 128 (rate_sample_table)
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


def rfc9002_row(r: float) -> np.ndarray:
    """P(declared lost) at spacing r for every w of ``W_GRID`` under the RFC 9002 rule read as
    ``PACKET_THRESHOLD`` later packets arriving first, and the mean lead of a declaration (shape 2 x W), for a
    sender that sees each arrival as it happens (the loop's reference, module docstring):
    conditional on the packet's own delay ``x``, the ``j``-th later packet overtakes it with
    probability ``Phi(x - j r)``, independently, integrated over ``x`` on a fine grid."""
    z = _later(r)
    p = ndtr(z)
    # P(no later packet overtakes | x), and P(at least k overtake | x) (Poisson-binomial)
    none = np.exp(log_ndtr(-z).sum(axis=1))
    k = PACKET_THRESHOLD
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
    mean lead of a declaration (shape 2 x W), for a sender that sees each arrival as it happens:
    a packet ``j`` later overtakes by more than ``w`` with probability ``Phi(x - max(j r, w))``
    (its ACK cannot come before its own spacing)."""
    z = _later(r)
    logs = log_ndtr(-z)  # log P(the j-th later packet does not overtake by its own spacing)
    suffix = np.concatenate([np.cumsum(logs[:, ::-1], axis=1)[:, ::-1], np.zeros((_X.size, 1))], axis=1)
    out = []
    for w in W_GRID:
        n_w = min(int(np.floor(w / r)), logs.shape[1])  # later packets whose spacing is below w
        log_none = n_w * log_ndtr(-(_X - w)) + suffix[:, n_w]
        out.append(1.0 - np.exp(log_none))
    return _prob_and_lead(_WEIGHTS @ np.array(out).T)


def indirect_table(rule: str) -> np.ndarray:
    """(1 + N) x R: the probability that a copy of a spurious declaration is acknowledged
    indirectly, so not counted as delivered (module docstring): XQUIC's
    (``ack_loop.acknowledged_indirectly``), 1 for Linux."""
    if rule == "rack":
        return np.ones((1 + TRAIN_GRID.size, GRID.size))
    return np.load(table_file(rule, "indirect")).astype(np.float64)


def table_file(rule: str, kind: str = "spurious") -> Path:
    return Path(__file__).with_name(f"{kind}_{rule}.npy")


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


def rate_sample_table(rule: str) -> np.ndarray:
    """2 x T x R: the delivery-rate samples of an evenly paced stream under the rule's stack, their
    mean shortfall below the stream's rate and their spread, relative to it and multiplied by the
    round trip over its jitter ``RTT_GRID``, at spacing / jitter ``GRID`` (``envs/sim/ack_loop.py``
    build_rate_sample_table; docs/transport.md, "Delivery-rate samples")."""
    return np.load(table_file(rule, "rate_sample")).astype(np.float64)


def hidden_table() -> np.ndarray:
    """C x W x R: the share of packets kernel MPTCP's one SACK block makes RACK declare while a
    real loss's hole persists, beyond what ``spurious_table("rack")`` declares, at ACK
    compression / jitter ``COMP_GRID``, window / jitter ``W_GRID`` and spacing / jitter ``GRID``
    (``ack_loop.hidden_row``)."""
    return np.load(table_file("rack", "hidden")).astype(np.float64)


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

