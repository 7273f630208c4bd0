"""Link emulation: one scenario path becomes two emulated directions (forward = client to server,
the data; reverse = server to client, the ACKs), each with rate, queue, one-way delay, jitter and
random loss.

Layout of one direction (sender host S, receiver host R, one veth pair per path, no switch):

    S egress:  HTB class 5:1 at the path's rate (Mininet's TCLink)
               └ leaf: bfifo limit <queue packets x 1514 bytes>   the drop-tail bottleneck buffer
    R ingress: nft prerouting (priority -400): numgen random drop   random loss
               iptables mangle PREROUTING -> NFQUEUE -> delay line   one-way delay + jitter

so a packet queues at the bottleneck, crosses the link, may be lost, then propagates: the order
of the simulator (``docs/architecture.md``). TSO/GSO/GRO are off on every emulated interface, so
loss and jitter act per packet. Where the kernel has netem (``mode="netem"``), the leaf of 5:1 is
netem instead (delay, jitter with a normal distribution, loss, and a limit of the queue plus the
packets the delay holds), which is Mininet's own layout; netem's jitter always reorders, so a
scenario with ``jitter_reorders: false`` keeps the delay line.

The buffer holds bytes, as the simulator's does (``BN_QCAP``, the scenario's ``queue_bdp`` or
``queue_packets`` of its MSS): ``queue_packets`` full-size frames, and more of a stack's smaller
packets. A buffer counted in packets (``pfifo``) would give XQUIC, whose datagrams are 1244-byte
IP packets against TCP's 1500 (``xqc_conn.c``'s default ``max_pkt_out_size``, XQC_PACKET_OUT_SIZE
= XQC_QUIC_MIN_MSS 1200 bytes, plus the 16-byte AEAD tag; bindings/ keeps it), 0.84 of the buffer
alone, and where its packets share the queue with TCP's it takes most of the drops: one XQUIC
NewReno path beside a kernel Reno flow on ``rfc6356_one_path`` carried 0.24-0.36 of that flow's
rate under a 35-packet ``pfifo`` and 0.88-0.96 under the same 35 frames as bytes (docs/transport.md,
"Network"). netem, where it is used, keeps its own limit in packets (``Direction.netem_limit``).

Every command is an argument list with numbers formatted here; no scenario value reaches a
shell. Every rule and process is recorded and removed by ``remove()``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from envs.live.delayline import DelayLine
from envs.live.system import LiveError, run
from envs.scenario import PathSpec, Scenario, max_value

MAX_RATE_MBPS = 1000.0  # Mininet's TCLink ignores larger rates (TCIntf.bwParamMax)
MTU_WIRE = 1514  # bytes of a full-size frame on the wire (1500 + Ethernet header)
NFT_LOSS_RANGE = 1_000_000  # numgen modulus: loss probability in steps of 1e-6
MODES = ("auto", "delayline", "netem")


@dataclass(frozen=True)
class Direction:
    """One emulated direction of one path."""

    path: int
    direction: str  # "forward" (client -> server, data) or "reverse" (server -> client, ACKs)
    rate_mbps: float
    queue_packets: int
    delay_ms: float
    jitter_ms: float
    loss_pct: float
    reorder: bool  # jitter reorders packets (netem) or preserves order
    loss_after_pct: float | None = None  # of loss_pct, the part after the rate limit (None: all of it)

    @property
    def forward(self) -> bool:
        return self.direction == "forward"

    @property
    def queue_bytes(self) -> int:
        """The drop-tail buffer in bytes on the wire: ``queue_packets`` full-size frames."""
        return self.queue_packets * MTU_WIRE

    def loss_threshold(self) -> int:
        """nft drops a packet when ``numgen random mod NFT_LOSS_RANGE < threshold``."""
        return int(round(self.loss_pct / 100.0 * NFT_LOSS_RANGE))

    def netem_limit(self) -> int:
        """netem's limit counts the packets its delay holds too: queue plus the delayed pipe."""
        pipe = self.rate_mbps * 1e6 / 8 * (self.delay_ms + 4 * self.jitter_ms) / 1000 / MTU_WIRE
        return int(self.queue_packets + math.ceil(1.5 * pipe) + 100)


