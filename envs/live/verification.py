"""Verification before a run: measure every path and refuse when the emulation misses the scenario.

Mininet silently ignores parameters it cannot apply (netem missing, a rate above 1000 Mbit/s);
a live run must never do so. Per path, all paths at once (about 2 s in all):

- RTT and jitter: ``ping -U`` (user-to-user latency), 50 echoes 10 ms apart (alongside the loss
  probes, or before them when a path's jitter preserves order, since then other traffic would
  lengthen the echoes' delay). The mean RTT must lie
  within 10 % + 1 ms of the expected one (the scenario's forward plus reverse delay, each the mean
  of a normal delay clipped at zero, plus the echo's serialisation); the RTT's spread (interquartile
  range / 1.349, the standard deviation of a normal, robust to echoes ping answers late) within
  30 % + 0.5 ms of the expected sqrt(jitter_fwd^2 + jitter_rev^2).
- Loss, each direction: up to 5000 small UDP packets in paced bursts well below the rate (so the
  queue never overflows); the count lost must lie inside the two-sided binomial interval of the
  scenario's loss probability at level ``loss_alpha`` (a loss-free path must lose none).
- Rate, each direction: UDP at 1.3 x the rate for 0.3 s; the arrival rate of wire bytes (kernel
  receive timestamps), corrected for the measured random loss, must lie within 10 % of the rate.

A miss the machine caused rather than the emulation's settings is ``VerificationInconclusive``:
the probes could not be offered or overflowed our own sockets, or the delay lines (which sleep
between packets) released packets late: at the 99th percentile by more than the spread's absolute
tolerance, or once by more than half the rate tolerance of the rate probe (a stall that alone
moves the measured rate that far). Their lateness over the verification is in ``Report.delay_lines``
and the table.
"""

from __future__ import annotations

import math
import os
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from scipy import stats

from envs.live.emulation import Direction
from envs.live.system import SO_RCVBUFFORCE, LiveError, popen

ETH_IP_UDP = 14 + 20 + 8  # header bytes on the wire around a UDP payload
ICMP_WIRE = 98  # a default ping on the wire (56 + 8 + 20 + 14)
SO_TIMESTAMPNS = 35
UDP_SEGMENT = 103
MAX_BURST = 32  # datagrams per GSO send
PHASE_LOSS, PHASE_RATE = 1, 2
RATE_PROBE_S = 0.3  # each direction overloaded this long
RATE_REL = 0.10  # the measured rate's tolerance, relative
JITTER_ABS_MS = 0.5  # the RTT spread's tolerance, its absolute part
HEADER = struct.Struct("!BBII")  # phase, stream, sequence, run tag


class VerificationError(LiveError):
    """The emulated network does not match the scenario; the run is refused."""


class VerificationInconclusive(VerificationError):
    """The verification missed because of the machine (too busy to offer the probes or to run the
    delay lines on time), not because of the emulation's settings; trying again may pass."""


@dataclass
class Check:
    path: int
    what: str  # "rtt ms", "jitter ms", "loss % fwd", "rate Mbit/s rev", ...
    expected: float
    measured: float
    low: float
    high: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.low <= self.measured <= self.high

    def line(self) -> str:
        mark = "ok" if self.ok else "FAIL"
        return (f"path {self.path + 1} {self.what:<16} expected {self.expected:9.3f}  measured {self.measured:9.3f}  "
                f"accept [{self.low:.3f}, {self.high:.3f}]  {mark}{'  ' + self.detail if self.detail else ''}")


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    delay_lines: list[dict] = field(default_factory=list)  # each one's statistics over the verification

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def late_ms(self) -> tuple[float, float]:
        """The delay lines' worst release lateness over the verification: (99th percentile, max), ms."""
        if not self.delay_lines:
            return 0.0, 0.0
        return (max(d["window_late_us_p99"] for d in self.delay_lines) / 1e3,
                max(d["window_late_us_max"] for d in self.delay_lines) / 1e3)

    @property
    def realtime(self) -> bool:
        """Every delay line ran in the real-time class (``--rt-priority`` took effect)."""
        return all(d["realtime"] for d in self.delay_lines)

    def table(self) -> str:
        lines = [f"verification ({self.seconds:.1f} s): {'passed' if self.ok else 'FAILED'}"]
        lines += ["  " + c.line() for c in self.checks]
        if self.delay_lines:
            p99, worst = self.late_ms()
            lines.append(f"  delay lines: released late by {p99:.2f} ms (99th percentile), {worst:.2f} ms at most; "
                         f"real-time class: {'yes' if self.realtime else 'NO'}")
        return "\n".join(lines)


