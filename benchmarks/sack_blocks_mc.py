"""How many SACK blocks an ACK carries, and what that does to RACK under loss and jitter: a
packet-level Monte Carlo of one path (tests/test_stack_fidelity.py ``LINUX_BBR``;
docs/transport.md, "One SACK block per ACK").

    python benchmarks/sack_blocks_mc.py                      # the grid's 2% / 2 ms path, 1 and 3 blocks
    python benchmarks/sack_blocks_mc.py --rate 16 --jitter 5 --window 40

A sender paces packets at a fixed rate (no congestion control) over a path with random loss and a
per-packet delay ``N(owd, jitter^2)`` in each direction (each packet keeps its own, so packets
reorder, as the live delay line does). The receiver keeps Linux's SACK list (net/ipv4/tcp_input.c
tcp_sack_new_ofo_skb: up to TCP_NUM_SACKS 4 blocks, the block of the latest arrival first, the
pending compressed ACK sent before a block beyond the first TCP_SACK_BLOCKS_EXPECTED 2 is named
first), answers a duplicate with a DSACK at once, and, while out-of-order data waits, ACKs the first
TCP_FASTRETRANS_THRESH (3) arrivals per cumulative ACK at once and then compresses (one ACK per
tcp_comp_sack_delay_ns, 1 ms, or per tcp_comp_sack_nr, 44 arrivals; __tcp_ack_snd_check). An ACK
carries the DSACK, if any, and then the list, cut to ``blocks`` (kernel MPTCP: 1, the room its DSS
option and the timestamps leave, tcp_output.c tcp_established_options; plain TCP with timestamps: 3).
The sender learns what the ACKs say and runs RACK (net/ipv4/tcp_recovery.c tcp_rack_advance,
tcp_rack_detect_loss: a packet sent before the latest-sent delivered one is lost once older than the
latest delivery's RTT plus the window), with the window min_rtt / 4 x steps, at most srtt, widened by
DSACKs as tcp_rack_update_reo_wnd does (one step per round trip, kept for 16 recoveries that end
without undo), or fixed (``--window`` ms); what it marks it retransmits at once. Printed per case: the
retransmissions and the spurious ones (the receiver had the packet), as shares of the originals.

Not modelled: congestion control, pacing of the resends, the bottleneck queue, delayed ACKs of
in-order data, GRO. It is a check of the mechanism's direction and size, not a calibrated model; the
core's tables take the same receiver from the whole loop (envs/sim/ack_loop.py one_block_seen, with a
hole held open and no sender reaction).
"""

from __future__ import annotations

import argparse
import heapq
import math
from dataclasses import dataclass

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's envs
from envs.sim.ack_loop import (TCP_COMP_SACK_NR, TCP_FASTRETRANS_THRESH, TCP_NUM_SACKS,  # noqa: E402
                               TCP_SACK_BLOCKS_EXPECTED)
from envs.sim.stacks import LINUX, LINUX_PAYLOAD  # noqa: E402

TCP_RACK_RECOVERY_THRESH = LINUX.reo_wnd_persist  # include/net/tcp.h
MSS = LINUX_PAYLOAD


@dataclass
class Result:
    originals: int
    retransmitted: int
    spurious: int
    max_steps: int


