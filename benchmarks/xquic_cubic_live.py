"""XQUIC's CUBIC and Reno sawtooth, live beside the simulator: why live XQUIC CUBIC runs near its
Reno where random loss alone sets the rate (tests/test_stack_fidelity.py GAPS, grid_xquic 0.5%
loss, no jitter).

    sudo nice -n -10 flock /tmp/mpsched-live.lock python benchmarks/xquic_cubic_live.py grid:0.5/0 \
        --ccs cubic,reno --runs 2 --live-only
    python benchmarks/xquic_cubic_live.py grid:0.5/0 --sim-only   # the simulator's side
    ... grid:0/2 --ccs bbr,bbr2,cubic,reno --runs 3 --live-only --record tests/data/declarations_xquic_live.json \
        [--pattern tests/data/declarations_patterns]

One verified testbed (envs.live.testbed) for the grid cell (``grid:<loss_pct>/<jitter_ms>``: the
grid table's path, 50 Mbit/s, 40 ms RTT, 1 BDP buffer), then per run and CC one XQUIC transfer
as the table records it (a file too large to finish, capped at ``--seconds``), its per-path
telemetry every ``--telemetry-ms`` (``XquicTransfer``: cwnd, bytes in flight, srtt, the packets
XQUIC retransmitted, PTOs, bytes sent and acknowledged, the connection's flow-control credit).
The same figures for the simulator (``stack=xquic``, the cell's scenario, ``--sim-runs``
connections, sampled at the same interval, in the profile's packet: 1179 bytes of the
file in XQUIC's 1200, docs/transport.md "Packets"). Printed per transfer: goodput; reductions per
second (the window falling by more than a tenth from one sample to the next) and the window
just before and after them (their ratio is the CC's beta); the sawtooth's growth per srtt (bytes,
over the samples between reductions, least squares); the packets declared lost (live:
XQUIC's ctl_lost_pkts_number) and the copies of lost packets sent (live: ctl_lost_count; a copy
dropped because its original was acknowledged first, as under jitter, is not sent) against the
packets the emulation dropped on the forward path; PTOs; the share of samples in which the window
binds (in flight within one packet of it), in which the flow-control credit is below a packet; the
UDP payload and the file's bytes per forward packet. Live windows are in packets of
XQC_PACKET_OUT_SIZE (1200 bytes, as XQUIC's window counts a full packet), the model's in its MSS.
Run it alone (``flock /tmp/mpsched-live.lock``): it needs root and the live setup.
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.fidelity import GRID_MBPS, GRID_SECONDS, grid_scenario  # noqa: E402
from envs.errors import write_atomic  # noqa: E402
from envs.live.provenance import load_average, provenance, utc_now  # noqa: E402
from envs.scenario import WorkloadSpec  # noqa: E402
from envs.sim.layout import (COBS_RWND, OBS_ACKED, OBS_CWND, OBS_INFLIGHT, OBS_LOSSES,  # noqa: E402
                             OBS_MIN_RTT, OBS_RETRANS, OBS_RTOS, OBS_SENT, OBS_SRTT)
from envs.cc import bbr  # noqa: E402
from envs.sim import stacks  # noqa: E402
from envs.sim.simulator import SimConfig, Simulator  # noqa: E402

RECORD_DESCRIPTION = (
    "Live XQUIC transfers on the grid's path (benchmarks/xquic_cubic_live.py --record): per transfer, after its "
    "first second, the packets sent (sent_pkts, in packets of wire_bytes_per_packet UDP payload), declared lost "
    "(declared_lost: ctl_lost_pkts_number) and copied (retransmitted: ctl_lost_count) over span_s seconds, the "
    "goodput from the bytes acknowledged, the window (packets of 1200 bytes) and how often it binds, srtt; the "
    "forward packets the emulation carried and dropped; the load average after the run. "
    "benchmarks/reordering_declarations.py reads it.")


ETH_P_IP = 0x0800
PACKET_OUTGOING = 4  # linux/if_packet.h
SO_TIMESTAMPNS = 35  # asm-generic/socket.h: the kernel's receive time of each packet
PATTERN_MIN_BYTES = 1000  # IP length above which a client packet carries data (XQUIC's are 1244 bytes)


def packet_sampler(tb, stop: threading.Event, out: list[tuple[int, int]]) -> None:
    """The client's UDP packets as they reach the server's interface on path 1, before its delay
    line (the bottleneck's departures, before the jitter): (kernel receive time in ns, IP length)
    each, from a raw AF_PACKET socket in the server's namespace (``--sizes``, ``--pattern``)."""
    from envs.live.system import netns
    with netns(tb.host_pid("server")):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    sock.bind((tb.paths[0].server_if, 0))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    client = socket.inet_aton(tb.paths[0].client_ip)
    sock.settimeout(0.1)
    try:
        while not stop.is_set():
            try:
                frame, ancillary, _, addr = sock.recvmsg(64, 64)
            except TimeoutError:
                continue
            if addr[2] != PACKET_OUTGOING and len(frame) >= 34 and frame[14 + 9] == 17 and frame[26:30] == client:
                stamp = next((struct.unpack("qq", data[:16]) for _, kind, data in ancillary if kind == SO_TIMESTAMPNS),
                             None)
                if stamp is not None:
                    out.append((stamp[0] * 1_000_000_000 + stamp[1], struct.unpack_from("!H", frame, 16)[0]))
    finally:
        sock.close()


def save_pattern(path: Path, packets: list[tuple[int, int]]) -> None:
    """The data packets (IP length above ``PATTERN_MIN_BYTES``) of a capture as microsecond gaps
    from the first (``--pattern``; benchmarks/reordering_declarations.py reads them)."""
    t = np.array([ns for ns, length in packets if length > PATTERN_MIN_BYTES], dtype=np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, gap_us=np.diff(t, prepend=t[:1]) // 1000)


@dataclass
class Trace:
    """One flow's samples: time (s), window, in flight, acknowledged and sent bytes, srtt (s),
    cumulative loss declarations and PTOs, the connection's flow-control credit (bytes)."""

    t: np.ndarray
    cwnd: np.ndarray
    inflight: np.ndarray
    acked: np.ndarray
    sent: np.ndarray
    srtt: np.ndarray
    losses: np.ndarray
    retrans: np.ndarray
    ptos: np.ndarray
    rwnd: np.ndarray


def sawtooth(tr: Trace, packet: float, wire: float | None = None, skip_s: float = 1.0) -> dict[str, float]:
    """The figures of one trace after its first ``skip_s`` s (the first slow start): windows in
    packets of ``packet`` bytes as the window counts them, sent bytes in packets of ``wire``."""
    keep = tr.t >= skip_s
    t, cwnd = tr.t[keep], tr.cwnd[keep]
    span = float(t[-1] - t[0]) if len(t) > 1 else float("nan")
    drop = np.flatnonzero(cwnd[1:] < 0.9 * cwnd[:-1])
    before, after = cwnd[drop], cwnd[drop + 1]
    slopes = []  # bytes per srtt over each rising stretch between reductions
    edges = [0, *(drop + 1).tolist(), len(t)]
    srtt = tr.srtt[keep]
    for a, b in zip(edges[:-1], edges[1:]):
        if b - a >= 5 and t[b - 1] - t[a] > 0.05:
            k = np.polyfit(t[a:b], cwnd[a:b], 1)[0]
            slopes.append(k * float(np.median(srtt[a:b])))
    acked = tr.acked[keep]
    sent = tr.sent[keep]
    return {
        "goodput_mbps": float((acked[-1] - acked[0]) * 8 / span / 1e6),
        "cwnd_mean_pkts": float(cwnd.mean() / packet),
        "reductions_per_s": len(drop) / span,
        "cwnd_before_pkts": float(before.mean() / packet) if len(drop) else float("nan"),
        "cwnd_after_pkts": float(after.mean() / packet) if len(drop) else float("nan"),
        "beta": float(np.mean(after / before)) if len(drop) else float("nan"),
        "growth_pkts_per_srtt": float(np.median(slopes) / packet) if slopes else float("nan"),
        "period_s": span / max(len(drop), 1),
        "declared_lost": float(tr.losses[keep][-1] - tr.losses[keep][0]),
        "retransmitted": float(tr.retrans[keep][-1] - tr.retrans[keep][0]),
        "sent_pkts": float((sent[-1] - sent[0]) / (wire or packet)),
        "ptos": float(tr.ptos[keep][-1] - tr.ptos[keep][0]),
        "cwnd_bound": float(np.mean(tr.inflight[keep] >= cwnd - packet)),
        "flow_control_bound": float(np.mean(tr.rwnd[keep] < packet)),
        "srtt_ms": float(np.median(srtt) * 1e3),
        "span_s": span,
    }


EPISODE_BINS_MS = (0.0, 5.0, 10.0, 20.0, 40.0, float("inf"))


def episodes(tr: Trace, packet: float, skip_s: float = 1.0) -> dict[str, Any]:
    """When, in each window reduction's episode, the declarations and the copies come
    (``--episodes``): per reduction (the window falling by more than a tenth between two samples),
    the packets declared lost and the copies sent in the samples' interval that holds the cut
    ("cut") and then in bins of time after it (``EPISODE_BINS_MS``, up to the next cut), each
    averaged over the reductions; the packets in flight over the window just after the cut, and
    how long until in flight is back under the window (the wait a copy queued at the cut has)."""
    keep = tr.t >= skip_s
    t, cwnd, inflight = tr.t[keep], tr.cwnd[keep], tr.inflight[keep]
    losses, retrans = tr.losses[keep], tr.retrans[keep]
    cuts = np.flatnonzero(cwnd[1:] < 0.9 * cwnd[:-1]) + 1  # the first sample after each cut
    labels = ["cut"] + [f"{a:g}-{b:g} ms" for a, b in zip(EPISODE_BINS_MS[:-2], EPISODE_BINS_MS[1:-1])] \
        + [f">{EPISODE_BINS_MS[-2]:g} ms"]
    declared, copies = np.zeros(len(labels)), np.zeros(len(labels))
    deficits, clears = [], []
    for n, k in enumerate(cuts):
        end = cuts[n + 1] - 1 if n + 1 < len(cuts) else len(t) - 1
        declared[0] += losses[k] - losses[k - 1]
        copies[0] += retrans[k] - retrans[k - 1]
        after_ms = (t[k + 1:end + 1] - t[k]) * 1e3
        bins = np.searchsorted(EPISODE_BINS_MS, after_ms, side="left")  # (a, b] -> its bin, 1-based
        np.add.at(declared, bins, np.diff(losses[k:end + 1]))
        np.add.at(copies, bins, np.diff(retrans[k:end + 1]))
        deficits.append((inflight[k] - cwnd[k]) / packet)
        under = np.flatnonzero(inflight[k:end + 1] <= cwnd[k:end + 1])
        if len(under):
            clears.append((t[k + under[0]] - t[k]) * 1e3)
    n = max(len(cuts), 1)
    return {"reductions": len(cuts), "bins": labels, "declared": (declared / n).tolist(),
            "copies": (copies / n).tolist(), "deficit_pkts": float(np.mean(deficits)) if deficits else float("nan"),
            "clear_ms": float(np.median(clears)) if clears else float("nan")}


def show_episodes(label: str, ep: dict[str, Any]) -> None:
    cells = ", ".join(f"{b} {d:.2f}/{c:.2f}" for b, d, c in zip(ep["bins"], ep["declared"], ep["copies"]))
    print(f"   {label} per reduction ({ep['reductions']}), declared/copies: {cells}; in flight over the window "
          f"after the cut {ep['deficit_pkts']:.1f} pkts, back under it after {ep['clear_ms']:.0f} ms (median)",
          flush=True)


def bbr_state(t: np.ndarray, bw: np.ndarray, min_rtt: np.ndarray, packet: float, skip_s: float = 1.0) -> str:
    """BBR's bandwidth estimate (bytes/s) and min RTT (s) over the samples after ``skip_s``, and
    the window they set, cwnd_gain 2 x bw x min_rtt, in packets of ``packet`` bytes (without the
    ACK aggregation term)."""
    keep = t >= skip_s
    b, r = float(np.mean(bw[keep])), float(np.median(min_rtt[keep]))
    return (f"; BBR bandwidth estimate {b * 8 / 1e6:.1f} Mbit/s, min RTT {r * 1e3:.1f} ms, "
            f"2 x bw x min_rtt {2 * b * r / packet:.0f} pkts")


def show(label: str, fig: dict[str, float], extra: str = "") -> None:
    f = fig
    lost_rate = f["declared_lost"] / f["sent_pkts"] if f["sent_pkts"] else float("nan")
    copy_rate = f["retransmitted"] / f["sent_pkts"] if f["sent_pkts"] else float("nan")
    print(f"== {label}: {f['goodput_mbps']:.2f} Mbit/s (after 1 s), cwnd {f['cwnd_mean_pkts']:.1f} pkts mean; "
          f"{f['reductions_per_s']:.2f} reductions/s (period {f['period_s'] * 1e3:.0f} ms), cwnd "
          f"{f['cwnd_before_pkts']:.1f} -> {f['cwnd_after_pkts']:.1f} pkts (x{f['beta']:.3f}); growth "
          f"{f['growth_pkts_per_srtt']:.2f} pkts/srtt; declared lost {f['declared_lost']:.0f} of "
          f"{f['sent_pkts']:.0f} sent ({lost_rate:.2%}), copies sent {f['retransmitted']:.0f} ({copy_rate:.2%}); PTOs {f['ptos']:.0f}; cwnd binds in "
          f"{f['cwnd_bound']:.0%} of samples, flow control in {f['flow_control_bound']:.0%}; srtt "
          f"{f['srtt_ms']:.1f} ms{extra}", flush=True)


def live(cell: str, ccs: list[str], runs: int, telemetry_ms: float, seconds: float, sizes: bool,
         record: Path | None = None, pattern: Path | None = None, by_episode: bool = False) -> None:
    from envs.live.mptcp import network_counters
    from envs.live.testbed import Testbed
    from envs.live.verification import verified_testbed
    from envs.live.xquic import XquicTransfer, records_to_sim

    loss, jitter = (float(x) for x in cell[len("grid:"):].split("/"))
    scen = grid_scenario(loss, jitter, seconds)
    # as benchmarks/record_reference.py records the grid on XQUIC: a file too large to finish
    work = WorkloadSpec(type="file", file_mb=10 * GRID_MBPS * seconds / 8, duration_s=seconds)
    kept = (record, *open_record(record)) if record is not None else None
    with verified_testbed(lambda: Testbed(scen, verify=True)) as tb:
        print(tb.describe(), flush=True)
        if tb.verification is not None:
            print(tb.verification.table(), flush=True)
        for run in range(runs):
            for cc in ccs:
                c0 = network_counters(tb)
                tr = XquicTransfer(tb, cc, work, telemetry_ms=telemetry_ms)
                stop, packets = threading.Event(), list[tuple[int, int]]()
                sampler = threading.Thread(target=packet_sampler, args=(tb, stop, packets), daemon=True)
                if sizes or pattern is not None:
                    sampler.start()
                try:
                    res = tr.run(seconds + 30.0)
                finally:
                    stop.set()
                    if sampler.is_alive():
                        sampler.join()
                c1 = network_counters(tb)
                iv = tr._concat(tr._intervals, len(tb.paths))
                obs, cobs, _ = records_to_sim(iv)
                x = res.extra
                dropped, offered = float(c1[1][0] - c0[1][0]), float(c1[0][0] - c0[0][0])
                # the window counts po_used_size, a full packet's XQC_PACKET_OUT_SIZE (xqc_send_ctl.c
                # xqc_send_ctl_increase_inflight); OBS_SENT counts po_enc_size, with the AEAD tag
                wire = float(obs[-1, 0, OBS_SENT]) / max(offered, 1.0)
                packet = float(stacks.XQC_PACKET_OUT_SIZE)  # a full packet as XQUIC's window counts it
                trace = Trace(np.asarray(iv["t"], float), obs[:, 0, OBS_CWND], obs[:, 0, OBS_INFLIGHT],
                              obs[:, 0, OBS_ACKED], obs[:, 0, OBS_SENT], obs[:, 0, OBS_SRTT], obs[:, 0, OBS_LOSSES],
                              obs[:, 0, OBS_RETRANS], obs[:, 0, OBS_RTOS], cobs[:, COBS_RWND])
                fig = sawtooth(trace, packet, wire)
                show(f"live {cc} run {run + 1}", fig,
                     f"; whole transfer {float(res.metrics()['goodput_mbps'][0]):.2f} Mbit/s, {x['outcome']}; "
                     f"network: {dropped:.0f} of {offered:.0f} forward packets dropped ({dropped / max(offered, 1):.2%}); "
                     f"per forward packet {wire:.0f} B of UDP payload, {float(x['delivered']) / max(offered, 1):.0f} B "
                     f"of the file delivered; load {load_average():.2f}"
                     + (bbr_state(trace.t, np.asarray(iv["cc_bw"][:, 0], float), obs[:, 0, OBS_MIN_RTT], packet)
                        if cc == "bbr" else ""))
                if by_episode:
                    show_episodes(f"live {cc} run {run + 1}", episodes(trace, packet))
                reads, grams = x["recv_reads"][1], x["recv_datagrams"][1]
                print(f"   the receiver read {grams} datagrams in {reads} socket reads ({grams / max(reads, 1):.2f} "
                      "a read; XQUIC sends the ACKs due once per read, xqc_engine_finish_recv)", flush=True)
                saved = None
                if pattern is not None:
                    saved = pattern / f"{utc_now().replace(':', '')}_{loss:g}_{jitter:g}_{cc}_{run + 1}.npz"
                    save_pattern(saved, packets)
                if kept is not None:  # written after every run: a crash keeps the others
                    path, data, runs_kept = kept
                    runs_kept.append({"cell": cell, "loss_pct": loss, "jitter_ms": jitter, "cc": cc, "run": run + 1,
                                      **fig, "wire_bytes_per_packet": wire, "forward_packets": offered,
                                      "forward_dropped": dropped,
                                      "whole_goodput_mbps": float(res.metrics()["goodput_mbps"][0]),
                                      "outcome": str(x["outcome"]), "load": load_average(),
                                      **({"pattern": saved.name} if saved is not None else {})})
                    write_atomic(path, json.dumps(data, indent=1) + "\n")
                if sizes:
                    lengths = collections.Counter(length for _, length in packets)
                    n = sum(lengths.values())
                    full = lengths.get(max(lengths), 0) if lengths else 0
                    print(f"   client's UDP packets at the server (IP length: count) of {n}, the largest {max(lengths, default=0)} "
                          f"bytes {full / max(n, 1):.1%}: " + ", ".join(
                              f"{k}: {v}" for k, v in sorted(lengths.items(), key=lambda kv: -kv[1])[:12]), flush=True)
                print("   cwnd (pkts) every 0.1 s from 2 s: " + " ".join(
                    f"{c / packet:.0f}" for c in trace.cwnd[(trace.t >= 2) & (trace.t < 5)][::max(int(100 / telemetry_ms), 1)]),
                    flush=True)


def simulated(cell: str, ccs: list[str], runs: int, telemetry_ms: float, seconds: float,
              by_episode: bool = False) -> None:
    loss, jitter = (float(x) for x in cell[len("grid:"):].split("/"))
    scen = grid_scenario(loss, jitter, seconds)
    for cc in ccs:
        sim = Simulator(scen, cc, "minrtt", batch=runs, seed=0, config=SimConfig(stack="xquic"))
        sim.reset()
        step = max(round(telemetry_ms / sim.cfg.dt_ms), 1)
        rows, crows, ts, bbr_rows = [], [], [], []
        for i in range(round(seconds * 1000 / sim.cfg.dt_ms) // step):
            sim.advance(step)
            rows.append(sim.obs[:, 0].copy())
            crows.append(sim.cobs.copy())
            bbr_rows.append(sim.cc[:, 0, [bbr.BTLBW, bbr.RTPROP]].copy())
            ts.append((i + 1) * step * sim.cfg.dt_ms / 1000)
        o, c, t, st = np.asarray(rows), np.asarray(crows), np.asarray(ts), np.asarray(bbr_rows)
        for b in range(runs):
            trace = Trace(t, o[:, b, OBS_CWND], o[:, b, OBS_INFLIGHT], o[:, b, OBS_ACKED], o[:, b, OBS_SENT],
                          o[:, b, OBS_SRTT], o[:, b, OBS_LOSSES], o[:, b, OBS_RETRANS], o[:, b, OBS_RTOS],
                          c[:, b, COBS_RWND])
            show(f"sim {cc} run {b + 1}", sawtooth(trace, float(sim.mss[b])),
                 bbr_state(t, st[:, b, 0], st[:, b, 1], float(stacks.XQC_PACKET_OUT_SIZE)) if cc == "bbr" else "")
            if by_episode:
                show_episodes(f"sim {cc} run {b + 1}", episodes(trace, float(sim.mss[b])))


def open_record(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The record at ``path`` (``--record``) with a new entry of ``recordings`` for this
    invocation, under its provenance: the record, and the entry's list of runs."""
    data: dict[str, Any] = (json.loads(path.read_text()) if path.exists()
                            else {"description": RECORD_DESCRIPTION, "recordings": []})
    runs: list[dict[str, Any]] = []
    data["recordings"].append({"provenance": provenance("python benchmarks/xquic_cubic_live.py", sys.argv[1:]),
                               "runs": runs})
    return data, runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cell", help="grid:<loss_pct>/<jitter_ms>, e.g. grid:0.5/0")
    ap.add_argument("--ccs", default="cubic,reno")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--sim-runs", type=int, default=3)
    ap.add_argument("--telemetry-ms", type=float, default=2.0)
    ap.add_argument("--seconds", type=float, default=GRID_SECONDS)
    ap.add_argument("--sim-only", action="store_true")
    ap.add_argument("--live-only", action="store_true")
    ap.add_argument("--sizes", action="store_true", help="count the sizes of the client's UDP packets (live)")
    ap.add_argument("--record", type=Path, help="append every live transfer's figures to this JSON record")
    ap.add_argument("--pattern", type=Path,
                    help="save each live transfer's data packets as they leave the bottleneck (gaps, us) in this directory")
    ap.add_argument("--episodes", action="store_true",
                    help="per window reduction, when its declarations and copies come (episodes())")
    a = ap.parse_args()
    ccs = a.ccs.split(",")
    if not a.live_only:
        simulated(a.cell, ccs, a.sim_runs, a.telemetry_ms, a.seconds, by_episode=a.episodes)
    if not a.sim_only:
        live(a.cell, ccs, a.runs, a.telemetry_ms, a.seconds, a.sizes, a.record, a.pattern, by_episode=a.episodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
