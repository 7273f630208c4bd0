"""Competing traffic on the links of a network testbed (``envs.live.network_testbed``), as a
scenario's ``competing`` asks for it (docs/transport.md, "Network"):

- ``flows`` long-lived kernel TCP flows under the competing ``cc``, backlogged from ``X_k`` to
  ``Y_k`` across link ``k`` for as long as the testbed runs;
- ``arrivals``: flows arriving as a Poisson process of rate ``rate_per_s``, each sending a
  Pareto-distributed size (shape ``shape``, mean ``mean_kb``; heavy-tailed as web flows are,
  Crovella and Bestavros 1997) once and leaving; at most ``slots`` run at once, an arrival while
  all are busy waits for one to free (the simulator's rule).

The arrival times and sizes come from ``numpy.random.default_rng([seed, link])``, so a seed
fixes them; when each flow then ends depends on the network. ``Competition.stats()`` says what
ran: bytes received per link, arrivals started and finished, the largest number of arrivals
running at once.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from envs.live.bottleneck import receive_counting, send_zeros
from envs.live.system import LiveError

POLL_S = 0.2


@dataclass
class LinkTraffic:
    """What ran on one link."""

    link: str
    long_lived: int
    received_bytes: int = 0
    arrivals_started: int = 0
    arrivals_finished: int = 0
    arrivals_bytes: int = 0
    most_at_once: int = 0
    sizes: list[int] = field(default_factory=list)


class Competition:
    """The competing traffic of every link of ``tb`` that has some: ``start()`` ... ``stop()``."""

    def __init__(self, tb, seed: int = 0) -> None:
        self.tb, self.seed = tb, int(seed)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self.traffic: dict[int, LinkTraffic] = {}
        self.errors: list[str] = []
        self.t0: float | None = None

    # ------------------------------------------------------------------ run
    def start(self) -> Competition:
        try:
            self.t0 = time.monotonic()
            for k in self.tb.competing_links():
                self._start_link(k)
        except BaseException:
            self.stop()
            raise
        return self

    def _sock(self, host: str) -> socket.socket:
        s = self.tb.socket(host)
        self._socks.append(s)
        return s

    def _thread(self, target, *args) -> None:
        th = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(th)
        th.start()

    def _start_link(self, k: int) -> None:
        h, link = self.tb.links[k], self.tb.network.links[k]
        comp = link.competing
        traffic = self.traffic[k] = LinkTraffic(self.tb.network.names[k], comp.flows)
        listener = self._sock(h.y)
        listener.bind((h.y_ip, 0))
        listener.listen(64)
        listener.settimeout(POLL_S)
        self._thread(self._accept, listener, traffic)
        for _ in range(comp.flows):
            c = self._connect(h, comp.cc, listener.getsockname())
            self._thread(self._send, c, None, traffic)
        if comp.arrivals is not None:
            self._thread(self._arrivals, k, h, comp, listener.getsockname(), traffic)

    def _connect(self, h, cc: str, addr) -> socket.socket:
        c = self._sock(h.x)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        c.bind((h.x_ip, 0))
        c.settimeout(10.0)
        c.connect(addr)
        c.settimeout(POLL_S)
        return c

    def _accept(self, listener: socket.socket, traffic: LinkTraffic) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(POLL_S)
            with self._lock:
                self._socks.append(conn)
            self._thread(self._receive, conn, traffic)

    def _receive(self, conn: socket.socket, traffic: LinkTraffic) -> None:
        def count(n: int) -> None:
            with self._lock:
                traffic.received_bytes += n
        try:
            receive_counting(conn, self._stop, count)
        finally:
            conn.close()  # the sender closed it (or we stop): an arriving flow's socket goes with it

    def _send(self, sock: socket.socket, size: int | None, traffic: LinkTraffic) -> bool:
        """Send ``size`` bytes (None: until stopped); True when all were sent."""
        try:
            return send_zeros(sock, self._stop, size)
        except OSError as err:
            if not self._stop.is_set():
                with self._lock:
                    self.errors.append(f"link {traffic.link}: a competing flow ended early: {err}")
            return False

    def _arrivals(self, k: int, h, comp, addr, traffic: LinkTraffic) -> None:
        spec = comp.arrivals
        rng = np.random.default_rng([self.seed, k])
        slots = threading.Semaphore(spec.slots)
        running = [0]
        next_t = time.monotonic()
        while not self._stop.is_set():
            next_t += float(rng.exponential(1.0 / spec.rate_per_s))
            size = int(spec.sizes(rng, 1)[0])
            if self._stop.wait(max(0.0, next_t - time.monotonic())):
                return
            while not slots.acquire(timeout=POLL_S):  # all slots busy: the arrival waits for one
                if self._stop.is_set():
                    return
            with self._lock:
                running[0] += 1
                traffic.arrivals_started += 1
                traffic.sizes.append(size)
                traffic.most_at_once = max(traffic.most_at_once, running[0])
            self._thread(self._one_flow, h, comp.cc, addr, size, traffic, slots, running)

    def _one_flow(self, h, cc: str, addr, size: int, traffic: LinkTraffic, slots: threading.Semaphore,
                  running: list[int]) -> None:
        try:
            sock = self._connect(h, cc, addr)
            if self._send(sock, size, traffic):
                with self._lock:
                    traffic.arrivals_finished += 1
                    traffic.arrivals_bytes += size
            sock.close()
        except OSError as err:
            if not self._stop.is_set():
                with self._lock:
                    self.errors.append(f"link {traffic.link}: an arriving flow failed: {err}")
        finally:
            with self._lock:
                running[0] -= 1
            slots.release()

    # ------------------------------------------------------------------ inspect
    def stats(self) -> dict[str, dict]:
        """Per link: long-lived flows, bytes received, arrivals started/finished, most at once,
        mean goodput of all its competing traffic since the start (Mbit/s)."""
        span = time.monotonic() - self.t0 if self.t0 else float("nan")
        with self._lock:
            return {t.link: {"long_lived": t.long_lived, "received_bytes": t.received_bytes,
                             "goodput_mbps": 8e-6 * t.received_bytes / span,
                             "arrivals_started": t.arrivals_started, "arrivals_finished": t.arrivals_finished,
                             "most_arrivals_at_once": t.most_at_once} for t in self.traffic.values()}

    def check(self) -> None:
        """Raise LiveError if a competing flow failed (the run would not have had its competition)."""
        with self._lock:
            if self.errors:
                raise LiveError("competing traffic: " + "; ".join(self.errors[:3]))

    def stop(self) -> None:
        self._stop.set()
        for th in list(self._threads):
            if th.is_alive():
                th.join(timeout=2 * POLL_S + 1.0)
        with self._lock:
            for s in self._socks:
                s.close()
            self._socks.clear()


__all__ = ["Competition", "LinkTraffic"]
