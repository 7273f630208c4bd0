"""Kernel MPTCP's slow-start exit and undo, live: where Linux CUBIC (tcp_cubic.c's HyStart) and
Reno leave slow start, and how often the sender undoes a reduction, on the fidelity tables' paths
(tests/test_stack_fidelity.py, the Linux CUBIC and Reno gaps).

    sudo python benchmarks/slow_start_live.py ispras_s1 --ccs cubic,reno --runs 2
    sudo python benchmarks/slow_start_live.py grid:0/5 --runs 2      # grid_linux: loss 0 %, jitter 5 ms

One verified testbed (envs.live.testbed) for the scenario (``ispras_s1|s2|s3`` with the tables'
20 MiB file, or ``grid:<loss_pct>/<jitter_ms>``, the grid table's 10 s path), then per run and CC
one kernel MPTCP transfer (``envs.live.mptcp``). Printed per transfer: goodput, the machine's load
average, the client namespace's TCP counters that moved (``nstat``: TcpExtTCPHystartDelayDetect
and ...DelayCwnd, the window at which HyStart's delay test ended slow start;
...TrainDetect/...TrainCwnd for its ACK-train test; TCPFullUndo, TCPPartialUndo, TCPLossUndo,
TCPDSACKUndo; DSACKs, SACK reordering, fast retransmits, timeouts), and per subflow the window,
ssthresh and CA state (tcp_info) every 0.25 s over the first ``--trace-s`` s, read every 5 ms.
Run it alone (``flock /tmp/mpsched-live.lock``): it needs root and the live setup.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.fidelity import GRID_SECONDS, ISPRAS_FILE_MIB, MIB, grid_scenario  # noqa: E402
from envs.live.mptcp import MptcpTransfer  # noqa: E402
from envs.live.provenance import load_average  # noqa: E402
from envs.live.telemetry import subflow_infos  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.live.verification import verified_testbed  # noqa: E402
from envs.scenario import Scenario, load_scenario  # noqa: E402

COUNTERS = ("TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartDelayDetect",
            "TcpExtTCPHystartDelayCwnd", "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPLossUndo",
            "TcpExtTCPDSACKUndo", "TcpExtTCPSpuriousRTOs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes",
            "TcpExtTCPDSACKRecv", "TcpExtTCPSACKReorder", "TcpExtTCPTSReorder", "TcpExtTCPFastRetrans",
            "TcpExtTCPSackRecovery", "TcpExtTCPDSACKIgnoredNoUndo", "TcpRetransSegs", "TcpOutSegs")
INFINITE_SSTHRESH = 1 << 30  # TCP_INFINITE_SSTHRESH is 0x7fffffff: "none yet"


def scenario(name: str) -> Scenario:
    if name.startswith("grid:"):
        loss, jitter = (float(x) for x in name[len("grid:"):].split("/"))
        return grid_scenario(loss, jitter, GRID_SECONDS)
    return load_scenario(name).with_workload(file_mb=ISPRAS_FILE_MIB * MIB / 1e6)


def counters(tb: Testbed) -> dict[str, int]:
    """The client namespace's SNMP counters (absolute, nstat's history left alone)."""
    flat: dict[str, int] = {}
    for group in json.loads(tb.run("client", ["nstat", "-asz", "--json"]).stdout).values():
        flat.update(group)
    return flat


def transfer(tb: Testbed, scen: Scenario, cc: str, trace_s: float) -> None:
    before = counters(tb)
    tr = MptcpTransfer(tb, cc, scen.workload, telemetry_ms=50.0).start()
    client = tr._socks[1]  # the client's MPTCP socket (MptcpTransfer._start)
    trace: list[tuple[float, list[tuple[int, int, int]]]] = []
    t0 = time.monotonic()
    while not tr.done.is_set() and time.monotonic() - t0 < trace_s:
        try:
            infos, _ = subflow_infos(client)
        except OSError:
            break
        trace.append((time.monotonic() - t0, [(i.snd_cwnd, i.snd_ssthresh, i.ca_state) for i in infos]))
        time.sleep(0.005)
    tr.wait()
    res = tr.result()
    after = counters(tb)
    moved = {k.removeprefix("TcpExt"): after.get(k, 0) - before.get(k, 0) for k in COUNTERS}
    print(f"== {scen.name} {cc}: goodput {float(res.metrics()['goodput_mbps'][0]):.2f} Mbit/s, "
          f"load {load_average():.2f}{', error: ' + res.error if res.error else ''}", flush=True)
    print("   " + " ".join(f"{k}={v}" for k, v in moved.items() if v), flush=True)
    for f in range(max((len(s) for _, s in trace), default=0)):
        rows = [(t, s[f]) for t, s in trace if len(s) > f]
        marks, shown = [], 0.0
        for t, (cwnd, ssthresh, state) in rows:
            if t >= shown:
                marks.append(f"{t:.2f}s {cwnd}/{ssthresh if ssthresh < INFINITE_SSTHRESH else '-'}/{state}")
                shown += 0.25
        print(f"   subflow {f} (cwnd/ssthresh/ca_state): " + ", ".join(marks), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", help="ispras_s1|ispras_s2|ispras_s3 or grid:<loss_pct>/<jitter_ms>")
    ap.add_argument("--ccs", default="cubic,reno")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--trace-s", type=float, default=4.0, help="seconds of tcp_info trace (%(default)s)")
    a = ap.parse_args()
    scen = scenario(a.scenario)
    with verified_testbed(lambda: Testbed(scen, verify=True)) as tb:
        for _ in range(a.runs):
            for cc in a.ccs.split(","):
                transfer(tb, scen, cc, a.trace_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