def connection_unsupported(scenario: Scenario) -> list[str]:
    """Connection settings no live stack takes from a scenario (both testbeds refuse them).

    ``receive_buffer_bytes``: the live receivers keep windows of their own. XQUIC as bindings/
    configures it gives the stream the client opens ``XQC_MAX_RECV_WINDOW``, 16 MiB
    (``xqc_conn.c`` ``xqc_conn_init_trans_settings``: ``max_stream_data_bidi_remote``, with no
    setting that lowers it), and the kernel's receiver auto-tunes within ``tcp_rmem``, which the
    testbed sizes for the paths. The simulator would run the scenario's window and live the
    stack's, so a comparison would not be of one scenario (docs/transport.md, "Connection level")."""
    out = []
    if scenario.receive_buffer_bytes is not None or scenario.receive_buffer_max_bytes is not None:
        out.append("receive_buffer_bytes / receive_buffer_max_bytes (a receive window of the scenario's own: "
                   "live XQUIC keeps its 16 MiB stream window, the kernel auto-tunes within tcp_rmem; "
                   "leave them unset to run the stack's own window on both sides)")
    return out


def unsupported(scenario: Scenario) -> list[str]:
    """Scenario features the live testbed does not emulate (a run refuses them)."""
    out = connection_unsupported(scenario)
    if scenario.is_distribution:
        out.append("a distribution (sample it first: Scenario.sample(rng))")
    if scenario.links is not None:
        return out + ["links (a network of shared links; envs.live.network_testbed builds it)"]
    for i, p in enumerate(scenario.paths):
        where = f"paths[{i}]"
        if p.bandwidth_trace:
            out.append(f"{where}.bandwidth_trace (a capacity that changes over time)")
        if p.outages:
            out.append(f"{where}.outages")
        if p.competing.flows or p.competing.arrivals is not None \
                or (not isinstance(p.competing.udp_mbps, float) or p.competing.udp_mbps > 0):
            out.append(f"{where}.competing (cross traffic; envs.live.network_testbed runs it)")
        if not scenario.is_distribution and max_value(p.capacity) > MAX_RATE_MBPS:
            out.append(f"{where}.bandwidth_mbps above {MAX_RATE_MBPS:g} (Mininet's TCLink limit)")
    return out


def queue_packets(path: PathSpec, mss: int) -> int:
    """The bottleneck buffer in packets, as the simulator sizes it (``PathSpec.queue_bytes``)."""
    return max(2, int(math.ceil(path.queue_bytes(mss) / mss - 1e-9)))


def plan(scenario: Scenario, mss: int = 1448) -> list[Direction]:
    """Both directions of every path; refuses what the testbed cannot emulate."""
    problems = unsupported(scenario)
    if problems:
        raise LiveError(f"scenario {scenario.name!r} cannot run live: the testbed does not emulate "
                        + "; ".join(problems))
    out = []
    for i, p in enumerate(scenario.paths):
        forward = max_value(p.delay)  # a concrete scenario (unsupported() refused distributions)
        reverse = forward if p.reverse_delay_ms is None else max_value(p.reverse_delay_ms)
        for direction, delay in (("forward", forward), ("reverse", reverse)):
            out.append(Direction(i, direction, max_value(p.capacity), queue_packets(p, mss), float(delay),
                                 max_value(p.jitter_ms), max_value(p.loss_pct), bool(scenario.jitter_reorders)))
    return out


def _ms(x: float) -> str:
    return f"{x:.3f}ms"


def queue_args(d: Direction) -> list[str]:
    """``tc qdisc add dev X parent 5:1 handle 10:`` + these (delay-line mode): the byte-limited
    drop-tail buffer (see the module's docstring)."""
    return ["bfifo", "limit", str(d.queue_bytes)]


def netem_args(d: Direction) -> list[str]:
    """``tc qdisc add dev X parent 5:1 handle 10:`` + these (netem mode)."""
    args = ["netem", "limit", str(d.netem_limit())]
    if d.delay_ms > 0 or d.jitter_ms > 0:
        args += ["delay", _ms(d.delay_ms)]
        if d.jitter_ms > 0:
            args += [_ms(d.jitter_ms), "distribution", "normal"]
    if d.loss_pct > 0:
        args += ["loss", f"{d.loss_pct:.6f}%"]
    return args


def nft_loss_script(table: str, rules: list[tuple[str, int]]) -> str:
    """An nft script: one table with a prerouting chain dropping ``threshold / 1e6`` of the
    packets that arrive on each interface (names are generated by the testbed, never user text)."""
    lines = [f"table inet {table} {{", "  chain prerouting {",
             "    type filter hook prerouting priority -400; policy accept;"]
    for ifname, threshold in rules:
        lines.append(f'    iifname "{ifname}" numgen random mod {NFT_LOSS_RANGE} < {threshold} counter drop')
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


