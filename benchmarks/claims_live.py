"""The claims the simulator does not reproduce (docs/claims.md), checked live: XQUIC with the
workbench's schedulers inside it (``bindings/src/mps_rules.c``) on the scenarios' networks built
by ``envs.live.network_testbed`` (shared bottlenecks, competing flows arriving and leaving).

    sudo python benchmarks/claims_live.py leeyoo --runs 5
    sudo python benchmarks/claims_live.py kato --runs 3 [--scenarios kato_4]
    sudo python benchmarks/claims_live.py mptcp_tut --runs 3 [--scenarios mptcp_tut_mesh_e3]
    sudo python benchmarks/claims_live.py mptcp_tut_olia --runs 3   # mptcp_tut_balia: the same under BALIA
    sudo python benchmarks/claims_live.py rfc6356 --runs 3

Every run is appended with its provenance to ``--out`` (default ``tests/data/claims_live.json``)
as soon as it ends, and a rerun gives each cell only the runs it lacks, so recording goes in short
batches; ``benchmarks/reproduce_claims.py`` reads the file for the "live" column of docs/claims.md.
One testbed per scenario, verified before its runs (and before its competing traffic starts);
the schedulers of a scenario take turns run by run, so a change of the machine's load falls on
all of them alike. Each run records the machine's 1-minute load average.

What the live stacks cannot run is substituted, and the file says so: of the coupled CCs LIA, OLIA
and BALIA run live (``bindings/src/mps_coupled.c``: each across XQUIC's paths; wVegas exists
neither in XQUIC nor in upstream Linux MPTCP), so KATO runs LIA as its study does and MPTCP-TUT
runs one family per coupled CC (``mptcp_tut`` LIA, ``mptcp_tut_olia``, ``mptcp_tut_balia``); the studies' long transfers (MPTCP-TUT's 60 s of 3 MB messages,
KATO's web map service, LEEYOO's 300-chunk video) become file transfers of the sizes below, a
fresh connection each (XQUIC's transfers are files).

``rfc6356`` checks RFC 6356's goals on ``rfc6356_shared`` (the network of tests/test_network.py's
law): XQUIC with LIA on its two paths through one 10 Mbit/s link beside one kernel Reno flow, the
uncoupled control (XQUIC's Reno on both paths), and on ``rfc6356_one_path`` the single-path flow
the goals compare with (one XQUIC path under the same CC beside the Reno flow). Each run records
XQUIC's goodput and the Reno flow's rate over the same transfer (``competition_during``).

A family recorded under another setting (CC, file size, time limit), or any family with
``--fresh`` (a re-run on the current tree), keeps its earlier record in ``earlier`` (newest last)
and starts afresh; ``reproduce_claims.py`` shows the newest earlier record beside the current
one (before/after).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envs.live.network_testbed import make_testbed  # noqa: E402
from envs.live.provenance import load_average, utc_now  # noqa: E402
from envs.live.provenance import provenance as live_provenance  # noqa: E402
from envs.live.system import LiveError  # noqa: E402
from envs.live.verification import VerificationError, start_verified  # noqa: E402
from envs.live.xquic import XquicTransfer, extension  # noqa: E402
from envs.live.xquic_build import bindings_digest  # noqa: E402
from envs.scenario import WorkloadSpec, load_scenario  # noqa: E402

DEFAULT_OUT = ROOT / "tests" / "data" / "claims_live.json"
VERIFY_ATTEMPTS = 4  # per testbed; 30 s apart


@dataclass(frozen=True)
class Family:
    """One claim family's live cells: scenarios x schedulers under one CC and one workload."""

    scenarios: tuple[str, ...]
    schedulers: tuple[tuple[str, str, float], ...]  # (label, XQUIC scheduler, kato alpha)
    cc: str
    file_mb: float
    time_limit_s: float
    warmup_s: float  # competing traffic runs this long before the first transfer
    capped: bool  # a transfer the time limit stops is a measurement (goodput over the limit), not a failure
    substitution: str
    workload: str
    cell_ccs: tuple[str, ...] = ()  # a family comparing CCs: each scheduler cell's CC (default: cc for all)

    def cell_cc(self, label: str) -> str:
        """The CC of the cell ``label``."""
        if not self.cell_ccs:
            return self.cc
        return self.cell_ccs[[lab for lab, _, _ in self.schedulers].index(label)]