def clipped_normal_mean(mu: float, sigma: float) -> float:
    """E[max(0, mu + sigma Z)]: the mean one-way delay of a delay line (delays clip at zero)."""
    if sigma <= 0:
        return max(mu, 0.0)
    z = mu / sigma
    return mu * stats.norm.cdf(z) + sigma * stats.norm.pdf(z)


def clipped_normal_var(mu: float, sigma: float) -> float:
    if sigma <= 0:
        return 0.0
    z = mu / sigma
    m = clipped_normal_mean(mu, sigma)
    second = (mu * mu + sigma * sigma) * stats.norm.cdf(z) + mu * sigma * stats.norm.pdf(z)
    return max(second - m * m, 0.0)


def binomial_interval(n: int, p: float, alpha: float) -> tuple[int, int]:
    """Losses a path of loss probability p shows in n packets, two-sided at level alpha."""
    if p <= 0:
        return 0, 0
    return int(stats.binom.ppf(alpha / 2, n, p)), int(stats.binom.isf(alpha / 2, n, p))


def after_rate_limit(keep: float, d: Direction) -> float:
    """Of the measured share of packets kept, the part kept after the rate limit (what thins the
    arrivals the rate is measured from): all of it on one link; on a route whose random loss
    partly comes before its bottleneck (``d.loss_after_pct``), the same share of the log-survival."""
    if d.loss_after_pct is None or d.loss_pct <= 0:
        return keep
    share = math.log1p(-d.loss_after_pct / 100.0) / math.log1p(-d.loss_pct / 100.0)
    return keep ** share


def ping_resolution_ms(rtt_ms: float) -> float:
    """The step in which iputils ping prints an echo's time (ms): 3 significant digits."""
    return 1.0 if rtt_ms >= 100 else 0.1 if rtt_ms >= 10 else 0.01 if rtt_ms >= 1 else 0.001


_PING_TIME = re.compile(r"time=([0-9.]+) ms")


def _start_pings(tb, count: int, interval_s: float) -> list[subprocess.Popen]:
    return [popen(["ping", "-U", "-n", "-c", str(count), "-i", f"{interval_s:g}", "-W", "2", p.server_ip],
                  tb.client_pid, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in tb.paths]


def _udp_snmp(pid: int) -> dict[str, int]:
    """UDP counters of the namespace of ``pid`` (RcvbufErrors: drops in our own sockets)."""
    lines = [line.split() for line in open(f"/proc/{pid}/net/snmp") if line.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:])))


def udp_pair(tb, path: int = 0, forward: bool = True, rcvbuf: int = 32 << 20,
             timeout_s: float = 0.5) -> tuple[socket.socket, socket.socket]:
    """A UDP probe over path ``path`` of ``tb`` (a testbed, or one path's view of a network
    testbed: anything with ``paths`` and ``socket``): (receiver, sender). Forward, the receiver is
    in the server's namespace on the path's server address and the sender in the client's on its
    client address; reverse, the other way round. The receiver has a forced receive buffer of
    ``rcvbuf`` bytes and a receive timeout (0: non-blocking); the sender is connected to it."""
    p = tb.paths[path]
    ends = [("client", p.client_ip), ("server", p.server_ip)]
    (src_host, src_ip), (dst_host, dst_ip) = ends if forward else ends[::-1]
    rx = tb.socket(dst_host, 0, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    rx.bind((dst_ip, 0))
    rx.settimeout(timeout_s)
    tx = tb.socket(src_host, 0, socket.SOCK_DGRAM)
    tx.bind((src_ip, 0))
    tx.connect(rx.getsockname())
    return rx, tx


class _Stream:
    """One probe stream: a UDP sender in one host and its receiver in the other."""

    def __init__(self, tb, d: Direction, index: int, tag: int) -> None:
        self.d, self.index, self.tag = d, index, tag
        self.rx, self.tx = udp_pair(tb, d.path, d.forward, rcvbuf=16 << 20, timeout_s=0.0)
        self.rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.received = {PHASE_LOSS: 0, PHASE_RATE: 0}
        self.arrivals: list[float] = []
        self.sent = {PHASE_LOSS: 0, PHASE_RATE: 0}
        self.send_s = {PHASE_LOSS: 0.0, PHASE_RATE: 0.0}

    def close(self) -> None:
        self.rx.close()
        self.tx.close()

    def send_paced(self, phase: int, n: int, payload: int, pps: float, burst: int) -> None:
        """n packets in bursts of ``burst`` at an average of ``pps`` packets per second; a burst is
        one send() that the kernel cuts into ``payload``-byte datagrams (UDP GSO), so Python's
        speed does not limit the rate offered."""
        pad = bytes(max(payload - HEADER.size, 0))
        self.tx.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, payload)
        t0 = time.monotonic()
        for first in range(0, n, burst):
            wait = t0 + first / pps - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            count = min(burst, n - first)
            data = b"".join(HEADER.pack(phase, self.index, seq, self.tag) + pad for seq in range(first, first + count))
            try:
                self.tx.send(data)
            except OSError:  # ENOBUFS from a full local queue: not sent, not counted
                continue
            self.sent[phase] += count
        self.send_s[phase] = time.monotonic() - t0


