"""Live transports (``backend=``): each runs one transfer on a testbed and reports the sender's
telemetry: ``mptcp`` (the kernel's MPTCP, its own scheduler) and ``xquic`` (XQUIC through the
``mpsched_xquic`` extension, with the scheduler chosen per run). Both have the same interface
(``check(cc)``, ``transfer(testbed, cc, workload, telemetry_ms, ...)``, ``controls_scheduler``)."""

from __future__ import annotations

from envs.errors import unknown_name

BACKENDS = ("mptcp", "xquic")


def get_backend(name: str):
    """The backend class for ``name``; a clear error for an unknown one. (``xquic`` needs the
    ``mpsched_xquic`` extension; its transfers say how to build it when it is missing.)"""
    if name == "mptcp":
        from envs.live.mptcp import MptcpBackend
        return MptcpBackend
    if name == "xquic":
        from envs.live.xquic import XquicBackend
        return XquicBackend
    raise unknown_name("live backend", name, BACKENDS)
