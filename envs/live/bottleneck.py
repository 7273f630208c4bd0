"""A testbed path's bottleneck under shared load: long-lived kernel TCP flows through it, and its
queue sampled over time.

The simulator's shared-bottleneck laws (docs/transport.md: two BBRv1 flows hold a standing queue
of about one BDP, Scherrer et al., IMC 2022) are checked against the real thing with these:
``tests/test_live.py`` and ``benchmarks/sim_vs_live.py --only queue``. The queue is read from
the bottleneck's own counters (``Testbed.bottleneck``), the ground truth no sender sees.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import numpy as np

from envs.live.system import LiveError, check_cc

CHUNK = 1 << 16  # bytes per send()/recv() call
POLL_S = 0.5  # how often a blocked send()/recv() looks at the stop flag
_ZEROS = memoryview(bytes(CHUNK))


def send_zeros(sock: socket.socket, stop: threading.Event, size: int | None = None) -> bool:
    """Send ``size`` bytes (None: until ``stop`` is set) on a socket with a timeout (the time a
    blocked send waits before it looks at ``stop`` again); True when all were sent, False when
    stopped first. A socket error other than the timeout is raised."""
    left = size
    while not stop.is_set():
        n = CHUNK if left is None else min(CHUNK, left)
        if n == 0:
            return True
        try:
            sent = sock.send(_ZEROS[:n])
        except TimeoutError:
            continue
        if left is not None:
            left -= sent
    return False


def receive_counting(sock: socket.socket, stop: threading.Event, count: Callable[[int], None]) -> None:
    """Read a socket with a timeout until its peer closes it, an error or ``stop``, calling
    ``count(bytes)`` after every read."""
    while not stop.is_set():
        try:
            got = sock.recv(CHUNK)
        except TimeoutError:
            continue
        except OSError:
            return
        if not got:
            return
        count(len(got))


class BulkFlows:
    """``n`` backlogged kernel TCP flows under congestion control ``cc`` (one the kernel has),
    client to server over path ``path`` of a started testbed (source-address routing picks the
    path), until ``stop()``: ``with BulkFlows(tb, 0, "bbr", 2) as flows: ...``. ``received`` counts
    each flow's bytes at the server."""

    def __init__(self, tb, path: int, cc: str, n: int) -> None:
        if n < 1:
            raise LiveError(f"BulkFlows: n must be >= 1, got {n}")
        self.tb, self.path, self.cc, self.n = tb, int(path), check_cc(cc), int(n)
        self.received = [0] * self.n
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.t0: float | None = None

    def __enter__(self) -> BulkFlows:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _socket(self, host: str) -> socket.socket:
        s = self.tb.socket(host)
        self._socks.append(s)
        return s

    def start(self) -> BulkFlows:
        try:
            link = self.tb.paths[self.path]
            listener = self._socket("server")
            listener.bind((link.server_ip, 0))
            listener.listen(self.n)
            listener.settimeout(10.0)
            for i in range(self.n):
                c = self._socket("client")
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
                c.bind((link.client_ip, 0))
                c.connect(listener.getsockname())
                conn, _ = listener.accept()
                self._socks.append(conn)
                c.settimeout(POLL_S)
                conn.settimeout(POLL_S)
                self._threads += [threading.Thread(target=self._send, args=(c,), daemon=True),
                                  threading.Thread(target=self._receive, args=(conn, i), daemon=True)]
            self.t0 = time.monotonic()
            for th in self._threads:
                th.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _send(self, sock: socket.socket) -> None:
        try:
            send_zeros(sock, self._stop)
        except OSError:
            return

    def _receive(self, sock: socket.socket, i: int) -> None:
        def count(n: int) -> None:
            self.received[i] += n
        receive_counting(sock, self._stop, count)

    def goodput_mbps(self) -> list[float]:
        """Each flow's mean goodput since the start (Mbit/s of payload)."""
        span = time.monotonic() - self.t0 if self.t0 else float("nan")
        return [8e-6 * r / span for r in self.received]

    def stop(self) -> None:
        self._stop.set()
        for th in self._threads:
            if th.is_alive():
                th.join(timeout=2 * POLL_S + 1.0)
        for s in self._socks:
            s.close()
        self._socks.clear()


class QueueSampler:
    """Samples the forward bottleneck queue of path ``path`` (bytes on the wire) every ``every_s``
    in a thread, from ``start()`` to ``stop()``; ``samples`` is an array of (seconds since start,
    bytes)."""

    def __init__(self, tb, path: int, every_s: float = 0.02) -> None:
        self.tb, self.path, self.every_s = tb, int(path), float(every_s)
        self._rows: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> QueueSampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> QueueSampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                backlog = self.tb.bottleneck(self.path)["backlog"]
                self._rows.append((time.monotonic() - self._t0, float(backlog)))
                self._stop.wait(self.every_s)
        except BaseException as err:  # reported by stop()
            self.error = err

    def stop(self) -> np.ndarray:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        if self.error is not None:
            raise LiveError(f"sampling the bottleneck queue of path {self.path + 1}: {self.error}")
        return self.samples

    @property
    def samples(self) -> np.ndarray:
        return np.asarray(self._rows, dtype=float).reshape(-1, 2)

    def mean(self, start_s: float, end_s: float) -> float:
        """Mean queue (bytes) over the samples taken from ``start_s`` to ``end_s``."""
        a = self.samples
        sel = (a[:, 0] >= start_s) & (a[:, 0] < end_s)
        if not sel.any():
            raise LiveError(f"no queue samples between {start_s:g} s and {end_s:g} s")
        return float(a[sel, 1].mean())


def two_flow_queue(tb, cc: str, xquic: bool, warmup_s: float, end_s: float, path: int = 0) -> tuple[float, float]:
    """Two backlogged flows of ``cc`` through path ``path`` of a started testbed for ``end_s``
    seconds, two kernel TCP flows (``BulkFlows``) or two XQUIC connections (``xquic``): the mean
    forward bottleneck queue from ``warmup_s`` to ``end_s`` in BDPs (frames on the wire over the
    path's BDP at its rate) and the two flows' total goodput (Mbit/s). The setting of the
    standing-queue law (docs/transport.md, Scherrer et al., IMC 2022)."""
    from envs.live.xquic import XquicTransfer
    from envs.scenario import WorkloadSpec

    fwd = next(d for d in tb.directions if d.path == path and d.forward)
    rev = next(d for d in tb.directions if d.path == path and not d.forward)
    bdp_wire = fwd.rate_mbps * 1e6 / 8 * (fwd.delay_ms + rev.delay_ms) / 1000
    with QueueSampler(tb, path) as queue:
        if xquic:
            work = WorkloadSpec(type="file", file_mb=10 * fwd.rate_mbps * end_s / 8)  # never finishes
            flows = [XquicTransfer(tb, cc, work, max_duration_s=end_s + 10) for _ in range(2)]
            try:
                for f in flows:
                    f.start()
                time.sleep(end_s)
            finally:
                results = [f.result() for f in flows if f.t0 is not None]
            goodput = sum(8e-6 * r.delivered_bytes / r.span_s for r in results)
        else:
            with BulkFlows(tb, path, cc, 2) as kernel_flows:
                time.sleep(end_s)
                goodput = sum(kernel_flows.goodput_mbps())
        return queue.mean(warmup_s, end_s) / bdp_wire, goodput


__all__ = ["BulkFlows", "QueueSampler", "receive_counting", "send_zeros", "two_flow_queue"]
