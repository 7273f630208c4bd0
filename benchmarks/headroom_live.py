"""Is a cell's headroom over minRTT real, or a simulator artefact? The scheduler that realises a
cell's searched best (studies/headroom.py) against minRTT on the live XQUIC testbed, runs
alternating on one verified testbed, every run kept with its provenance.

    nice -n -10 flock /tmp/mpsched-live.lock python benchmarks/headroom_live.py \\
        --scenario hetero_small_file --cc cubic --runs 3 \\
        --scheduler minrtt --scheduler fast_only --checkpoint dqn_completion=outputs/.../checkpoint \\
        --out tests/data/headroom_live.json

``--scheduler`` takes XQUIC's schedulers (minrtt, rr, ecf, blest, wait_rule, ...; envs/live/xquic.py),
with parameters as the headroom table labels them (``"wait_rule(k=1.25)"``, ``"ecf(beta=0.5)"``), and
``fast_only``: the blocked rule (the fast path when it has window) with "wait" as the answer
whenever it is blocked, run as an exported policy (an ISPRAS DQN header whose output bias makes
"wait" win at every input: the same policy hook in get_path as a learned policy). ``--checkpoint
label=DIR`` exports a trained checkpoint and runs it inside XQUIC. Each batch appends one record
to ``--out`` (date, kernel, XQUIC commit, command, load average, the testbed's verification, and
every run); ``python -m studies.headroom --live tests/data/headroom_live.json`` prints the
table. Needs root, the live dependencies and the mpsched_xquic extension; wrap it in the shared
live lock and keep a batch to minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.errors import ConfigError  # noqa: E402
from envs.live.provenance import load_average, provenance  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.system import LiveError  # noqa: E402
from envs.live.testbed import verified  # noqa: E402
from envs.live.xquic import XquicBackend, extension  # noqa: E402
from envs.plugins import parse_scheduler_label  # noqa: E402
from envs.scenario import resolve_scenarios  # noqa: E402
from envs.sim.layout import OBS_ACKED, OBS_SENT  # noqa: E402
from export import fast_only_header  # noqa: E402
from studies.headroom import format_live  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def scheduler_with_params(label: str) -> tuple[str, dict[str, float]]:
    """``"wait_rule(k=1.25)"`` -> ``("wait_rule", {"k": 1.25})``, checked against XQUIC's schedulers."""
    try:
        name, params = parse_scheduler_label(label)
        XquicBackend.check_scheduler(name, params)  # an unknown scheduler or parameter, named
    except (ConfigError, LiveError) as err:
        sys.exit(f"error: --scheduler: {err}")
    return name, params


def first_time(times, mask) -> float | None:
    """The first telemetry time (s after the handshake) at which ``mask`` holds, None if never."""
    hit = np.flatnonzero(mask)
    return float(times[hit[0]]) if len(hit) else None


def path_opening(result) -> dict[str, list[float | None]]:
    """When each path opened and carried its first byte, from XQUIC's interval records (every
    ``telemetry_ms``, time zero at the end of the handshake): ``open_s`` (the path is active),
    ``first_sent_s`` (bytes sent > 0) and ``first_acked_s`` (bytes acknowledged > 0). A path that
    XQUIC validates only after the handshake on the first carries data one round trip of its own
    late, where the simulator has both paths from t = 0."""
    t, obs, active = result.times, result.obs, result.has_subflow
    paths = range(obs.shape[1]) if obs.ndim == 3 else range(0)
    return {"open_s": [first_time(t, active[:, p]) for p in paths],
            "first_sent_s": [first_time(t, obs[:, p, OBS_SENT] > 0) for p in paths],
            "first_acked_s": [first_time(t, obs[:, p, OBS_ACKED] > 0) for p in paths]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scheduler", action="append", default=[], help="minrtt, ecf, blest, fast_only, ...")
    ap.add_argument("--checkpoint", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "headroom_live.json"))
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit(f"error: --runs must be >= 1, got {a.runs}")
    reason = unavailable_reason()
    if reason:
        sys.exit(f"live runs unavailable: {reason}")
    ext = extension()
    tmp = Path(tempfile.mkdtemp(prefix="mpsched-headroom-"))
    scheds: dict[str, tuple[str, dict[str, float]]] = {}
    for name in a.scheduler or ["minrtt"]:
        scheds[name] = ((f"policy={fast_only_header(tmp / 'fast_only.h')}", {}) if name == "fast_only"
                        else scheduler_with_params(name))
    for item in a.checkpoint:
        label, _, directory = item.partition("=")
        if not directory:
            sys.exit(f"error: --checkpoint takes LABEL=DIR, got {item!r}")
        from export import export_checkpoint
        export_checkpoint(directory, tmp / f"{label}.h", prefix=label)
        scheds[label] = (f"policy={tmp / f'{label}.h'}", {})
    scen = resolve_scenarios(a.scenario)[0]
    prov = provenance("python benchmarks/headroom_live.py", sys.argv[1:])
    prov["load_before"] = prov.pop("load_avg")
    record = {"scenario": scen.name, "cc": a.cc, "workload": scen.workload.model_dump(mode="json"), **prov,
              "stack": f"XQUIC {ext.XQUIC_COMMIT}", "schedulers": list(scheds), "runs": []}
    with verified(scen) as tb:
        record["verification"] = tb.verification.table() if tb.verification is not None else "not run"
        for run in range(a.runs):
            for name, (sched, params) in scheds.items():
                t0 = time.time()
                r = XquicBackend.transfer(tb, a.cc, scen.workload, 10.0, sched, scheduler_params=params).run()
                m = r.metrics()
                row = {"scheduler": name, "run": run, "outcome": r.extra.get("outcome"), "error": r.error or "",
                       "goodput_mbps": float(m["goodput_mbps"][0]), "completion_s": float(r.completion_s),
                       "path_bytes": [float(x) for x in r.path_bytes], "wall_s": time.time() - t0,
                       "load1": load_average(), "path_opening": path_opening(r)}
                record["runs"].append(row)
                print(f"{scen.name} / {a.cc} run {run} {name:16s}: {row['goodput_mbps']:7.2f} Mbit/s, "
                      f"{row['outcome']}, path bytes {row['path_bytes']}, path opening {row['path_opening']}",
                      flush=True)
    record["load_after"] = list(os.getloadavg())
    out = Path(a.out)
    data = json.loads(out.read_text()) if out.exists() else {"cells": []}
    data["cells"].append(record)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(format_live([record]))
    print(f"appended to {out}")


if __name__ == "__main__":
    from envs.errors import ending

    with ending():  # a failed verification or a refused input: one line, not a traceback
        main()
