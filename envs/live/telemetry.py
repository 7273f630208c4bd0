"""Telemetry of a kernel MPTCP sender turned into the simulator's sender-observable arrays.

``getsockopt(SOL_MPTCP, MPTCP_TCPINFO)`` returns a ``struct mptcp_subflow_data`` header and one
``struct tcp_info`` per subflow; ``MPTCP_SUBFLOW_ADDRS`` gives the subflows' addresses in the
same order (to map each to its path); ``MPTCP_INFO`` the connection level. ``to_obs`` fills the
``OBS_*`` columns of ``envs/sim/layout.py`` from them, so the feature sets (``envs.features``)
and rewards (``envs.rewards``) run unchanged on live data.

How each column is read (tcp_info counts packets of ``tcpi_snd_mss`` bytes; times in us):

- cwnd = snd_cwnd x snd_mss; swnd = min(cwnd, snd_wnd) (the peer's window, kernel >= 5.19)
- srtt, rttvar, min_rtt = tcpi_rtt, tcpi_rttvar, tcpi_min_rtt. latest_rtt: tcp_info keeps no
  latest sample, so srtt stands in for it.
- inflight = (unacked - sacked - lost + retrans) x snd_mss (the kernel's tcp_packets_in_flight)
- delivery_rate = tcpi_delivery_rate; pacing_rate = tcpi_pacing_rate when the CC paces (bbr),
  else 0 (as in the simulator)
- losses: tcp_info has no cumulative count of loss declarations; every declared loss is
  retransmitted, so losses = retrans = tcpi_total_retrans (packets)
- rtos = tcpi_total_rto (kernel >= 6.7; 0 before)
- available = cwnd - inflight >= one MSS; acked = tcpi_bytes_acked; sent = tcpi_bytes_sent

Connection level (MPTCP_INFO, kernel >= 6.5: data-level bytes acked, sent, reinjected): acked;
remaining = size - acked (inf for bulk); rwnd = the peer's window (largest subflow snd_wnd) less
the bytes in flight; backlog = new bytes not yet sent, at most rwnd; reorder = bytes acknowledged
on subflows but not yet at the data level (less reinjected copies): what waits in the receiver's
reorder buffer, as far as the sender can tell.
"""

from __future__ import annotations

import ctypes
import math
import os
import socket
import struct
from dataclasses import dataclass

import numpy as np

from envs.sim.layout import (COBS_ACKED, COBS_BACKLOG, COBS_ELAPSED, COBS_REMAINING, COBS_REORDER, COBS_RWND, N_COBS, N_OBS,
                             OBS_ACKED, OBS_AVAILABLE, OBS_CWND, OBS_DELIVERY_RATE, OBS_INFLIGHT, OBS_LATEST_RTT,
                             OBS_LOSSES, OBS_MIN_RTT, OBS_PACING_RATE, OBS_RETRANS, OBS_RTOS, OBS_RTTVAR, OBS_SENT,
                             OBS_SRTT, OBS_SWND)

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO, MPTCP_TCPINFO, MPTCP_SUBFLOW_ADDRS = 1, 2, 3
TCP_CONGESTION = 13