def mptcp_tut_family(cc: str) -> Family:
    """MPTCP-TUT's full mesh under one of the coupled CCs XQUIC runs (bindings/src/mps_coupled.c)."""
    return Family(
        tuple(f"mptcp_tut_mesh_e{k}" for k in range(8)),
        (("rr", "rr", 0.5), ("minrtt", "minrtt", 0.5), ("hsr", "hsr", 0.5), ("lws", "lws", 0.5),
         ("lts", "lts", 0.5)), cc, 40.0, 20.0, 0.0, True,
        f"{cc.upper()} coupled across XQUIC's paths (bindings/src/mps_coupled.c) for the study's {cc.upper()}; "
        "wVegas, the study's fourth coupled CC, exists in neither XQUIC nor upstream Linux MPTCP",
        "a 40 MB file capped at 20 s standing for 500 messages of 3 MB capped at 60 s (e2 and e3 finish in about 10 s "
        "at the client-side bottlenecks' 35 Mbit/s, e0 and e1 in about 17 s at 20 Mbit/s; the lossy e4-e7 carry a few "
        "Mbit/s and are capped); goodput = bytes delivered in order / time")


FAMILIES = {
    "leeyoo": Family(
        ("leeyoo_static_dash",), (("minrtt", "minrtt", 0.5), ("ecf", "ecf", 0.5)), "cubic", 1.25, 60.0, 0.0, False,
        "none for the schedulers and the CC (CUBIC, as the simulated study); MPQUIC (quic-go) is XQUIC here",
        "one chunk: 1.25 MB (1 s at the ladder's top 10 Mbit/s, the bitrate the simulated client streams), a "
        "fresh connection per chunk; download time = completion time after the handshake"),
    "kato": Family(
        ("kato_4", "kato_churn_3"),
        (("minrtt", "minrtt", 0.5), ("kato_0.25", "kato", 0.25), ("kato_0.5", "kato", 0.5),
         ("kato_0.75", "kato", 0.75)), "lia", 3.0, 120.0, 5.0, False,
        "none for the CC: LIA coupled across XQUIC's paths (bindings/src/mps_coupled.c, RFC 6356), as the study's Linux "
        "MPTCP runs it",
        "a 3 MB file (about 15-20 s beside the competition) standing for the 60 s bulk transfer; throughput over "
        "whole 1 s windows of the acknowledged bytes"),
    # MPTCP-TUT's family per coupled CC that runs live ("mptcp_tut" is LIA's, as first recorded)
    **{"mptcp_tut" if cc == "lia" else f"mptcp_tut_{cc}": mptcp_tut_family(cc) for cc in ("lia", "olia", "balia")},
    "rfc6356": Family(
        ("rfc6356_shared", "rfc6356_one_path"), (("lia", "minrtt", 0.5), ("reno", "minrtt", 0.5)), "lia", 60.0, 40.0,
        10.0, True,
        "LIA coupled across XQUIC's paths (bindings/src/mps_coupled.c, RFC 6356) against one kernel Reno TCP flow; the "
        "uncoupled control is XQUIC's NewReno on each path",
        "a 60 MB file capped at 40 s (the pair cannot finish it beside the Reno flow), after the Reno flow has run "
        "alone for 10 s; the pair's goodput against the single path's (rfc6356_one_path, same CC) and against the "
        "Reno flow's rate during the transfer; the bottleneck's 1 BDP buffer holds bytes (35 full-size frames, a bfifo: "
        "envs/live/emulation.py)",
        cell_ccs=("lia", "reno")),
}


def load_record(path: Path) -> dict:
    if path.is_file():
        return json.loads(path.read_text())
    return {"families": {}}


def save_record(path: Path, record: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)


