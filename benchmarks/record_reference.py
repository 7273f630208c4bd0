"""Record the live reference tables (envs/live/reference.py) with this repository's live harness:
one command per table, every run's value written to ``tests/data/live/<table>.json`` as soon as it
is measured, with its provenance.

    python benchmarks/record_reference.py ispras --stack xquic --runs 3 [--scenarios ispras_s1,...]
                                          [--ccs reno,cubic,bbr,bbr2] [--file-mib 20]
    python benchmarks/record_reference.py ispras --stack linux --runs 3
    python benchmarks/record_reference.py queue --runs 3 [--buffers 1,5] [--stacks linux,xquic]
    python benchmarks/record_reference.py grid --stack xquic --runs 3 [--loss 0,0.5,2] [--jitter 0,2,5]
                                          [--seconds 10]

- ``ispras``: the ISPRAS scenario files with a file of ``--file-mib`` MiB; XQUIC with its minRTT
  scheduler, or kernel MPTCP with its default scheduler; goodput (Mbit/s).
- ``queue``: two flows of one CC on one bottleneck (50 Mbit/s, 40 ms RTT, drop-tail buffer of
  ``--buffers`` BDP), kernel TCP (cubic, bbr) and XQUIC (cubic, bbr, bbr2): the queue averaged
  from 10 to 30 s, in BDP, and the two flows' goodput (``envs.live.bottleneck.two_flow_queue``).
- ``grid``: one path of 50 Mbit/s, 40 ms RTT, a 1 BDP buffer, random loss x jitter (a standard
  deviation of the one-way delay, reordering), both applied in each direction; a backlogged
  transfer of ``--seconds`` s (XQUIC: a file too large to finish, capped at that time); goodput.

One testbed per scenario (ispras), per buffer (queue) or per loss x jitter (grid), verified once
before its runs (``envs.live.verification``; a testbed that fails it is refused, the failure is
written to the table's notes and the testbed is tried once more). A table already on disk is
continued: a cell gets only the runs it lacks, so an interrupted recording resumes where it
stopped (delete the file to record afresh). Each run's 1-minute load average is stored beside
its value; an ``ispras`` or ``grid`` run also keeps the bytes each path delivered (``path_bytes``)
and, on XQUIC, how many paths it created and validated. ``ispras --replace-unsplit`` records the
named cells afresh: their runs kept without per-path bytes move to the cell's ``failed`` (value,
load, outcome; a note says when), so an interrupted re-recording resumes too. Needs root and the
live setup (``python -m envs.live.setup --xquic``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.errors import ConfigError, make_writable_dir  # noqa: E402
from envs.evaluation import shared_bottleneck  # noqa: E402
from envs.live.backends import get_backend  # noqa: E402
from envs.live.bottleneck import two_flow_queue  # noqa: E402
from envs.live.evaluation import LiveOptions, run_transfer  # noqa: E402
from envs.live.provenance import load_average, provenance, utc_now  # noqa: E402
from envs.live.reference import DATA_DIR, MIN_RUNS, table_from_dict  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.system import LiveError  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.live.verification import VerificationError, start_verified  # noqa: E402
from envs.scenario import Scenario, WorkloadSpec, load_scenario, scenario_from_dict  # noqa: E402
# the recording settings have one home, beside the simulator side that replays them
from envs.fidelity import (GRID_BUFFER_BDP, GRID_DELAY_MS, GRID_MBPS, GRID_SECONDS, ISPRAS_FILE_MIB, MIB,  # noqa: E402
                           QUEUE_DELAY_MS, QUEUE_END_S, QUEUE_MBPS, QUEUE_WARMUP_S)
from envs.sim.stacks import LIVE_BACKEND  # noqa: E402

STACK_CCS = {"xquic": ("reno", "cubic", "bbr", "bbr2"), "linux": ("reno", "cubic", "bbr")}
QUEUE_CCS = {"linux": ("cubic", "bbr"), "xquic": ("cubic", "bbr", "bbr2")}
HARNESS = ("Mininet testbed of this repository (envs.live.testbed: client - one router per path - server, "
           "bottleneck on the router's egress: HTB rate + bfifo drop-tail, the buffer in bytes), emulation={mode} (random loss by nft "
           "numgen and delay + N(0, jitter) per packet by the NFQUEUE delay line, reordering, in both directions, "
           "where the kernel has no netem), TSO/GSO/GRO off; emulation verified once per testbed before its runs "
           "(envs.live.verification: RTT, jitter spread, UDP rate, loss): passed on every testbed whose runs are "
           "kept (a failure is listed in the notes)")
LOAD_NOTE = ("The recording machine (2 cores) was shared with other jobs (model training); each run's 1-minute load "
             "average is stored beside its value. Ran under nice -n -10 and a lock serialising live runs.")


def load1() -> float:
    """The 1-minute load average stored beside each run (rounded: the tables are read by people)."""
    return round(load_average(), 2)


class Recorder:
    """One reference table being recorded: cells keyed by (key, metric), written after each run."""

    def __init__(self, name: str, stack: str, stack_version: str, out_dir: Path, notes: str) -> None:
        self.name, self.path = name, out_dir / f"{name}.json"
        here = provenance("python benchmarks/record_reference.py", sys.argv[1:])  # the record every live tool keeps
        self.command = here["command"]
        self.cells: dict[tuple[str, str], dict] = {}
        self.prov = {"stack": stack, "stack_version": stack_version, "kernel": here["kernel"], "recorded": here["date"],
                     "command": self.command, "harness": HARNESS.format(mode="?"), "notes": f"{notes} {LOAD_NOTE}",
                     "python": here["python"], "mpsched_commit": here["mpsched_commit"]}
        if self.path.is_file():  # continue an earlier recording
            raw = json.loads(self.path.read_text())
            table_from_dict(raw, name)  # refuse a damaged file before adding to it
            self.prov.update(raw["provenance"])
            # each session's command and mpsched commit are added; a table older than the commit
            # field says so for its earlier runs
            earlier = raw["provenance"].get("mpsched_commit", "unknown (not recorded)")
            for key, value, known in (("command", self.command, self.prov["command"]),
                                      ("mpsched_commit", here["mpsched_commit"], earlier)):
                self.prov[key] = known if value in known.split(" ; ") else f"{known} ; {value}"
            for c in raw["cells"] + raw.get("incomplete", []):
                self.cells[self._id(c["key"], c["metric"])] = c

    @staticmethod
    def _id(key: dict, metric: str) -> tuple[str, str]:
        return json.dumps(key, sort_keys=True), metric

    def cell(self, key: dict, metric: str) -> dict:
        return self.cells.setdefault(self._id(key, metric), {"key": key, "metric": metric, "runs": [], "load": [],
                                                              "outcomes": [], "failed": []})

    def missing(self, key: dict, metric: str, runs: int) -> int:
        have = self.cells.get(self._id(key, metric))
        return max(0, runs - (len(have["runs"]) if have else 0))

    def add(self, key: dict, metric: str, value: float, outcome: str, load: float,
            per_run: dict | None = None) -> None:
        """One run's value; ``per_run`` its optional per-run fields (``path_bytes``, ``paths_created``,
        ``paths_validated``; envs/live/reference.py), ``null`` for earlier runs recorded without them."""
        c = self.cell(key, metric)
        for name in per_run or {}:
            c.setdefault(name, [None] * len(c["runs"]))
        for name in [n for n in ("path_bytes", "paths_created", "paths_validated") if n in c]:
            c[name].append((per_run or {}).get(name))
        c["runs"].append(round(float(value), 4))
        c["load"].append(load)
        c["outcomes"].append(outcome)
        self.write()

    def replace_unsplit(self, key: dict, metric: str, why: str) -> int:
        """Move the cell's runs kept without per-path bytes to its ``failed`` (value, load, outcome),
        so that the cell is recorded afresh with them; how many were moved."""
        c = self.cells.get(self._id(key, metric))
        if c is None:
            return 0
        split = c.get("path_bytes", [None] * len(c["runs"]))
        keep = [i for i, b in enumerate(split) if b is not None]
        moved = [i for i in range(len(c["runs"])) if i not in keep]
        for i in moved:
            outcome = c["outcomes"][i] if i < len(c.get("outcomes", [])) else "not recorded"
            c["failed"].append(f"replaced {utc_now()} ({why}), recorded at load {c['load'][i]:.2f}: "
                               f"{metric} {c['runs'][i]} (outcome {outcome})")
        for name in ("runs", "load", "outcomes", "path_bytes", "paths_created", "paths_validated"):
            if name in c and len(c[name]) == len(split):
                c[name] = [c[name][i] for i in keep]
        if moved:
            self.write()
        return len(moved)

    def fail(self, key: dict, metric: str, error: str, load: float) -> None:
        self.cell(key, metric)["failed"].append(f"{utc_now()} (load {load:.2f}): {error}")
        self.write()

    def note(self, text: str) -> None:
        self.prov["notes"] += f" {text}"
        self.write()

    def harness(self, mode: str) -> None:
        self.prov["harness"] = HARNESS.format(mode=mode)

    def write(self) -> None:
        self.prov["recorded"] = utc_now()
        cells = list(self.cells.values())
        raw = {"name": self.name, "provenance": self.prov,
               "cells": [c for c in cells if len(c["runs"]) >= MIN_RUNS],
               "incomplete": [c for c in cells if len(c["runs"]) < MIN_RUNS]}
        table_from_dict(raw, self.name)  # what is written always loads
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(raw, indent=1) + "\n")
        tmp.replace(self.path)  # atomic: an interruption never leaves half a file


@contextmanager
def verified_testbed(rec: Recorder, scenario: Scenario, label: str) -> Iterator[Testbed | None]:
    """A started, verified testbed for ``scenario`` (None if it failed verification twice; the
    failures go to the table's notes)."""
    def failed(attempt: int, err: VerificationError) -> None:
        rec.note(f"[{utc_now()}, load {load1():.2f}] testbed {label}: verification FAILED (attempt {attempt}): "
                 f"{str(err).splitlines()[0]}.")
        print(f"verification failed for {label}: {err}", flush=True)

    try:
        tb = start_verified(lambda: Testbed(scenario, verify=True), 2, 5.0, failed)
    except VerificationError:
        rec.note(f"testbed {label}: skipped, its cells not recorded in this call.")
        yield None
        return
    try:
        rec.harness(tb.emulation_mode)
        print(tb.describe(), flush=True)
        if tb.verification is not None:
            print(tb.verification.table(), flush=True)
        yield tb
    finally:
        problems = tb.close()
        if problems:
            rec.note(f"teardown of {label} left: {', '.join(problems)}.")


def record_runs(rec: Recorder, key: dict, metrics: tuple[str, ...], runs: int,
                measure: Callable[[], tuple]) -> None:
    """Run ``measure`` (-> one value per metric, or None on failure; the outcome or the error;
    optionally a third item, the run's per-path fields for ``Recorder.add``) for
    each run ``key`` lacks, keeping every value (and every failure) as soon as it is measured. A cell
    that had runs already and gets more says so in the table's notes (when, how many, the load, the
    kernel and the command), so an extended cell is told apart from one recorded in one session."""
    had, start, loads = len(rec.cell(key, metrics[0])["runs"]), utc_now(), []
    for _ in range(rec.missing(key, metrics[0], runs)):
        per_run: dict | None = None
        try:
            got = measure()
            values, outcome = got[0], got[1]
            per_run = got[2] if len(got) > 2 else None
        except LiveError as err:
            values, outcome = None, f"{type(err).__name__}: {err}"
        load = load1()
        loads.append(load)
        if values is None:
            rec.fail(key, metrics[0], outcome, load)
        else:
            for metric, value in zip(metrics, values):
                rec.add(key, metric, value, outcome, load, per_run)
        shown = ", ".join(f"{m} {v:.3f}" for m, v in zip(metrics, values)) if values is not None else "FAILED"
        if per_run and per_run.get("path_bytes") is not None:
            shown += ", paths " + "/".join(f"{b / 1e6:.2f}" for b in per_run["path_bytes"]) + " MB"
            if per_run.get("paths_validated") is not None:
                shown += f" ({per_run['paths_created']} created, {per_run['paths_validated']} validated)"
        print(f"  {json.dumps(key)}: {shown} ({outcome}, load {load:.2f})", flush=True)
    now = len(rec.cell(key, metrics[0])["runs"])
    if had and loads:
        label = ", ".join(f"{k}={v}" for k, v in key.items())
        rec.note(f"Cell {label} extended from {had} to {now} runs ({len(loads)} attempted) {start} to {utc_now()}, "
                 f"load average {min(loads):.2f}-{max(loads):.2f}, kernel {platform.release()}, by: {rec.command}.")


def transfer_goodput(stack: str, tb: Testbed, cc: str, workload: WorkloadSpec,
                     capped: bool) -> tuple[tuple[float, ...] | None, str, dict | None]:
    """One transfer's goodput (Mbit/s), outcome and per-path fields (the bytes each path delivered,
    ``TransferResult.path_bytes``: XQUIC's per-path receive counters, as the transfer report keeps
    them; on XQUIC the paths created and validated, ``envs.live.xquic.paths_validated``); None and the
    error for a failed run. A ``capped`` XQUIC transfer ends at its time cap by design (outcome
    ``timeout``)."""
    backend = get_backend(LIVE_BACKEND[stack])
    sched = {"scheduler": "minrtt"} if stack == "xquic" else {}
    result, retried = run_transfer(backend, tb, cc, workload, LiveOptions(backend=LIVE_BACKEND[stack]), sched)
    outcome = result.extra.get("outcome", "finished" if workload.type == "file" else "bulk")
    if capped and outcome == "timeout":
        outcome = f"capped at {workload.duration_s:g} s"
    elif result.error:
        return None, f"{outcome}: {result.error}", None
    if retried:
        outcome += f" (after {retried} MPTCP fallback retries)"
    resumed = int(result.extra.get("sends_resumed", 0))
    if resumed:  # XQUIC had left the connection stuck and the event loop resumed it (envs/live/xquic.py)
        outcome += f" ({resumed} stuck send{'s' if resumed > 1 else ''} resumed)"
    per_run: dict = {"path_bytes": [round(float(b)) for b in result.path_bytes]}
    if stack == "xquic":
        from envs.live.xquic import paths_validated
        per_run.update(paths_created=int(result.extra.get("paths_created", 0)),
                       paths_validated=paths_validated(result.extra))
    return (float(result.metrics()["goodput_mbps"][0]),), outcome, per_run


def stack_version(stack: str) -> str:
    if stack == "xquic":
        from envs.live.xquic import extension
        return str(extension().XQUIC_COMMIT)[:12]
    return platform.release()


def record_ispras(a: argparse.Namespace) -> None:
    rec = Recorder(f"ispras_{a.stack}", a.stack, stack_version(a.stack), a.out,
                   f"File of {a.file_mib:g} MiB ({a.file_mib * MIB:.0f} bytes) per run, the ISPRAS scenario files "
                   "(configs/scenario) otherwise unchanged; scheduler: "
                   + ("XQUIC's minrtt." if a.stack == "xquic" else "the kernel's default MPTCP scheduler."))
    sched = "minrtt" if a.stack == "xquic" else "kernel"
    if a.replace_unsplit:
        why = "re-recorded with per-path bytes by record_reference.py --replace-unsplit"
        for name in a.scenarios.split(","):
            for cc in a.ccs.split(","):
                moved = rec.replace_unsplit({"scenario": name, "cc": cc, "scheduler": sched}, "goodput_mbps", why)
                if moved:
                    rec.note(f"[{utc_now()}, load {load1():.2f}] Cell scenario={name}, cc={cc}: its {moved} runs "
                             "without per-path bytes moved to its failed, the cell recorded afresh with them "
                             f"by: {rec.command}.")
    for name in a.scenarios.split(","):
        scen = load_scenario(name).with_workload(file_mb=a.file_mib * MIB / 1e6)
        todo = [cc for cc in a.ccs.split(",") if rec.missing(
            {"scenario": name, "cc": cc, "scheduler": sched}, "goodput_mbps", a.runs)]
        if not todo:
            continue
        with verified_testbed(rec, scen, name) as tb:
            if tb is None:
                continue
            for cc in todo:
                record_runs(rec, {"scenario": name, "cc": cc, "scheduler": sched}, ("goodput_mbps",), a.runs,
                            lambda cc=cc, w=scen.workload: transfer_goodput(a.stack, tb, cc, w, capped=False))


def grid_scenario(loss: float, jitter: float, seconds: float) -> Scenario:
    return scenario_from_dict({"name": f"grid_loss{loss:g}_jitter{jitter:g}", "jitter_reorders": True,
                               "paths": [{"bandwidth_mbps": GRID_MBPS, "delay_ms": GRID_DELAY_MS, "loss_pct": loss,
                                          "jitter_ms": jitter, "queue_bdp": GRID_BUFFER_BDP}],
                               "workload": {"type": "bulk", "duration_s": seconds}})


def record_grid(a: argparse.Namespace) -> None:
    rec = Recorder(f"grid_{a.stack}", a.stack, stack_version(a.stack), a.out,
                   f"One path: {GRID_MBPS:g} Mbit/s, one-way delay {GRID_DELAY_MS:g} ms each way (40 ms RTT), "
                   f"drop-tail buffer {GRID_BUFFER_BDP:g} BDP; loss_pct: random loss in each direction; jitter_ms: "
                   "standard deviation of a normal per-packet delay in each direction, reordering (each packet keeps "
                   f"its own release time); goodput of a {a.seconds:g} s backlogged transfer ("
                   + ("XQUIC, one path: a file too large to finish, stopped at the cap; " if a.stack == "xquic" else
                      "kernel MPTCP with one subflow, bulk; ") + "its handshake not counted).")
    ccs = a.ccs.split(",")
    big = WorkloadSpec(type="file", file_mb=10 * GRID_MBPS * a.seconds / 8, duration_s=a.seconds)
    for loss in (float(x) for x in a.loss.split(",")):
        for jitter in (float(x) for x in a.jitter.split(",")):
            keys = {cc: {"loss_pct": loss, "jitter_ms": jitter, "cc": cc} for cc in ccs}
            if not any(rec.missing(k, "goodput_mbps", a.runs) for k in keys.values()):
                continue
            scen = grid_scenario(loss, jitter, a.seconds)
            work = big if a.stack == "xquic" else scen.workload
            with verified_testbed(rec, scen, scen.name) as tb:
                if tb is None:
                    continue
                for cc in ccs:
                    record_runs(rec, keys[cc], ("goodput_mbps",), a.runs,
                                lambda cc=cc, w=work: transfer_goodput(a.stack, tb, cc, w, capped=True))


def record_queue(a: argparse.Namespace) -> None:
    stacks = a.stacks.split(",")
    rec = Recorder("queue", "xquic+linux", "; ".join(f"{s}: {stack_version(s)}" for s in STACK_CCS), a.out,
                   f"Two flows of one CC (stack linux: two kernel TCP flows; stack xquic: two XQUIC connections) "
                   f"sharing one path: {QUEUE_MBPS:g} Mbit/s, {2 * QUEUE_DELAY_MS:g} ms RTT, no loss, no jitter, "
                   f"drop-tail buffer of buffer_bdp BDP; both flows run {QUEUE_END_S:g} s; queue_bdp: the bottleneck's "
                   f"backlog (tc counters, every 20 ms) averaged from {QUEUE_WARMUP_S:g} to {QUEUE_END_S:g} s over "
                   "the BDP, in bytes on the wire (as benchmarks/sim_vs_live.py); goodput_mbps: both flows together. "
                   "One testbed per buffer, reused across runs (1 s pause between runs for the queue to drain).")
    for buffer in (float(x) for x in a.buffers.split(",")):
        cells = [(s, cc) for s in stacks for cc in QUEUE_CCS[s]]
        if a.ccs:
            cells = [(s, cc) for s, cc in cells if cc in a.ccs.split(",")]
        if not any(rec.missing({"stack": s, "buffer_bdp": buffer, "cc": cc}, "queue_bdp", a.runs) for s, cc in cells):
            continue
        scen = shared_bottleneck(buffer, bandwidth_mbps=QUEUE_MBPS, delay_ms=QUEUE_DELAY_MS, duration_s=QUEUE_END_S)
        with verified_testbed(rec, scen, f"shared bottleneck {buffer:g} BDP") as tb:
            if tb is None:
                continue
            for stack, cc in cells:
                def measure(stack: str = stack, cc: str = cc) -> tuple[tuple[float, ...], str]:
                    time.sleep(1.0)  # the previous run's queue drains
                    return two_flow_queue(tb, cc, stack == "xquic", QUEUE_WARMUP_S, QUEUE_END_S), "two flows"

                record_runs(rec, {"stack": stack, "buffer_bdp": buffer, "cc": cc}, ("queue_bdp", "goodput_mbps"),
                            a.runs, measure)


def _numbers(ap: argparse.ArgumentParser, option: str, text: str, ok: Callable[[float], bool],
             allowed: str) -> list[float]:
    """The comma-separated numbers of ``option``, each ``ok``, or the parser's usage error."""
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        ap.error(f"{option} takes comma-separated numbers, got {text!r}")
    bad = [x for x in values if not ok(x)]
    if bad:
        ap.error(f"{option} values must be {allowed}, got {', '.join(f'{x:g}' for x in bad)}")
    return values


def check_values(ap: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Every value of the command line, before any live work: a recording takes an hour, and a bad
    scenario name or number in its lists ended it in a traceback when its turn came, after the
    cells before it were measured."""
    if a.table == "ispras":
        for name in a.scenarios.split(","):
            try:
                load_scenario(name)
            except ConfigError as err:
                ap.error(f"--scenarios: {err}")
        if not a.file_mib > 0:
            ap.error(f"--file-mib must be > 0, got {a.file_mib:g}")
    elif a.table == "grid":  # each cell's path, checked by the scenario schema (loss_pct, jitter_ms, duration_s)
        for loss in _numbers(ap, "--loss", a.loss, math.isfinite, "finite"):
            for jitter in _numbers(ap, "--jitter", a.jitter, math.isfinite, "finite"):
                try:
                    grid_scenario(loss, jitter, a.seconds)
                except ConfigError as err:
                    ap.error(f"--loss {loss:g} --jitter {jitter:g} --seconds {a.seconds:g}: {err}")
    else:
        _numbers(ap, "--buffers", a.buffers, lambda x: x > 0 and math.isfinite(x), "finite and > 0 (BDP)")
    try:
        make_writable_dir(a.out)
    except OSError as err:
        ap.error(f"--out {a.out}: cannot write the tables there ({err.strerror or err})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="table", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs", type=int, default=MIN_RUNS, help="runs per cell (at least %(default)s)")
    common.add_argument("--out", type=Path, default=DATA_DIR, help="directory of the tables (%(default)s)")
    p = sub.add_parser("ispras", parents=[common], help="ISPRAS s1-s3 x CCs, file transfers")
    p.add_argument("--stack", choices=tuple(STACK_CCS), required=True)
    p.add_argument("--scenarios", default="ispras_s1,ispras_s2,ispras_s3")
    p.add_argument("--ccs")
    p.add_argument("--file-mib", type=float, default=ISPRAS_FILE_MIB)
    p.add_argument("--replace-unsplit", action="store_true",
                   help="record the named cells afresh: runs kept without per-path bytes move to the cell's failed")
    p = sub.add_parser("grid", parents=[common], help="single path: random loss x jitter x CCs, bulk")
    p.add_argument("--stack", choices=tuple(STACK_CCS), required=True)
    p.add_argument("--loss", default="0,0.5,2", help="random loss, %% per direction")
    p.add_argument("--jitter", default="0,2,5", help="jitter (standard deviation), ms per direction")
    p.add_argument("--ccs")
    p.add_argument("--seconds", type=float, default=GRID_SECONDS)
    p = sub.add_parser("queue", parents=[common], help="two-flow standing queue, 1 and 5 BDP buffers")
    p.add_argument("--stacks", default="linux,xquic")
    p.add_argument("--buffers", default="1,5")
    p.add_argument("--ccs", help="only these CCs (default: cubic, bbr; bbr2 on XQUIC)")
    a = ap.parse_args()
    if a.runs < MIN_RUNS:
        ap.error(f"--runs must be at least {MIN_RUNS}, got {a.runs}")
    if a.table in ("ispras", "grid"):
        a.ccs = a.ccs or ",".join(STACK_CCS[a.stack])
        bad = [cc for cc in a.ccs.split(",") if cc not in STACK_CCS[a.stack]]
        if bad:
            ap.error(f"--ccs: {', '.join(bad)} not on stack {a.stack}; valid: {', '.join(STACK_CCS[a.stack])}")
    else:
        bad = [s for s in a.stacks.split(",") if s not in STACK_CCS]
        if bad:
            ap.error(f"--stacks: unknown {', '.join(bad)}; valid: {', '.join(STACK_CCS)}")
    check_values(ap, a)
    reason = unavailable_reason()
    if reason:
        print(f"live runs unavailable: {reason}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    {"ispras": record_ispras, "grid": record_grid, "queue": record_queue}[a.table](a)
    print(f"done in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
