"""The transport-side view of the sender-observable state: the C structs a transport fills with
raw counters (bytes, microseconds, bytes/s, packet counts), and the conversions between those
counters and the simulator's arrays (``envs.sim.layout``: bytes, seconds, bytes/s).

Every OBS_* / COBS_* column of the layout has an entry here; a column added to the layout without
one stops the exporter with an error naming it, so the C structs never silently lag behind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.errors import ConfigError
from envs.sim.layout import COBS_NAMES, OBS_NAMES

UNBOUNDED = 2**64 - 1  # MPSCHED_UNBOUNDED: "no limit" (bulk transfer's remaining bytes)


@dataclass(frozen=True)
class RawField:
    sim_name: str  # column name in envs.sim.layout
    c_name: str  # struct member
    c_type: str
    divisor: int  # simulator value = raw / divisor (1e6 turns microseconds into seconds)
    doc: str


_PATH = {
    "cwnd": ("cwnd", 1, "congestion window, bytes"),
    "swnd": ("swnd", 1, "send window min(cwnd, peer's receive window), bytes"),
    "srtt": ("srtt_us", 10**6, "smoothed RTT (RFC 6298), microseconds"),
    "rttvar": ("rttvar_us", 10**6, "RTT variation (RFC 6298), microseconds"),
    "min_rtt": ("min_rtt_us", 10**6, "minimum RTT seen, microseconds"),
    "latest_rtt": ("latest_rtt_us", 10**6, "latest RTT sample, microseconds"),
    "inflight": ("inflight", 1, "bytes committed to the path, not yet acknowledged nor declared lost: sent, plus "
                 "(XQUIC) scheduled on it and not yet sent"),
    "delivery_rate": ("delivery_rate", 1, "latest delivery-rate sample (as BBR estimates it), bytes/s"),
    "losses": ("losses", 1, "packets declared lost since the connection started"),
    "retrans": ("retrans", 1, "packets retransmitted since the connection started"),
    "rtos": ("rtos", 1, "RTO / PTO events since the connection started"),
    "pacing_rate": ("pacing_rate", 1, "pacing rate, bytes/s (0 when the CC does not pace)"),
    "available": ("available", 1, "1 when the path has window space for one MSS beyond inflight (Linux: and "
                  "pacing credit), else 0"),
    "acked": ("acked", 1, "bytes acknowledged on this path since the connection started"),
    "sent": ("sent", 1, "bytes sent on this path (retransmissions included) since the connection started"),
}
_CONN = {
    "backlog": ("backlog", 1, "bytes waiting to be sent (new data the windows allow + pending retransmissions)"),
    "acked": ("acked", 1, "bytes delivered in order, as acknowledged"),
    "elapsed": ("elapsed_us", 10**6, "time since the connection started, microseconds"),
    "reorder": ("reorder", 1, "receiver's reorder-buffer occupancy as advertised, bytes"),
    "rwnd": ("rwnd", 1, "free receive window as advertised, bytes"),
    "remaining": ("remaining", 1, "bytes offered not yet acknowledged (MPSCHED_UNBOUNDED: bulk)"),
    "item_acked": ("item_acked", 1, "bytes of the current response (chunk, object, message) acknowledged"),
    "item_elapsed": ("item_elapsed_us", 10**6, "time since the current response's request arrived, microseconds"),
    "items_acked": ("items_acked", 1, "responses fully acknowledged"),
    "item_rate": ("item_rate", 1, "last complete response: bytes / (last ACK - request arrival), bytes/s"),
}


def _fields(names: tuple[str, ...], table: dict, what: str) -> tuple[RawField, ...]:
    missing = [n for n in names if n not in table]
    if missing:
        raise ConfigError(f"envs/sim/layout.py has {what} column(s) {missing} without a transport unit in "
                          f"envs/transport.py: add them there")
    return tuple(RawField(n, table[n][0], "uint64_t", table[n][1], table[n][2]) for n in names)


def path_fields() -> tuple[RawField, ...]:
    return _fields(OBS_NAMES, _PATH, "per-path")


def conn_fields() -> tuple[RawField, ...]:
    return _fields(COBS_NAMES, _CONN, "per-connection")


def _to_raw(sim: np.ndarray, fields: tuple[RawField, ...]) -> np.ndarray:
    sim = np.asarray(sim, dtype=np.float64)
    div = np.array([f.divisor for f in fields], dtype=np.float64)
    v = sim * div
    inf = np.isposinf(v)
    out = np.rint(np.clip(np.nan_to_num(v, nan=0.0, posinf=0.0), 0.0, 1.8e19))
    raw = np.empty(v.shape, dtype=np.uint64)
    big = out >= 2.0**63  # float -> uint64 beyond the int64 range, exact
    raw[~big] = out[~big].astype(np.int64).astype(np.uint64)
    raw[big] = out[big].astype(np.uint64)
    raw[inf] = np.uint64(UNBOUNDED)
    return raw


def _from_raw(raw: np.ndarray, fields: tuple[RawField, ...]) -> np.ndarray:
    div = np.array([f.divisor for f in fields], dtype=np.float64)
    return np.asarray(raw, dtype=np.uint64).astype(np.float64) / div


def to_raw(obs: np.ndarray, cobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Simulator arrays ``obs[..., P, N_OBS]``, ``cobs[..., N_COBS]`` as the counters a transport
    would hand the header (uint64, rounded to the nearest unit; inf -> MPSCHED_UNBOUNDED)."""
    return _to_raw(obs, path_fields()), _to_raw(cobs, conn_fields())


def from_raw(path_raw: np.ndarray, conn_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Raw counters back in simulator units (``raw / divisor`` in float64, as the header does)."""
    return _from_raw(path_raw, path_fields()), _from_raw(conn_raw, conn_fields())
