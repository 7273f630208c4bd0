"""The simulator's stack profiles against the live reference tables (tests/data/live, recorded by
benchmarks/record_reference.py; no live run here): every recorded cell of each stack's tables
under the marks of ``envs/fidelity.py`` (ISPRAS within 25% or inside the live range, the CCs'
order per scenario with Spearman >= 0.8, grid within 30%, two-flow queue within 0.5 BDP).

A cell the model does not match is listed in ``GAPS`` with the figures measured when it was
recorded and the mechanism the model lacks; it runs as a strict xfail, so a change that makes it
pass says so. Cells recorded after this file was written run as ordinary tests.
"""

from __future__ import annotations

import functools

import pytest

from envs import fidelity
from envs.live.reference import ReferenceCell, available_references, load_reference

RUNS = 5  # simulated connections per cell

LINUX_BBR = ("(the model's figures in this note are of the reordering tables before 2026-11-30, which integrated each "
             "arrival as the sender saw it at once) modelled: tcp_bbr.c's packet conservation in recovery, cwnd -= rs->losses and long-term "
             "bandwidth sampling (bbr_lt_bw_sampling), the per-packet min_rtt that sets RACK's window, and "
             "delivery-rate samples over the longer of the ACK and send intervals (tcp_rate.c). Identified "
             "live, not modelled (benchmarks/bbr_jitter_live.py, one transfer each, 2026-11-28, load average "
             "2.2-6.2): kernel MPTCP's ACKs carry one SACK block. tcp_output.c tcp_established_options gives "
             "MPTCP's options precedence over SACK in the 40 bytes of TCP options: timestamps take 12 "
             "(TCPOLEN_TSTAMP_ALIGNED), the DSS option with its 64-bit data ACK 12 (net/mptcp/options.c "
             "mptcp_established_options_dss: TCPOLEN_MPTCP_DSS_BASE 4 + TCPOLEN_MPTCP_DSS_ACK64 8), which leaves "
             "(16 - TCPOLEN_SACK_BASE_ALIGNED 4) / TCPOLEN_SACK_PERBLOCK 8 = 1 block, a DSACK's when there is one. "
             "Captured on grid 2% / 2 ms: every pure ACK the sender received carried a 12-byte MPTCP option and "
             "at most one block (20051 one block, 2882 a DSACK alone); plain TCP on the same testbed three. The "
             "receiver names first the block of its latest arrival (tcp_input.c tcp_sack_new_ofo_skb) and, while "
             "a hole persists, compresses its ACKs (__tcp_ack_snd_check: after TCP_FASTRETRANS_THRESH duplicate "
             "ACKs one per tcp_comp_sack_delay_ns, 1 ms (RTT / 20 if less), or per tcp_comp_sack_nr, 44, arrivals, flushing one "
             "before it names another block first only if that block is not among the first "
             "TCP_SACK_BLOCKS_EXPECTED, 2, the blocks it takes an ACK to carry), so a packet that "
             "jitter delays past a later one beyond a real loss lands in a block no ACK names until that loss is "
             "repaired, and RACK declares it lost whatever its window. Where random loss meets jitter the kernel "
             "therefore retransmits a fifth of what it sends, mostly spuriously: 2% / 2 ms 20.5-23.9% of the "
             "data segments in 3 MPTCP transfers (27.30-30.63 Mbit/s) against 8.5% for plain TCP (41.88; the "
             "model 43.07); 0.5% / 2 ms 17.1% against 4.8% (34.59 against 44.21; the model 47.54); 2% / 5 ms "
             "17.4-21.5% against 12.7% (10.71-12.90 against 14.63). Without SACK compression at the receiver "
             "(net.ipv4.tcp_comp_sack_nr=0) MPTCP's retransmissions at 2% / 2 ms halve (11.9%, 32.39 Mbit/s); "
             "with RACK's window held at one step (net.ipv4.tcp_recovery=3) it ran as with the window adaptive "
             "(21.2%, 30.96). The resends come out of BBR's pacing rate (in Recovery 86-97% of the time, "
             "pacing-limited: in flight within a packet of cwnd in 7-20% of the samples, no receive-window "
             "limit) and its bandwidth estimate settles at 40-46 Mbit/s at 2 ms (plain TCP 49) and 14-19 at "
             "5 ms. Without loss no hole persists: at 0% / 5 ms 592 retransmissions in the first 1.5 s, 9 in "
             "the 8.5 s after. The core keeps no receiver SACK state: it declares about 2% of the packets lost "
             "spuriously here (2% / 5 ms 441-1021 declarations against 406-579 real losses, 2% / 2 ms 1245-1369 "
             "against 768-844), as plain TCP would, and at 2 ms plain TCP runs within 3-7% of it. A packet-level "
             "Monte Carlo of the receiver's SACK list and RACK (benchmarks/sack_blocks_mc.py, fixed sending "
             "rate) gives the direction and the factor of one block over three (2% / 2 ms: 7.5% of the "
             "originals retransmitted against 2.1%, 17.3% against 6.7% with the window at one step, 3.0% "
             "without compression) but less than live in every case (MPTCP 25.6%, plain TCP 9.1%). At 5 ms plain "
             "TCP is itself far below the model (14.63 against 26.31 Mbit/s), window-bound: BBR's min_rtt falls "
             "to 11.9 ms, the least of RTT samples with 7 ms of round-trip jitter, and cwnd (2 x bw x min_rtt, "
             "63 packets at bw 18.9) binds in 30% of the samples, where the model's rtprop is 14.5 ms and its "
             "bandwidth estimate twice as high (36.4): that part is not identified")
