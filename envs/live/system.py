"""What a live run needs from the machine, checked before anything is created, and the one way
the live code runs commands: argument lists (never a shell), optionally inside a host's network
namespace.

``python -m envs.live.setup`` installs the Debian packages below and builds the delay line.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from envs.errors import ConfigError

SETUP_COMMAND = "python -m envs.live.setup"
DEBIAN_PACKAGES = ("mininet", "iproute2", "iptables", "nftables", "libnetfilter-queue-dev", "ethtool",
                   "iputils-ping", "gcc", "libc6-dev", "pkg-config", "util-linux")
# binary -> Debian package providing it
TOOLS = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables", "nft": "nftables", "ethtool": "ethtool",
         "ping": "iputils-ping", "nsenter": "util-linux", "mnexec": "mininet"}
MININET_FALLBACK = Path("/usr/lib/python3/dist-packages/mininet")  # Debian's package, for any Python 3
CC_LIST = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
MPTCP_ENABLED = Path("/proc/sys/net/mptcp/enabled")


class LiveError(ConfigError):
    """A live run that cannot go on; the message says why (and what to do)."""


class LiveUnavailable(LiveError):
    """This machine cannot run live experiments (not root, a package missing, no MPTCP)."""


def _missing_tools() -> list[str]:
    return [f"{tool} (package {pkg})" for tool, pkg in TOOLS.items() if shutil.which(tool) is None]


def load_mininet():
    """The ``mininet`` package: importable as is, or Debian's copy loaded from its own directory
    (it is pure Python; Debian installs it for the system interpreter only). Only that package
    is loaded from there, so no other system module shadows the environment's."""
    if "mininet" not in sys.modules:
        try:
            importlib.import_module("mininet")
        except ImportError:
            init = MININET_FALLBACK / "__init__.py"
            if not init.is_file():
                raise LiveUnavailable(f"Mininet is not installed (Debian package mininet); run {SETUP_COMMAND}") \
                    from None
            spec = importlib.util.spec_from_file_location("mininet", init,
                                                          submodule_search_locations=[str(MININET_FALLBACK)])
            module = importlib.util.module_from_spec(spec)
            sys.modules["mininet"] = module
            try:
                spec.loader.exec_module(module)
            except Exception:
                del sys.modules["mininet"]
                raise
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    # Mininet.init() raises machine-wide sysctls and rlimits (fixLimits); a run must change nothing
    # outside its own namespaces, so mark it done: the testbed sets what it needs per namespace.
    Mininet.inited = True
    setLogLevel("critical")  # tc warnings (HTB quantum) are noise; the testbed checks tc's state itself
    return sys.modules["mininet"]


def preflight() -> None:
    """Refuse, before anything is created, when live runs cannot work here."""
    problems = []
    if os.geteuid() != 0:
        problems.append("live runs need root (network namespaces, tc, iptables)")
    tools = _missing_tools()
    if tools:
        problems.append("missing tools: " + ", ".join(tools))
    try:
        load_mininet()
    except LiveUnavailable as err:
        problems.append(str(err).split(";")[0])
    if not MPTCP_ENABLED.exists():
        problems.append("the kernel has no MPTCP (/proc/sys/net/mptcp/enabled missing)")
    if problems:
        raise LiveUnavailable("cannot run live: " + "; ".join(problems) + f". Setup: {SETUP_COMMAND} (as root)")


def available_ccs() -> list[str]:
    """Congestion controls the kernel offers for TCP_CONGESTION."""
    try:
        return CC_LIST.read_text().split()
    except OSError:
        return []


def check_cc(cc: str) -> str:
    """``cc`` if the kernel has it, else an error listing the ones it has."""
    have = available_ccs()
    if cc not in have:
        raise LiveError(f"congestion control {cc!r} is not available in this kernel; available: "
                        f"{', '.join(have) or 'none'} (/proc/sys/net/ipv4/tcp_available_congestion_control)")
    return cc