class TcpInfo(ctypes.Structure):
    """``struct tcp_info`` (linux/tcp.h) up to tcpi_total_rto_time (kernel 6.7); the kernel fills
    ``size_kernel`` bytes of it (older kernels: fewer fields, the rest stays 0)."""

    _fields_ = [
        ("state", ctypes.c_uint8), ("ca_state", ctypes.c_uint8), ("retransmits", ctypes.c_uint8),
        ("probes", ctypes.c_uint8), ("backoff", ctypes.c_uint8), ("options", ctypes.c_uint8),
        ("wscale", ctypes.c_uint8), ("flags", ctypes.c_uint8),
        ("rto", ctypes.c_uint32), ("ato", ctypes.c_uint32), ("snd_mss", ctypes.c_uint32),
        ("rcv_mss", ctypes.c_uint32), ("unacked", ctypes.c_uint32), ("sacked", ctypes.c_uint32),
        ("lost", ctypes.c_uint32), ("retrans", ctypes.c_uint32), ("fackets", ctypes.c_uint32),
        ("last_data_sent", ctypes.c_uint32), ("last_ack_sent", ctypes.c_uint32),
        ("last_data_recv", ctypes.c_uint32), ("last_ack_recv", ctypes.c_uint32),
        ("pmtu", ctypes.c_uint32), ("rcv_ssthresh", ctypes.c_uint32), ("rtt", ctypes.c_uint32),
        ("rttvar", ctypes.c_uint32), ("snd_ssthresh", ctypes.c_uint32), ("snd_cwnd", ctypes.c_uint32),
        ("advmss", ctypes.c_uint32), ("reordering", ctypes.c_uint32), ("rcv_rtt", ctypes.c_uint32),
        ("rcv_space", ctypes.c_uint32), ("total_retrans", ctypes.c_uint32),
        ("pacing_rate", ctypes.c_uint64), ("max_pacing_rate", ctypes.c_uint64),
        ("bytes_acked", ctypes.c_uint64), ("bytes_received", ctypes.c_uint64),
        ("segs_out", ctypes.c_uint32), ("segs_in", ctypes.c_uint32), ("notsent_bytes", ctypes.c_uint32),
        ("min_rtt", ctypes.c_uint32), ("data_segs_in", ctypes.c_uint32), ("data_segs_out", ctypes.c_uint32),
        ("delivery_rate", ctypes.c_uint64), ("busy_time", ctypes.c_uint64), ("rwnd_limited", ctypes.c_uint64),
        ("sndbuf_limited", ctypes.c_uint64), ("delivered", ctypes.c_uint32), ("delivered_ce", ctypes.c_uint32),
        ("bytes_sent", ctypes.c_uint64), ("bytes_retrans", ctypes.c_uint64), ("dsack_dups", ctypes.c_uint32),
        ("reord_seen", ctypes.c_uint32), ("rcv_ooopack", ctypes.c_uint32), ("snd_wnd", ctypes.c_uint32),
        ("rcv_wnd", ctypes.c_uint32), ("rehash", ctypes.c_uint32), ("total_rto", ctypes.c_uint16),
        ("total_rto_recoveries", ctypes.c_uint16), ("total_rto_time", ctypes.c_uint32),
    ]


class MptcpInfo(ctypes.Structure):
    """``struct mptcp_info`` (linux/mptcp.h, kernel 6.10 layout); older kernels fill a prefix."""

    _fields_ = [
        ("subflows", ctypes.c_uint8), ("add_addr_signal", ctypes.c_uint8), ("add_addr_accepted", ctypes.c_uint8),
        ("subflows_max", ctypes.c_uint8), ("add_addr_signal_max", ctypes.c_uint8),
        ("add_addr_accepted_max", ctypes.c_uint8), ("flags", ctypes.c_uint32), ("token", ctypes.c_uint32),
        ("write_seq", ctypes.c_uint64), ("snd_una", ctypes.c_uint64), ("rcv_nxt", ctypes.c_uint64),
        ("local_addr_used", ctypes.c_uint8), ("local_addr_max", ctypes.c_uint8), ("csum_enabled", ctypes.c_uint8),
        ("retransmits", ctypes.c_uint32), ("bytes_retrans", ctypes.c_uint64), ("bytes_sent", ctypes.c_uint64),
        ("bytes_received", ctypes.c_uint64), ("bytes_acked", ctypes.c_uint64), ("subflows_total", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8 * 3), ("last_data_sent", ctypes.c_uint32), ("last_data_recv", ctypes.c_uint32),
        ("last_ack_recv", ctypes.c_uint32),
    ]


SUBFLOW_DATA = struct.Struct("=IIII")  # struct mptcp_subflow_data (aligned to 8: 16 bytes)
ADDR_RECORD = 256  # struct mptcp_subflow_addrs: two sockaddr_storage unions
MAX_SUBFLOWS = 16


_libc = ctypes.CDLL(None, use_errno=True)