CUBIC_RENO = ("not a missing mechanism, as far as measured: live, kernel CUBIC and Reno run level on these lossy, "
              "jittery paths and a 3-run cell is one draw from a wide spread. benchmarks/slow_start_live.py "
              "(2026-11-28, the tables' testbed and transfer, load average 3.3-5.5) gave ispras_s1 CUBIC 10.06, 9.41, "
              "9.19, 7.85, 12.17 and Reno 8.76, 7.30, 8.87, 9.54, 8.57 Mbit/s; with the 9 runs of the three records "
              "(this table, the packet-buffer one, the low-load check in its notes) that is CUBIC 8.75 and Reno "
              "8.85 over 14 runs (the model 10.03 and 9.55, x1.15 and x1.08); ispras_s2 CUBIC 8.47, 10.80 and Reno "
              "8.96, 10.85, over 11 runs CUBIC 10.62 and Reno 9.93 (the model 12.67 and 12.48, x1.19 and x1.26); "
              "grid 0.5% / 2 ms CUBIC 6.15, 4.83 and Reno 5.95, 4.89, over 11 runs 5.73 and 5.94 (the model "
              "6.51, x1.14). Every cell of this table extended to 10 runs (2026-11-29, the table's notes, the "
              "same harness and testbed, load average 1.2-2.6 for these cells): ispras_s1 CUBIC 8.45 [6.78-9.85] and Reno "
              "8.56 [8.13-8.91], ispras_s2 CUBIC 10.40 [8.87-12.50] and Reno 10.00 [7.83-12.21] Mbit/s (the model "
              "x1.20, x1.11, x1.23, x1.25): ispras_s1 CUBIC, x1.26 against its first 3 runs, passes; ispras_s2 Reno "
              "stays on the mark's edge. A transfer's rate turns on where its first slow start ends: HyStart's delay test "
              "(tcp_cubic.c hystart_update; once per connection, ca->found holds until a timeout) fired in 4 of 7 "
              "ISPRAS CUBIC transfers at cwnd 73-165 (TCPHystartDelayDetect, TCPHystartDelayCwnd), and in at least "
              "2 the window then grew on to 143 and 300: fired inside a spurious recovery, the exit is undone with "
              "it (tcp_undo_cwnd_reduction restores the prior_ssthresh taken when the recovery began, infinite in "
              "the first slow start); elsewhere a loss ended slow start; both CCs undo alike (TCPPartialUndo 8-19 "
              "per transfer for either; tcp_cubic.c's undo_cwnd is tcp_reno_undo_cwnd). Ruled out in the model: "
              "tcp_cubic.c's HyStart in place of RFC 9406's HyStart++ (ACK train and delay against the least RTT "
              "seen, HYSTART_DELAY_THRESH 4-16 ms, HYSTART_MIN_SAMPLES 8, hystart_low_window 16), with the 5% "
              "per RTT floor before the first reduction (cnt 20) and beta 717/1024, moved ispras_s1 CUBIC by at most "
              "+0.5% and made grid 0% / 5 ms fail (22.0 against 34.8, x0.63, with the undo below; 45.9, x1.32, "
              "without): on the model's RTT samples (segment samples, per-packet ones only in the lowest eighth of "
              "segments) its delay test fired at cwnd 34-56 where live fires at 90-118 (grid 0% / 5 ms, 2 runs), so "
              "it was not kept; nor was taking the undo's ssthresh at the "
              "reduction rather than at the episode's first spurious declaration (grid 0% / 5 ms CUBIC 35.8 -> 24.6, "
              "x0.71; ispras_s1 CUBIC 10.03 -> 10.45) "
              "(docs/transport.md, \"Stack profiles\"). Since the model evaluates the CUBIC target one least RTT "
              "ahead (tcp_cubic.c bictcp_update: t += ca->delay_min; 2026-11-28, the ACK's RTT sample before) its "
              "Linux CUBIC moved by at most 7% (10 runs: ispras_s1 10.03 -> 10.07, ispras_s2 12.67 -> 12.62, grid "
              "0.5% / 2 ms 6.51 -> 6.97, 0.5% / 5 ms 5.20 -> 5.41)")
