"""How often does a live XQUIC transfer hang, and how often did the extension re-arm a loss
detection timer XQUIC had dropped (README, "XQUIC")? Many short transfers on one testbed, each
cut off after ``--limit`` seconds; prints per congestion control and scheduler the outcomes, the
re-arms (``loss_timers_rearmed``), and the longest wall time.

    nice -n -10 flock /tmp/mpsched-live.lock python benchmarks/xquic_hangs.py \\
        --scenario ispras_s3 --file-mb 2 --pairs cubic:minrtt bbr2:ecf --repeats 200

A hang shows as outcome ``stopped`` at ``--limit`` seconds. Load makes the dropped timer more
likely: run it beside a CPU-bound job to see it. Needs root, the live dependencies and the
mpsched_xquic extension; wrap it in the shared live lock.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.live.provenance import load_average  # noqa: E402
from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.live.xquic import XquicBackend  # noqa: E402
from envs.scenario import resolve_scenarios  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="ispras_s3")
    ap.add_argument("--file-mb", type=float, default=2.0)
    ap.add_argument("--pairs", nargs="+", default=["cubic:minrtt", "bbr2:ecf"], metavar="CC:SCHEDULER")
    ap.add_argument("--repeats", type=int, default=100, help="transfers per pair, alternating (default 100)")
    ap.add_argument("--limit", type=float, default=15.0, help="seconds before a transfer counts as hung")
    args = ap.parse_args(argv)
    reason = unavailable_reason()
    if reason:
        print(f"live runs unavailable here: {reason}", file=sys.stderr)
        return 2
    if any(p.count(":") != 1 for p in args.pairs):
        ap.error("--pairs takes CC:SCHEDULER, e.g. bbr2:ecf")
    pairs = [(p.split(":")[0], p.split(":")[1]) for p in args.pairs]
    scenario = resolve_scenarios(args.scenario)[0].with_workload(file_mb=args.file_mb)
    outcomes: dict[tuple[str, str], collections.Counter[str]] = {p: collections.Counter() for p in pairs}
    rearmed = dict.fromkeys(pairs, 0)
    longest = dict.fromkeys(pairs, 0.0)
    loads: list[float] = []
    tb = Testbed(scenario, verify=True)
    try:
        tb.start()
        for _ in range(args.repeats):
            for cc, scheduler in pairs:
                tr = XquicBackend.transfer(tb, cc, scenario.workload, 10.0, scheduler)
                r = tr.run(args.limit)
                longest[cc, scheduler] = max(longest[cc, scheduler], r.wall_s)
                outcomes[cc, scheduler][r.extra["outcome"]] += 1
                rearmed[cc, scheduler] += int(r.extra.get("loss_timers_rearmed", 0))
            loads.append(load_average())
    finally:
        problems = tb.close()
    print(f"{args.scenario}, {args.file_mb:g} MB, {args.repeats} transfers per pair, limit {args.limit:g} s, "
          f"load {min(loads, default=0):.1f}-{max(loads, default=0):.1f}")
    for pair in pairs:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes[pair].items()))
        print(f"  {pair[0]:6s} {pair[1]:8s} {counts}; loss timers re-armed {rearmed[pair]}; "
              f"longest {longest[pair]:.1f} s")
    if problems:
        print("testbed clean-up problems: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
