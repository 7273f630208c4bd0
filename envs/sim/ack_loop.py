"""Spurious loss declarations packet by packet: a Monte Carlo of the whole loop, whose shares are
the reordering tables the core reads (``envs/sim/reordering.py``; docs/transport.md,
"Reordering"). Regenerate every table with ``python -m envs.sim.ack_loop`` (``write_tables``).

``reordering.rfc9002_row`` and ``rack_row`` integrate one simplification of the loop: every
packet's arrival seen by the sender through one ACK of its own, so the round trip's jitter
(sqrt(2) x one direction's) decides the order the sender sees. The loop follows every packet
and every ACK:

- the data cross the forward path, each with its own jitter ``N(0, 1)`` (units: one direction's
  jitter), at the send times of a ``SendPattern`` (an evenly spaced stream, or bursts);
- the receiver acknowledges by its stack's policy (``RECEIVERS``): every second packet, and at
  once on a sign of reordering. XQUIC (``xqc_recv_record.c`` ``xqc_maybe_should_ack``,
  ``ack_frequency`` 2 in ``xqc_conn.c``): at once when a packet arrives below the largest received
  (``out_of_order`` in ``xqc_conn.c``). Linux (``tcp_input.c`` ``tcp_data_queue`` and
  ``__tcp_ack_snd_check``): at once on a packet out of order or one that fills a gap in the
  out-of-order queue (RFC 5681 sec. 4.2);
- each ACK crosses the reverse path with its own jitter and covers every packet received before
  it was sent (QUIC's ACK ranges, RFC 9000 sec. 19.3; SACK's limit of 3-4 blocks is not
  followed). The sender learns of an arrival from the first ACK to come back that covers it, so
  the way back cannot show the sender an order the receiver did not see (an ACK overtaken by a
  later one covers nothing new); its jitter hides reordering instead (the later ACK covers the
  late packet too), while stretching the gaps a time window measures;
- the sender's rule (``RULES``):

  - ``xquic``: ``xqc_send_ctl.c`` ``xqc_send_ctl_detect_lost``, lost once a packet sent 3 or
    more after it is acknowledged (``xqc_send_ctl_get_lost_sent_pn``: largest acked -
    ``XQC_kPacketThreshold``; RFC 9002 sec. 6.1.1), or once a later packet is acknowledged and
    the packet is more than ``w`` later than the mean (the time threshold, sec. 6.1.2);
  - ``three_later``: the integral's reading, lost once 3 packets sent after it are
    acknowledged (or by the same time threshold);
  - ``rack``: Linux RACK (RFC 8985 sec. 6.2; ``tcp_recovery.c`` ``tcp_rack_detect_loss``), lost
    when a packet sent ``g`` after it is acknowledged and ``w - g`` more has passed.

``declarations`` gives, per window ``w`` of ``reordering.W_GRID``, the share of packets declared
lost and the mean lead of a declaration over the sender learning of the packet's arrival;
``detection_row`` the same for a rule of the core's (``TABLE_RULES``: its sender rule and
receiver) in the core's units, and ``indirect_row`` the share of copies of spurious declarations
XQUIC acknowledges without counting them (``acknowledged_indirectly``).

While a real loss leaves a hole, kernel MPTCP's receiver names one SACK block per ACK and
compresses its ACKs (``one_block_seen``; docs/transport.md, "One SACK block per ACK"): a packet
that arrives late below a later loss's hole lands in a block no ACK may name before the hole is
repaired, and RACK declares it lost whatever its window. ``hidden_row`` gives the share of packets
so declared while a hole persists that the stack's own loop above would not declare
(``reordering.hidden_table``).

The same loop gives the RTT samples XQUIC takes (``largest_acked_samples``): only from an ACK
whose largest packet is newly acknowledged (RFC 9002 sec. 5.1), so under reordering mostly from
packets and ACKs that overtook others, early ones: its srtt sits below the path's mean round
trip. ``rtt_sample_table`` tabulates their mean and spread for the core (docs/transport.md,
"Reordering").

And every ACK's delivery-rate sample (``rate_samples``; draft-cheng-iccrg-delivery-rate-
estimation, XQUIC ``xqc_sample.c``, Linux ``tcp_rate.c``): the packets acknowledged since the
newest acknowledged packet left, over the longer of its ACK and send intervals. Under jitter each
sample's two ends fall on single packets and ACKs, so the samples of a steady stream scatter
around its rate, and BBR's max filter keeps their top. ``rate_sample_row`` tabulates their mean
shortfall and spread for the core (``reordering.rate_sample_table``; docs/transport.md,
"Delivery-rate samples").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from envs.sim.reordering import COMP_GRID, GRID, PACKET_THRESHOLD, RTT_GRID, TRAIN_GRID, W_GRID, table_file

RULES = ("xquic", "three_later", "rack")
# the receiver each stack runs: 0 = ACK at once on a packet below the largest received (XQUIC),
# 1 = ACK at once on a packet out of order or into a gap (Linux)
RECEIVERS = {"xquic": 0, "linux": 1}
ACK_FREQUENCY = 2  # packets per ACK without reordering: XQUIC xqc_conn.c ack_frequency, Linux's delayed ACK (RFC 1122)
STREAM_PACKETS = 20000  # packets counted of a stream (beside its edges), at least
STREAM_SPAN = 400.0  # jitters of sending time counted, at least (a close stream's declarations come in clusters)
EDGE = 10.0  # jitters at either end of a pattern left out (their packets miss earlier or later ones)
RATE_ROUND_TRIPS = 34.0  # round trips of a stream rate_sample_row sends, at least
RATE_WARMUP = 4.0  # ... of which the first ones' ACKs are left out (their intervals reach before the stream)
RATE_PACKETS = 300000  # ... in at most this many packets
# the loop's sender rule and receiver behind each rule of the core's tables (reordering.RULES)
TABLE_RULES = {"rfc9002": ("xquic", "xquic"), "rack": ("rack", "linux")}
_TRAINS = np.concatenate([[-1.0], TRAIN_GRID])  # the tables' rows: the evenly spaced stream, then the trains
# kernel MPTCP's receiver while a hole persists (one_block_seen)
TCP_NUM_SACKS = 4  # include/net/tcp.h: the SACK blocks a receiver keeps
TCP_SACK_BLOCKS_EXPECTED = 2  # net/ipv4/tcp_input.c: the blocks an ACK is taken to carry (tcp_sack_new_ofo_skb)
TCP_FASTRETRANS_THRESH = 3  # include/net/tcp.h: duplicate ACKs sent at once before compression (__tcp_ack_snd_check)
TCP_COMP_SACK_NR = 44  # net.ipv4.tcp_comp_sack_nr's default: arrivals one compressed ACK may stand for


@dataclass(frozen=True)
class SendPattern:
    """When each packet leaves (in jitters, in sending order), and which packets are counted."""

    send: np.ndarray
    counted: np.ndarray


def stream(r: float) -> SendPattern:
    """An endless, evenly spaced stream at spacing ``r`` (a paced sender)."""
    return bursts(1, r, r)


def bursts(k: int, r_burst: float, r_mean: float) -> SendPattern:
    """Bursts of ``k`` packets ``r_burst`` apart (back to back at a bottleneck), one burst every
    ``k r_mean`` (the mean spacing ``r_mean``)."""
    if not (k >= 1 and 0 < r_burst <= r_mean):
        raise ValueError(f"bursts: need k >= 1 and 0 < r_burst <= r_mean, got {k}, {r_burst}, {r_mean}")
    edge = int(np.ceil(EDGE / r_mean))
    n = max(STREAM_PACKETS, int(np.ceil(STREAM_SPAN / r_mean))) + 2 * edge
    i = np.arange(n)
    counted = np.zeros(n, bool)
    counted[edge:n - edge] = True
    return SendPattern((i // k) * (k * r_mean) + (i % k) * r_burst, counted)


@njit(cache=True)
def _acks(send: np.ndarray, forward: np.ndarray, reverse: np.ndarray, receiver: int,
          ack_every: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The packets in arrival order, and every ACK the receiver sends: when it reaches the sender,
    how many arrivals it covers (the first ones) and the largest packet among them."""
    n = send.size
    arrive = send + forward
    order = np.argsort(arrive)
    back, covers, largest_of = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    received = np.zeros(n, np.bool_)
    largest, expected, unacked, acks = -1, 0, 0, 0
    for i in range(n):
        p = order[i]
        received[p] = True
        if receiver == 0:
            at_once = p < largest
        else:  # out of order, or filling a gap in what was queued out of order
            at_once = p != expected or largest > expected
        while expected < n and received[expected]:
            expected += 1
        largest = max(largest, p)
        unacked += 1
        if at_once or unacked >= ack_every or i + 1 == n:
            back[acks] = arrive[p] + reverse[acks]
            covers[acks] = i + 1
            largest_of[acks] = largest
            acks += 1
            unacked = 0
    return order, back[:acks], covers[:acks], largest_of[:acks]