XQUIC_BBR2_BURSTS = (
    "the model's XQUIC BBRv2 paces its packets evenly, and evenly spaced packets at its spacing are hardly "
    "reordered, where live XQUIC's leave in bursts (benchmarks/reordering_declarations.py: dispersion 2.6 and "
    "3.5 at 2 and 5 ms of jitter, the pacer's budget and the ACKs that free its window; tests/test_ack_loop.py): "
    "on the grid's 2 ms path the model's BBRv2 declares 3.6-4.5% of its packets lost against live 9.2-11.7% "
    "(benchmarks/xquic_cubic_live.py grid:0/2 --sim-only, 3 connections, after the first second), so its "
    "loss-bounded window is cut less. The whole loop on the transfers' own departures gives live's share "
    "(0.095 and 0.156 against 0.098 and 0.165); the core does not draw its flows' bursts (docs/transport.md, "
    "'Reordering')")
GAPS: dict[tuple[str, str], str] = {
    ("ispras_xquic", "scenario=ispras_s2, cc=bbr2"):
        "sim 6.58 vs live 5.09 [4.10-5.89] Mbit/s (x1.29; 10 runs 6.56; 4.79, x0.94, while the tables integrated "
        "each arrival as the sender saw it at once, before 2026-11-30, which declared 0.16 of an evenly spaced "
        "stream's packets at BBRv2's spacing where XQUIC's receiver and the way back give 0.02): " + XQUIC_BBR2_BURSTS,
    ("ispras_linux", "scenario=ispras_s1, cc=bbr"):
        "sim 66.14 vs live 40.10 [29.38-53.06] Mbit/s over 10 runs (x1.65; 68.56, x1.71, before a copy of a spurious declaration stopped being declared itself and counting as delivered, 2026-11-29; its first 3 runs 43.8 [29.9-53.1], "
        "x1.57; the runs fall near 30, 29.4-31.3 in 5, or near 50, 46.9-53.1 in 5, the model above both) on the "
        "byte buffer (packet buffer: 41.8 [27.9-49.4], x1.64): " + LINUX_BBR,

    ("grid_linux", "loss_pct=0.5, jitter_ms=2.0, cc=bbr"):
        "sim 45.79 vs live 33.67 [33.13-34.40] Mbit/s (x1.36; 47.59 before a copy of a spurious declaration stopped being declared itself and counting as delivered) on the byte buffer (packet buffer: 34.78 "
        "[34.53-35.24], x1.37): " + LINUX_BBR,

    ("grid_linux", "loss_pct=2.0, jitter_ms=2.0, cc=bbr"):
        "sim 41.81 vs live 29.37 [27.96-31.34] Mbit/s (x1.42; 42.95 before a copy of a spurious declaration stopped being declared itself and counting as delivered) on the byte buffer (packet buffer: 30.56 "
        "[28.35-31.69], x1.41): " + LINUX_BBR,
    ("grid_linux", "loss_pct=2.0, jitter_ms=5.0, cc=bbr"):
        "sim 20.89 vs live 11.83 [11.21-12.32] Mbit/s (x1.77; 22.45 before a copy of a spurious declaration stopped being declared itself and counting as delivered; 22.80 before the copies were dropped, x2.12 before the "
        "BBRv1 rules of 2026-11-29, x2.22 before the ProbeBW loss test) on the byte buffer (packet buffer: 11.65 "
        "[11.35-12.07], x2.26; x3.04 before the delivery-rate intervals): " + LINUX_BBR,
    ("ispras_linux", "scenario=ispras_s2, cc=bbr"):
        "sim 72.91 vs live 55.03 [49.28-58.09] Mbit/s (x1.33; 10 runs 71.18, x1.29; 66.08, x1.20, while the tables "
        "integrated each arrival as the sender saw it at once, before 2026-11-30: they declared more, standing in "
        "for part of what kernel MPTCP's one SACK block makes RACK declare) on the byte buffer: " + LINUX_BBR,
    ("ispras_linux", "scenario=ispras_s2, cc=reno"):
        "sim 12.71 vs live 10.00 [7.83-12.21] Mbit/s (x1.27; 10 runs 12.56, x1.26, and 12.60 with the tables "
        "before 2026-11-30, 12.48 before the links carried each packet's headers), on the mark's edge: "
        + CUBIC_RENO,
}
# CC orderings the model misses: (stack, scenario) -> why
ORDER_GAPS: dict[tuple[str, str], str] = {
    ("xquic", "ispras_s3"):
        "Spearman 0.00 since the links carry each packet's headers (2026-11-29; 0.80 with XQUIC's packet and no "
        "headers, -0.40 with Linux's packet): loss- and jitter-free paths, every cell within its mark (reno 118.82, "
        "cubic 119.07, bbr 114.40, bbr2 117.32 Mbit/s, within 4% of each other; live 108.68 [99.99-118.37], "
        "117.69 [114.41-119.03], 112.44 [93.10-118.52], 118.28 [116.58-119.32], within 9%, Reno bimodal live, "
        "100-102 or 114-118): the order among near-equal rates is noise, not a missing scheduling mechanism",
    ("linux", "ispras_s1"):
        "Spearman 0.50: the model's CUBIC runs above its Reno (10.01 and 9.17 Mbit/s; 10.10 and 9.54 with the "
        "tables before 2026-11-30), this table's below (8.45 "
        "[6.78-9.85] and 8.56 [8.13-8.91] over 10 runs a cell on the byte buffer, 7.99 and 8.37 in the first 3; "
        "7.69 and 9.21 on the packet buffer); bbr first on both sides. Over 14 live runs (before the extension) "
        "CUBIC and Reno are level (8.75 and 8.85), and over this table's 10 too (within 1.3%, CUBIC's range "
        "holding Reno's), so the order of the two is a draw: " + CUBIC_RENO,
    ("linux", "ispras_s2"):
        "Spearman 0.50 since the tables are the whole loop's (2026-11-30; 1.00 before): the model's Reno and CUBIC "
        "level (12.71 and 12.69 Mbit/s), this table's Reno below its CUBIC (10.00 [7.83-12.21] and 10.40 "
        "[8.87-12.50] over 10 runs, each range holding the other's mean); bbr first on both sides: the order of "
        "the two is a draw: " + CUBIC_RENO,
}