def _receive(streams: list[_Stream], stop: threading.Event) -> None:
    socks = {s.rx: s for s in streams}
    anc = socket.CMSG_SPACE(16)
    while True:
        ready, _, _ = select.select(list(socks), [], [], 0.02)
        for rx in ready:
            s = socks[rx]
            for _ in range(256):
                try:
                    data, ancdata, _, _ = rx.recvmsg(2048, anc)
                except BlockingIOError:
                    break
                if len(data) < HEADER.size:
                    continue
                phase, index, _, tag = HEADER.unpack_from(data)
                if index != s.index or tag != s.tag or phase not in s.received:
                    continue
                s.received[phase] += 1
                if phase == PHASE_RATE:
                    stamp = time.time()
                    for level, kind, value in ancdata:
                        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                            sec, nsec = struct.unpack("qq", value[:16])
                            stamp = sec + nsec * 1e-9
                    s.arrivals.append(stamp)
        if stop.is_set() and not ready:
            break


def verify(tb, *, rtt_rel: float = 0.10, rtt_abs_ms: float = 1.0, rate_rel: float = RATE_REL,
           jitter_rel: float = 0.30, jitter_abs_ms: float = JITTER_ABS_MS, loss_alpha: float = 1e-4, pings: int = 50,
           raise_on_failure: bool = True) -> Report:
    """Measure the testbed ``tb`` (started) against its plan; raise VerificationError listing every
    miss (or return the report with ``raise_on_failure=False``)."""
    t_start = time.monotonic()
    report = Report()
    directions = tb.directions
    by_key = {(d.path, d.direction): d for d in directions}
    delay_lines = list(tb.emulation.delay_lines.values()) if tb.emulation is not None else []
    for line in delay_lines:  # their lateness counts from here
        line.report()
    tag = (os.getpid() * 7919 + int(t_start * 1000)) & 0xFFFFFFFF
    streams = [_Stream(tb, d, i, tag) for i, d in enumerate(directions)]
    stop = threading.Event()
    snmp0 = {pid: _udp_snmp(pid) for pid in (tb.client_pid, tb.server_pid)}
    receiver = threading.Thread(target=_receive, args=(streams, stop), daemon=True)
    receiver.start()
    pings_proc: list[subprocess.Popen] = []
    try:
        pings_proc = _start_pings(tb, pings, 0.01)
        if any(d.jitter_ms > 0 and not d.reorder for d in directions):
            # order-preserving jitter holds a packet behind every one ahead of it, so the probe
            # traffic would lengthen the echoes' delay: measure the RTT alone first
            for proc in pings_proc:
                proc.wait(timeout=30)
        # --- loss: small packets, paced in bursts far below the rate and the queue
        payload = 64
        threads = []
        for s in streams:
            d = s.d
            cap_pps = d.rate_mbps * 1e6 / 8 / (payload + ETH_IP_UDP)
            pps = min(0.25 * cap_pps, 5000.0)
            burst = max(1, min(int(pps * 0.002), d.queue_packets // 4, MAX_BURST))
            n = 1000 if d.loss_pct <= 0 else int(min(5000, max(1000, math.ceil(30 / (d.loss_pct / 100)))))
            n = max(200, min(n, int(pps * 0.8)))
            th = threading.Thread(target=s.send_paced, args=(PHASE_LOSS, n, payload, pps, burst), daemon=True)
            threads.append(th)
            th.start()
        for th in threads:
            th.join()
        settle = max(d.delay_ms + 4 * d.jitter_ms for d in directions) / 1000 + 0.15
        time.sleep(settle)
        measured_loss = {}
        for s in streams:
            d, n = s.d, s.sent[PHASE_LOSS]
            lost = max(n - s.received[PHASE_LOSS], 0)
            lo, hi = binomial_interval(n, d.loss_pct / 100, loss_alpha)
            measured_loss[(d.path, d.direction)] = lost / max(n, 1)
            report.checks.append(Check(d.path, f"loss % {d.direction[:3]}", d.loss_pct, 100 * lost / max(n, 1),
                                       100 * lo / max(n, 1), 100 * hi / max(n, 1), f"{lost}/{n} packets"))
        # --- RTT and jitter (the pings ran alongside, or before)
        for p, proc in zip(tb.paths, pings_proc):
            out, _ = proc.communicate(timeout=10)
            rtts = [float(x) for x in _PING_TIME.findall(out)]
            fwd, rev = by_key[(p.index, "forward")], by_key[(p.index, "reverse")]
            expected = (clipped_normal_mean(fwd.delay_ms, fwd.jitter_ms) + clipped_normal_mean(rev.delay_ms, rev.jitter_ms)
                        + ICMP_WIRE * 8 / (fwd.rate_mbps * 1e3) + ICMP_WIRE * 8 / (rev.rate_mbps * 1e3))
            mean = sum(rtts) / len(rtts) if rtts else math.nan
            tol = rtt_rel * expected + rtt_abs_ms
            report.checks.append(Check(p.index, "rtt ms", expected, mean, expected - tol, expected + tol,
                                       f"{len(rtts)}/{pings} echoes"))
            jit = math.sqrt(clipped_normal_var(fwd.delay_ms, fwd.jitter_ms) + clipped_normal_var(rev.delay_ms, rev.jitter_ms))
            # spread as the interquartile range of a normal (IQR / 1.349): robust to the few echoes
            # that ping itself answers late on a busy machine
            std = float(np.subtract(*np.percentile(rtts, [75, 25]))) / 1.349 if len(rtts) > 3 else math.nan
            # plus ping's display resolution: iputils prints 3 significant digits (1 ms from 100 ms on),
            # and the spread of a constant RTT printed so is up to one step
            tol = jitter_rel * jit + jitter_abs_ms + ping_resolution_ms(expected)
            report.checks.append(Check(p.index, "rtt spread ms", jit, std, max(jit - tol, 0.0), jit + tol,
                                       "IQR/1.349"))
        # --- rate: overload each direction for a moment
        inconclusive: list[str] = []
        payload = 1400
        threads = []
        for s in streams:
            d = s.d
            pps = 1.3 * d.rate_mbps * 1e6 / 8 / (payload + ETH_IP_UDP)
            n = max(100, int(pps * RATE_PROBE_S))
            burst = max(1, min(MAX_BURST, d.queue_packets // 4))
            th = threading.Thread(target=s.send_paced, args=(PHASE_RATE, n, payload, pps, burst), daemon=True)
            threads.append(th)
            th.start()
        for th in threads:
            th.join()
        drain = max(d.queue_packets * (payload + ETH_IP_UDP) * 8 / (d.rate_mbps * 1e6) + (d.delay_ms + 4 * d.jitter_ms) / 1e3
                    for d in directions)
        time.sleep(min(drain, 2.0) + 0.05)
        for s in streams:
            d = s.d
            arr = sorted(s.arrivals)
            if len(arr) >= 20 and arr[-1] > arr[0]:
                got = (len(arr) - 1) * (payload + ETH_IP_UDP) * 8 / (arr[-1] - arr[0]) / 1e6
                got /= max(after_rate_limit(1.0 - measured_loss[(d.path, d.direction)], d), 0.05)
            else:
                got = 0.0
            offered = s.sent[PHASE_RATE] * (payload + ETH_IP_UDP) * 8 / max(s.send_s[PHASE_RATE], 1e-9) / 1e6
            check = Check(d.path, f"rate Mbit/s {d.direction[:3]}", d.rate_mbps, got, d.rate_mbps * (1 - rate_rel),
                          d.rate_mbps * (1 + rate_rel), f"{len(arr)} packets, offered {offered:.1f}")
            if not check.ok and got < check.low and offered < 1.05 * d.rate_mbps:
                inconclusive.append(f"path {d.path + 1} {d.direction}: could offer only {offered:.1f} Mbit/s")
            report.checks.append(check)
    finally:
        stop.set()
        receiver.join(timeout=2.0)
        for s in streams:
            s.close()
        for proc in pings_proc:  # ours, by pid: gone whatever happened above
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    overflow = {pid: _udp_snmp(pid).get("RcvbufErrors", 0) - before.get("RcvbufErrors", 0)
                for pid, before in snmp0.items()}
    report.delay_lines = [r for r in (line.report() for line in delay_lines) if r is not None]
    report.seconds = time.monotonic() - t_start
    if inconclusive:
        raise VerificationInconclusive("verification inconclusive (the machine is too busy to overload the paths): "
                                       + "; ".join(inconclusive) + "; try again")
    if any(overflow.values()):
        raise VerificationInconclusive(f"verification inconclusive: {sum(overflow.values())} probe packets overflowed "
                                       "our own socket buffers (the machine is too busy); try again")
    if raise_on_failure and not report.ok:
        raise refusal(report, tb.scenario.name, jitter_abs_ms=jitter_abs_ms, rate_rel=rate_rel)
    return report


def refusal(report: Report, scenario: str, *, jitter_abs_ms: float = JITTER_ABS_MS,
            rate_rel: float = RATE_REL) -> VerificationError:
    """What a failed ``report`` raises: ``VerificationInconclusive`` when the delay lines released
    packets later than the verification can tolerate (at the 99th percentile more than the spread's
    absolute tolerance ``jitter_abs_ms``, or once more than half the rate tolerance of the rate
    probe) and every miss is one that lateness makes (an RTT or a spread too large, a rate too
    small), else ``VerificationError``; either lists every miss and the table."""
    failures = report.failures()
    misses = "; ".join(f"path {c.path + 1} {c.what}: expected {c.expected:.3f}, measured {c.measured:.3f} "
                       f"(accepted {c.low:.3f}..{c.high:.3f})" for c in failures)
    p99, worst = report.late_ms()
    late = p99 > jitter_abs_ms or worst > rate_rel * RATE_PROBE_S * 1e3 / 2
    if late and all(c.what.startswith("rtt") and c.measured > c.high or c.what.startswith("rate") and c.measured < c.low
                    for c in failures):
        return VerificationInconclusive(
            f"verification inconclusive: {misses}, while the delay lines released packets up to {worst:.1f} ms late "
            f"({p99:.2f} ms at the 99th percentile): the machine did not run them on time"
            + ("" if report.realtime else " (they could not enter the real-time class)") + f"; try again\n{report.table()}")
    return VerificationError(f"the emulated network does not match scenario {scenario!r}, refusing to run: {misses}\n"
                             f"{report.table()}")


class _Startable(Protocol):
    def start(self) -> Any: ...

    def close(self) -> list[str]: ...


T = TypeVar("T", bound=_Startable)


def start_verified(make: Callable[[], T], attempts: int = 2, pause_s: float = 5.0,
                   on_failure: Callable[[int, VerificationError], None] | None = None) -> T:
    """``make()``'s testbed, started and verified. A verification that fails (on a shared machine
    mostly the RTT spread while other jobs load it; the testbed is torn down) is handed to
    ``on_failure(attempt, error)`` (attempt from 1) and retried on a fresh testbed after
    ``pause_s``, at most ``attempts`` times in all; the last failure is raised."""
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    for attempt in range(1, attempts + 1):
        tb = make()
        try:
            tb.start()
            return tb
        except VerificationError as err:
            if on_failure is not None:
                on_failure(attempt, err)
            if attempt == attempts:
                raise
            time.sleep(pause_s)
    raise AssertionError("unreachable")


@contextmanager
def verified_testbed(make: Callable[[], T], attempts: int = 2, pause_s: float = 5.0,
                     on_failure: Callable[[int, VerificationError], None] | None = None) -> Iterator[T]:
    """``start_verified``'s testbed for the length of a ``with`` block, closed at its end (an
    error or an interrupt included); what the teardown could not remove is printed to stderr."""
    tb = start_verified(make, attempts, pause_s, on_failure)
    try:
        yield tb
    finally:
        problems = tb.close()
        if problems:
            print(f"teardown left: {', '.join(problems)}", file=sys.stderr)
