"""BBRv1's bandwidth estimate on one path, live XQUIC beside the simulator, by time into the transfer.

Per time bin: the path's acknowledged rate (the CC's bytes, from the acknowledged counter), BBR's
bandwidth estimate (live: ``xqc_cong_ctl_get_bandwidth_estimate``, the records' ``cc_bw``; model:
its ``BTLBW``), the latest delivery-rate sample (``delivery_rate``) and srtt, as medians over the
bin's 10 ms records. The default path is ispras_s2's slow one (20 Mbit/s, 40 ms each way, 1% loss,
2.236 ms of jitter reordering packets, a 1-BDP buffer) with a 10 MB file; docs/fidelity.md
(2026-12-01) reads it.

    python benchmarks/bbr_estimate_live.py                        # the simulator's side only
    sudo flock /tmp/mpsched-live.lock python benchmarks/bbr_estimate_live.py --live --runs 2
    python benchmarks/bbr_estimate_live.py --loss 0 --jitter 0     # the same path, clean

``--live`` needs root, the live setup and the mpsched_xquic extension (README, "XQUIC").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.cc import bbr  # noqa: E402
from envs.scenario import Scenario, scenario_from_dict  # noqa: E402
from envs.sim.layout import CN_DONE, COBS_ELAPSED, OBS_ACKED, OBS_DELIVERY_RATE, OBS_SRTT  # noqa: E402
from envs.sim.simulator import Simulator  # noqa: E402

BINS = ((0.5, 1.0), (1.0, 1.5), (1.5, 2.5), (2.5, 4.0), (4.0, 6.0))  # s into the transfer
RECORD_MS = 10.0


def path_scenario(mbps: float, delay_ms: float, loss_pct: float, jitter_ms: float, file_mb: float) -> Scenario:
    return scenario_from_dict({"name": "one_path", "jitter_reorders": True, "workload": {"type": "file", "file_mb": file_mb},
                               "paths": [{"bandwidth_mbps": mbps, "delay_ms": delay_ms, "loss_pct": loss_pct,
                                          "jitter_ms": jitter_ms, "queue_bdp": 1.0}]})


def row(label: str, t: np.ndarray, acked: np.ndarray, bw: np.ndarray, rate: np.ndarray, srtt: np.ndarray) -> str:
    """``label`` and per bin: acked rate / estimate / sample (Mbit/s) / srtt (ms)."""
    cells = []
    for lo, hi in BINS:
        m = (t >= lo) & (t < hi)
        if m.sum() < 3:
            cells.append(f"{'-':>22s}")
            continue
        acked_rate = (acked[m].max() - acked[m].min()) / (t[m].max() - t[m].min())
        cells.append(f"{acked_rate * 8e-6:5.1f}/{np.median(bw[m]) * 8e-6:5.1f}/{np.median(rate[m]) * 8e-6:5.1f}/"
                     f"{np.median(srtt[m]) * 1e3:4.0f}")
    return f"{label:8s} " + "  ".join(cells)


def live_rows(scenario: Scenario, runs: int) -> list[str]:
    from envs.live.testbed import verified
    from envs.live.xquic import XquicBackend

    out = []
    with verified(scenario, lambda _: None) as tb:
        for run in range(runs):
            tr = XquicBackend.transfer(tb, "bbr", scenario.workload, RECORD_MS)
            r = tr.run()
            bw = np.asarray(tr.intervals()["cc_bw"][:, 0], float)  # the records r.obs was read from
            out.append(row(f"live {run}", r.times, r.obs[:, 0, OBS_ACKED], bw, r.obs[:, 0, OBS_DELIVERY_RATE],
                           r.obs[:, 0, OBS_SRTT]))
    return out


def sim_rows(scenario: Scenario, runs: int) -> list[str]:
    sim = Simulator(scenario, "bbr", batch=runs, seed=0)
    sim.reset()
    steps = max(int(RECORD_MS / sim.cfg.dt_ms), 1)
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    while not (sim.cn[:, CN_DONE] > 0).all():
        sim.advance(steps)
        for c, x in zip(cols, (sim.cobs[:, COBS_ELAPSED], sim.obs[:, 0, OBS_ACKED], sim.cc[:, 0, bbr.BTLBW],
                               sim.obs[:, 0, OBS_DELIVERY_RATE], sim.obs[:, 0, OBS_SRTT])):
            c.append(x.copy())
    arrays = [np.array(c) for c in cols]  # [records, runs]
    return [row(f"sim {b}", *(a[:, b] for a in arrays)) for b in range(runs)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mbps", type=float, default=20.0)
    ap.add_argument("--delay-ms", type=float, default=40.0, help="one-way, each direction")
    ap.add_argument("--loss", type=float, default=1.0, help="random loss, %%")
    ap.add_argument("--jitter", type=float, default=2.236068, help="ms, standard deviation per direction")
    ap.add_argument("--file-mb", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--live", action="store_true", help="also live XQUIC (root, live setup)")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error(f"--runs must be an integer >= 1, got {a.runs}")
    scenario = path_scenario(a.mbps, a.delay_ms, a.loss, a.jitter, a.file_mb)
    print(f"{a.mbps:g} Mbit/s, {2 * a.delay_ms:g} ms RTT, loss {a.loss:g}%, jitter {a.jitter:g} ms, BBRv1; per bin "
          f"{', '.join(f'{lo:g}-{hi:g} s' for lo, hi in BINS)}: acked rate / BBR estimate / rate sample (Mbit/s) / "
          "srtt (ms)")
    for line in (live_rows(scenario, a.runs) if a.live else []) + sim_rows(scenario, a.runs):
        print(line, flush=True)


if __name__ == "__main__":
    main()