@njit(cache=True)
def first_acks(send: np.ndarray, forward: np.ndarray, reverse: np.ndarray, receiver: int,
               ack_every: int) -> np.ndarray:
    """When the sender learns of each packet's arrival: the first ACK to come back covering it
    (inf for a packet no ACK covers). ``send`` in sending order; ``forward`` the packets' and
    ``reverse`` the ACKs' jitters."""
    n = send.size
    order, back, covers, _ = _acks(send, forward, reverse, receiver, ack_every)
    first = np.full(n + 1, np.inf)  # first[k]: earliest ACK covering the first k arrivals
    for a in range(back.size):
        first[covers[a]] = back[a]
    for k in range(n - 1, -1, -1):
        first[k] = min(first[k], first[k + 1])
    seen = np.empty(n)
    for i in range(n):
        seen[order[i]] = first[i + 1]
    return seen


@njit(cache=True)
def largest_acked_samples(send: np.ndarray, forward: np.ndarray, reverse: np.ndarray,
                          ack_every: int) -> tuple[np.ndarray, np.ndarray]:
    """XQUIC's RTT samples under its receiver's ACKs (RFC 9002 sec. 5.1; xqc_send_ctl.c
    ``xqc_send_ctl_on_ack_received``): an ACK gives one only when the largest packet it
    acknowledges is newly acknowledged, the time from that packet's send to the ACK's arrival.
    Returns the samples (less the path's fixed delays) and the packets they time, in the order
    the ACKs arrive; an ACK overtaken by a later one, or covering only packets below the largest
    acknowledged so far, gives none."""
    _, back, _, largest_of = _acks(send, forward, reverse, 0, ack_every)
    samples, timed = np.empty(back.size), np.empty(back.size, np.int64)
    m, top = 0, -1
    for a in np.argsort(back):
        if largest_of[a] > top:
            top = largest_of[a]
            samples[m] = back[a] - send[top]
            timed[m] = top
            m += 1
    return samples[:m], timed[:m]


