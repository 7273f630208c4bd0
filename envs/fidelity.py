"""The simulator against the live reference tables, one stack at a time (``stack=xquic|linux``).

Every cell of a recorded table (``envs.live.reference``: ``ispras_<stack>``, ``grid_<stack>`` and
the stack's rows of ``queue``) is re-created in the simulator under that stack's profile
(``envs/sim/stacks.py``) and judged by the marks of the issue that asked for stack profiles:

- ISPRAS goodput within ``ISPRAS_REL`` (25%) of the live mean, or inside the live min-max range;
  per scenario, the order of the CCs as in live (Spearman's rho >= ``SPEARMAN_MIN``, 0.8);
- single-path loss x jitter grid goodput within ``GRID_REL`` (30%);
- two-flow standing queue within ``QUEUE_ABS_BDP`` (0.5 BDP) of live.

``benchmarks/fidelity.py`` prints the report and draws it; ``tests/test_stack_fidelity.py``
checks it. Nothing here is fitted: the simulator runs as configured.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from envs.evaluation import evaluate_heuristic, standing_queue_bdp
from envs.live.reference import ReferenceCell, ReferenceTable, available_references, load_reference
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim.simulator import SimConfig
from envs.sim.stacks import profile

ISPRAS_REL = 0.25
SPEARMAN_MIN = 0.8
GRID_REL = 0.30
QUEUE_ABS_BDP = 0.5
MIB = 1 << 20
# the settings the live tables are recorded with (benchmarks/record_reference.py reads them here)
ISPRAS_FILE_MIB = 20.0  # its --file-mib default
GRID_MBPS, GRID_DELAY_MS, GRID_BUFFER_BDP, GRID_SECONDS = 50.0, 20.0, 1.0, 10.0  # 40 ms RTT; --seconds default
QUEUE_MBPS, QUEUE_DELAY_MS, QUEUE_WARMUP_S, QUEUE_END_S = 50.0, 20.0, 10.0, 30.0
SIM_SCHEDULER = "minrtt"  # XQUIC's minrtt; the kernel's default MPTCP scheduler also sends on the lowest-RTT subflow


@dataclass(frozen=True)
class Judged:
    """One reference cell beside the simulator."""

    table: str
    key: Mapping[str, str | float | int]
    metric: str
    sim: float
    live: ReferenceCell
    passed: bool
    mark: str  # the pass mark applied

    @property
    def ratio(self) -> float:
        return self.sim / self.live.mean if self.live.mean else math.nan

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.key.items() if k not in ("stack", "scheduler"))


@dataclass(frozen=True)
class Ordering:
    """Spearman's rho of the CCs' order within one ISPRAS scenario, sim against live."""

    scenario: str
    ccs: tuple[str, ...]
    rho: float
    passed: bool


@dataclass(frozen=True)
class Report:
    stack: str
    runs: int
    cells: tuple[Judged, ...]
    orderings: tuple[Ordering, ...]
    missing: tuple[str, ...]  # tables not recorded (yet)
    provenance: Mapping[str, str]  # table -> recorded on, version

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.cells) + sum(o.passed for o in self.orderings)

    @property
    def total(self) -> int:
        return len(self.cells) + len(self.orderings)


def tables_for(stack: str) -> tuple[str, ...]:
    profile(stack)
    return (f"ispras_{stack}", f"grid_{stack}", "queue")


def _option(command: str, flag: str, default: float) -> float:
    """A numeric option of the recorder's command line (its default when not given)."""
    found = re.search(rf"{re.escape(flag)}[ =]([0-9.]+)", command)
    return float(found.group(1)) if found else default


def grid_scenario(loss_pct: float, jitter_ms: float, seconds: float) -> Scenario:
    """The single path of the grid tables: 50 Mbit/s, 40 ms RTT, a 1 BDP buffer, random loss and
    reordering jitter in each direction, a backlogged transfer."""
    return scenario_from_dict({"name": f"grid_loss{loss_pct:g}_jitter{jitter_ms:g}", "jitter_reorders": True,
                               "paths": [{"bandwidth_mbps": GRID_MBPS, "delay_ms": GRID_DELAY_MS, "loss_pct": loss_pct,
                                          "jitter_ms": jitter_ms, "queue_bdp": GRID_BUFFER_BDP}],
                               "workload": {"type": "bulk", "duration_s": seconds}})


