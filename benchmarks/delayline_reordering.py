"""Does the testbed's delay line reorder packets as independent normal delays do?

    sudo nice -n -10 flock /tmp/mpsched-live.lock python benchmarks/delayline_reordering.py --jitter-ms 2

The verification before a live run (``envs.live.verification``) checks the RTT's mean and spread
with 50 echoes; the reordering a transport sees at its own sending rate is what the simulator's
spurious-declaration tables model (``envs/sim/reordering.py``: every packet its own ``N(0,
jitter^2)`` delay). This sends ``--packets`` UDP datagrams of 1200 bytes, ``--pps`` a second,
evenly spaced, over the grid's path (``envs.fidelity.grid_scenario``: 50 Mbit/s, 40 ms RTT, the
jitter given, no loss) from the client to the server, takes the order in which the server's socket
receives them, and prints, beside a Monte Carlo of independent normal delays at the same send
times, the share of packets that 3 later ones overtake (the tables' reading of RFC 9002's packet
threshold) and the share that one packet sent 3 or more later overtakes (XQUIC's
``xqc_send_ctl_get_lost_sent_pn``), one direction only (docs/transport.md, "Reordering").
Run it alone: it needs root and the live setup.
"""

from __future__ import annotations

import argparse
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.fidelity import grid_scenario  # noqa: E402

SEQ = struct.Struct("!I")
PAYLOAD = 1200
EDGE = 1000  # packets left out at either end (their later or earlier neighbours are missing)


def overtaken(order: np.ndarray) -> tuple[float, float]:
    """From ``order`` (the sequence numbers in arrival order): the share of packets that at least 3
    later-sent packets arrive before, and that some packet sent 3 or more later arrives before."""
    n = order.size
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    earliest_from = np.minimum.accumulate(rank[::-1])[::-1]  # the earliest arrival among i, i+1, ...
    idx = np.arange(EDGE, n - EDGE)
    any3 = earliest_from[idx + 3] < rank[idx]
    three = np.array([np.count_nonzero(rank[i + 1:i + 400] < rank[i]) >= 3 for i in idx])
    return float(three.mean()), float(any3.mean())


def probe(jitter_ms: float, pps: float, packets: int) -> np.ndarray:
    """Send ``packets`` datagrams over a verified testbed; their sequence numbers in arrival order."""
    from envs.live.testbed import Testbed
    from envs.live.verification import udp_pair, verified_testbed

    with verified_testbed(lambda: Testbed(grid_scenario(0.0, jitter_ms, 10.0), verify=True)) as tb:
        if tb.verification is not None:
            print(tb.verification.table(), flush=True)
        rx, tx = udp_pair(tb, rcvbuf=64 << 20, timeout_s=1.0)
        got: list[int] = []

        def receive() -> None:
            while True:
                try:
                    data = rx.recv(2048)
                except TimeoutError:
                    return
                got.append(SEQ.unpack_from(data)[0])

        th = threading.Thread(target=receive)
        th.start()
        pad = bytes(PAYLOAD - SEQ.size)
        t0 = time.perf_counter()
        for i in range(packets):
            while time.perf_counter() < t0 + i / pps:
                pass
            tx.send(SEQ.pack(i) + pad)
        th.join()
        tx.close()
        rx.close()
    return np.asarray(got, dtype=np.int64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jitter-ms", type=float, default=2.0)
    ap.add_argument("--pps", type=float, default=2000.0, help="datagrams a second (BBRv1's ~2,000-4,000 on the grid)")
    ap.add_argument("--packets", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=0, help="the Monte Carlo's seed")
    a = ap.parse_args()
    if a.jitter_ms <= 0 or a.pps <= 0 or a.packets <= 2 * EDGE + 10:
        ap.error(f"need --jitter-ms > 0, --pps > 0 and --packets > {2 * EDGE + 10}")
    order = probe(a.jitter_ms, a.pps, a.packets)
    if order.size != a.packets or not np.array_equal(np.sort(order), np.arange(a.packets)):
        print(f"received {order.size} of {a.packets} datagrams: a loss-free path lost some; not judged")
        return 1
    send_ms = np.arange(a.packets) * 1e3 / a.pps
    mc = np.argsort(send_ms + np.random.default_rng(a.seed).normal(0.0, a.jitter_ms, a.packets), kind="stable")
    live, model = overtaken(order), overtaken(mc)
    print(f"{a.packets} datagrams {1e3 / a.pps:.3f} ms apart, jitter {a.jitter_ms:g} ms one way (spacing "
          f"{1e3 / a.pps / a.jitter_ms:.3f} jitters); share of packets overtaken:")
    print("| by | delay line | independent N(0, jitter^2) |\n|---|---|---|")
    print(f"| 3 later packets | {live[0]:.3f} | {model[0]:.3f} |")
    print(f"| one packet 3 or more later | {live[1]:.3f} | {model[1]:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