@njit(cache=True)
def rate_samples(send: np.ndarray, forward: np.ndarray, reverse: np.ndarray, receiver: int,
                 ack_every: int, rtt: float, first_of_ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every ACK's delivery-rate sample (packets per unit time) over a path of mean round trip
    ``rtt`` (the jitters' mean is 0), and when the ACK arrives; an ACK that acknowledges nothing
    new, or whose interval is below the least RTT sample so far, gives none.

    The sender's arithmetic of ``xqc_sample.c`` (``xqc_update_sample``, ``xqc_generate_sample``;
    Linux ``tcp_rate_skb_delivered``, ``tcp_rate_gen``): each packet records, when it leaves,
    the packets delivered so far, when the latest of them was acknowledged and when the packet
    newest-acknowledged then had left; an ACK takes, of the packets it newly acknowledges, one
    that left after the latest delivery, and divides the packets delivered since that one left
    by the longer of its ACK interval (now less that delivery time) and its send interval (its
    send less that send). Of the packets sent between the same two deliveries, XQUIC takes the
    first (``first_of_ties``: ``xqc_update_sample`` walks them in packet-number order and keeps a
    packet only for a larger ``po_delivered``), Linux the one that left last
    (``tcp_skb_sent_after``). RTT samples as ``largest_acked_samples``."""
    n = send.size
    order, back, covers, largest_of = _acks(send, forward, reverse, receiver, ack_every)
    back = back + rtt
    acked = np.zeros(n, np.bool_)
    po_delivered, po_delivered_time, po_first_sent = np.zeros(n), np.zeros(n), np.zeros(n)
    delivered, delivered_time, first_sent, min_rtt = 0.0, 0.0, 0.0, np.inf
    sent, covered, top, m = 0, 0, -1, 0
    rates, when = np.empty(back.size), np.empty(back.size)
    for a in np.argsort(back):
        now = back[a]
        while sent < n and send[sent] <= now:  # what the sender knows when each packet leaves
            po_delivered[sent], po_delivered_time[sent], po_first_sent[sent] = delivered, delivered_time, first_sent
            sent += 1
        newest = -1
        for k in range(covered, covers[a]):  # arrivals no earlier ACK covered
            p = order[k]
            if not acked[p]:
                acked[p] = True
                delivered += 1.0
                delivered_time = now
                if newest < 0 or po_delivered[p] > po_delivered[newest] \
                        or (po_delivered[p] == po_delivered[newest] and (p < newest) == first_of_ties):
                    newest = p
        covered = max(covered, covers[a])
        if largest_of[a] > top:  # an RTT sample (RFC 9002 sec. 5.1)
            top = largest_of[a]
            min_rtt = min(min_rtt, now - send[top])
        if newest < 0 or newest >= sent or po_delivered_time[newest] <= 0.0:
            continue  # nothing new, an ACK the jitters put before its packet left, or before any delivery
        first_sent = send[newest]
        interval = max(now - po_delivered_time[newest], send[newest] - po_first_sent[newest])
        if interval < min_rtt:
            continue
        rates[m] = (delivered - po_delivered[newest]) / interval
        when[m] = now
        m += 1
    return rates[:m], when[:m]


@njit(cache=True)
def one_block_seen(send: np.ndarray, forward: np.ndarray, reverse: np.ndarray, comp: float,
                   comp_nr: int = TCP_COMP_SACK_NR) -> np.ndarray:
    """When the sender learns of each packet's arrival from kernel MPTCP's receiver while a hole
    below every packet persists (its cumulative ACK held there), as ``first_acks`` does for the
    receivers that report every packet they hold; inf for a packet never named (and for one
    that never arrives: ``forward`` inf).

    The receiver keeps up to ``TCP_NUM_SACKS`` blocks, the block of its latest arrival first
    (``tcp_input.c`` ``tcp_sack_new_ofo_skb``, merging blocks that meet as
    ``tcp_sack_maybe_coalesce``), and an ACK names the first block only: the room MPTCP's DSS
    option and the timestamps leave in the TCP options (``tcp_output.c``
    ``tcp_established_options``; docs/transport.md, "One SACK block per ACK"). It ACKs its first
    ``TCP_FASTRETRANS_THRESH`` arrivals at once, then compresses (``__tcp_ack_snd_check``): one
    ACK ``comp`` after the first arrival it holds an ACK for (``tcp_comp_sack_delay_ns``), or at
    the ``comp_nr``-th such arrival, or at once before another block becomes first, when that
    block is not among the first ``TCP_SACK_BLOCKS_EXPECTED`` (``tcp_sack_compress_send_ack``);
    any ACK sent ends the compression. Each ACK crosses back with its own ``reverse`` jitter (the
    n-th and later ACKs reuse them in turn)."""
    n = send.size
    arrive = send + forward
    order = np.argsort(arrive)
    start = np.zeros(TCP_NUM_SACKS, np.int64)
    end = np.zeros(TCP_NUM_SACKS, np.int64)
    nb = 0
    acks = np.empty((2 * n + 2, 3))  # per ACK sent: the first block's start and end, when it reaches the sender
    na = 0
    held, deadline = 0, np.inf  # arrivals a compressed ACK is held for; when its timer fires
    for i in range(n):
        p = order[i]
        a = arrive[p]
        if not np.isfinite(a):
            break
        if held > 0 and deadline <= a:  # the compressed ACK's timer fired first
            na, held = _name_first(acks, na, start, end, deadline + reverse[na % n]), 0
        k = 0
        while k < nb and not (start[k] <= p + 1 and p <= end[k]):  # tcp_sack_extend: meets block k
            k += 1
        if k >= TCP_SACK_BLOCKS_EXPECTED and held > 0:  # flushed before another block is named first
            na, held = _name_first(acks, na, start, end, a + reverse[na % n]), 0
        if k < nb:
            s0, e0 = min(start[k], p), max(end[k], p + 1)
        else:
            s0, e0 = p, p + 1
            nb = min(nb + 1, TCP_NUM_SACKS)  # a full list forgets its last block
            k = nb - 1
        for j in range(k, 0, -1):
            start[j], end[j] = start[j - 1], end[j - 1]
        start[0], end[0] = s0, e0
        j = 1
        while j < nb:  # coalesce the first block with any it now meets
            if start[j] <= end[0] and start[0] <= end[j]:
                start[0], end[0] = min(start[0], start[j]), max(end[0], end[j])
                for m in range(j, nb - 1):
                    start[m], end[m] = start[m + 1], end[m + 1]
                nb -= 1
            else:
                j += 1
        if i < TCP_FASTRETRANS_THRESH:
            at_once = True
        else:
            held += 1
            at_once = held >= comp_nr
            if held == 1:
                deadline = a + comp
        if at_once:
            na, held = _name_first(acks, na, start, end, a + reverse[na % n]), 0
    if held > 0:
        na = _name_first(acks, na, start, end, deadline + reverse[na % n])
    # each packet: the first ACK back naming it (ACKs by arrival at the sender, each naming the
    # packets no earlier one named: a pointer past the packets already named, path-halved)
    seen = np.full(n, np.inf)
    nxt = np.arange(n + 1)
    for a in np.argsort(acks[:na, 2]):
        j, e = int(acks[a, 0]), int(acks[a, 1])
        while j < e:
            while nxt[j] != j:
                nxt[j] = nxt[nxt[j]]
                j = nxt[j]
            if j >= e:
                break
            seen[j] = acks[a, 2]
            nxt[j] = j + 1
            j += 1
    return seen


@njit(inline="always", cache=True)
def _name_first(acks: np.ndarray, na: int, start: np.ndarray, end: np.ndarray, back: float) -> int:
    """``one_block_seen``'s receiver sends an ACK naming its first block, back at the sender at
    ``back``; returns the ACKs sent."""
    acks[na, 0], acks[na, 1], acks[na, 2] = start[0], end[0], back
    return na + 1


@njit(cache=True)
def _sparse_min(v: np.ndarray) -> np.ndarray:
    """Sparse table of range minima of ``v``: row l holds the minima of 2**l elements."""
    n = v.size
    levels = max(1, int(np.log2(max(n, 1))) + 1)
    table = np.full((levels, n), np.inf)
    table[0] = v
    for lv in range(1, levels):
        half = 1 << (lv - 1)
        for i in range(n - (1 << lv) + 1):
            table[lv, i] = min(table[lv - 1, i], table[lv - 1, i + half])
    return table


@njit(cache=True)
def _range_min(table: np.ndarray, a: int, b: int) -> float:
    """min of v[a:b] (inf if empty)."""
    if b <= a:
        return np.inf
    lv = int(np.log2(b - a))
    return min(table[lv, a], table[lv, b - (1 << lv)])


@njit(cache=True)
def _declared_at(send: np.ndarray, seen: np.ndarray, counted: np.ndarray, rule: int, w_grid: np.ndarray) -> np.ndarray:
    """n x W: when the sender declares each ``counted`` packet lost under each window of
    ``w_grid`` (inf: a packet not counted, or never seen), whether or not its own ACK comes first
    (``rule``: the index in ``RULES``)."""
    n, nw = send.size, w_grid.size
    at = np.full((n, nw), np.inf)
    later = np.full(n + 1, np.inf)  # later[p]: the first ACK covering any packet from p on
    third = np.full(n + 1, np.inf)  # third[p]: the first ACK covering 3 packets from p on
    low = np.full(PACKET_THRESHOLD, np.inf)  # the least PACKET_THRESHOLD of seen[p:], ascending
    for p in range(n - 1, -1, -1):
        later[p] = min(later[p + 1], seen[p])
        v = seen[p]
        for j in range(PACKET_THRESHOLD):
            if v < low[j]:
                low[j], v = v, low[j]
        third[p] = low[PACKET_THRESHOLD - 1]
    expect, m = 0.0, 0  # the mean time to the ACK: the srtt the time threshold scales
    for p in range(n):
        if counted[p] and np.isfinite(seen[p]):
            expect += seen[p] - send[p]
            m += 1
    expect /= max(m, 1)
    ahead = np.zeros(nw, np.int64)  # per window: the first packet sent that long after p, or later
    sparse = _sparse_min(seen - send) if rule == 2 else np.zeros((1, 1))
    for p in range(n):
        if not counted[p] or not np.isfinite(seen[p]):
            continue
        if rule < 2:
            by_count = later[min(p + PACKET_THRESHOLD, n)] if rule == 0 else third[p + 1]
            for i in range(nw):
                at[p, i] = min(by_count, max(later[p + 1], send[p] + expect + w_grid[i]))
        else:  # the ACK of a packet sent g later, plus what is left of the window after g
            for i in range(nw):
                while ahead[i] < n and send[ahead[i]] - send[p] < w_grid[i]:
                    ahead[i] += 1
                ahead[i] = max(ahead[i], p + 1)
                at[p, i] = min(later[ahead[i]], send[p] + w_grid[i] + _range_min(sparse, p + 1, ahead[i]))
    return at


@njit(cache=True)
def _declare(send: np.ndarray, seen: np.ndarray, counted: np.ndarray, rule: int, w_grid: np.ndarray) -> np.ndarray:
    """Per window of ``w_grid``: packets declared and their summed lead, over the ``counted``
    packets (``rule``: the index in ``RULES``)."""
    at = _declared_at(send, seen, counted, rule, w_grid)
    out = np.zeros((2, w_grid.size))
    for p in range(send.size):
        for i in range(w_grid.size):
            if at[p, i] < seen[p]:
                out[0, i] += 1.0
                out[1, i] += seen[p] - at[p, i]
    return out


def declarations(rule: str, pattern: SendPattern, receiver: str = "xquic", seed: int = 0,
                 ack_every: int = ACK_FREQUENCY, reverse_jitter: bool = True, windows: np.ndarray = W_GRID) -> np.ndarray:
    """(share of packets declared lost, mean lead of a declaration) for every w of ``windows``
    (2 x W), in jitters, with ``receiver``'s ACK policy; ``ack_every`` 1 and no
    ``reverse_jitter``: the sender sees each arrival as it happens."""
    if rule not in RULES or receiver not in RECEIVERS:
        raise ValueError(f"unknown rule {rule!r} or receiver {receiver!r}; rules: {', '.join(RULES)}, "
                         f"receivers: {', '.join(RECEIVERS)}")
    seen = _seen(pattern, RECEIVERS[receiver], seed, ack_every, reverse_jitter)
    sums = _declare(pattern.send, seen, pattern.counted, RULES.index(rule), windows)
    total = np.count_nonzero(pattern.counted & np.isfinite(seen))
    return np.array([sums[0] / total, np.where(sums[0] > 0, sums[1] / np.maximum(sums[0], 1.0), 0.0)])


def declaration_leads(rule: str, r: float, w: float, seed: int = 0) -> np.ndarray:
    """The lead of every spurious declaration over the sender learning of its packet's arrival,
    under ``rule``'s stack (``TABLE_RULES``) for an evenly spaced stream at spacing ``r`` and
    time window ``w``, in jitters of a round trip as the tables have them: ``detection_row``'s
    mean lead is their mean. Their spread decides how many copies the original's ACK cancels
    before they leave (``kernel._queue_copies`` reads them as a half-normal of that mean)."""
    sender, receiver = TABLE_RULES[rule]
    pattern = _pattern(r, -1.0)
    seen = _seen(pattern, RECEIVERS[receiver], seed)
    at = _declared_at(pattern.send, seen, pattern.counted, RULES.index(sender), np.array([w * np.sqrt(2.0)]))[:, 0]
    early = at < seen
    return (seen[early] - at[early]) / np.sqrt(2.0)


def _jitters(pattern: SendPattern, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each packet's forward jitter and each ACK's reverse jitter, drawn from ``seed`` (in that
    order, so every table built from one seed sees the same draws)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(pattern.send.size), rng.standard_normal(pattern.send.size)


def _seen(pattern: SendPattern, receiver: int, seed: int, ack_every: int = ACK_FREQUENCY,
          reverse_jitter: bool = True) -> np.ndarray:
    """``first_acks`` of ``pattern`` on the jitters of ``seed``."""
    forward, reverse = _jitters(pattern, seed)
    return first_acks(pattern.send, forward, reverse if reverse_jitter else np.zeros_like(reverse), receiver, ack_every)


def acknowledged_indirectly(seen: np.ndarray) -> np.ndarray:
    """Per packet, whether XQUIC would acknowledge it indirectly were it a copy of a spurious
    declaration (its original acknowledged first): ``xqc_send_ctl_detect_lost`` runs after every
    ACK, walks the unacknowledged packets in sending order, drops a copy whose original is
    acknowledged (``xqc_send_ctl_indirectly_ack_or_drop_po``: no rate sample, no CC) and stops at
    the first packet above the largest acknowledged, so it reaches the copy once the packet sent
    just before it, or any sent after it, is acknowledged; the copy counts as delivered only if
    its own ACK comes first (``seen``: the first ACK covering each packet, in sending order)."""
    later = np.minimum.accumulate(seen[::-1])[::-1]  # the first ACK covering any packet from p on
    reached = np.minimum(np.append(np.inf, seen[:-1]), np.append(later[1:], np.inf))
    return reached < seen


TRAIN_GAP = 12.0  # jitters between one train's last packet and the next train's first: no overlap


def _pattern(r: float, train: float) -> SendPattern:
    """The tables' sending patterns in the loop's units: spacing ``r`` over the round trip's
    jitter (reordering.GRID), evenly spaced (``train`` < 0) or trains of ``train`` packets."""
    spacing = r * np.sqrt(2.0)  # the loop's unit is one direction's jitter
    if train < 0:
        return stream(spacing)
    k = max(int(round(train)), 1)
    return bursts(k, spacing, spacing + TRAIN_GAP / k)


def rtt_sample_row(r: float, train: float = -1.0, seed: int = 0) -> np.ndarray:
    """(mean, standard deviation) of XQUIC's RTT samples over the path's mean round trip, in
    jitters of a round trip, at spacing ``r`` (``_pattern``): the samples of the counted packets
    under XQUIC's receiver (``ACK_FREQUENCY``), both ways jittered."""
    pattern = _pattern(r, train)
    samples, timed = largest_acked_samples(pattern.send, *_jitters(pattern, seed), ACK_FREQUENCY)
    kept = samples[pattern.counted[timed]] / np.sqrt(2.0)
    return np.array([kept.mean(), kept.std()])


def build_rtt_sample_table(seed: int = 0) -> np.ndarray:
    """2 x (1 + N) x R: the mean and spread of XQUIC's RTT samples (``rtt_sample_row``) on
    ``GRID``, row 0 the evenly spaced stream, rows 1 .. N the trains of ``TRAIN_GRID`` (shipped
    as ``rtt_sample_rfc9002.npy``, single precision)."""
    table = np.array([[rtt_sample_row(float(r), float(n), seed) for r in GRID] for n in _TRAINS])  # (1 + N) x R x 2
    return np.ascontiguousarray(table.transpose(2, 0, 1).astype(np.float32))


def rate_sample_row(rule: str, r: float, w: float, seed: int = 0) -> np.ndarray:
    """(mean shortfall, spread) of the delivery-rate samples (``rate_samples``) of an evenly
    spaced stream at spacing ``r`` over a path whose mean round trip is ``w``, both in jitters of
    a round trip, relative to the stream's rate and multiplied by ``w``, under ``rule``'s stack
    (``TABLE_RULES``' receiver and sampler): the samples of the ACKs after the first few round trips. A
    stream of more than ``RATE_PACKETS`` is measured at the longest round trip that many packets
    cover (both figures shrink about as 1 / ``w``, docs/transport.md, "Delivery-rate samples")."""
    w = min(w, RATE_PACKETS * r / RATE_ROUND_TRIPS)
    spacing, rtt = r * np.sqrt(2.0), w * np.sqrt(2.0)  # the loop's unit is one direction's jitter
    n = max(STREAM_PACKETS, int(np.ceil(RATE_ROUND_TRIPS * w / r)))
    send = np.arange(n) * spacing
    rng = np.random.default_rng(seed)
    receiver = TABLE_RULES[rule][1]
    rates, when = rate_samples(send, rng.standard_normal(n), rng.standard_normal(n), RECEIVERS[receiver],
                               ACK_FREQUENCY, rtt, receiver == "xquic")
    kept = rates[(when > send[0] + RATE_WARMUP * rtt) & (when <= send[-1])] * spacing
    return np.array([w * (1.0 - kept.mean()), w * kept.std()])


def build_rate_sample_table(rule: str, seed: int = 0) -> np.ndarray:
    """2 x T x R: ``rate_sample_row`` at every round trip of ``reordering.RTT_GRID`` and spacing
    of ``GRID`` (shipped as ``rate_sample_<rule>.npy``, single precision)."""
    table = np.array([[rate_sample_row(rule, float(r), float(w), seed) for r in GRID] for w in RTT_GRID])  # T x R x 2
    return np.ascontiguousarray(table.transpose(2, 0, 1).astype(np.float32))


def detection_row(rule: str, r: float, train: float = -1.0, seed: int = 0) -> np.ndarray:
    """2 x W: the share of the packets that ``rule``'s stack declares lost and the mean lead of a
    declaration over the sender learning of the packet's arrival, at spacing ``r`` (``_pattern``)
    for every window of ``reordering.W_GRID``: spacing, windows and leads in jitters of a round
    trip, as the core reads them (the loop's unit is one direction's jitter)."""
    sender, receiver = TABLE_RULES[rule]
    row = declarations(sender, _pattern(r, train), receiver, seed, windows=W_GRID * np.sqrt(2.0))
    return np.array([row[0], row[1] / np.sqrt(2.0)])


def indirect_row(r: float, train: float = -1.0, seed: int = 0) -> float:
    """The share of copies of spurious declarations XQUIC acknowledges indirectly, uncounted
    (``acknowledged_indirectly``), at spacing ``r`` (``_pattern``) under its receiver."""
    pattern = _pattern(r, train)
    seen = _seen(pattern, RECEIVERS["xquic"], seed)
    kept = pattern.counted & np.isfinite(seen)
    return float(np.mean(acknowledged_indirectly(seen)[kept]))


def build_detection_tables(rule: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(1 + N) x W x R: the probabilities and mean leads of ``detection_row`` on ``GRID``, row 0
    the evenly spaced stream, rows 1 .. N the trains of ``TRAIN_GRID``."""
    table = np.array([[detection_row(rule, float(r), float(n), seed) for r in GRID] for n in _TRAINS])
    return np.ascontiguousarray(table[:, :, 0].transpose(0, 2, 1)), np.ascontiguousarray(table[:, :, 1].transpose(0, 2, 1))


def build_indirect_table(seed: int = 0) -> np.ndarray:
    """(1 + N) x R: ``indirect_row`` on ``GRID`` (shipped as ``indirect_rfc9002.npy``)."""
    return np.array([[indirect_row(float(r), float(n), seed) for r in GRID] for n in _TRAINS], np.float32)


def hidden_row(r: float, comp: float, seed: int = 0) -> np.ndarray:
    """W: the share of packets that kernel MPTCP's RACK declares while a real loss's hole holds
    the cumulative ACK below them, because its one SACK block never names them
    (``one_block_seen``), and that Linux's loop with every block reported would not declare at
    that window (``detection_row``'s), for every window of ``reordering.W_GRID``: an evenly
    spaced stream at spacing ``r``, ACK compression ``comp``; spacing, windows and compression
    in jitters of a round trip, as the core reads them.

    Such a packet is declared whatever the window, once its deadline (a later packet's round
    trip and at most srtt after it left) comes before the hole is repaired (the core checks
    that, ``kernel._depart``)."""
    pattern = _pattern(r, -1.0)
    forward, reverse = _jitters(pattern, seed)
    hidden = pattern.counted & np.isinf(one_block_seen(pattern.send, forward, reverse, comp * np.sqrt(2.0)))
    every_block = first_acks(pattern.send, forward, reverse, RECEIVERS["linux"], ACK_FREQUENCY)
    declared_anyway = _declare(pattern.send, every_block, hidden, RULES.index("rack"), W_GRID * np.sqrt(2.0))[0]
    return (np.count_nonzero(hidden) - declared_anyway) / np.count_nonzero(pattern.counted)


def build_hidden_table(seed: int = 0) -> np.ndarray:
    """C x W x R: ``hidden_row`` at every compression of ``reordering.COMP_GRID`` and spacing of
    ``GRID`` (shipped as ``hidden_rack.npy``, single precision)."""
    table = np.array([[hidden_row(float(r), float(c), seed) for r in GRID] for c in COMP_GRID])  # C x R x W
    return np.ascontiguousarray(table.transpose(0, 2, 1).astype(np.float32))


def write_tables() -> None:
    """Regenerate every table the core reads (``reordering.detection_tables``, ``hidden_table``) from the loop:
    ``python -m envs.sim.ack_loop`` (about 3 minutes, 2 of them the delivery-rate tables)."""
    for rule in TABLE_RULES:
        prob, lead = build_detection_tables(rule)
        np.save(table_file(rule), prob[0])
        np.save(table_file(rule, "lead"), lead[0])
        np.save(table_file(rule, "train"), prob[1:].astype(np.float32))
        np.save(table_file(rule, "lead_train"), lead[1:].astype(np.float32))
    np.save(table_file("rfc9002", "indirect"), build_indirect_table())
    np.save(table_file("rfc9002", "rtt_sample"), build_rtt_sample_table())
    np.save(table_file("rack", "hidden"), build_hidden_table())
    for rule in TABLE_RULES:
        np.save(table_file(rule, "rate_sample"), build_rate_sample_table(rule))


if __name__ == "__main__":
    write_tables()
