"""Reference tables: live measurements recorded with this repository's own harness, kept in
``tests/data/live/<name>.json`` with their provenance, so the simulator's stack profiles can be
checked against real stacks without a live testbed (issue "Transport profiles", item 3).

``benchmarks/record_reference.py`` records them; this module only reads them (no live
dependency). Tables:

- ``ispras_xquic``: ispras_s1-s3 x reno, cubic, bbr, bbr2 on XQUIC (scheduler minrtt), a file
  transfer, metric ``goodput_mbps``; key ``scenario``, ``cc``, ``scheduler``.
- ``ispras_linux``: ispras_s1-s3 x reno, cubic, bbr on kernel MPTCP (its default scheduler,
  ``scheduler: "kernel"``), same key and metric.
- ``grid_xquic``, ``grid_linux``: one path of 50 Mbit/s, 40 ms RTT, random loss x jitter (a
  standard deviation, reordering), a fixed-length bulk transfer, metric ``goodput_mbps``; key
  ``loss_pct``, ``jitter_ms``, ``cc``.
- ``queue``: two flows of one CC sharing one drop-tail bottleneck, both stacks in one table (the
  key carries ``stack``: ``linux`` is two kernel TCP flows, ``xquic`` two XQUIC connections); key
  ``stack``, ``buffer_bdp``, ``cc``; metrics ``queue_bdp`` (the standing queue) and
  ``goodput_mbps`` (both flows together).

Every cell holds every run's value and the 1-minute load average of the machine when that run
ended (the recording machine is shared; the load says how busy it was). A cell holds at least
``MIN_RUNS`` runs; cells recorded with fewer (an interrupted recording) are kept apart in
``incomplete`` and never served by ``cell()``. Runs not counted (an error, or a run found distorted and
re-recorded, with the reason) are kept, as text, in the cell's ``failed``. A live transfer's run may
also keep ``path_bytes`` (the bytes each path delivered, XQUIC's per-path receive counters or the
kernel's per-subflow acknowledged bytes) and ``paths_validated`` (how many paths XQUIC found active;
``paths_created``, how many it created), one entry per run, ``null`` for a run recorded without them
(every run before 2026-11-29 06:05 UTC: a cell of those simply lacks the fields).

A table re-recorded after a change of the harness replaces the served one only once every cell has
its runs; the table it replaces is kept in ``tests/data/live/pfifo/`` (recorded on the
packet-counted bottleneck buffer, before it held bytes), with a note in its provenance, and is not
served (``available_references()`` lists ``tests/data/live/*.json`` only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from envs.errors import ConfigError

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "live"
MIN_RUNS = 3
STACKS = ("xquic", "linux")
_ISPRAS = (("scenario", "cc", "scheduler"), ("goodput_mbps",))
_GRID = (("loss_pct", "jitter_ms", "cc"), ("goodput_mbps",))
TABLE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ispras_xquic": _ISPRAS, "ispras_linux": _ISPRAS, "grid_xquic": _GRID, "grid_linux": _GRID,
    "queue": (("stack", "buffer_bdp", "cc"), ("queue_bdp", "goodput_mbps"))}
"""Each table's key names and metrics (a table of another name is read unchecked)."""
TABLES = tuple(TABLE_KEYS)

KeyValue = str | float | int


@dataclass(frozen=True)
class Provenance:
    """Where a table's numbers come from."""

    stack: str  # "xquic" | "linux" ("xquic+linux" for the queue table, which holds both)
    stack_version: str  # the XQUIC commit, or the kernel release for linux
    kernel: str  # uname -r of the recording machine
    recorded: str  # ISO date-time, UTC, of the last run written
    command: str  # the exact command line(s) that recorded it
    harness: str  # testbed, emulation mode, verification result
    notes: str = ""
    python: str = ""  # Python version of the recording (envs.live.provenance; absent from older tables)
    mpsched_commit: str = ""  # mpsched's commit that recorded it (envs.live.provenance; absent from older tables)


@dataclass(frozen=True)
class ReferenceCell:
    """One measured quantity under one setting: ``runs`` holds every run's value."""

    key: Mapping[str, KeyValue]
    metric: str
    runs: tuple[float, ...]
    load: tuple[float, ...]  # 1-minute load average at each run
    outcomes: tuple[str, ...] = ()  # per run, how the transfer ended (e.g. "finished", "ooo_abort")
    failed: tuple[str, ...] = ()  # runs not in ``runs`` (an error, or replaced as distorted): what and why
    # per run, when recorded (else () or None for that run): the bytes each path delivered, and how many
    # paths XQUIC created and found active (README, "XQUIC": a path left validating carries nothing)
    path_bytes: tuple[tuple[float, ...] | None, ...] = ()
    paths_created: tuple[int | None, ...] = ()
    paths_validated: tuple[int | None, ...] = ()

    @property
    def mean(self) -> float:
        return math.fsum(self.runs) / len(self.runs)

    @property
    def low(self) -> float:
        return min(self.runs)

    @property
    def high(self) -> float:
        return max(self.runs)

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.key.items()) + f" ({self.metric})"

    def path_share(self) -> tuple[float, ...]:
        """Each path's share of the bytes delivered over the runs that kept them (() if none did)."""
        kept = [b for b in self.path_bytes if b is not None]
        if not kept:
            return ()
        tot = [math.fsum(b[i] for b in kept) for i in range(len(kept[0]))]
        return tuple(t / math.fsum(tot) for t in tot) if math.fsum(tot) > 0 else ()


