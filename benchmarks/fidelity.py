"""Fidelity report in one command: the simulator beside the recorded live tables for one stack.

    python -m benchmarks.fidelity stack=xquic            # or stack=linux; runs=10 out=outputs/fidelity
    python -m benchmarks.fidelity stack=linux --live     # re-measure the tables live first (root, live setup)

For every cell of the stack's reference tables (tests/data/live: ``ispras_<stack>``,
``grid_<stack>``, the stack's rows of ``queue``; ``envs.live.reference``) it simulates the same
setting under the stack's profile and prints the simulator's value beside the live mean and
min-max, their ratio and the pass mark (``envs/fidelity.py``: ISPRAS within 25% or inside the
live range, Spearman >= 0.8 of the CCs' order per scenario, grid within 30%, two-flow queue within
0.5 BDP). It writes ``fidelity_<stack>.md``, ``.csv`` and a figure ``fidelity_<stack>.png`` to
``out``. ``--live`` first records fresh tables with ``benchmarks/record_reference.py`` into
``out/live`` (needs root and ``python -m envs.live.setup --xquic``; about an hour per stack at 3
runs) and judges against those.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.errors import ConfigError, debug_argv, ending, make_writable_dir  # noqa: E402
from envs.fidelity import Report, markdown, report  # noqa: E402
from envs.live.reference import MIN_RUNS  # noqa: E402
from envs.sim.stacks import STACKS  # noqa: E402

RECORDER = Path(__file__).with_name("record_reference.py")


def parse(argv: list[str]) -> argparse.Namespace:
    """``key=value`` words (as Hydra's) or ``--key value``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", choices=STACKS, default="xquic")
    ap.add_argument("--runs", type=int, default=10, help="simulated connections per cell (%(default)s)")
    ap.add_argument("--out", type=Path, default=Path("outputs/fidelity"))
    ap.add_argument("--live", action="store_true", help="record the live tables afresh first (root, live setup)")
    ap.add_argument("--live-runs", type=int, default=MIN_RUNS, help="live runs per cell with --live (%(default)s)")
    words = []
    for word in argv:
        key, eq, value = word.partition("=")
        words += [f"--{key.replace('_', '-')}", value] if eq and not word.startswith("-") else [word]
    a = ap.parse_args(words)
    if a.runs < 1:  # the simulator's batch: "batch must be ..." in a traceback
        ap.error(f"--runs must be an integer >= 1, got {a.runs}")
    if a.live_runs < MIN_RUNS:
        ap.error(f"--live-runs must be an integer >= {MIN_RUNS} (envs.live.reference.MIN_RUNS), got {a.live_runs}")
    return a


def record_live(stack: str, runs: int, out: Path) -> Path:
    """Fresh tables for ``stack`` in ``out`` (the recorder's own command lines, one per table)."""
    out.mkdir(parents=True, exist_ok=True)
    for args in (["ispras", "--stack", stack], ["grid", "--stack", stack], ["queue", "--stacks", stack]):
        cmd = [sys.executable, str(RECORDER), *args, "--runs", str(runs), "--out", str(out)]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return out


def write(rep: Report, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {kind: out / f"fidelity_{rep.stack}.{kind}" for kind in ("md", "csv", "png")}
    files["md"].write_text(markdown(rep))
    with files["csv"].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["table", "cell", "metric", "sim", "live_mean", "live_min", "live_max", "live_runs", "ratio",
                    "mark", "pass"])
        for c in rep.cells:
            w.writerow([c.table, c.label(), c.metric, f"{c.sim:.4f}", f"{c.live.mean:.4f}", f"{c.live.low:.4f}",
                        f"{c.live.high:.4f}", len(c.live.runs), f"{c.ratio:.4f}", c.mark, c.passed])
    figure(rep, files["png"])
    return files


def figure(rep: Report, path: Path) -> None:
    """One panel per table: the simulator's value (dot: pass green, fail red) on the live mean's
    bar with its min-max range (goodput on a log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(dict.fromkeys(c.table for c in rep.cells)) or ["(no recorded cells)"]
    fig, axes = plt.subplots(len(tables), 1, figsize=(max(6.0, 0.45 * max(len(rep.cells), 1) + 2), 3.2 * len(tables)),
                             squeeze=False)
    for ax, name in zip(axes[:, 0], tables):
        cells = [c for c in rep.cells if c.table == name]
        x = range(len(cells))
        ax.bar(x, [c.live.mean for c in cells], color="0.8", label="live mean")
        ax.errorbar(x, [c.live.mean for c in cells], fmt="none", ecolor="0.3", capsize=3,
                    yerr=[[c.live.mean - c.live.low for c in cells], [c.live.high - c.live.mean for c in cells]],
                    label="live min-max")
        ax.scatter(x, [c.sim for c in cells], c=["tab:green" if c.passed else "tab:red" for c in cells], zorder=3,
                   label="simulator (green: passes)")
        ax.set_xticks(list(x), [c.label() for c in cells], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(cells[0].metric if cells else "")
        if cells and cells[0].metric == "goodput_mbps":
            ax.set_yscale("log")  # 2 to 140 Mbit/s side by side
        ax.set_title(f"{name}, stack={rep.stack}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    a = parse(argv)
    try:  # before the cells are simulated (or recorded live), not after
        make_writable_dir(a.out)
    except OSError as err:
        raise ConfigError(f"out={a.out}: cannot write the report there ({err.strerror or err}); give a writable "
                          "out=<dir>") from None
    data_dir = None
    if a.live:
        data_dir = record_live(a.stack, a.live_runs, a.out / "live")
    start = time.perf_counter()
    rep = report(a.stack, a.runs, data_dir)
    text = markdown(rep)
    print(text)
    files = write(rep, a.out)
    print(f"{rep.passed} of {rep.total} checks pass; {len(rep.cells)} cells simulated in "
          f"{time.perf_counter() - start:.0f} s (load average {os.getloadavg()[0]:.1f}); "
          f"wrote {', '.join(str(p) for p in files.values())}")
    return 0


if __name__ == "__main__":
    with ending(bad_input_code=2):
        sys.exit(main(debug_argv(sys.argv[1:])))
