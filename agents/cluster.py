"""Where Ray runs, for sweeps (``tune.py``) and studies (``evaluate.py study=...``): the cluster
at ``ray.address`` (or ``$RAY_ADDRESS``), with this checkout shipped to its workers, else a Ray
instance started on this machine with ``ray.num_cpus`` CPUs (all cores by default)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agents.tracking import PROBE_TIMEOUT_S
from envs.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
# what a cluster's workers do not need of this checkout (Ray also skips what .gitignore lists)
EXCLUDES = [".git/", "outputs/", "multirun/", "ray_results/", "mlruns/", "mlflow.db", "*.so"]


def address(r: Any) -> str | None:
    """The cluster to join: ``ray.address``, else ``$RAY_ADDRESS``; None: a local instance."""
    return (r.get("address") if r is not None else None) or os.environ.get("RAY_ADDRESS") or None


def probe(r: Any) -> None:
    """Refuse a cluster address (``ray.address`` or ``$RAY_ADDRESS``, as ``host:port`` of the head
    or ``ray://host:port``) whose head does not accept a connection, or does not answer as gRPC,
    within PROBE_TIMEOUT_S: ``ray.init`` would retry it for minutes. ``auto`` and ``local`` are
    Ray's own to resolve."""
    where = address(r)
    if not where or where in ("auto", "local"):
        return
    field = "ray.address" if r is not None and r.get("address") else "RAY_ADDRESS"
    parsed = urlparse(where if "://" in where else f"gcs://{where}")
    try:
        host, port = parsed.hostname, parsed.port
    except ValueError:  # a port that is not a number
        host = port = None
    if not host or port is None:
        raise ConfigError(f"{field}={where}: give the cluster's head as host:port (its GCS, e.g. 10.0.0.1:6379) "
                          "or ray://host:port (Ray Client)")
    try:
        speaks = _speaks_http2(host, port, PROBE_TIMEOUT_S)
    except OSError as err:
        raise ConfigError(f"{field}={where}: the Ray head did not accept a connection within {PROBE_TIMEOUT_S:g} s "
                          f"({err.strerror or type(err).__name__}); start the cluster (ray start --head), fix the "
                          f"address, or leave {field} unset for a Ray instance on this machine") from None
    if not speaks:
        raise ConfigError(f"{field}={where}: something there accepts connections but did not answer as a Ray head "
                          f"(gRPC) within {PROBE_TIMEOUT_S:g} s; give the port `ray start --head` prints for the "
                          "GCS (default 6379), or ray://host:10001 for Ray Client, not the dashboard's (8265)")


# RFC 9113 sec. 3.4: a client's connection preface (this string, then a SETTINGS frame: 9 bytes of
# header, type 0x4 at byte 3); a server's preface is a SETTINGS frame, its first frame
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes((0, 0, 0, 4, 0, 0, 0, 0, 0))
HTTP2_SETTINGS = 4


def _speaks_http2(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` answers an HTTP/2 client preface with a server preface, as the gRPC
    servers of a Ray head (its GCS, Ray Client) do; a dashboard, SSH or another service does not,
    and ``ray.init`` would retry it for minutes. Raises OSError when the connection is refused."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.settimeout(timeout)
        got = b""
        try:
            conn.sendall(HTTP2_PREFACE)
            while len(got) < 9:
                chunk = conn.recv(9 - len(got))
                if not chunk:
                    break
                got += chunk
        except OSError:  # reset or silent: no answer
            return False
    return len(got) == 9 and got[3] == HTTP2_SETTINGS


def connect(r: Any, env_vars: dict[str, str] | None = None) -> bool:
    """Start or join Ray as ``r`` (the ``ray`` config section: ``address``, ``num_cpus``) says;
    ``env_vars`` are set in every worker. Returns whether this call started the connection (the
    caller then ends it with ``ray.shutdown()``); a session already open (a notebook, a test)
    is used as it is."""
    import ray  # slow to import: only where Ray is used
    if ray.is_initialized():
        return False
    env_vars = dict(env_vars or {})
    where = address(r)
    if where:
        probe(r)
        ray.init(address=where, runtime_env={"working_dir": str(ROOT), "env_vars": env_vars, "excludes": EXCLUDES})
        return True
    num_cpus = (r.get("num_cpus") if r is not None else None) or os.cpu_count()  # range: envs.schema.RaySettings
    # workers import this checkout (ahead of any installed copy) and keep its numba cache
    ray.init(num_cpus=num_cpus, include_dashboard=False, configure_logging=False,
             runtime_env={"env_vars": {**env_vars, "PYTHONPATH": os.pathsep.join(
                 [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}})
    return True
