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

RUNS = 10  # simulated connections per cell, as benchmarks.fidelity (the figures in docs/fidelity.md)

LINUX_BBR = ("modelled: tcp_bbr.c's packet conservation in recovery, cwnd -= rs->losses and long-term "
             "bandwidth sampling (bbr_lt_bw_sampling), the per-packet min_rtt that sets RACK's window, "
             "delivery-rate samples over the longer of the ACK and send intervals (tcp_rate.c), and since "
             "2026-11-30 kernel MPTCP's one SACK block per ACK (envs/sim/ack_loop.py one_block_seen, "
             "reordering.hidden_table, kernel._depart): tcp_output.c tcp_established_options gives MPTCP's options "
             "precedence over SACK in the 40 bytes of TCP options (timestamps 12, the DSS option with its 64-bit "
             "data ACK 12: (16 - TCPOLEN_SACK_BASE_ALIGNED 4) / TCPOLEN_SACK_PERBLOCK 8 = 1 block), the receiver "
             "names first the block of its latest arrival (tcp_input.c tcp_sack_new_ofo_skb) and, while a hole "
             "persists, compresses its ACKs (__tcp_ack_snd_check: after TCP_FASTRETRANS_THRESH duplicate ACKs one "
             "per tcp_comp_sack_delay_ns, 1 ms, RTT / 20 if less, or per tcp_comp_sack_nr, 44, arrivals), so while "
             "a real loss's hole holds the cumulative ACK a late packet may land in a block no ACK names before the "
             "hole is repaired, and RACK declares it. Live (benchmarks/bbr_jitter_live.py, one transfer each, "
             "2026-11-28): every pure ACK carried at most one block (grid 2% / 2 ms: 20051 one block, 2882 a DSACK "
             "alone; plain TCP three), and MPTCP retransmitted 20.5-23.9% of its data segments at 2% / 2 ms "
             "(27.30-30.63 Mbit/s) against plain TCP's 8.5% (41.88), 17.1% against 4.8% at 0.5% / 2 ms, 17.4-21.5% "
             "against 12.7% at 2% / 5 ms; without SACK compression (net.ipv4.tcp_comp_sack_nr=0) 11.9% at 2% / "
             "2 ms. The model's receiver hides 7.1% of the packets at the grid's 2 ms spacing while a hole persists "
             "(the Monte Carlo of benchmarks/sack_blocks_mc.py, fixed rate, 5.5% spurious), and its BBR now "
             "declares (benchmarks/bbr_jitter_live.py --sim-only) 7.5-7.7% of what it sends at 2% / 2 ms (2.3-2.6% before; 2.0-2.2% real), 3.8-4.2% at 0.5% "
             "/ 2 ms (0.9-1.1%), 4.3-4.9% at 2% / 5 ms (3.8-4.9%: the copies' DSACKs widen RACK's window, which "
             "declares fewer of the rest): about a third of live's excess over plain TCP. Not modelled: the "
             "repair's own dynamics (the hole held open in the table, its life in the core a detection and a "
             "one-way trip), a DSACK taking the only block and cancelling a held ACK, GRO batching arrivals, "
             "tcp_comp_sack_slack_ns. At 5 ms plain TCP is itself far below the model (14.63 against 26.31 "
             "Mbit/s), window-bound: BBR's min_rtt falls to 11.9 ms, the least of RTT samples with 7 ms of "
             "round-trip jitter, and cwnd (2 x bw x min_rtt, 63 packets at bw 18.9) binds in 30% of the "
             "samples, where the model's rtprop is 14.5 ms and its bandwidth estimate twice as high (36.4): "
             "that part is not identified")
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
    "on the grid's 2 ms path the model's BBRv2 declares 2.2-4.4% of its packets lost against live 9.2-11.7% "
    "(benchmarks/xquic_cubic_live.py grid:0/2 --sim-only, 3 connections, after the first second; 2.8-5.0% "
    "before 2026-12-02's detection step), so its loss-bounded window is cut less. The whole loop on the "
    "transfers' own departures gives live's share (0.095 and 0.156 against 0.098 and 0.165); the core does not "
    "draw its flows' bursts (docs/transport.md, 'Reordering')")
