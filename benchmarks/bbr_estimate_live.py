"""BBRv1's bandwidth estimate on one path, live XQUIC beside the simulator, by time into the transfer.

Per time bin: the path's acknowledged rate (the CC's bytes, from the acknowledged counter), BBR's
bandwidth estimate (live: ``xqc_cong_ctl_get_bandwidth_estimate``, the records' ``cc_bw``; model:
its ``BTLBW``), the latest delivery-rate sample (``delivery_rate``), srtt, the sender's min RTT
and its window, as medians over the bin's 10 ms records. The default path is ispras_s2's slow one
(20 Mbit/s, 40 ms each way, 1% loss, 2.236 ms of jitter reordering packets, a 1-BDP buffer) with a
10 MB file; docs/fidelity.md (2026-12-01) reads it.

    python benchmarks/bbr_estimate_live.py                        # the simulator's side only
    sudo flock /tmp/mpsched-live.lock python benchmarks/bbr_estimate_live.py --live --runs 2
    python benchmarks/bbr_estimate_live.py --loss 0 --jitter 0     # the same path, clean
    python benchmarks/bbr_estimate_live.py --mbps 70 --delay-ms 10 --loss 0.5 --bins 0.1,0.3,0.45,0.7,1,1.5

After the bins, one line per transfer on its late phase (``--late``, s into the transfer): BBR's
estimate and the acknowledged rate, and the delivery-rate samples over the estimate (10th, 50th,
90th, 99th percentiles of the 10 ms records): a max filter keeps the top of the per-ACK samples,
so their scatter sets how far above the acknowledged rate the estimate holds. ``--record FILE``
keeps the live transfers' late phases with their provenance (``tests/data/bbr_late_phase_*.json``,
read by tests/test_ack_loop.py):

    sudo flock /tmp/mpsched-live.lock python benchmarks/bbr_estimate_live.py --mbps 50 --delay-ms 20 --loss 0 \\
        --jitter 5 --file-mb 40 --runs 3 --live --record tests/data/bbr_late_phase_20261201.json

``--live`` needs root, the live setup and the mpsched_xquic extension (README, "XQUIC").
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.cc import bbr  # noqa: E402
from envs.scenario import Scenario, scenario_from_dict  # noqa: E402
from envs.sim.layout import (  # noqa: E402
    CN_DONE,
    COBS_ELAPSED,
    OBS_ACKED,
    OBS_CWND,
    OBS_DELIVERY_RATE,
    OBS_MIN_RTT,
    OBS_SRTT,
)
from envs.sim.simulator import Simulator  # noqa: E402

BIN_EDGES = (0.5, 1.0, 1.5, 2.5, 4.0, 6.0)  # s into the transfer
LATE = (4.0, 15.0)  # s into the transfer: the late phase (docs/fidelity.md, 2026-12-01)
QUANTILES = (0.1, 0.5, 0.9, 0.99)  # of the delivery-rate samples over the estimate
RECORD_MS = 10.0


@dataclass(frozen=True)
class Series:
    """One transfer's path, record by record (bytes, bytes/s, s)."""
    t: np.ndarray
    estimate: np.ndarray
    acked: np.ndarray
    rate: np.ndarray
    srtt: np.ndarray
    min_rtt: np.ndarray
    cwnd: np.ndarray

    @classmethod
    def of_path(cls, t: np.ndarray, estimate: np.ndarray, obs: np.ndarray) -> Series:
        """From the records' times, BBR's estimate and the path's observation rows ``[records, N_OBS]``."""
        return cls(t, estimate, obs[:, OBS_ACKED], obs[:, OBS_DELIVERY_RATE], obs[:, OBS_SRTT],
                   obs[:, OBS_MIN_RTT], obs[:, OBS_CWND])