@dataclass(frozen=True)
class ReferenceTable:
    name: str
    provenance: Provenance
    cells: tuple[ReferenceCell, ...]
    incomplete: tuple[ReferenceCell, ...] = field(default=())

    def cell(self, metric: str | None = None, **key: KeyValue) -> ReferenceCell:
        """The cell whose key is exactly ``key`` (and whose metric is ``metric``; optional when the
        table has one metric): ``table.cell(scenario="ispras_s1", cc="bbr", scheduler="minrtt")``."""
        found = [c for c in self.cells if _same_key(c.key, key) and (metric is None or c.metric == metric)]
        if len(found) == 1:
            return found[0]
        if not found:
            have = "; ".join(c.label() for c in self.cells)
            want = ", ".join(f"{k}={v}" for k, v in key.items()) + (f" ({metric})" if metric else "")
            raise KeyError(f"reference table {self.name!r} has no cell {want}; it has: {have}")
        raise KeyError(f"reference table {self.name!r}: {len(found)} cells match {key}; name the metric, one of "
                       + ", ".join(sorted({c.metric for c in found})))

    def metrics(self) -> list[str]:
        return sorted({c.metric for c in self.cells})

    def to_dict(self) -> dict[str, Any]:
        def cell(c: ReferenceCell) -> dict[str, Any]:
            d = asdict(c)
            d["key"] = dict(c.key)
            d["path_bytes"] = [None if b is None else list(b) for b in c.path_bytes]
            return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()
                    if not (k in _PER_RUN_OPTIONAL and not v)}  # a cell without them lacks the fields

        return {"name": self.name, "provenance": asdict(self.provenance),
                "cells": [cell(c) for c in self.cells], "incomplete": [cell(c) for c in self.incomplete]}


def _same_key(a: Mapping[str, KeyValue], b: Mapping[str, KeyValue]) -> bool:
    if set(a) != set(b):
        return False
    for k, v in a.items():
        w = b[k]
        if isinstance(v, str) or isinstance(w, str):
            if v != w:
                return False
        elif not math.isclose(float(v), float(w), rel_tol=1e-9, abs_tol=1e-12):
            return False
    return True


def _numbers(table: str, where: str, field_name: str, raw: Any) -> tuple[float, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
        raise ConfigError(f"reference table {table!r}, {where}: {field_name} must be a list of numbers, got {raw!r}")
    return tuple(float(x) for x in raw)


_PER_RUN_OPTIONAL = ("path_bytes", "paths_created", "paths_validated")


def _per_run(table: str, where: str, raw: dict, n: int) -> dict[str, tuple]:
    """The optional per-run fields (absent from cells recorded before them), each entry of a run
    recorded without them ``None``."""
    out: dict[str, tuple] = {}
    for name in _PER_RUN_OPTIONAL:
        vals = raw.get(name)
        if vals is None:
            continue
        if not isinstance(vals, list) or len(vals) != n:
            raise ConfigError(f"reference table {table!r}, {where}: {name} must be a list of one entry per run "
                              f"({n}), got {vals!r}")
        if name == "path_bytes":
            for v in vals:
                if v is not None:
                    _numbers(table, where, name, v)
            out[name] = tuple(None if v is None else tuple(float(x) for x in v) for v in vals)
        else:
            if not all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) for v in vals):
                raise ConfigError(f"reference table {table!r}, {where}: {name} must hold counts (or null), got {vals!r}")
            out[name] = tuple(vals)
    return out


