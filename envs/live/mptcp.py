"""Kernel MPTCP backend: one transfer (a file of N bytes, or bulk for T seconds) from the client to
the server over an MPTCP socket with one subflow per path, under a congestion control set per
socket (``TCP_CONGESTION``), with the sender's per-subflow telemetry sampled at a fixed interval.

The scheduler is the kernel's (the default MPTCP scheduler), so this backend observes and
measures; it does not take scheduling decisions.

Time zero of a transfer is the moment the client's connect() returns (the MPTCP handshake on
path 1 is done), which is where a simulator episode starts sending; the second subflow's MP_JOIN
handshake happens after that, as it does in a real connection.
"""

from __future__ import annotations

import errno
import math
import socket
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from envs.errors import ConfigError
from envs.live.system import LiveError, check_cc
from envs.live.telemetry import IPPROTO_MPTCP, TCP_CONGESTION, Sample, Sampler, connection_info
from envs.metrics import transfer_metrics
from envs.scenario import WorkloadSpec
from envs.sim.layout import N_COBS, N_OBS, OBS_ACKED, OBS_SRTT

CHUNK = 1 << 20


class MptcpFallback(LiveError):
    """The kernel fell back to plain TCP (the run measured one path): retry it."""

_ZEROS = memoryview(bytes(4 * CHUNK))


@dataclass
class TransferResult:
    """What one live transfer measured; ``metrics()`` gives the simulator's metrics of it."""

    cc: str
    workload: str
    size_bytes: float  # file size (inf for bulk)
    duration_s: float | None  # bulk length or file time cap
    delivered_bytes: float  # received in order by the server application (within the duration)
    completion_s: float  # NaN when the file did not finish
    span_s: float  # time over which goodput is computed
    connect_s: float  # MPTCP handshake (before time zero)
    times: np.ndarray  # [T] sample times (s)
    obs: np.ndarray  # [T, P, N_OBS] sender telemetry per path
    cobs: np.ndarray  # [T, N_COBS]
    has_subflow: np.ndarray  # [T, P]
    sent_pkts: np.ndarray  # [P] packets offered to each path's forward bottleneck
    lost_pkts: np.ndarray  # [P] of those, dropped (queue overflow + random loss)
    wall_s: float
    error: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def path_bytes(self) -> np.ndarray:
        """Bytes each path carried and had acknowledged (last sample of each subflow)."""
        return self.obs[:, :, OBS_ACKED].max(axis=0) if len(self.times) else np.zeros(self.obs.shape[1])

    def rtt_weighted(self) -> tuple[float, float]:
        """(sum, count) of srtt over the transfer, each sample weighted by the packets its path had
        acknowledged since the previous one: the mean over ACKs the simulator computes."""
        if len(self.times) < 2:
            return 0.0, 0.0
        acked = np.diff(self.obs[:, :, OBS_ACKED], axis=0, prepend=0.0)
        weight = np.where(self.has_subflow, np.maximum(acked, 0.0) / 1448.0, 0.0)
        srtt = self.obs[:, :, OBS_SRTT]
        ok = weight > 0
        return float((srtt[ok] * weight[ok]).sum()), float(weight[ok].sum())

    def metrics(self) -> dict[str, np.ndarray]:
        """The simulator's metrics (``envs.metrics``) of this transfer, as arrays of one run."""
        rtt_sum, rtt_cnt = self.rtt_weighted()
        return transfer_metrics(self.delivered_bytes, self.span_s, self.completion_s, self.path_bytes,
                                rtt_sum, rtt_cnt, self.sent_pkts.sum(), self.lost_pkts.sum())


def workload_bytes(work: WorkloadSpec) -> tuple[float, float | None]:
    """(bytes to send, time limit): a file of file_mb (10^6 bytes per MB), bulk messages in all, or
    bulk for duration_s. The request/response workloads (dash, web) run in the simulator only."""
    if work.type not in ("file", "bulk"):
        raise ConfigError(f"live runs support the file and bulk workloads, not {work.type!r}")
    return work.total_bytes(), work.duration_s