def path_scenario(mbps: float, delay_ms: float, loss_pct: float, jitter_ms: float, file_mb: float) -> Scenario:
    return scenario_from_dict({"name": "one_path", "jitter_reorders": True, "workload": {"type": "file", "file_mb": file_mb},
                               "paths": [{"bandwidth_mbps": mbps, "delay_ms": delay_ms, "loss_pct": loss_pct,
                                          "jitter_ms": jitter_ms, "queue_bdp": 1.0}]})


def row(label: str, x: Series, bins: tuple[float, ...]) -> str:
    """``label`` and per bin: acked rate / estimate / sample (Mbit/s) / srtt / min RTT (ms) / window (KB)."""
    cells = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (x.t >= lo) & (x.t < hi)
        if m.sum() < 3:
            cells.append(f"{'-':>31s}")
            continue
        acked_rate = (x.acked[m].max() - x.acked[m].min()) / (x.t[m].max() - x.t[m].min())
        cells.append(f"{acked_rate * 8e-6:5.1f}/{np.median(x.estimate[m]) * 8e-6:5.1f}/"
                     f"{np.median(x.rate[m]) * 8e-6:5.1f}/{np.median(x.srtt[m]) * 1e3:4.0f}/"
                     f"{np.median(x.min_rtt[m]) * 1e3:4.1f}/{np.median(x.cwnd[m]) * 1e-3:4.0f}")
    return f"{label:8s} " + "  ".join(cells)


def late_phase(x: Series, late: tuple[float, float] = LATE) -> dict[str, float | list[float]]:
    """A transfer's late phase: BBR's estimate (median) and the acknowledged rate (Mbit/s), the
    delivery-rate samples over the estimate at ``QUANTILES``, srtt and min RTT (ms, medians)."""
    m = (x.t >= late[0]) & (x.t < late[1])
    if m.sum() < 10:
        raise ValueError(f"the transfer has {m.sum()} records in {late[0]:g}-{late[1]:g} s: too short for its late phase")
    t, estimate = x.t[m], x.estimate[m]
    return {"estimate_mbps": float(np.median(estimate) * 8e-6),
            "acked_mbps": float((x.acked[m].max() - x.acked[m].min()) / (t.max() - t.min()) * 8e-6),
            "sample_over_estimate": [float(q) for q in np.quantile(x.rate[m] / np.maximum(estimate, 1.0), QUANTILES)],
            "srtt_ms": float(np.median(x.srtt[m]) * 1e3), "min_rtt_ms": float(np.median(x.min_rtt[m]) * 1e3)}


def late_row(label: str, v: dict) -> str:
    q = "/".join(f"{x:.2f}" for x in v["sample_over_estimate"])
    return (f"{label:8s} late phase: estimate {v['estimate_mbps']:5.1f}, acked {v['acked_mbps']:5.1f} Mbit/s, "
            f"samples / estimate {q} (percentiles {'/'.join(f'{100 * p:g}' for p in QUANTILES)}), "
            f"srtt {v['srtt_ms']:.1f}, min RTT {v['min_rtt_ms']:.1f} ms")


def live_series(scenario: Scenario, runs: int) -> list[Series]:
    """``runs`` live XQUIC BBRv1 transfers of ``scenario`` on one verified testbed."""
    from envs.live.testbed import verified
    from envs.live.xquic import XquicBackend

    out = []
    with verified(scenario, lambda _: None) as tb:
        for _ in range(runs):
            tr = XquicBackend.transfer(tb, "bbr", scenario.workload, RECORD_MS)
            r = tr.run()
            bw = np.asarray(tr.intervals()["cc_bw"][:, 0], float)  # the records r.obs was read from
            out.append(Series.of_path(r.times, bw, r.obs[:, 0]))
    return out