def _cell(table: str, index: int, raw: Any, min_runs: int) -> ReferenceCell:
    where = f"cell {index}"
    if not isinstance(raw, dict):
        raise ConfigError(f"reference table {table!r}, {where}: expected a mapping, got {raw!r}")
    missing = [f for f in ("key", "metric", "runs", "load") if f not in raw]
    key = raw.get("key")
    if isinstance(key, dict):
        where = f"cell {index} ({', '.join(f'{k}={v}' for k, v in key.items())})"
    if missing:
        raise ConfigError(f"reference table {table!r}, {where}: missing field(s) {', '.join(missing)}")
    if not isinstance(key, dict) or not key or not all(isinstance(v, str | int | float) for v in key.values()):
        raise ConfigError(f"reference table {table!r}, {where}: key must be a non-empty mapping of names to "
                          f"strings or numbers, got {key!r}")
    unknown = set(raw) - {"key", "metric", "runs", "load", "outcomes", "failed", *_PER_RUN_OPTIONAL}
    if unknown:
        raise ConfigError(f"reference table {table!r}, {where}: unknown field(s) {', '.join(sorted(unknown))}")
    runs = _numbers(table, where, "runs", raw["runs"])
    load = _numbers(table, where, "load", raw["load"])
    if len(runs) < min_runs:
        raise ConfigError(f"reference table {table!r}, {where}: {len(runs)} run(s), at least {min_runs} needed")
    if len(load) != len(runs):
        raise ConfigError(f"reference table {table!r}, {where}: {len(load)} load values for {len(runs)} runs")
    if not all(math.isfinite(x) for x in runs):
        raise ConfigError(f"reference table {table!r}, {where}: runs must be finite, got {list(runs)}")
    outcomes = tuple(str(x) for x in raw.get("outcomes", ()))
    if outcomes and len(outcomes) != len(runs):
        raise ConfigError(f"reference table {table!r}, {where}: {len(outcomes)} outcomes for {len(runs)} runs")
    return ReferenceCell(key=dict(key), metric=str(raw["metric"]), runs=runs, load=load, outcomes=outcomes,
                         failed=tuple(str(x) for x in raw.get("failed", ())), **_per_run(table, where, raw, len(runs)))


def table_from_dict(raw: Any, name: str) -> ReferenceTable:
    """A validated ``ReferenceTable`` from its JSON form (clear errors naming the table and cell)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"reference table {name!r}: expected a JSON object")
    missing = [f for f in ("name", "provenance", "cells") if f not in raw]
    if missing:
        raise ConfigError(f"reference table {name!r}: missing field(s) {', '.join(missing)}")
    prov = raw["provenance"]
    required = [f.name for f in fields(Provenance) if f.default is MISSING]
    if not isinstance(prov, dict) or any(f not in prov for f in required):
        lacking = [f for f in required if not isinstance(prov, dict) or f not in prov]
        raise ConfigError(f"reference table {name!r}: provenance lacks {', '.join(lacking)}")
    unknown = set(prov) - {f.name for f in fields(Provenance)}
    if unknown:
        raise ConfigError(f"reference table {name!r}: unknown provenance field(s) {', '.join(sorted(unknown))}")
    stacks = prov["stack"].split("+")
    if not all(s in STACKS for s in stacks):
        raise ConfigError(f"reference table {name!r}: provenance stack {prov['stack']!r} is not one of "
                          f"{', '.join(STACKS)} (or both joined by '+')")
    if not isinstance(raw["cells"], list):
        raise ConfigError(f"reference table {name!r}: cells must be a list")
    cells = tuple(_cell(name, i, c, MIN_RUNS) for i, c in enumerate(raw["cells"]))
    incomplete = tuple(_cell(name, i, c, 0) for i, c in enumerate(raw.get("incomplete", [])))
    if name in TABLE_KEYS:
        names, metrics = TABLE_KEYS[name]
        for c in (*cells, *incomplete):
            if set(c.key) != set(names) or c.metric not in metrics:
                raise ConfigError(f"reference table {name!r}, cell {c.label()}: its key names must be "
                                  f"{', '.join(names)} and its metric one of {', '.join(metrics)}")
    seen: list[ReferenceCell] = []
    for c in cells:
        if any(_same_key(c.key, s.key) and c.metric == s.metric for s in seen):
            raise ConfigError(f"reference table {name!r}: cell {c.label()} appears twice")
        seen.append(c)
    return ReferenceTable(name=str(raw["name"]), provenance=Provenance(**{k: str(v) for k, v in prov.items()}),
                          cells=cells, incomplete=incomplete)


def available_references(data_dir: Path | None = None) -> list[str]:
    """The names of the recorded tables (``tests/data/live/*.json``)."""
    d = data_dir or DATA_DIR
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_reference(name: str, data_dir: Path | None = None) -> ReferenceTable:
    """The recorded table ``name`` (``tests/data/live/<name>.json``), validated."""
    d = data_dir or DATA_DIR
    path = d / f"{name}.json"
    if not path.is_file():
        have = available_references(d)
        raise ConfigError(f"no reference table {name!r}; recorded: {', '.join(have) if have else 'none'} "
                          f"(in {d})")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ConfigError(f"reference table {name!r} ({path}) is not valid JSON: {err}") from None
    return table_from_dict(raw, name)


__all__ = ["DATA_DIR", "MIN_RUNS", "Provenance", "ReferenceCell", "ReferenceTable", "TABLES", "TABLE_KEYS",
           "available_references",
           "load_reference", "table_from_dict"]