def simulate(rate_mbps: float = 40.0, loss: float = 0.02, jitter_ms: float = 2.0, owd_ms: float = 20.0,
             blocks: int = 1, compress: bool = True, window_ms: float | None = None, seconds: float = 6.0,
             seed: int = 1, comp_delay_ms: float = LINUX.comp_sack_delay * 1e3,
             comp_nr: int = TCP_COMP_SACK_NR) -> Result:
    """One run; ``window_ms`` None: RACK's adaptive window."""
    rng = np.random.default_rng(seed)
    gap = MSS * 8 / (rate_mbps * 1e6) * 1e3  # ms between sends
    n = int(seconds * 1e3 / gap)
    events: list[tuple[float, int, str, object]] = []
    counter = 0

    def push(t: float, kind: str, x: object) -> None:
        nonlocal counter
        counter += 1
        heapq.heappush(events, (t, counter, kind, x))

    def transmit(t: float, i: int) -> None:
        if rng.random() >= loss:
            push(t + max(owd_ms + jitter_ms * rng.standard_normal(), 0.0), "arrive", i)

    # sender
    sent_at = np.zeros(n)  # latest (re)transmission
    tx_delivered = np.zeros(n)  # packets known delivered when it was (re)sent (tcp_rate.c tx.delivered)
    resent = np.zeros(n, dtype=bool)
    known = np.zeros(n, dtype=bool)
    rack_mstamp, rack_rtt, min_rtt, srtt = -1.0, 0.0, math.inf, 2.0 * owd_ms
    una = n_sent = delivered = 0
    steps, persist, last_delivered, dsack_seen, max_steps = 1, 0, 0, False, 1
    in_recovery, recovery_point, recovery_real = False, 0, False
    retransmitted = spurious = 0
    # receiver
    have = np.zeros(n, dtype=bool)
    rcv_nxt = 0
    sacks: list[list[int]] = []  # [start, end) blocks, the latest arrival's first
    dsack: tuple[int, int] | None = None
    dup_acks, dup_for = 0, -1
    pending, compressed = False, 0

    def send_ack(t: float) -> None:
        nonlocal dsack, pending, compressed
        carried = ([dsack] if dsack is not None else []) + [(b[0], b[1]) for b in sacks]
        had_dsack = dsack is not None and blocks > 0
        dsack, pending, compressed = None, False, 0
        if rng.random() >= loss:
            push(t + max(owd_ms + jitter_ms * rng.standard_normal(), 0.0), "ack",
                 (rcv_nxt, carried[:blocks], had_dsack))

    def sack_add(t: float, i: int) -> None:
        for k, b in enumerate(sacks):
            if b[0] - 1 <= i <= b[1]:
                if k >= TCP_SACK_BLOCKS_EXPECTED and pending:
                    send_ack(t)
                b[0], b[1] = min(b[0], i), max(b[1], i + 1)
                sacks.insert(0, sacks.pop(k))
                j = 1
                while j < len(sacks):  # tcp_sack_maybe_coalesce
                    c = sacks[j]
                    if c[0] <= sacks[0][1] and sacks[0][0] <= c[1]:
                        sacks[0][0], sacks[0][1] = min(c[0], sacks[0][0]), max(c[1], sacks[0][1])
                        sacks.pop(j)
                    else:
                        j += 1
                return
        if len(sacks) >= TCP_SACK_BLOCKS_EXPECTED and pending:
            send_ack(t)
        sacks.insert(0, [i, i + 1])
        del sacks[TCP_NUM_SACKS:]

    for i in range(n):
        push(i * gap, "send", i)
    while events:
        now, _, kind, x = heapq.heappop(events)
        if kind == "send":
            i = int(x)  # type: ignore[call-overload]
            sent_at[i], tx_delivered[i], n_sent = now, delivered, i + 1
            transmit(now, i)
        elif kind == "arrive":
            i = int(x)  # type: ignore[call-overload]
            if have[i]:
                dsack = (i, i + 1)
                send_ack(now)
                continue
            have[i] = True
            if i == rcv_nxt:
                while rcv_nxt < n and have[rcv_nxt]:
                    rcv_nxt += 1
                sacks[:] = [b for b in sacks if b[1] > rcv_nxt]
                for b in sacks:
                    b[0] = max(b[0], rcv_nxt)
            else:
                sack_add(now, i)
            if not sacks or not compress:
                send_ack(now)
                continue
            if dup_for != rcv_nxt:
                dup_for, dup_acks = rcv_nxt, 0
            if dup_acks < TCP_FASTRETRANS_THRESH:
                dup_acks += 1
                send_ack(now)
                continue
            compressed += 1
            if compressed >= comp_nr:
                send_ack(now)
            elif not pending:
                pending = True
                push(now + comp_delay_ms, "compressed", None)
        elif kind == "compressed":
            if pending:
                send_ack(now)
        else:  # an ACK reaches the sender
            ack: tuple[int, list[tuple[int, int]], bool] = x  # type: ignore[assignment]
            cum, carried, had_dsack = ack
            dsack_seen = dsack_seen or had_dsack
            newly = [j for j in range(una, min(cum, n)) if not known[j]]
            una = max(una, cum)
            for start, end in carried:
                if end > cum:
                    newly += [j for j in range(max(start, una), min(end, n)) if not known[j]]
            newly = sorted(set(newly))
            known[newly] = True
            delivered += len(newly)
            if newly and window_ms is None:  # tcp_rack_update_reo_wnd
                if max(tx_delivered[j] for j in newly) < last_delivered:
                    dsack_seen = False
                if dsack_seen:
                    steps, dsack_seen, last_delivered = min(steps + 1, 255), False, delivered
                    persist = TCP_RACK_RECOVERY_THRESH
                elif persist == 0:
                    steps = 1
                max_steps = max(max_steps, steps)
            if in_recovery and una >= recovery_point:  # tcp_try_undo_recovery / tcp_try_undo_dsack
                in_recovery = False
                persist = max(persist - 1, 0) if recovery_real else min(persist + 1, TCP_RACK_RECOVERY_THRESH)
            for j in newly:  # tcp_rack_advance
                rtt = now - sent_at[j]
                if resent[j] and rtt < min_rtt:
                    continue
                if not resent[j]:
                    min_rtt = min(min_rtt, rtt)
                    srtt = 0.875 * srtt + 0.125 * rtt
                rack_rtt, rack_mstamp = rtt, max(rack_mstamp, sent_at[j])
            window = window_ms if window_ms is not None else min(min_rtt / 4.0 * steps, srtt)
            for j in range(una, min(n, int(rack_mstamp / gap) + 2)):  # tcp_rack_detect_loss
                if not known[j] and sent_at[j] < rack_mstamp and now - sent_at[j] > rack_rtt + window:
                    retransmitted += 1
                    spurious += int(have[j])
                    if not in_recovery:
                        in_recovery, recovery_point, recovery_real = True, n_sent, False
                    recovery_real = recovery_real or not have[j]
                    resent[j], sent_at[j], tx_delivered[j] = True, now, delivered
                    transmit(now, j)
    return Result(n, retransmitted, spurious, max_steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=40.0, help="sending rate, Mbit/s (%(default)s)")
    ap.add_argument("--loss", type=float, default=0.02, help="random loss per packet and direction (%(default)s)")
    ap.add_argument("--jitter", type=float, default=2.0, help="delay standard deviation per direction, ms")
    ap.add_argument("--owd", type=float, default=20.0, help="one-way delay, ms (%(default)s)")
    ap.add_argument("--window", type=float, default=None, help="RACK window, ms (default: adaptive)")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args()
    for blocks in (1, 3):
        for compress in (True, False):
            runs = [simulate(a.rate, a.loss, a.jitter, a.owd, blocks, compress, a.window, a.seconds, seed)
                    for seed in range(1, a.seeds + 1)]
            n = sum(r.originals for r in runs)
            re, sp = sum(r.retransmitted for r in runs), sum(r.spurious for r in runs)
            print(f"{blocks} block{'s' if blocks > 1 else ''}, compression {'on ' if compress else 'off'}: "
                  f"retransmitted {re / n:.1%} of the originals, spurious {sp / n:.1%} "
                  f"(RACK window steps up to {max(r.max_steps for r in runs)})", flush=True)


if __name__ == "__main__":
    main()