def window_stats(t: np.ndarray, acked: np.ndarray, end_s: float, window_s: float = 1.0) -> tuple[float, float]:
    """Mean and variance (Mbit/s, (Mbit/s)^2) of the throughput over the whole windows of
    ``window_s`` from 0 to ``end_s``, from the cumulative acknowledged bytes sampled at ``t``."""
    n = int(math.floor(end_s / window_s))
    if n < 2 or len(t) < 2:
        return math.nan, math.nan
    grid = np.arange(n + 1) * window_s
    cum = np.interp(grid, t, acked, left=0.0)
    thr = np.diff(cum) * 8 / window_s / 1e6
    return float(thr.mean()), float(thr.var(ddof=1))


def provenance() -> dict:
    """The batch's provenance: the record every live tool keeps (envs.live.provenance) and the
    extension's file, modes and bindings digest."""
    mx = extension()
    return {**live_provenance("python benchmarks/claims_live.py", sys.argv[1:]), "stack": "xquic",
            "extension": Path(mx.__file__).name, "extension_modes": list(mx.MODES), "bindings_digest": bindings_digest(),
            "machine": f"{os.cpu_count()} cores, shared with other jobs (load average beside every run)"}


SETTING = ("cc", "file_mb", "time_limit_s")  # a record under other values is not continued


def family_entry(record: dict, name: str, fam: Family, fresh: bool) -> dict:
    """The family's record to continue: the recorded one if it was made under ``fam``'s setting
    and not ``fresh``; otherwise a new one, the recorded one (without its own earlier records)
    appended to its ``earlier`` with why it was set aside."""
    old = record["families"].get(name)
    changed = [k for k in SETTING if old is not None and old.get(k) != getattr(fam, k)]
    entry = old
    if old is None or changed or fresh:
        earlier = old.pop("earlier", []) if old is not None else []
        if old is not None:
            why = (f"recorded under {', '.join(f'{k} {old.get(k)}' for k in changed)}; now "
                   f"{', '.join(f'{k} {getattr(fam, k)}' for k in changed)}") if changed else "re-run with --fresh"
            earlier.append({**old, "set_aside": f"{utc_now()}: {why}"})
        entry = record["families"][name] = {"cells": {}, "batches": [], **({"earlier": earlier} if earlier else {})}
    entry.update(cc=fam.cc, file_mb=fam.file_mb, time_limit_s=fam.time_limit_s, workload=fam.workload,
                 substitution=fam.substitution)
    return entry


def run_family(name: str, fam: Family, runs: int, scenarios: list[str], out: Path, seed: int,
               fresh: bool = False) -> None:
    record = load_record(out)
    entry = family_entry(record, name, fam, fresh)
    entry["batches"].append(provenance())
    save_record(out, record)
    for scen_name in scenarios:
        scenario = load_scenario(scen_name)
        cells = entry["cells"].setdefault(scen_name, {})
        todo = [(label, mode, alpha) for label, mode, alpha in fam.schedulers
                if len(cells.get(label, {}).get("runs", [])) < runs]
        if not todo:
            print(f"{name} {scen_name}: complete")
            continue
        failures = entry.setdefault("verification_failures", [])

        def failed(attempt: int, err: VerificationError, name: str = scen_name, failures: list = failures) -> None:
            failures.append({"scenario": name, "time": utc_now(), "load": load_average(),
                             "error": str(err).splitlines()[0]})
            save_record(out, record)  # kept even when every attempt fails and the batch stops
            print(f"verification failed (attempt {attempt}/{VERIFY_ATTEMPTS}, load {load_average():.1f}): "
                  f"{str(err).splitlines()[0]}", flush=True)

        tb = start_verified(partial(make_testbed, scenario, seed=seed), VERIFY_ATTEMPTS, 30.0, failed)
        try:
            assert tb.verification is not None  # started verified
            print(tb.describe())
            print(tb.verification.table())
            entry.setdefault("testbeds", {})[scen_name] = {"describe": tb.describe(),
                                                           "verification": tb.verification.table()}
            if fam.warmup_s:
                time.sleep(fam.warmup_s)
            for _ in range(runs):
                for label, mode, alpha in todo:
                    cell = cells.setdefault(label, {"scheduler": mode, "kato_alpha": alpha if mode == "kato" else None,
                                                    **({"cc": fam.cell_cc(label)} if fam.cell_ccs else {}),
                                                    "runs": [], "failed": []})
                    if len(cell["runs"]) >= runs:
                        continue
                    row = one_run(tb, fam, fam.cell_cc(label), mode, alpha,
                                  seed=seed * 1000 + len(cell["runs"]) + len(cell["failed"]))
                    (cell["runs"] if row["ok"] else cell["failed"]).append(row)
                    save_record(out, record)
                    print(f"{name} {scen_name} {label} run {len(cell['runs'])}: {summary(row)} (load {row['load']:.2f})",
                          flush=True)
        finally:
            problems = tb.close()
            if problems:
                print(f"teardown left: {problems}", file=sys.stderr)