# --------------------------------------------------------------------------- commands

def _ns_prefix(pid: int | None) -> list[str]:
    return [] if pid is None else ["nsenter", f"--net=/proc/{int(pid)}/ns/net", "--"]


def run(argv: Sequence[str], ns_pid: int | None = None, *, input: str | None = None, check: bool = True,
        timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Run one command (an argument list, never a shell), inside the network namespace of process
    ``ns_pid`` if given; a failure raises LiveError with the command and its output."""
    argv = [str(a) for a in argv]
    try:
        out = subprocess.run(_ns_prefix(ns_pid) + argv, input=input, capture_output=True, text=True,
                             timeout=timeout)
    except FileNotFoundError:
        raise LiveUnavailable(f"{argv[0]} not found; run {SETUP_COMMAND}") from None
    except subprocess.TimeoutExpired:
        raise LiveError(f"command timed out after {timeout:g} s: {' '.join(argv)}") from None
    if check and out.returncode != 0:
        detail = (out.stderr or out.stdout).strip()
        raise LiveError(f"command failed ({out.returncode}): {' '.join(argv)}: {detail}")
    return out


def popen(argv: Sequence[str], ns_pid: int | None = None, **kwargs) -> subprocess.Popen:
    """Start one command (argument list) inside a namespace; the caller records and ends it."""
    return subprocess.Popen(_ns_prefix(ns_pid) + [str(a) for a in argv], **kwargs)


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
SO_RCVBUFFORCE = 33  # asm-generic/socket.h: a receive buffer beyond net.core.rmem_max (root)
_netns_lock = threading.Lock()


@contextmanager
def netns(pid: int) -> Iterator[None]:
    """Run the body in the network namespace of process ``pid`` (this thread only): sockets created
    inside stay in that namespace after the block. Keep the body short: a socket() call."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/proc/{int(pid)}/ns/net", os.O_RDONLY)
    except OSError:
        os.close(own)
        raise LiveError(f"the namespace of process {pid} is gone") from None
    try:
        with _netns_lock:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise LiveError(f"setns into the namespace of process {pid} failed: {os.strerror(err)}")
            try:
                yield
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:  # cannot happen for our own namespace
                    os._exit(70)
    finally:
        os.close(target)
        os.close(own)


def ns_inode(pid: int) -> int | None:
    """Inode of the network namespace of ``pid`` (None when the process is gone)."""
    try:
        return os.stat(f"/proc/{int(pid)}/ns/net").st_ino
    except OSError:
        return None


def boot_clock() -> float:
    """Seconds since boot, the clock of a process's start time in ``/proc/<pid>/stat``."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (from its third, the state, on)."""
    try:
        return Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _started(fields: list[str]) -> float:
    """The start time in ``_stat``'s fields (field 22, starttime, in clock ticks), in seconds."""
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def process_started(pid: int) -> float | None:
    """When process ``pid`` started, in ``boot_clock`` seconds (None when it is gone)."""
    fields = _stat(pid)
    return None if fields is None else _started(fields)


def namespace_alive(inode: int, started_before: float | None = None) -> bool:
    """True while any process on the machine is in the network namespace ``inode`` (with
    ``started_before``, a ``boot_clock`` time: one that started before it). The kernel reuses the
    inode of a namespace that is gone for the next one created, so a namespace that must be gone
    since a time is alive only if a process older than that time is in one with its inode."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.stat(f"/proc/{entry.name}/ns/net").st_ino != inode:
                    continue
            except OSError:
                continue
            start = process_started(int(entry.name)) if started_before is not None else None
            if started_before is None or (start is not None and start < started_before):
                return True
    return False


def pid_alive(pid: int, started_before: float | None = None) -> bool:
    """True while ``pid`` exists and is not a zombie (with ``started_before``, a ``boot_clock``
    time: and started before it, so a pid the kernel gave a newer process does not count)."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return started_before is None or _started(fields) < started_before