def simulate(table: ReferenceTable, cell: ReferenceCell, stack: str, runs: int, seed: int = 0) -> float:
    """The simulator's value of ``cell`` under ``stack``: the mean over ``runs`` connections."""
    config = SimConfig(stack=stack)
    key, command = cell.key, table.provenance.command
    if table.name.startswith("ispras_"):
        mib = _option(command, "--file-mib", ISPRAS_FILE_MIB)
        scen = load_scenario(str(key["scenario"])).with_workload(file_mb=mib * MIB / 1e6)
        return float(np.mean(evaluate_heuristic(scen, str(key["cc"]), SIM_SCHEDULER, runs, seed, config)["goodput_mbps"]))
    if table.name.startswith("grid_"):
        scen = grid_scenario(float(key["loss_pct"]), float(key["jitter_ms"]), _option(command, "--seconds", GRID_SECONDS))
        return float(np.mean(evaluate_heuristic(scen, str(key["cc"]), SIM_SCHEDULER, runs, seed, config)["goodput_mbps"]))
    if table.name == "queue" and cell.metric == "queue_bdp":
        return standing_queue_bdp(str(key["cc"]), float(key["buffer_bdp"]), bandwidth_mbps=QUEUE_MBPS,
                                  delay_ms=QUEUE_DELAY_MS, warmup_s=QUEUE_WARMUP_S,
                                  measure_s=QUEUE_END_S - QUEUE_WARMUP_S, batch=runs, seed=seed + 1, config=config)
    raise ValueError(f"no simulation for table {table.name!r}, metric {cell.metric!r}")


def judge(table: str, sim: float, live: ReferenceCell) -> tuple[bool, str]:
    """Whether ``sim`` passes the table's mark against ``live``, and the mark."""
    if table.startswith("ispras_"):
        ok = abs(sim - live.mean) <= ISPRAS_REL * live.mean or live.low <= sim <= live.high
        return ok, f"within {ISPRAS_REL:.0%} or in [min, max]"
    if table.startswith("grid_"):
        return abs(sim - live.mean) <= GRID_REL * live.mean, f"within {GRID_REL:.0%}"
    return abs(sim - live.mean) <= QUEUE_ABS_BDP, f"within {QUEUE_ABS_BDP:g} BDP"


def judged_cells(table: ReferenceTable, stack: str) -> list[ReferenceCell]:
    """The cells of ``table`` a stack's report judges (the queue table: its rows of the stack, the
    standing queue; the CCs the stack has)."""
    prof = profile(stack)
    cells = [c for c in table.cells if str(c.key.get("cc")) in prof.ccs]
    if table.name == "queue":
        cells = [c for c in cells if c.key.get("stack") == stack and c.metric == "queue_bdp"]
    return cells


def orderings(cells: Iterable[Judged]) -> list[Ordering]:
    """Per ISPRAS scenario with at least three CCs recorded, Spearman's rho of sim against live."""
    by_scenario: dict[str, list[Judged]] = {}
    for c in cells:
        if c.table.startswith("ispras_"):
            by_scenario.setdefault(str(c.key["scenario"]), []).append(c)
    out = []
    for scenario, group in sorted(by_scenario.items()):
        if len(group) < 3:
            continue
        rho = float(spearmanr([c.sim for c in group], [c.live.mean for c in group]).statistic)
        out.append(Ordering(scenario, tuple(str(c.key["cc"]) for c in group), rho,
                            bool(rho >= SPEARMAN_MIN - 1e-9)))  # 0.8 exactly passes
    return out


def report(stack: str, runs: int = 10, data_dir: Path | None = None, seed: int = 0) -> Report:
    """Every recorded cell of ``stack``'s tables beside the simulator (``data_dir``: where the
    tables are; default tests/data/live)."""
    have = set(available_references(data_dir))
    judged, missing, provenance = [], [], {}
    for name in tables_for(stack):
        if name not in have:
            missing.append(name)
            continue
        table = load_reference(name, data_dir)
        provenance[name] = f"{table.provenance.stack_version}, recorded {table.provenance.recorded}"
        for cell in judged_cells(table, stack):
            sim = simulate(table, cell, stack, runs, seed)
            ok, mark = judge(name, sim, cell)
            judged.append(Judged(name, dict(cell.key), cell.metric, sim, cell, ok, mark))
    return Report(stack, runs, tuple(judged), tuple(orderings(judged)), tuple(missing), provenance)


def markdown(rep: Report) -> str:
    """The report as Markdown tables."""
    lines = [f"Fidelity, stack={rep.stack}: simulator ({rep.runs} runs per cell) beside the live reference "
             f"tables; {rep.passed} of {rep.total} checks pass.", ""]
    for name, prov in rep.provenance.items():
        lines.append(f"- {name}: {prov}")
    for name in rep.missing:
        lines.append(f"- {name}: not recorded")
    lines += ["", "| table | cell | metric | sim | live mean [min-max] (runs) | sim/live | mark | pass |",
              "|---|---|---|---|---|---|---|---|"]
    for c in rep.cells:
        lines.append(f"| {c.table} | {c.label()} | {c.metric} | {c.sim:.2f} | {c.live.mean:.2f} "
                     f"[{c.live.low:.2f}-{c.live.high:.2f}] ({len(c.live.runs)}) | {c.ratio:.2f} | {c.mark} | "
                     f"{'yes' if c.passed else 'NO'} |")
    if rep.orderings:
        lines += ["", "| scenario | CCs | Spearman rho, sim vs live | pass (>= 0.8) |", "|---|---|---|---|"]
        for o in rep.orderings:
            lines.append(f"| {o.scenario} | {', '.join(o.ccs)} | {o.rho:.2f} | {'yes' if o.passed else 'NO'} |")
    return "\n".join(lines) + "\n"