def one_run(tb, fam: Family, cc: str, mode: str, alpha: float, seed: int) -> dict:
    work = WorkloadSpec(type="file", file_mb=fam.file_mb)
    competition = getattr(tb, "competition", None)
    if competition is not None:
        competition.check()
        before, start = competition.stats(), time.monotonic()
    transfer = XquicTransfer(tb, cc, work, telemetry_ms=10.0, scheduler=mode, max_duration_s=fam.time_limit_s,
                             scheduler_params={"alpha": alpha} if mode == "kato" else None, seed=seed)
    res = transfer.run()
    if competition is not None:
        after, wall = competition.stats(), time.monotonic() - start
    m = res.metrics()
    ex = res.extra
    from envs.sim.layout import COBS_ACKED
    mean, var = window_stats(res.times, res.cobs[:, COBS_ACKED] if len(res.times) else np.zeros(0), res.span_s)
    row = {"time": utc_now(), "load": load_average(),
           "outcome": ex.get("outcome"),
           "ok": ex.get("outcome") in ("finished", "ooo_abort", *(("timeout",) if fam.capped else ())) and not res.error,
           "error": res.error, "completion_s": float(res.completion_s), "span_s": float(res.span_s),
           "goodput_mbps": float(m["goodput_mbps"][0]), "throughput_mean_mbps": mean, "throughput_var_mbps2": var,
           "path_recv_bytes": [int(x) for x in ex.get("path_recv", [])], "paths_created": ex.get("paths_created"),
           "seed": seed}
    if competition is not None:
        row["competition"] = after
        # each link's competing traffic over the transfer's wall time (process start to exit)
        row["competition_during"] = {link: {"wall_s": wall, "goodput_mbps": 8e-6 * (after[link]["received_bytes"] -
                                                                                    before[link]["received_bytes"]) / wall}
                                     for link in after}
    return row


def summary(row: dict) -> str:
    during = "".join(f", competing on {link} {c['goodput_mbps']:.2f} Mbit/s during it"
                     for link, c in row.get("competition_during", {}).items())
    return (f"{row['outcome']}, goodput {row['goodput_mbps']:.2f} Mbit/s, completion {row['completion_s']:.3f} s, "
            f"1 s windows mean {row['throughput_mean_mbps']:.2f} var {row['throughput_var_mbps2']:.3f}{during}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("--runs", type=int, default=3, help="runs per cell (at least 3)")
    ap.add_argument("--scenarios", nargs="+", help="a part of the family's scenarios")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--fresh", action="store_true",
                    help="set the family's recorded runs aside (kept as its earlier record) and record afresh "
                         "(the first batch of a re-run only)")
    args = ap.parse_args()
    if args.runs < 3:
        ap.error("--runs: at least 3 runs per cell")
    fam = FAMILIES[args.family]
    scenarios = args.scenarios or list(fam.scenarios)
    unknown = [s for s in scenarios if s not in fam.scenarios]
    if unknown:
        ap.error(f"--scenarios: {', '.join(unknown)} not in {args.family}'s {', '.join(fam.scenarios)}")
    try:
        run_family(args.family, fam, args.runs, scenarios, args.out, args.seed, args.fresh)
    except LiveError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