def _getsockopt(sock: socket.socket, level: int, name: int, data: bytes) -> bytes:
    """getsockopt with an input buffer (Python's socket.getsockopt cannot pass one; MPTCP_TCPINFO
    and MPTCP_SUBFLOW_ADDRS read their header from it)."""
    buf = ctypes.create_string_buffer(data, len(data))
    size = ctypes.c_uint32(len(data))
    if _libc.getsockopt(sock.fileno(), level, name, buf, ctypes.byref(size)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return buf.raw[:size.value]


def field_valid(name: str, size_kernel: int) -> bool:
    """Whether the kernel filled tcp_info field ``name`` (it copies ``size_kernel`` bytes)."""
    f = getattr(TcpInfo, name)
    return f.offset + f.size <= size_kernel


def subflow_infos(sock: socket.socket) -> tuple[list[TcpInfo], int]:
    """One TcpInfo per subflow (kernel order) and how many bytes of each the kernel filled."""
    size = ctypes.sizeof(TcpInfo)
    head = SUBFLOW_DATA.pack(SUBFLOW_DATA.size, 0, 0, size)
    buf = _getsockopt(sock, SOL_MPTCP, MPTCP_TCPINFO, head + bytes(MAX_SUBFLOWS * size))
    _, n, size_kernel, size_user = SUBFLOW_DATA.unpack_from(buf)
    n = min(n, (len(buf) - SUBFLOW_DATA.size) // max(size_user, 1))
    infos = [TcpInfo.from_buffer_copy(buf, SUBFLOW_DATA.size + i * size_user) for i in range(n)]
    return infos, min(size_kernel, size_user)


def subflow_local_addrs(sock: socket.socket) -> list[str]:
    """Local IPv4 address of each subflow, in the order MPTCP_TCPINFO reports them."""
    head = SUBFLOW_DATA.pack(SUBFLOW_DATA.size, 0, 0, ADDR_RECORD)
    buf = _getsockopt(sock, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, head + bytes(MAX_SUBFLOWS * ADDR_RECORD))
    _, n, _, size_user = SUBFLOW_DATA.unpack_from(buf)
    out = []
    for i in range(min(n, (len(buf) - SUBFLOW_DATA.size) // max(size_user, 1))):
        base = SUBFLOW_DATA.size + i * size_user
        family = struct.unpack_from("=H", buf, base)[0]
        out.append(socket.inet_ntoa(buf[base + 4:base + 8]) if family == socket.AF_INET else "")
    return out


def connection_info(sock: socket.socket) -> tuple[MptcpInfo, int]:
    """MPTCP_INFO and how many bytes the kernel filled."""
    buf = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, ctypes.sizeof(MptcpInfo))
    return MptcpInfo.from_buffer_copy(buf.ljust(ctypes.sizeof(MptcpInfo), b"\0")), len(buf)


@dataclass
class Sample:
    """One telemetry sample of the sender: time since the transfer started, and per path (by path
    index, NaN rows for a path without a subflow yet) the OBS_* row."""

    t: float
    obs: np.ndarray  # [P, N_OBS]
    cobs: np.ndarray  # [N_COBS]
    has_subflow: np.ndarray  # [P] bool


def to_obs(info: TcpInfo, size_kernel: int, paces: bool) -> np.ndarray:
    """The OBS_* row of one subflow."""
    row = np.zeros(N_OBS)
    mss = float(info.snd_mss or 1448)
    cwnd = info.snd_cwnd * mss
    inflight = max(0, info.unacked - info.sacked - info.lost + info.retrans) * mss
    row[OBS_CWND] = cwnd
    row[OBS_SWND] = min(cwnd, float(info.snd_wnd)) if field_valid("snd_wnd", size_kernel) and info.snd_wnd else cwnd
    row[OBS_SRTT] = info.rtt / 1e6
    row[OBS_RTTVAR] = info.rttvar / 1e6
    row[OBS_MIN_RTT] = (info.min_rtt if info.min_rtt != 0xFFFFFFFF else info.rtt) / 1e6
    row[OBS_LATEST_RTT] = info.rtt / 1e6
    row[OBS_INFLIGHT] = inflight
    row[OBS_DELIVERY_RATE] = float(info.delivery_rate)
    row[OBS_LOSSES] = float(info.total_retrans)
    row[OBS_RETRANS] = float(info.total_retrans)
    row[OBS_RTOS] = float(info.total_rto) if field_valid("total_rto", size_kernel) else 0.0
    row[OBS_PACING_RATE] = float(info.pacing_rate) if paces and info.pacing_rate != 2**64 - 1 else 0.0
    row[OBS_AVAILABLE] = 1.0 if cwnd - inflight >= mss else 0.0
    row[OBS_ACKED] = float(info.bytes_acked)
    row[OBS_SENT] = float(info.bytes_sent)
    return row


def connection_obs(elapsed: float, acked: float, remaining: float, backlog: float, rwnd: float,
                   reorder: float) -> np.ndarray:
    row = np.zeros(N_COBS)
    row[COBS_BACKLOG] = backlog
    row[COBS_ACKED] = acked
    row[COBS_ELAPSED] = elapsed
    row[COBS_REORDER] = reorder
    row[COBS_RWND] = rwnd
    row[COBS_REMAINING] = remaining
    return row


class Sampler:
    """Reads one MPTCP sender socket and maps its subflows to paths by local address."""

    def __init__(self, sock: socket.socket, path_addrs: list[str], cc: str, total_bytes: float) -> None:
        self.sock, self.path_of = sock, {a: i for i, a in enumerate(path_addrs)}
        self.P, self.paces = len(path_addrs), cc.startswith("bbr")
        self.total = total_bytes
        self.acked_base: int | None = None

    def sample(self, elapsed: float) -> Sample:
        obs = np.zeros((self.P, N_OBS))
        has = np.zeros(self.P, dtype=bool)
        infos, size_kernel = subflow_infos(self.sock)
        addrs = subflow_local_addrs(self.sock) if infos else []
        if len(addrs) != len(infos):  # a subflow came or went between the calls: read again
            infos, size_kernel = subflow_infos(self.sock)
            addrs = subflow_local_addrs(self.sock)
        rwnd = 0.0
        for info, addr in zip(infos, addrs):
            i = self.path_of.get(addr)
            if i is None or info.state in (2, 3, 7):  # SYN_SENT, SYN_RECV, CLOSE: no data yet/any more
                continue
            row = to_obs(info, size_kernel, self.paces)
            if has[i]:  # two subflows on one path (should not happen): add the counters
                row[[OBS_ACKED, OBS_SENT, OBS_LOSSES, OBS_RETRANS, OBS_RTOS]] += obs[i, [OBS_ACKED, OBS_SENT,
                                                                                      OBS_LOSSES, OBS_RETRANS,
                                                                                      OBS_RTOS]]
            obs[i], has[i] = row, True
            if field_valid("snd_wnd", size_kernel):
                rwnd = max(rwnd, float(info.snd_wnd))
        minfo, filled = connection_info(self.sock)
        if filled >= MptcpInfo.bytes_acked.offset + 8:  # kernel >= 6.5
            acked, sent_new = float(minfo.bytes_acked), float(minfo.bytes_sent - minfo.bytes_retrans)
            reinjected = float(minfo.bytes_retrans)
        else:  # older kernels: data-level sequence numbers relative to their first values
            if self.acked_base is None:
                self.acked_base = minfo.snd_una
            acked, sent_new, reinjected = float(minfo.snd_una - self.acked_base), \
                float(minfo.write_seq - self.acked_base), 0.0
        inflight = float(obs[has, OBS_INFLIGHT].sum())
        rwnd_free = max(rwnd - inflight, 0.0)
        if math.isfinite(self.total):
            remaining, unsent = max(self.total - acked, 0.0), max(self.total - sent_new, 0.0)
        else:
            remaining, unsent = math.inf, math.inf
        # acknowledged on a subflow but not yet at the data level: waiting in the receiver's
        # reorder buffer, as far as the sender can tell (reinjected copies excluded)
        reorder = max(float(obs[has, OBS_ACKED].sum()) - acked - reinjected, 0.0)
        cobs = connection_obs(elapsed, acked, remaining, min(unsent, rwnd_free), rwnd_free, reorder)
        return Sample(elapsed, obs, cobs, has)
