"""The delay line: per-packet delay and jitter on an NFQUEUE queue, for kernels without netem.

The C program (``tools/delayline/delayline.c``, libnetfilter-queue) is compiled on first use into
a cache directory named after a hash of its source (``$XDG_CACHE_HOME/mpsched/delayline/<hash>/``,
``MPSCHED_DELAYLINE_DIR`` overrides the base), so an edited source is rebuilt and no binary is
committed. ``python -m envs.live.setup`` builds it ahead of time.

One process serves one queue (one direction of one path): it holds every packet the kernel
queues for ``delay + N(0, jitter)`` ms and then accepts it (``reorder=False``: never before the
packet ahead of it). ``DelayLine`` starts it inside a host's namespace, waits until the queue is
bound; ``report()`` asks the running process for its statistics (packets, how late it released
them, over its life and since the previous report, and whether it runs in the real-time class) and
``stop()`` collects them at the end.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from envs.live.system import SETUP_COMMAND, LiveError, LiveUnavailable, popen

SOURCE = Path(__file__).resolve().parents[2] / "tools" / "delayline" / "delayline.c"


def _cache_base() -> Path:
    if os.environ.get("MPSCHED_DELAYLINE_DIR"):
        return Path(os.environ["MPSCHED_DELAYLINE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))) / "mpsched" / "delayline"


def binary(build: bool = True) -> Path:
    """Path of the compiled delay line, compiling it first if needed (under a file lock, so
    concurrent runs build it once)."""
    if not SOURCE.is_file():
        raise LiveUnavailable(f"delay line source missing: {SOURCE}")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target_dir = _cache_base() / digest
    target = target_dir / "delayline"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    if not build:
        raise LiveUnavailable(f"delay line not built; run {SETUP_COMMAND}")
    gcc = shutil.which("gcc") or shutil.which("cc")
    header = Path("/usr/include/libnetfilter_queue/libnetfilter_queue.h")
    if gcc is None or not header.is_file():
        raise LiveUnavailable("building the delay line needs gcc and libnetfilter-queue-dev; "
                              f"run {SETUP_COMMAND}")
    target_dir.mkdir(parents=True, exist_ok=True)
    with open(target_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        tmp = target_dir / f"delayline.{os.getpid()}.tmp"
        cmd = [gcc, "-O2", "-Wall", "-o", str(tmp), str(SOURCE), "-lnetfilter_queue", "-lnfnetlink", "-lm"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise LiveUnavailable(f"building the delay line failed: {' '.join(cmd)}:\n{out.stderr.strip()}")
        os.replace(tmp, target)
    return target


class DelayLine:
    """One delay-line process bound to NFQUEUE ``queue`` in the namespace of process ``ns_pid``."""

    def __init__(self, ns_pid: int, queue: int, delay_ms: float, jitter_ms: float = 0.0, reorder: bool = True,
                 seed: int = 1, maxlen: int = 20000, rt_priority: int = 10) -> None:
        if not (0 <= queue <= 65535 and delay_ms >= 0 and jitter_ms >= 0):
            raise LiveError(f"delay line: bad settings queue={queue} delay_ms={delay_ms} jitter_ms={jitter_ms}")
        self.ns_pid, self.queue = ns_pid, int(queue)
        self.delay_ms, self.jitter_ms, self.reorder = float(delay_ms), float(jitter_ms), bool(reorder)
        self.seed, self.maxlen, self.rt_priority = int(seed), int(maxlen), int(rt_priority)
        self.proc: subprocess.Popen | None = None
        self.stats: dict | None = None

    def argv(self) -> list[str]:
        return [str(binary()), "--queue", str(self.queue), "--delay-ms", repr(self.delay_ms),
                "--jitter-ms", repr(self.jitter_ms), "--reorder", "1" if self.reorder else "0",
                "--seed", str(self.seed), "--maxlen", str(self.maxlen), "--rt-priority", str(self.rt_priority)]

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self, timeout: float = 5.0) -> DelayLine:
        """Start it and wait until its queue is bound (its iptables rule may go in after this)."""
        self.proc = popen(self.argv(), self.ns_pid, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stderr is not None  # both piped
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                line = self.proc.stdout.readline()
                break
        if not line.startswith("ready"):
            err = ""
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().strip()
            self.stop()
            raise LiveError(f"delay line on queue {self.queue} did not start: {err or 'no answer within timeout'}")
        return self

    def report(self, timeout: float = 2.0) -> dict | None:
        """The running process's statistics (SIGUSR1: one JSON line, after which its ``window_*``
        figures start again); None when it is not running or does not answer within ``timeout``."""
        proc = self.proc
        if proc is None or proc.poll() is not None or proc.stdout is None:
            return None
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    return None
        return None

    def stop(self, timeout: float = 3.0) -> dict | None:
        """End the process (SIGTERM: it releases held packets and reports), by its pid only."""
        if self.proc is None:
            return self.stats
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.terminate()
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        for line in (out or "").splitlines():
            if line.startswith("{"):
                try:
                    self.stats = json.loads(line)
                except json.JSONDecodeError:
                    pass
        return self.stats
