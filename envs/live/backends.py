"""Live transports (``backend=``): each runs one transfer on a testbed and reports the sender's
telemetry. ``mptcp`` (the kernel's MPTCP) is implemented; ``xquic`` comes with the XQUIC issue
and plugs in here with the same interface (``check(cc)``, ``transfer(testbed, cc, workload,
telemetry_ms)``, ``controls_scheduler``)."""

from __future__ import annotations

from envs.errors import unknown_name
from envs.live.system import LiveError

BACKENDS = ("mptcp", "xquic")
IMPLEMENTED = ("mptcp",)


def get_backend(name: str):
    """The backend class for ``name``; a clear error for one not (yet) available."""
    if name == "mptcp":
        from envs.live.mptcp import MptcpBackend
        return MptcpBackend
    if name in BACKENDS:
        raise LiveError(f"live backend {name!r} is not available yet (it comes with its own issue); "
                        f"available: {', '.join(IMPLEMENTED)}")
    raise unknown_name("live backend", name, IMPLEMENTED)
