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

BURSTS = ("the bursts of an unpaced sender (its window released per ACK at line rate) that set how many "
          "later packets overtake a late one: the core spaces a flow's packets at its mean departure rate")
# (table, cell label) -> why the model misses it, with the figures: sim (RUNS runs) vs live mean [min-max]
GAPS: dict[tuple[str, str], str] = {
    ("ispras_xquic", "scenario=ispras_s1, cc=reno"):
        "sim 4.34 vs live 2.17 [2.16-2.18] Mbit/s (x2.0): XQUIC declares about twice the spurious losses the "
        "RFC 9002 thresholds give at the flow's mean packet spacing; missing: " + BURSTS,
    ("ispras_xquic", "scenario=ispras_s1, cc=bbr"):
        "sim 32.4 vs live 44.1 [43.2-44.9] Mbit/s (x0.73): the simulated BBRv1 under XQUIC's constants "
        "(cwnd gain 2.5, twice the extra_acked term) overflows the 1 BDP buffers (14% of its packets "
        "dropped) and resends every spurious declaration; missing: the burstier live ACK stream "
        "(extra_acked is small in the fluid core's per-step ACKs, see the two-flow queue) and the loss "
        "pattern it leaves; not identified further",
    ("ispras_xquic", "scenario=ispras_s1, cc=bbr2"):
        "sim 14.4 vs live 5.55 [4.47-6.52] Mbit/s (x2.6): XQUIC's BBRv2 falls to CUBIC's level (the ISPRAS "
        "headline), the model's keeps 2.6x that; missing mechanism not identified: the model's BBRv2 "
        "(paced, XQUIC's constants) sees fewer spurious declarations per round than XQUIC's, or XQUIC's "
        "xqc_bbr2.c responds to them harder (its loss-rate accounting per round, inflight_lo)",
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
    return ", ".join(f"{k}={v}" for k, v in cell.key.items() if k not in ("stack", "scheduler"))


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


@pytest.mark.skipif(not _scenarios(), reason="no ISPRAS scenario with three CCs recorded yet")
@pytest.mark.parametrize("stack, scenario", _scenarios() or [None])
def test_cc_order_matches_live(stack: str, scenario: str) -> None:
    judged = [fidelity.Judged(t, dict(c.key), c.metric, simulated(s, t, _label(c)), c, True, "")
              for s, t, c in CELLS if s == stack and t.startswith("ispras_") and c.key["scenario"] == scenario]
    (order,) = fidelity.orderings(judged)
    print(f"{stack} {scenario}: Spearman {order.rho:.2f} over {', '.join(order.ccs)}")
    assert order.passed
