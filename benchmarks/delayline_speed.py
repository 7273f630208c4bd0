"""Delay-line benchmark: how much traffic one delay line carries, and how exactly it delays.

    python benchmarks/delayline_speed.py [--delay-ms 10] [--seconds 2] [--rates 50,100,200,300]

Builds a one-path testbed (1000 Mbit/s, no loss, no jitter, a deep queue, so the delay line is
the only limit), then for each offered UDP rate sends 1400-byte datagrams for ``--seconds``
through the forward delay line and measures at the receiver: the rate that arrived, the loss,
and the one-way delay error (receive time in user space - send time - configured delay) of every
datagram; the receiver's own wake-up latency is included, so the error is an upper bound. A TCP transfer through both delay lines (data and ACKs) shows the rate a real sender
gets. Needs root; about 15 s.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.live.setup import unavailable_reason  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.live.verification import udp_pair  # noqa: E402
from envs.scenario import scenario_from_dict  # noqa: E402

PAYLOAD = 1400
WIRE = PAYLOAD + 42
STAMP = struct.Struct("!Id")  # sequence, send time (CLOCK_REALTIME, same clock as the kernel stamp)


def udp_phase(tb: Testbed, rate_mbps: float, seconds: float, delay_ms: float) -> dict:
    rx, tx = udp_pair(tb)
    tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    delays, arrivals = [], []
    stop = threading.Event()

    def receive() -> None:
        while True:
            try:
                data = rx.recv(2048)
            except TimeoutError:
                if stop.is_set():
                    return
                continue
            t = time.time()  # user space: the kernel's receive stamp is taken before netfilter's hold
            _, sent = STAMP.unpack_from(data)
            delays.append((t - sent) * 1000 - delay_ms)
            arrivals.append(t)

    th = threading.Thread(target=receive, daemon=True)
    th.start()
    pps = rate_mbps * 1e6 / 8 / WIRE
    n = int(pps * seconds)
    pad = bytes(PAYLOAD - STAMP.size)
    burst = 16
    t0 = time.monotonic()
    sent = 0
    for seq in range(n):
        if seq % burst == 0:
            wait = t0 + seq / pps - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        try:
            tx.send(STAMP.pack(seq, time.time()) + pad)
            sent += 1
        except OSError:
            pass
    offered_s = time.monotonic() - t0
    time.sleep(delay_ms / 1000 + 0.3)
    stop.set()
    th.join()
    rx.close()
    tx.close()
    d = np.array(delays)
    arr = np.sort(np.array(arrivals))
    got = (len(arr) - 1) * WIRE * 8 / (arr[-1] - arr[0]) / 1e6 if len(arr) > 1 else 0.0
    return {"offered_mbps": sent * WIRE * 8 / offered_s / 1e6, "received_mbps": got,
            "loss_pct": 100 * (1 - len(d) / max(sent, 1)),
            "err_median_ms": float(np.median(d)) if len(d) else float("nan"),
            "err_p99_ms": float(np.percentile(d, 99)) if len(d) else float("nan"),
            "err_max_ms": float(d.max()) if len(d) else float("nan")}


def tcp_phase(tb: Testbed, seconds: float) -> float:
    """Goodput (Mbit/s) of one TCP (cubic) flow through both delay lines."""
    p = tb.paths[0]
    srv = tb.socket("server")
    srv.bind((p.server_ip, 0))
    srv.listen(1)
    cli = tb.socket("client")
    cli.bind((p.client_ip, 0))
    received = [0]

    def serve() -> None:
        conn, _ = srv.accept()
        conn.settimeout(1.0)
        buf = bytearray(1 << 20)
        while True:
            try:
                k = conn.recv_into(buf)
            except TimeoutError:
                break
            if k == 0:
                break
            received[0] += k
        conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    cli.connect(srv.getsockname())
    chunk = memoryview(bytes(1 << 20))
    t0 = time.monotonic()
    base = None
    while time.monotonic() - t0 < seconds:
        cli.send(chunk)
        if base is None and time.monotonic() - t0 > 0.5:  # skip slow start
            base, tb_ = received[0], time.monotonic()
    rate = (received[0] - base) * 8 / (time.monotonic() - tb_) / 1e6
    cli.close()
    th.join(timeout=3)
    srv.close()
    return rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay-ms", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rates", default="50,100,200,300")
    args = ap.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    scen = scenario_from_dict({"name": "delayline_bench", "paths": [
        {"bandwidth_mbps": 1000, "delay_ms": args.delay_ms, "queue_packets": 20000}],
        "workload": {"type": "bulk", "duration_s": 1}, "jitter_reorders": False})
    t_start = time.monotonic()
    with Testbed(scen, emulation="delayline", verify=False) as tb:
        print(f"delay line: one-way delay {args.delay_ms:g} ms per direction, {args.seconds:g} s per rate, "
              f"{WIRE}-byte frames")
        print("offered Mbit/s | received Mbit/s | loss % | delay error ms: median | p99 | max")
        results = []
        for rate in [float(r) for r in args.rates.split(",")]:
            r = udp_phase(tb, rate, args.seconds, args.delay_ms)
            results.append(r)
            print(f"{r['offered_mbps']:14.1f} | {r['received_mbps']:15.1f} | {r['loss_pct']:6.2f} | "
                  f"{r['err_median_ms']:22.3f} | {r['err_p99_ms']:5.3f} | {r['err_max_ms']:5.3f}")
        tcp = tcp_phase(tb, 3.0)
        print(f"TCP (cubic) through both delay lines: {tcp:.1f} Mbit/s")
    stats = tb.emulation.delay_line_stats()  # collected when the testbed stopped them
    for key, st in sorted(stats.items()):
        if st:
            print(f"delay line path {key[0] + 1} {key[1]}: {st['packets']} packets, verdict lateness "
                  f"p50 {st['late_us_p50']:.0f} us, p99 {st['late_us_p99']:.0f} us, max {st['late_us_max']:.0f} us, "
                  f"held at most {st['max_pending']}")
    ok = [r for r in results if r["received_mbps"] >= 100 and r["loss_pct"] < 0.1 and r["err_median_ms"] < 1.0]
    print(f"sustains >= 100 Mbit/s with median delay error < 1 ms: {'yes' if ok else 'NO'} "
          f"(total {time.monotonic() - t_start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