GAPS: dict[tuple[str, str], str] = {
    ("ispras_xquic", "scenario=ispras_s2, cc=bbr2"):
        "sim 6.40 vs live 5.09 [4.10-5.89] Mbit/s (x1.26, on the mark's edge; 6.23, x1.22, passing, before a declaration fell its "
        "detection delay after a point within its packet's step, kernel._detect_steps, 2026-12-02, which "
        "declares half a step sooner on average and may cut the window before that step's ACKs refill it; 6.59, "
        "x1.29, before the originals' ACKs cancelled copies, 2026-12-01, night; 6.91, x1.36, before its "
        "delivery-rate samples scattered as each ACK's do, 2026-12-01, evening): " + XQUIC_BBR2_BURSTS,
    ("ispras_linux", "scenario=ispras_s1, cc=bbr"):
        "sim 61.98 vs live 40.10 [29.38-53.06] Mbit/s, 10 live runs (x1.55; 62.23 before a declaration fell its detection delay after a point within its packet's step, 2026-12-02; 62.31 before a cancelled copy made no DSACK, 2026-12-02; 63.45, x1.58, before a copy of a spurious declaration was queued whole or cancelled, 2026-12-02; 63.27 before the originals' ACKs cancelled copies as the window's and pacer's waits allow, 2026-12-01, night; 62.84 before its delivery-rate samples "
        "scattered as each ACK's do, 2026-12-01, evening; 62.81 before min_rtt read the "
        "per-packet samples, 2026-12-01; 66.67, x1.66, before "
        "the one SACK block, 2026-11-30; the runs fall near 30, 29.4-31.3 in 5, or near 50, 46.9-53.1 in 5, the "
        "model above both) on the byte buffer (packet buffer: 41.8 [27.9-49.4]): " + LINUX_BBR,
    ("grid_linux", "loss_pct=2.0, jitter_ms=5.0, cc=bbr"):
        "sim 22.17 vs live 11.83 [11.21-12.32] Mbit/s (x1.87; the model's runs spread over 8.1-31.4 Mbit/s, 19.78 for seed 1, so one 10-run mean is a wide draw; 16.59, x1.40, before a declaration fell its detection delay after a point within its packet's step, 2026-12-02; 17.87, x1.51, before a cancelled copy made no DSACK, 2026-12-02; 20.26, x1.71, before a copy of a spurious declaration was queued whole or cancelled, 2026-12-02; 21.63, x1.83, before the originals' ACKs cancelled copies as the window's and pacer's waits allow, 2026-12-01, night; 18.64 before its delivery-rate samples scattered as "
        "each ACK's do, 2026-12-01, evening; 18.31 before min_rtt read the per-packet samples, "
        "2026-12-01; 20.50, x1.73, before the one SACK "
        "block, 2026-11-30) on the byte buffer (packet buffer: 11.65 [11.35-12.07]): " + LINUX_BBR,
    ("grid_linux", "loss_pct=0.5, jitter_ms=5.0, cc=bbr"):
        "sim 28.53 vs live 20.01 [18.24-22.50] Mbit/s (x1.43; 34.84, x1.74, before a declaration fell its detection delay after a point within its packet's step, 2026-12-02, when 0.5% / 2 ms passed at x1.28 from x1.31; 34.72 before a cancelled copy made no DSACK, 2026-12-02; 34.40 before a copy of a spurious declaration was queued whole or cancelled, 2026-12-02; 30.55, x1.53, before the originals' ACKs cancelled copies as the window's and pacer's waits allow, 2026-12-01, night; 22.83, x1.14, before its delivery-rate samples "
        "scattered as each ACK's do, 2026-12-01, evening, which brought the same path without loss from x0.83 to "
        "x0.92 and XQUIC's BBRv1 at 5 ms from x0.84-0.88 to x0.98-0.99): live Linux BBRv1 under random loss and "
        "reordering keeps less of its rate than the model at 2 and 5 ms alike (the cells above and below), and "
        "which of its loss responses the model misses is not established: " + LINUX_BBR,
    ("ispras_linux", "scenario=ispras_s2, cc=cubic"):
        "sim 13.04 vs live 10.40 [8.87-12.50] Mbit/s (x1.25, on the mark's edge; 12.33, x1.19, passing, before a "
        "declaration fell its detection delay after a point within its packet's step, kernel._detect_steps, "
        "2026-12-02; 12.63, x1.22, before a cancelled copy made no DSACK, 2026-12-02; 13.30, x1.28, before a copy "
        "of a spurious declaration was queued whole or cancelled, 2026-12-02; ispras_s1 CUBIC 9.99 against 8.45, "
        "x1.18, passes): " + CUBIC_RENO,
}
# CC orderings the model misses: (stack, scenario) -> why
ORDER_GAPS: dict[tuple[str, str], str] = {
    ("xquic", "ispras_s3"):
        "Spearman 0.00 since the links carry each packet's headers (2026-11-29; 0.80 with XQUIC's packet and no "
        "headers, -0.40 with Linux's packet): loss- and jitter-free paths, every cell within its mark (reno 120.18, "
        "cubic 120.44, bbr 118.68, bbr2 119.75 Mbit/s over 10 runs, within 1.5% of each other; reno 120.27, cubic "
        "120.35, bbr 118.88, bbr2 119.33 before a declaration fell its detection delay after a point within its "
        "packet's step, 2026-12-02, with XQUIC's 16 MiB "
        "receive window since 2026-11-30; 118.82, 119.07, 114.90, 117.32 with RFC 6182's 2.1 MB before; live 108.68 [99.99-118.37], "
        "117.69 [114.41-119.03], 112.44 [93.10-118.52], 118.28 [116.58-119.32], within 9%, Reno bimodal live, "
        "100-102 or 114-118): the order among near-equal rates is noise, not a missing scheduling mechanism",
    ("linux", "ispras_s1"):
        "Spearman 0.50: the model's CUBIC runs above its Reno (9.99 and 9.34 Mbit/s; 10.28 and 9.41 before a declaration fell its detection delay after a point within its packet's step, 2026-12-02; 10.58 and 9.85 before a cancelled copy made no DSACK, 2026-12-02; 10.42 and 9.27 before a copy of a spurious declaration was queued whole or cancelled, 2026-12-02; 10.47 and 9.36 on 2026-12-01; 10.01 and 9.17 before the one "
        "SACK block, 10.10 and 9.54 with the tables before 2026-11-30), this table's below (8.45 "
        "[6.78-9.85] and 8.56 [8.13-8.91] over 10 runs a cell on the byte buffer, 7.99 and 8.37 in the first 3; "
        "7.69 and 9.21 on the packet buffer); bbr first on both sides. Over 14 live runs (before the extension) "
        "CUBIC and Reno are level (8.75 and 8.85), and over this table's 10 too (within 1.3%, CUBIC's range "
        "holding Reno's), so the order of the two is a draw: " + CUBIC_RENO,
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
