"""One XQUIC path beside one kernel Reno flow (``rfc6356_one_path``), the bottleneck buffer counted
in bytes or in packets: the isolation behind the testbed's byte buffer (docs/transport.md, "Network").

    sudo python benchmarks/buffer_share_live.py --runs 2                     # the testbed's buffer (bytes)
    sudo python benchmarks/buffer_share_live.py --buffer packets --runs 2    # a pfifo of as many packets
    sudo python benchmarks/buffer_share_live.py --buffer packets --pacing    # ... with XQUIC's pacer on
    sudo python benchmarks/buffer_share_live.py --alone                      # no Reno flow: does XQUIC fill the link?

``--buffer packets`` replaces the bottleneck's ``bfifo`` of ``queue_packets`` full-size frames by a
``pfifo`` of ``queue_packets`` packets (the testbed's buffer until XQUIC's 1244-byte packets were
found to draw most of the drops in it beside TCP's 1500-byte ones). Per run, after the Reno flow
ran alone for ``--warmup`` s: XQUIC's goodput and the Reno flow's rate over the same wall time,
their ratio, each flow's window halvings (XQUIC's window every 10 ms, the Reno flow's ssthresh
from ``ss -ti`` every 100 ms) and resent packets, and the machine's load average.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envs.live.network_testbed import make_testbed  # noqa: E402
from envs.live.provenance import load_average  # noqa: E402
from envs.live.system import LiveError, run  # noqa: E402
from envs.live.verification import start_verified  # noqa: E402
from envs.live.xquic import XquicTransfer  # noqa: E402
from envs.scenario import WorkloadSpec, load_scenario, scenario_from_dict  # noqa: E402
from envs.sim.layout import OBS_CWND, OBS_LOSSES  # noqa: E402

SCENARIO = "rfc6356_one_path"
SS_FIELDS = {"ssthresh": re.compile(r"ssthresh:(\d+)"), "retrans": re.compile(r"retrans:\d+/(\d+)")}


def scenario(alone: bool):
    """rfc6356_one_path, without its Reno flow when ``alone``."""
    spec = load_scenario(SCENARIO).model_dump(exclude_none=True)
    if alone:
        spec["links"]["shared"].pop("competing", None)
    return scenario_from_dict(spec)


def count_packets(tb) -> None:
    """The shared link's buffer as a pfifo of as many packets as the bfifo holds full-size frames."""
    k = tb.network.names.index("shared")
    h, d = tb.links[k], next(d for d in tb.link_directions if d.path == k and d.forward)
    pid = tb.host_pid(h.a)
    run(["tc", "qdisc", "del", "dev", h.a_if, "parent", "5:1", "handle", "10:"], pid)
    run(["tc", "qdisc", "add", "dev", h.a_if, "parent", "5:1", "handle", "10:", "pfifo", "limit", str(d.queue_packets)],
        pid)


def kernel_flow(tb) -> dict[str, int] | None:
    """The Reno flow's ssthresh (packets) and total resent segments, from ``ss -ti`` on its sender."""
    if not tb.competing_links():
        return None
    h = tb.links[tb.competing_links()[0]]
    out = run(["ss", "-tin", "dst", h.y_ip], tb.host_pid(h.x)).stdout
    for line in out.splitlines():
        if "cwnd:" in line:
            return {k: int(m.group(1)) if (m := r.search(line)) else 0 for k, r in SS_FIELDS.items()}
    return None


def one_run(tb, seconds: float, pacing: bool, seed: int) -> dict:
    trace: list[dict[str, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            row = kernel_flow(tb)
            if row:
                trace.append(row)
            stop.wait(0.1)

    comp = tb.competition
    before, t0 = (comp.stats() if comp else None), time.monotonic()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    tr = XquicTransfer(tb, "reno", WorkloadSpec(type="file", file_mb=200.0), telemetry_ms=10.0, scheduler="minrtt",
                       max_duration_s=seconds, seed=seed, pacing=pacing)
    res = tr.run()
    wall = time.monotonic() - t0
    stop.set()
    sampler.join()
    t, obs = res.times, res.obs[:, 0]
    late = t > 1.0  # after slow start
    cwnd = obs[:, OBS_CWND]
    row = {"xquic_mbps": float(res.metrics()["goodput_mbps"][0]),
           "xquic_halvings": int(np.sum((cwnd[1:] < 0.8 * cwnd[:-1]) & late[1:])),
           "xquic_resent": int(obs[-1, OBS_LOSSES] - obs[late][0, OBS_LOSSES]) if late.any() else 0,
           "load": load_average()}
    if comp is not None:
        after = comp.stats()
        row["reno_mbps"] = sum(8e-6 * (after[k]["received_bytes"] - before[k]["received_bytes"]) / wall for k in after)
        row["ratio"] = row["xquic_mbps"] / row["reno_mbps"]
        ss = [r["ssthresh"] for r in trace]
        row["reno_halvings"] = sum(1 for a, b in zip(ss, ss[1:]) if b != a)
        row["reno_resent"] = trace[-1]["retrans"] - trace[0]["retrans"] if trace else 0
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buffer", choices=("bytes", "packets"), default="bytes",
                    help="the bottleneck buffer: the testbed's bfifo (bytes) or a pfifo of as many packets")
    ap.add_argument("--pacing", action="store_true", help="XQUIC's pacer on (bindings/ paces bbr and bbr2 only)")
    ap.add_argument("--alone", action="store_true", help="no Reno flow on the link")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=25.0, help="XQUIC's transfer per run")
    ap.add_argument("--warmup", type=float, default=10.0, help="the Reno flow alone before the first run")
    args = ap.parse_args()
    tb = start_verified(lambda: make_testbed(scenario(args.alone), seed=0), 3, 20.0,
                        lambda attempt, err: print(f"verification failed (attempt {attempt}): {err}"))
    try:
        if args.buffer == "packets":
            count_packets(tb)
        print(f"{SCENARIO}{' without its Reno flow' if args.alone else ''}, buffer in {args.buffer}, XQUIC reno "
              f"{'paced' if args.pacing else 'unpaced'}; load average {load_average():.2f}")
        time.sleep(0.0 if args.alone else args.warmup)
        for i in range(args.runs):
            row = one_run(tb, args.seconds, args.pacing, seed=i)
            print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                               for k, v in row.items()), flush=True)
    except LiveError as err:
        sys.exit(f"error: {err}")
    finally:
        problems = tb.close()
        if problems:
            print(f"teardown left: {problems}", file=sys.stderr)


if __name__ == "__main__":
    main()
