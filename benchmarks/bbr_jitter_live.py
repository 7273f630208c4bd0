"""Kernel BBR where random loss meets reordering jitter, live: what limits the sender, and what
its loss detection and BBR's model do (tests/test_stack_fidelity.py, ``LINUX_BBR``).

    sudo python benchmarks/bbr_jitter_live.py grid:2/5 grid:2/0 --runs 1
    sudo python benchmarks/bbr_jitter_live.py grid:2/2 --sacks --plain     # SACK blocks; plain TCP beside
    sudo python benchmarks/bbr_jitter_live.py grid:2/2 --receiver-sysctl net.ipv4.tcp_comp_sack_nr=0
    python benchmarks/bbr_jitter_live.py grid:2/2 grid:0.5/2 --sim-only --runs 4   # the model's side
    sudo python benchmarks/bbr_jitter_live.py ispras_s2 --cc cubic --runs 2         # another of the kernel's CCs

Per scenario one verified testbed (envs.live.testbed; ``grid:<loss_pct>/<jitter_ms>`` is the grid
table's 10 s path, ``ispras_s1|s2`` the tables' file), then per run one kernel MPTCP BBR transfer
(``envs.live.mptcp``; with ``--plain`` a plain TCP BBR transfer of as long after it, on path 0).
Sampled during the transfer: the sender's ``tcp_info`` every 10 ms (window, data in flight, pacing
and delivery rate, RTTs, CA state, reordering degree, DSACKs, losses, RTOs, busy / rwnd- /
sndbuf-limited time) and ``ss -tin`` in the client namespace every 0.1 s (tcp_bbr.c's ``bw``,
``mrtt``, gains; ``app_limited``); with ``--sacks`` the pure ACKs the sender receives, counted by
the SACK blocks they carry and the size of their MPTCP option (a raw socket on the client's
interface). Printed: goodput and load average, both namespaces' TCP counters that moved (``nstat``),
per quantity the mean and quartiles after the transfer's first second, the share of samples per CA
state, and the share in which the window binds (in flight within one packet of cwnd).
``--sysctl`` / ``--receiver-sysctl`` set a sysctl in the sender's / receiver's namespace first
(``net.ipv4.tcp_recovery=3``: RACK's reordering window held at one step; ``net.ipv4.tcp_comp_sack_nr=0``:
no SACK compression). Run it alone (``flock /tmp/mpsched-live.lock``): it needs root and the live setup.

``--sim-only``: the simulator's side instead (``stack=linux``, BBR, ``--runs`` connections): per
connection its goodput, the packets it declared lost and those the network lost as shares of what it
sent, and the share of the time a real loss's hole held its cumulative ACK (``FL_HOLE_UNTIL``, where
kernel MPTCP's one SACK block hides late packets; docs/transport.md, "One SACK block per ACK").
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import re
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.fidelity import GRID_SECONDS, ISPRAS_FILE_MIB, MIB, grid_scenario  # noqa: E402
from envs.live.mptcp import MptcpTransfer  # noqa: E402
from envs.live.provenance import load_average  # noqa: E402
from envs.live.telemetry import TCP_CONGESTION, TcpInfo, subflow_infos  # noqa: E402
from envs.live.system import netns  # noqa: E402
from envs.live.testbed import Testbed  # noqa: E402
from envs.live.verification import verified_testbed  # noqa: E402
from envs.scenario import Scenario, load_scenario  # noqa: E402

COUNTERS = ("TcpExtTCPSACKReorder", "TcpExtTCPTSReorder", "TcpExtTCPRenoReorder", "TcpExtTCPDSACKRecv",
            "TcpExtTCPDSACKOfoRecv", "TcpExtTCPDSACKRecvSegs", "TcpExtTCPDSACKIgnoredNoUndo",
            "TcpExtTCPDSACKIgnoredOld", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
            "TcpExtTCPSpuriousRtxHostQueues", "TcpExtTCPLostRetransmit", "TcpExtTCPTimeouts",
            "TcpExtTCPSpuriousRTOs", "TcpExtTCPSackRecoveryFail", "TcpExtTCPSackRecovery",
            "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPLossFailures",
            "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPDSACKUndo", "TcpExtTCPLossUndo",
            "TcpExtTCPSackShifted", "TcpExtTCPSackMerged", "TcpExtTCPSACKDiscard", "TcpExtTCPDelivered",
            "TcpExtTCPAutoCorking", "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPOrigDataSent",
            "TcpExtTCPRcvQDrop", "TcpExtTCPOFOQueue", "TcpExtTCPOFODrop", "TcpExtDelayedACKs",
            "TcpExtTCPACKSkippedSeq", "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent", "TcpExtTCPDSACKIgnoredDubious", "TcpExtTCPAckCompressed",
            "TcpRetransSegs", "TcpOutSegs", "TcpInSegs")
SS_BBR = re.compile(r"bbr:\(bw:([\d.]+)([KMG]?)bps,mrtt:([\d.]+)(?:,pacing_gain:([\d.]+))?(?:,cwnd_gain:([\d.]+))?")
UNIT = {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")


def scenario(name: str) -> Scenario:
    if name.startswith("grid:"):
        loss, jitter = (float(x) for x in name[len("grid:"):].split("/"))
        return grid_scenario(loss, jitter, GRID_SECONDS)
    return load_scenario(name).with_workload(file_mb=ISPRAS_FILE_MIB * MIB / 1e6)


def counters(tb: Testbed, host: str = "client") -> dict[str, int]:
    """A namespace's SNMP counters (absolute, nstat's history left alone)."""
    flat: dict[str, int] = {}
    for group in json.loads(tb.run(host, ["nstat", "-asz", "--json"]).stdout).values():
        flat.update(group)
    return flat


def ss_sampler(tb: Testbed, stop: threading.Event, t0: float, out: list[tuple[float, float, float, float, float, int]]):
    """``ss -tin`` of the client's subflows every 0.1 s: (t, bw Mbit/s, mrtt ms, pacing_gain,
    cwnd_gain, app_limited)."""
    while not stop.is_set():
        text = tb.run("client", ["ss", "-tinH", "state", "established"]).stdout
        t = time.monotonic() - t0
        for m in SS_BBR.finditer(text):
            bw = float(m.group(1)) * UNIT[m.group(2)]
            if bw > 0:
                out.append((t, bw, float(m.group(3)), float(m.group(4) or "nan"), float(m.group(5) or "nan"),
                            int("app_limited" in text)))
        stop.wait(0.1)


ETH_P_IP = 0x0800
PACKET_OUTGOING = 4


def sack_sampler(tb: Testbed, host: str, ifname: str, outgoing: bool, stop: threading.Event,
                 out: dict[str, int]) -> None:
    """Count the pure ACKs ``host`` sends (``outgoing``) or receives on ``ifname`` by how many SACK
    blocks they carry (TCP option 5), with or without a DSACK (first block below the ACK), and
    their MPTCP (option 30) and timestamp (8) options' sizes. A raw AF_PACKET socket in the host's
    namespace; pure ACKs only (no payload)."""
    with netns(tb.host_pid(host)):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    sock.bind((ifname, 0))
    sock.settimeout(0.1)
    try:
        while not stop.is_set():
            try:
                frame, addr = sock.recvfrom(256)
            except TimeoutError:
                continue
            if (addr[2] == PACKET_OUTGOING) != outgoing or len(frame) < 54:
                continue
            ip = frame[14:]
            ihl = (ip[0] & 0x0F) * 4
            if ip[9] != 6:
                continue
            total = struct.unpack_from("!H", ip, 2)[0]
            tcp = ip[ihl:]
            doff = (tcp[12] >> 4) * 4
            if total - ihl - doff > 0:  # data segment, not a pure ACK
                continue
            ack = struct.unpack_from("!I", tcp, 8)[0]
            opts, i, blocks, dsack, mptcp = tcp[20:doff], 0, 0, False, 0
            while i < len(opts):
                kind = opts[i]
                if kind == 0:
                    break
                if kind == 1:
                    i += 1
                    continue
                if i + 1 >= len(opts) or opts[i + 1] < 2:
                    break
                length = opts[i + 1]
                if kind == 5:
                    blocks = (length - 2) // 8
                    if blocks:
                        start = struct.unpack_from("!I", opts, i + 2)[0]
                        dsack = (ack - start) % (1 << 32) < (1 << 31) and start != ack
                elif kind == 30:
                    mptcp += length
                i += length
            key = f"{blocks} block{'s' if blocks != 1 else ''}{' (DSACK)' if dsack else ''}"
            out[key] = out.get(key, 0) + 1
            out[f"mptcp option {mptcp} B"] = out.get(f"mptcp option {mptcp} B", 0) + 1
    finally:
        sock.close()


def stats(name: str, xs) -> str:
    a = np.asarray(xs, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return f"{name} -"
    q = np.percentile(a, [25, 50, 75])
    return f"{name} {a.mean():.2f} [{q[0]:.2f} {q[1]:.2f} {q[2]:.2f}]"


class PlainTcpTransfer:
    """A backlogged plain TCP (no MPTCP) BBR transfer of ``seconds`` on path 0, for comparison:
    the same sender and receiver stacks without the MPTCP options on every ACK."""

    def __init__(self, tb: Testbed, seconds: float, cc: str = "bbr") -> None:
        self.seconds, self.received, self.error = seconds, 0, ""
        self.done = threading.Event()
        self.listener = tb.socket("server", socket.IPPROTO_TCP)
        self.listener.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
        self.listener.bind((tb.paths[0].server_ip, 0))
        self.listener.listen(1)
        self.client = tb.socket("client", socket.IPPROTO_TCP)
        self.client.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
        self.client.connect(self.listener.getsockname())
        self.server, _ = self.listener.accept()
        self.threads = [threading.Thread(target=self._send, daemon=True),
                        threading.Thread(target=self._receive, daemon=True)]
        for th in self.threads:
            th.start()

    def _send(self) -> None:
        chunk, end = bytes(1 << 16), time.monotonic() + self.seconds
        try:
            while time.monotonic() < end:
                self.client.send(chunk)
            self.client.shutdown(socket.SHUT_WR)
        except OSError as err:
            self.error = str(err)
        finally:
            self.done.set()

    def _receive(self) -> None:
        t_end = time.monotonic() + self.seconds
        while True:  # drain to the sender's FIN; count what arrived within the seconds
            try:
                n = len(self.server.recv(1 << 16))
            except OSError:
                break
            if not n:
                break
            if time.monotonic() < t_end:
                self.received += n

    def info(self) -> TcpInfo:
        buf = self.client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, ctypes.sizeof(TcpInfo))
        return TcpInfo.from_buffer_copy(buf.ljust(ctypes.sizeof(TcpInfo), b"\0"))

    def close(self) -> float:
        for th in self.threads:
            th.join(timeout=self.seconds + 5.0)
        for sock in (self.client, self.server, self.listener):
            sock.close()
        return self.received * 8e-6 / self.seconds


def transfer(tb: Testbed, scen: Scenario, sacks: bool = False, plain: bool = False, cc: str = "bbr") -> None:
    before, before_srv = counters(tb), counters(tb, "server")
    tr = MptcpTransfer(tb, cc, scen.workload, telemetry_ms=50.0) if not plain else None
    tcp = PlainTcpTransfer(tb, scen.workload.duration_s or GRID_SECONDS, cc) if plain else None
    if tr is not None:
        tr.start()
    client = tr._socks[1] if tr is not None else None  # the client's MPTCP socket (MptcpTransfer._start)
    done = tr.done if tr is not None else tcp.done  # type: ignore[union-attr]
    rows: list[tuple] = []
    ss_rows: list[tuple[float, float, float, float, float, int]] = []
    t0 = time.monotonic()
    stop = threading.Event()
    ss_thread = threading.Thread(target=ss_sampler, args=(tb, stop, t0, ss_rows), daemon=True)
    ss_thread.start()
    acks_rcvd: dict[str, int] = {}
    capture = [threading.Thread(target=sack_sampler, daemon=True,
                                args=(tb, "client", tb.paths[0].client_if, False, stop, acks_rcvd))] if sacks else []
    for th in capture:
        th.start()
    while not done.is_set():
        try:
            infos = subflow_infos(client)[0] if client is not None else [tcp.info()]  # type: ignore[union-attr]
        except OSError:
            break
        if infos:
            rows.append((time.monotonic() - t0, infos[0]))
        time.sleep(0.01)
    stop.set()
    ss_thread.join()
    for th in capture:
        th.join()
    if tr is not None:
        tr.wait()
        res = tr.result()
        goodput, error = float(res.metrics()["goodput_mbps"][0]), res.error
    else:
        goodput, error = tcp.close(), tcp.error  # type: ignore[union-attr]
    after, after_srv = counters(tb), counters(tb, "server")
    moved = {k.removeprefix("TcpExt"): after.get(k, 0) - before.get(k, 0) for k in COUNTERS}
    moved_srv = {k.removeprefix("TcpExt"): after_srv.get(k, 0) - before_srv.get(k, 0) for k in COUNTERS}
    print(f"== {scen.name} {cc}{' (plain TCP)' if plain else ''}: goodput {goodput:.2f} Mbit/s, "
          f"load {load_average():.2f}{', error: ' + error if error else ''}", flush=True)
    print("   sender:   " + " ".join(f"{k}={v}" for k, v in moved.items() if v), flush=True)
    print("   receiver: " + " ".join(f"{k}={v}" for k, v in moved_srv.items() if v), flush=True)
    if acks_rcvd:
        print("   ACKs the sender received: " + ", ".join(f"{k} {v}" for k, v in sorted(acks_rcvd.items())), flush=True)
    late = [(t, i) for t, i in rows if t >= 1.0]
    if not late:
        return
    mss = late[-1][1].snd_mss
    cwnd = [i.snd_cwnd for _, i in late]
    infl = [i.unacked - i.sacked - i.lost + i.retrans for _, i in late]
    print("   " + "; ".join([
        stats("cwnd pkts", cwnd), stats("inflight pkts", infl),
        stats("cwnd-inflight", np.subtract(cwnd, infl)),
        stats("pacing Mbit/s", [i.pacing_rate * 8e-6 for _, i in late]),
        stats("delivery_rate Mbit/s", [i.delivery_rate * 8e-6 for _, i in late]),
        stats("srtt ms", [i.rtt / 1e3 for _, i in late]), stats("min_rtt ms", [i.min_rtt / 1e3 for _, i in late]),
        stats("reordering", [i.reordering for _, i in late]), stats("sacked", [i.sacked for _, i in late]),
        stats("lost", [i.lost for _, i in late]), stats("notsent kB", [i.notsent_bytes / 1e3 for _, i in late]),
        stats("snd_wnd kB", [i.snd_wnd / 1e3 for _, i in late])]), flush=True)
    binds = np.mean([c - f <= 1 for c, f in zip(cwnd, infl, strict=True)])
    states = np.bincount([min(i.ca_state, 4) for _, i in late], minlength=5) / len(late)
    first, last = rows[0][1], rows[-1][1]
    print(f"   window binds in {binds:.0%} of samples; ca_state " +
          " ".join(f"{n} {s:.0%}" for n, s in zip(CA_STATES, states, strict=True)), flush=True)
    span = max(last.busy_time, 1)
    print(f"   over the transfer: segs_out {last.segs_out}, total_retrans {last.total_retrans} "
          f"({last.total_retrans / max(last.data_segs_out, 1):.2%} of data segs), bytes_retrans "
          f"{last.bytes_retrans / max(last.bytes_sent, 1):.2%} of bytes sent, dsack_dups {last.dsack_dups}, "
          f"reord_seen {last.reord_seen}, total_rto {last.total_rto} (recoveries {last.total_rto_recoveries}, "
          f"{last.total_rto_time} ms), delivered {last.delivered}, mss {mss}; busy {last.busy_time / 1e6:.2f} s, "
          f"rwnd_limited {last.rwnd_limited / span:.1%}, sndbuf_limited {last.sndbuf_limited / span:.1%}; "
          f"first sample t={rows[0][0]:.3f}s retrans {first.total_retrans}", flush=True)
    if ss_rows:
        late_ss = [r for r in ss_rows if r[0] >= 1.0] or ss_rows
        print("   ss: " + "; ".join([
            stats("bbr bw Mbit/s", [r[1] for r in late_ss]), stats("bbr mrtt ms", [r[2] for r in late_ss]),
            stats("pacing_gain", [r[3] for r in late_ss]), stats("cwnd_gain", [r[4] for r in late_ss]),
            f"app_limited in {np.mean([r[5] for r in late_ss]):.0%} of {len(late_ss)} samples"]), flush=True)
        trace = []
        shown = 0.0
        for r in ss_rows:
            if r[0] >= shown:
                trace.append(f"{r[0]:.1f}s {r[1]:.1f}/{r[2]:.1f}/{r[3]:g}")
                shown += 0.5
        print("   bw/mrtt/pacing_gain: " + ", ".join(trace), flush=True)
    trace = []
    shown = 0.0
    for t, i in rows:
        if t >= shown:
            trace.append(f"{t:.1f}s {i.snd_cwnd}/{i.unacked - i.sacked - i.lost + i.retrans}/{i.ca_state}/"
                         f"{i.reordering}/{i.total_retrans}")
            shown += 0.5
    print("   cwnd/inflight/ca_state/reordering/total_retrans: " + ", ".join(trace), flush=True)


def simulated(scen: Scenario, runs: int, cc: str = "bbr") -> None:
    """The simulator's side of ``scen`` (``--sim-only``): one line per connection."""
    from envs.sim.layout import CN_T, FL_HOLE_UNTIL, FL_LOST_PKTS, FL_SENT_PKTS, OBS_LOSSES
    from envs.sim.simulator import SimConfig, Simulator
    sim = Simulator(scen, cc, "minrtt", batch=runs, seed=0, config=SimConfig(stack="linux"))
    sim.reset()
    n = len(scen.paths)
    held = np.zeros((runs, n))
    steps = 0
    while not np.all(sim.done):
        sim.advance(10)
        steps += 1
        held += sim.fl[:, :n, FL_HOLE_UNTIL] > sim.cn[:, CN_T, None]
    sent = np.maximum(sim.fl[:, :n, FL_SENT_PKTS], 1.0)
    for b, mbps in enumerate(sim.results()["goodput_mbps"]):
        print(f"sim {scen.name} connection {b + 1}: {mbps:.2f} Mbit/s; per path, declared lost "
              + ", ".join(f"{d:.1%}" for d in sim.obs[b, :n, OBS_LOSSES] / sent[b]) + " of the packets sent, lost in "
              "the network " + ", ".join(f"{x:.1%}" for x in sim.fl[b, :n, FL_LOST_PKTS] / sent[b])
              + ", a hole held " + ", ".join(f"{h:.0%}" for h in held[b] / max(steps, 1)) + " of the time", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="+", help="grid:<loss_pct>/<jitter_ms> or ispras_s1|ispras_s2")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--cc", default="bbr", help="the kernel CC of the transfers (and of the model's side): bbr, cubic, reno")
    ap.add_argument("--sysctl", action="append", default=[],
                    help="key=value set in the sender's namespace before the runs, e.g. net.ipv4.tcp_recovery=3 "
                         "(RACK with a static reordering window, TCP_RACK_STATIC_REO_WND)")
    ap.add_argument("--receiver-sysctl", action="append", default=[],
                    help="key=value set in the receiver's namespace, e.g. net.ipv4.tcp_comp_sack_nr=0")
    ap.add_argument("--plain", action="store_true",
                    help="also run a plain TCP transfer (no MPTCP options on the ACKs) after each MPTCP one")
    ap.add_argument("--sacks", action="store_true",
                    help="count the SACK blocks of the pure ACKs the sender receives")
    ap.add_argument("--sim-only", action="store_true", help="the simulator's side instead (no root needed)")
    a = ap.parse_args()
    for name in a.scenarios:
        scen = scenario(name)
        if a.sim_only:
            simulated(scen, a.runs, a.cc)
            continue
        with verified_testbed(functools.partial(Testbed, scen, verify=True)) as tb:
            for kv in a.sysctl:
                print(tb.run("client", ["sysctl", "-w", kv]).stdout.strip(), flush=True)
            for kv in a.receiver_sysctl:
                print("receiver: " + tb.run("server", ["sysctl", "-w", kv]).stdout.strip(), flush=True)
            for _ in range(a.runs):
                transfer(tb, scen, a.sacks, cc=a.cc)
                if a.plain:
                    transfer(tb, scen, a.sacks, plain=True, cc=a.cc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