_UNITS = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}


def htb_rate_mbps(tc_class_show: str) -> float | None:
    """Rate of HTB class 5:1 from ``tc class show`` text (iproute2 prints no JSON for it)."""
    m = re.search(r"class htb 5:1 .*?\brate ([0-9.]+)([KMG]?bit)\b", tc_class_show)
    return None if m is None else float(m.group(1)) * _UNITS[m.group(2).lower()]


def nfqueue_rule(ifname: str, queue: int, tag: str) -> list[str]:
    """The iptables rule (after ``-A``/``-D`` and the chain) that hands a path's arrivals to its
    delay line."""
    return ["-i", ifname, "-m", "comment", "--comment", tag, "-j", "NFQUEUE", "--queue-num", str(queue)]


class LinkEmulation:
    """Applies a plan to a built testbed (hosts and veth pairs exist, TCLink's HTB is in place)
    and records everything it adds, so ``remove()`` takes exactly that away."""

    def __init__(self, directions: list[Direction], endpoints: dict[tuple[int, str], tuple[int, str, int, str]],
                 mode: str, tag: str, seed: int = 0) -> None:
        """endpoints[(path, direction)] = (egress ns pid, egress interface, ingress ns pid,
        ingress interface)."""
        if mode not in ("delayline", "netem"):
            raise LiveError(f"link emulation mode must be delayline or netem, got {mode!r}")
        self.directions, self.endpoints, self.mode, self.tag, self.seed = directions, endpoints, mode, tag, seed
        self.delay_lines: dict[tuple[int, str], DelayLine] = {}
        self.iptables: list[tuple[int, list[str]]] = []  # (ns pid, rule spec after the chain)
        self.nft_tables: list[tuple[int, str]] = []
        self.qdiscs: list[tuple[int, str]] = []  # (ns pid, interface) with our leaf under 5:1
        self.queue_of: dict[tuple[int, str], int] = {}

    # ------------------------------------------------------------------ apply
    def apply(self) -> None:
        interfaces = {(pid, ifname) for eg_pid, eg_if, in_pid, in_if in self.endpoints.values()
                      for pid, ifname in ((eg_pid, eg_if), (in_pid, in_if))}
        for pid, ifname in sorted(interfaces):
            # segmentation offloads off (TCP and UDP), so every hop sees wire-size packets
            run(["ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx-udp-segmentation", "off"], pid)
        loss_rules: dict[int, list[tuple[str, int]]] = {}
        for d in self.directions:
            key = (d.path, d.direction)
            eg_pid, eg_if, in_pid, in_if = self.endpoints[key]
            use_netem = self.mode == "netem" and (d.reorder or d.jitter_ms == 0)
            leaf = netem_args(d) if use_netem else queue_args(d)
            run(["tc", "qdisc", "add", "dev", eg_if, "parent", "5:1", "handle", "10:", *leaf], eg_pid)
            self.qdiscs.append((eg_pid, eg_if))
            if use_netem:
                continue
            if d.loss_pct > 0:
                loss_rules.setdefault(in_pid, []).append((in_if, d.loss_threshold()))
            if d.delay_ms > 0 or d.jitter_ms > 0:
                queue = d.path  # one queue per arriving path; queue numbers are per namespace
                line = DelayLine(in_pid, queue, d.delay_ms, d.jitter_ms, d.reorder,
                                 seed=self.seed * 1000 + 2 * d.path + (0 if d.forward else 1))
                self.delay_lines[key] = line  # recorded before starting: stop() works on a half start
                line.start()
                spec = nfqueue_rule(in_if, queue, self.tag)
                run(["iptables", "-w", "5", "-t", "mangle", "-A", "PREROUTING", *spec], in_pid)
                self.iptables.append((in_pid, spec))
                self.queue_of[key] = queue
        for pid, rules in loss_rules.items():
            table = f"{self.tag}_loss"
            self.nft_tables.append((pid, table))
            run(["nft", "-f", "-"], pid, input=nft_loss_script(table, rules))

    # ------------------------------------------------------------------ inspect
    def loss_drops(self) -> dict[tuple[int, str], int]:
        """Packets the random-loss rules dropped so far, per (path, direction)."""
        import json
        out: dict[tuple[int, str], int] = {}
        for pid, table in self.nft_tables:
            res = run(["nft", "-j", "list", "table", "inet", table], pid, check=False)
            if res.returncode != 0:
                continue
            for item in json.loads(res.stdout).get("nftables", []):
                rule = item.get("rule")
                if not rule:
                    continue
                ifname, packets = None, 0
                for expr in rule.get("expr", []):
                    if "match" in expr and expr["match"].get("left", {}).get("meta", {}).get("key") == "iifname":
                        ifname = expr["match"]["right"]
                    if "counter" in expr:
                        packets = int(expr["counter"]["packets"])
                for key, (_, _, in_pid, in_if) in self.endpoints.items():
                    if in_pid == pid and in_if == ifname:
                        out[key] = packets
        return out

    def check_applied(self) -> list[str]:
        """Read the kernel's state back and list every difference from the plan (empty: all
        applied). Cheap; the measured check is ``envs.live.verification``."""
        import json
        problems = []
        for d in self.directions:
            key = (d.path, d.direction)
            eg_pid, eg_if, in_pid, in_if = self.endpoints[key]
            where = f"path {d.path + 1} {d.direction}"
            got = htb_rate_mbps(run(["tc", "class", "show", "dev", eg_if], eg_pid).stdout)
            if got is None:
                problems.append(f"{where}: no HTB rate class on {eg_if} (TCLink did not apply bw)")
            else:
                if abs(got - d.rate_mbps) > 0.01 * d.rate_mbps:
                    problems.append(f"{where}: HTB rate {got:.3f} Mbit/s, wanted {d.rate_mbps:g}")
            qdiscs = json.loads(run(["tc", "-j", "qdisc", "show", "dev", eg_if], eg_pid).stdout or "[]")
            leaf = [q for q in qdiscs if q.get("handle") == "10:"]
            if not leaf:
                problems.append(f"{where}: no queue (leaf qdisc 10:) on {eg_if}")
            elif leaf[0].get("kind") not in ("bfifo", "netem"):
                problems.append(f"{where}: queue {leaf[0].get('kind')}, wanted bfifo (a buffer in bytes)")
            elif leaf[0].get("kind") == "bfifo" and int(leaf[0].get("options", {}).get("limit", -1)) != d.queue_bytes:
                problems.append(f"{where}: bfifo limit {leaf[0]['options'].get('limit')}, wanted {d.queue_bytes}")
            line = self.delay_lines.get(key)
            if line is not None and (line.proc is None or line.proc.poll() is not None):
                problems.append(f"{where}: delay line (queue {line.queue}) is not running")
        for pid, spec in self.iptables:
            if run(["iptables", "-w", "5", "-t", "mangle", "-C", "PREROUTING", *spec], pid, check=False).returncode:
                problems.append(f"iptables rule missing: {' '.join(spec)}")
        for pid, table in self.nft_tables:
            if run(["nft", "list", "table", "inet", table], pid, check=False).returncode:
                problems.append(f"nft table {table} missing")
        return problems

    # ------------------------------------------------------------------ remove
    def remove(self) -> list[str]:
        """Remove every rule and qdisc recorded, then stop the delay lines (by pid). Returns the
        problems met (a namespace already gone is not one)."""
        problems = []
        for pid, spec in reversed(self.iptables):
            res = run(["iptables", "-w", "5", "-t", "mangle", "-D", "PREROUTING", *spec], pid, check=False)
            if res.returncode and _ns_exists(pid):
                problems.append(f"iptables -D {' '.join(spec)}: {res.stderr.strip()}")
        self.iptables.clear()
        for pid, table in reversed(self.nft_tables):
            res = run(["nft", "delete", "table", "inet", table], pid, check=False)
            if res.returncode and _ns_exists(pid):
                problems.append(f"nft delete table {table}: {res.stderr.strip()}")
        self.nft_tables.clear()
        for pid, ifname in reversed(self.qdiscs):
            run(["tc", "qdisc", "del", "dev", ifname, "parent", "5:1", "handle", "10:"], pid, check=False)
        self.qdiscs.clear()
        for line in self.delay_lines.values():
            line.stop()
        return problems

    def delay_line_stats(self) -> dict[tuple[int, str], dict | None]:
        return {key: line.stats for key, line in self.delay_lines.items()}


def _ns_exists(pid: int) -> bool:
    import os
    return os.path.exists(f"/proc/{int(pid)}/ns/net")