def _cells() -> list[tuple[str, str, ReferenceCell]]:
    out = []
    have = set(available_references())
    for stack in ("xquic", "linux"):
        for name in fidelity.tables_for(stack):
            if name in have:
                table = load_reference(name)
                out += [(stack, name, c) for c in fidelity.judged_cells(table, stack)]
    return out


CELLS = _cells()


def _label(cell: ReferenceCell) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.key.items() if k != "scheduler")


def _param(stack: str, table: str, cell: ReferenceCell):
    gap = GAPS.get((table, _label(cell)))
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(stack, table, cell, marks=marks, id=f"{table}:{_label(cell)}")


@functools.cache
def simulated(stack: str, table: str, label: str) -> float:
    cell = next(c for s, t, c in CELLS if s == stack and t == table and _label(c) == label)
    return fidelity.simulate(load_reference(table), cell, stack, RUNS)


@pytest.mark.skipif(not CELLS, reason="no live reference table recorded yet (tests/data/live)")
@pytest.mark.parametrize("stack, table, cell", [_param(*x) for x in CELLS] or [None])
def test_cell_matches_live(stack: str, table: str, cell: ReferenceCell) -> None:
    sim = simulated(stack, table, _label(cell))
    ok, mark = fidelity.judge(table, sim, cell)
    print(f"{table} {_label(cell)}: sim {sim:.2f}, live {cell.mean:.2f} [{cell.low:.2f}-{cell.high:.2f}] ({mark})")
    assert ok, f"sim {sim:.2f} vs live {cell.mean:.2f} [{cell.low:.2f}-{cell.high:.2f}]: not {mark}"


def _scenarios() -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], int] = {}
    for stack, table, cell in CELLS:
        if table.startswith("ispras_"):
            key = (stack, str(cell.key["scenario"]))
            seen[key] = seen.get(key, 0) + 1
    return [k for k, n in seen.items() if n >= 3]


def _order_param(stack: str, scenario: str):
    gap = ORDER_GAPS.get((stack, scenario))
    return pytest.param(stack, scenario, marks=[pytest.mark.xfail(strict=True, reason=gap)] if gap else [],
                        id=f"{stack}:{scenario}")


@pytest.mark.skipif(not _scenarios(), reason="no ISPRAS scenario with three CCs recorded yet")
@pytest.mark.parametrize("stack, scenario", [_order_param(*x) for x in _scenarios()] or [None])
def test_cc_order_matches_live(stack: str, scenario: str) -> None:
    judged = [fidelity.Judged(t, dict(c.key), c.metric, simulated(s, t, _label(c)), c, True, "")
              for s, t, c in CELLS if s == stack and t.startswith("ispras_") and c.key["scenario"] == scenario]
    (order,) = fidelity.orderings(judged)
    print(f"{stack} {scenario}: Spearman {order.rho:.2f} over {', '.join(order.ccs)}")
    assert order.passed