class MptcpTransfer:
    """One transfer on a started testbed: ``start()``, then ``wait()`` (or poll ``done`` and
    ``sample_now()``), then ``result()``. ``stop()`` ends it early."""

    def __init__(self, testbed, cc: str, workload: WorkloadSpec, telemetry_ms: float = 10.0,
                 max_duration_s: float = 600.0) -> None:
        self.tb, self.cc = testbed, check_cc(cc)
        self.workload = workload
        self.total, limit_s = workload_bytes(workload)
        self.limit_s: float = max_duration_s if limit_s is None else limit_s
        if not telemetry_ms > 0:
            raise LiveError(f"live.telemetry_ms must be > 0, got {telemetry_ms}")
        self.telemetry_s = telemetry_ms / 1000.0
        self.samples: list[Sample] = []
        self.received = 0
        self.delivered_in_time: int | None = None
        self.t0: float | None = None  # when the connection was up
        self.t_done: float | None = None
        self.connect_s = math.nan
        self.done = threading.Event()
        self._accepted = threading.Event()
        self.fell_back = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._errors: list[str] = []
        self.sampler: Sampler | None = None
        self._socks: list[socket.socket] = []
        self._counters0: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def _started(self) -> float:
        """``t0`` of a started transfer."""
        assert self.t0 is not None, "the transfer has not started"
        return self.t0

    # ------------------------------------------------------------------ run
    def start(self) -> MptcpTransfer:
        try:
            return self._start()
        except BaseException:
            self.stop()  # close what was opened; the caller sees the error
            raise

    def _start(self) -> MptcpTransfer:
        tb = self.tb
        server_ip = tb.paths[0].server_ip
        self._counters0 = network_counters(tb)
        listener = tb.socket("server", IPPROTO_MPTCP)
        self._socks.append(listener)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, self.cc.encode())
        listener.bind((server_ip, 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        client = tb.socket("client", IPPROTO_MPTCP)
        self._socks.append(client)
        try:
            client.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, self.cc.encode())
        except OSError as err:
            raise LiveError(f"cannot set congestion control {self.cc!r} on an MPTCP socket: {err}") from None
        client.bind((tb.paths[0].client_ip, 0))
        self._spawn(self._serve, listener)
        t = time.monotonic()
        client.settimeout(10.0)
        try:
            client.connect((server_ip, port))
        except OSError as err:
            raise LiveError(f"MPTCP connect over path 1 failed: {err}") from None
        client.settimeout(None)
        # Send only once the server holds the connection: a data packet that overtakes the
        # handshake's third ACK (reordering jitter) would complete it without MP_CAPABLE, and the
        # kernel falls back to plain TCP (MPTcpExtMPCapableFallbackACK).
        if not self._accepted.wait(10.0):
            raise LiveError("the server did not accept the MPTCP connection within 10 s")
        self.t0 = time.monotonic()
        self.connect_s = self.t0 - t
        try:
            connection_info(client)
        except OSError:
            raise MptcpFallback("the connection fell back to plain TCP during the handshake") from None
        got = client.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
        if got != self.cc:
            raise LiveError(f"the kernel runs {got!r} instead of {self.cc!r} on the MPTCP socket")
        self.sampler = Sampler(client, [p.client_ip for p in tb.paths], self.cc, self.total)
        self._spawn(self._send, client)
        self._spawn(self._sample_loop)
        return self

    def _spawn(self, fn, *args) -> None:
        th = threading.Thread(target=self._guard, args=(fn, *args), daemon=True)
        self._threads.append(th)
        th.start()

    def _guard(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as err:  # reported by result(), never silently
            if not self._stop.is_set():
                self._errors.append(f"{fn.__name__}: {err}")
            self.done.set()

    def _send(self, sock: socket.socket) -> None:
        sent = 0
        deadline = self._started + self.limit_s
        while not self._stop.is_set() and sent < self.total and time.monotonic() < deadline:
            n = int(min(len(_ZEROS), self.total - sent))
            sent += sock.send(_ZEROS[:n])
        if math.isfinite(self.total) and sent >= self.total:
            sock.shutdown(socket.SHUT_WR)

    def _serve(self, listener: socket.socket) -> None:
        listener.settimeout(10.0)
        conn, _ = listener.accept()
        self._socks.append(conn)
        self._accepted.set()
        conn.settimeout(0.2)
        buf = bytearray(CHUNK)
        while not self._stop.is_set():
            try:
                n = conn.recv_into(buf)
            except TimeoutError:
                n = -1
            now = time.monotonic()
            if self.t0 is not None and now >= self.t0 + self.limit_s:
                self.delivered_in_time = self.received  # what arrived within the duration (or cap)
                break
            if n == 0:
                break
            if n > 0:
                self.received += n
                if self.received >= self.total:
                    self.t_done = now
                    break
        self.done.set()

    def _sample_loop(self) -> None:
        k = 0
        while not self.done.is_set() and not self._stop.is_set():
            self.sample_now()
            k += 1
            wait = self._started + k * self.telemetry_s - time.monotonic()
            if wait > 0:
                self.done.wait(wait)
        self.sample_now()

    def sample_now(self) -> Sample | None:
        """A fresh telemetry sample (also stored)."""
        if self.sampler is None:
            return None
        with self._lock:
            try:
                s = self.sampler.sample(time.monotonic() - self._started)
            except OSError as err:
                if err.errno == errno.EOPNOTSUPP:  # SOL_MPTCP options fail once it is plain TCP
                    self.fell_back = True
                return self.samples[-1] if self.samples else None
            self.samples.append(s)
            return s

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:
            timeout = self.limit_s + 30.0
        return self.done.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self.done.set()
        for s in self._socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for th in self._threads:
            th.join(timeout=2.0)
        for s in self._socks:
            s.close()
        self._socks.clear()

    def result(self) -> TransferResult:
        """Stop (if still running) and measure."""
        finished_at = time.monotonic()
        self.wait(0)
        t0, t_done = self._started, self.t_done
        done_in_time = t_done is not None and t_done - t0 <= self.limit_s
        if not self.done.is_set():
            self._errors.append("transfer did not end")
        if self.fell_back:
            self._errors.append("MPTCP fell back to plain TCP (one path only)")
        self.sample_now()
        self.stop()
        counters1 = network_counters(self.tb)
        assert self._counters0 is not None  # read when the transfer started
        sent = counters1[0] - self._counters0[0]
        lost = counters1[1] - self._counters0[1]
        P = len(self.tb.paths)
        if self.samples:
            times = np.array([s.t for s in self.samples])
            obs = np.stack([s.obs for s in self.samples])
            cobs = np.stack([s.cobs for s in self.samples])
            has = np.stack([s.has_subflow for s in self.samples])
        else:
            times, obs, cobs, has = np.zeros(0), np.zeros((0, P, N_OBS)), np.zeros((0, N_COBS)), np.zeros((0, P), bool)
        if math.isfinite(self.total):
            completion = t_done - t0 if done_in_time and t_done is not None else math.nan
            delivered = self.total if done_in_time else float(self.delivered_in_time or self.received)
            span = completion if done_in_time else min(self.limit_s, finished_at - t0)
        else:
            delivered = float(self.received if self.delivered_in_time is None else self.delivered_in_time)
            completion, span = math.nan, min(self.limit_s, finished_at - t0)
        return TransferResult(self.cc, self.workload.type, self.total, self.workload.duration_s, delivered,
                              completion, span, self.connect_s, times, obs, cobs, has, sent, lost,
                              wall_s=finished_at - t0 + self.connect_s,
                              error="; ".join(self._errors) or None)


def network_counters(tb) -> tuple[np.ndarray, np.ndarray]:
    """Per path, packets offered to the forward bottleneck and packets lost in the network on
    the forward direction (queue drops + random loss): the ground truth of loss_rate."""
    P = len(tb.paths)
    if not getattr(tb, "counters_per_path", True):  # a shared link counts other paths' packets too
        return np.full(P, np.nan), np.full(P, np.nan)
    sent, lost = np.zeros(P), np.zeros(P)
    drops = tb.emulation.loss_drops() if tb.emulation is not None else {}
    for p in tb.paths:
        q = tb.bottleneck(p.index)
        sent[p.index] = q["packets"] + q["drops"]
        lost[p.index] = q["drops"] + drops.get((p.index, "forward"), 0)
    return sent, lost


class MptcpBackend:
    """``backend=mptcp``: the kernel's MPTCP with its own scheduler (evaluation only)."""

    name = "mptcp"
    controls_scheduler = False
    scheduler = "kernel default MPTCP scheduler"

    @staticmethod
    def sent_per_packet(mss: int) -> int:
        """Bytes a full packet adds to a subflow's ``sent`` counter (tcpi_bytes_sent: its payload)."""
        return mss

    @staticmethod
    def check(cc: str) -> str:
        return check_cc(cc)

    @staticmethod
    def transfer(testbed, cc: str, workload: WorkloadSpec, telemetry_ms: float = 10.0) -> MptcpTransfer:
        return MptcpTransfer(testbed, cc, workload, telemetry_ms)