def sim_series(scenario: Scenario, runs: int, seed: int = 0) -> list[Series]:
    """``runs`` simulated transfers of ``scenario`` (one batch), recorded every ``RECORD_MS``."""
    sim = Simulator(scenario, "bbr", batch=runs, seed=seed)
    sim.reset()
    steps = max(int(RECORD_MS / sim.cfg.dt_ms), 1)
    times, estimates, obs = [], [], []
    while not (sim.cn[:, CN_DONE] > 0).all():
        sim.advance(steps)
        times.append(sim.cobs[:, COBS_ELAPSED].copy())
        estimates.append(sim.cc[:, 0, bbr.BTLBW].copy())
        obs.append(sim.obs[:, 0].copy())
    t, est, o = np.array(times), np.array(estimates), np.array(obs)  # [records, runs(, N_OBS)]
    return [Series.of_path(t[:, b], est[:, b], o[:, b]) for b in range(runs)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mbps", type=float, default=20.0)
    ap.add_argument("--delay-ms", type=float, default=40.0, help="one-way, each direction")
    ap.add_argument("--loss", type=float, default=1.0, help="random loss, %%")
    ap.add_argument("--jitter", type=float, default=2.236068, help="ms, standard deviation per direction")
    ap.add_argument("--file-mb", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--live", action="store_true", help="also live XQUIC (root, live setup)")
    ap.add_argument("--bins", default=",".join(f"{e:g}" for e in BIN_EDGES),
                    help="the bins' edges, s into the transfer, increasing (default %(default)s)")
    ap.add_argument("--late", default=",".join(f"{e:g}" for e in LATE),
                    help="the late phase, from,to s into the transfer (default %(default)s)")
    ap.add_argument("--record", type=Path, help="with --live: write the live transfers' late phases and their "
                    "provenance to this JSON file")
    a = ap.parse_args(argv if argv is not None else sys.argv[1:])
    if a.runs < 1:
        ap.error(f"--runs must be an integer >= 1, got {a.runs}")
    if a.record and not a.live:
        ap.error("--record keeps live transfers: give --live too")
    try:
        late = tuple(float(e) for e in a.late.split(","))
    except ValueError:
        ap.error(f"--late must be two numbers separated by a comma, got {a.late!r}")
    if len(late) != 2 or not 0 <= late[0] < late[1]:
        ap.error(f"--late must be from,to with 0 <= from < to, got {a.late!r}")
    try:
        bins = tuple(float(e) for e in a.bins.split(","))
    except ValueError:
        ap.error(f"--bins must be numbers separated by commas, got {a.bins!r}")
    if len(bins) < 2 or any(hi <= lo for lo, hi in zip(bins[:-1], bins[1:])) or bins[0] < 0:
        ap.error(f"--bins must be at least two increasing edges from 0 s, got {a.bins!r}")
    scenario = path_scenario(a.mbps, a.delay_ms, a.loss, a.jitter, a.file_mb)
    print(f"{a.mbps:g} Mbit/s, {2 * a.delay_ms:g} ms RTT, loss {a.loss:g}%, jitter {a.jitter:g} ms, BBRv1; per bin "
          f"{', '.join(f'{lo:g}-{hi:g} s' for lo, hi in zip(bins[:-1], bins[1:]))}: acked rate / BBR estimate / "
          "rate sample (Mbit/s) / srtt / min RTT (ms) / window (KB)")
    sides = ([("live", live_series(scenario, a.runs))] if a.live else []) + [("sim", sim_series(scenario, a.runs))]
    for side, series in sides:
        for k, x in enumerate(series):
            print(row(f"{side} {k}", x, bins), flush=True)
    lates = {side: [late_phase(x, late) for x in series] for side, series in sides}
    for side, phases in lates.items():
        for k, v in enumerate(phases):
            print(late_row(f"{side} {k}", v), flush=True)
    if a.record:
        from envs.live.provenance import provenance
        record = {"provenance": provenance("python benchmarks/bbr_estimate_live.py", argv if argv is not None else sys.argv[1:]),
                  "path": {"mbps": a.mbps, "delay_ms": a.delay_ms, "loss_pct": a.loss, "jitter_ms": a.jitter,
                           "file_mb": a.file_mb},
                  "late_s": list(late), "quantiles": list(QUANTILES), "cc": "bbr",
                  "runs": lates["live"]}
        a.record.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {a.record}")


if __name__ == "__main__":
    main()
