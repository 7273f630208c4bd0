"""A scenario's network (``envs/network.py``) on this machine: links shared by several paths,
transit links, and competing traffic on any link.

Every link ``k`` of the network is a pair of router hosts ``A_k`` -- ``B_k`` joined by one veth
pair: ``A_k``'s egress toward ``B_k`` holds the link's forward (data) bottleneck (Mininet's
``TCLink`` HTB rate and a drop-tail ``bfifo``, the buffer in bytes, as ``envs.live.emulation`` lays out one direction),
``B_k``'s ingress its random loss and delay line; the reverse (ACK) direction mirrors it. A path
is client -- ``A_first`` ... ``B_last`` -- server, consecutive links of a route joined by a veth
from ``B`` of one to ``A`` of the next (shared by every route that takes that turn). So the
packets of every path crossing link ``k`` (subflows of the connection and competing traffic)
meet in one queue, the packets of a route cross every queue on it in tandem (the simulator keeps
one queue per route, at its lowest-capacity link: docs/transport.md, "Network"), and each link's
delay, jitter and loss apply once per crossing.

Routing: router hosts forward the data of path ``i`` by its source address (``ip rule from
10.201.i.1``) along its route, and everything toward the client by destination; the client and
the server are configured as in ``envs.live.testbed`` (source-address routing, one MPTCP subflow
per path). Competing traffic on link ``k`` runs between two hosts of its own, ``X_k`` (behind
``A_k``) and ``Y_k`` (behind ``B_k``), so it crosses only that link and its senders queue at the
link as the connection's do (a sender on ``A_k`` itself would be held back by TCP small queues);
``envs.live.competition`` drives it.

Verification measures each path alone (its RTT, spread, loss and rate against the route's sum of
delays, combined loss and lowest rate), one path after another so that paths sharing a link do
not take each other's rate, before the competing traffic starts; ``check_applied`` reads every
link's rate, queue and delay line back. Interfaces keep ``envs.live.testbed``'s 15-character
names, so a network has at most 10 links (and 10 junctions between them).
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass, replace

from envs.live.competition import Competition
from envs.live.emulation import MAX_RATE_MBPS, MODES, Direction, connection_unsupported
from envs.live.system import LiveError, check_cc, load_mininet, ns_inode, run
from envs.live.testbed import Testbed
from envs.network import Network
from envs.scenario import Scenario, max_value, scenario_from_dict

MAX_LINKS = 10  # one character of an interface name


def has_network(scenario: Scenario) -> bool:
    """Whether the scenario needs this testbed: named links, or competing traffic on a path."""
    if scenario.links is not None:
        return True
    return any(_competing(p) for p in scenario.paths)


def _competing(link) -> bool:
    comp = link.competing
    return comp.flows > 0 or comp.arrivals is not None or max_value(comp.udp_mbps) > 0


def unsupported(scenario: Scenario) -> list[str]:
    """What the network testbed does not emulate (a run refuses it)."""
    if scenario.is_distribution:
        return ["a distribution (sample it first: Scenario.sample(rng))"]
    net = scenario.network()
    out = connection_unsupported(scenario)
    if len(net.links) > MAX_LINKS:
        out.append(f"more than {MAX_LINKS} links ({len(net.links)})")
    for name, link in zip(net.names, net.links):
        where = f"links.{name}" if scenario.links is not None else f"paths[{net.names.index(name)}]"
        if link.bandwidth_trace:
            out.append(f"{where}.bandwidth_trace (a capacity that changes over time)")
        if link.outages:
            out.append(f"{where}.outages")
        if link.nominal_mbps() > MAX_RATE_MBPS:
            out.append(f"{where}.bandwidth_mbps above {MAX_RATE_MBPS:g} (Mininet's TCLink limit)")
        comp = link.competing
        if max_value(comp.udp_mbps) > 0:
            out.append(f"{where}.competing.udp_mbps (constant-rate UDP cross traffic)")
        if comp.flows_schedule is not None:
            out.append(f"{where}.competing.flows_schedule")
        if comp.stack != "linux":
            out.append(f"{where}.competing.stack {comp.stack} (competing flows run as kernel TCP)")
    return out


def plan_links(scenario: Scenario, mss: int = 1448) -> tuple[Network, list[Direction]]:
    """The network and both directions of every link (``Direction.path`` is the link's index);
    refuses what the testbed cannot emulate. A link that is no path's bottleneck and carries no
    competition (a transit link: the simulator gives it no queue) gets at least the buffer of
    the largest bottleneck of the paths crossing it, so that it does not drop their bursts."""
    problems = unsupported(scenario)
    if problems:
        raise LiveError(f"scenario {scenario.name!r} cannot run live: the network testbed does not emulate "
                        + "; ".join(problems))
    net = scenario.network()
    queues = [max(2, int(math.ceil(net.queue_bytes(k, mss) / mss - 1e-9))) for k in range(len(net.links))]
    necks = {r.bottleneck for r in net.routes} | {k for k, link in enumerate(net.links) if _competing(link)}
    out = []
    for k, link in enumerate(net.links):
        queue = queues[k]
        if k not in necks:
            # a transit link queues nothing in the model; live, bursts reach it at the speed of a
            # veth, so it gets at least the buffer of the largest bottleneck behind or before it
            queue = max([queue] + [queues[r.bottleneck] for r in net.routes if k in r.links])
        for direction, delay in (("forward", link.forward_ms()), ("reverse", link.reverse_ms())):
            out.append(Direction(k, direction, link.nominal_mbps(), queue, float(delay), float(link.jitter_ms),
                                 float(link.loss_pct), bool(scenario.jitter_reorders)))
    return net, out


def route_directions(net: Network, links: list[Direction], path: int) -> list[Direction]:
    """Path ``path`` end to end as one emulated path (what verification expects of it): the
    lowest rate of its links, its bottleneck's queue, the summed delays, the root of the summed
    jitter variances and the combined loss, per direction."""
    route = net.routes[path]
    out = []
    for direction in ("forward", "reverse"):
        order = list(route.links) if direction == "forward" else list(reversed(route.links))
        by_link = {d.path: d for d in links if d.direction == direction}
        hops = [by_link[k] for k in order]
        slowest = min(range(len(hops)), key=lambda j: hops[j].rate_mbps)
        keep = keep_after = 1.0
        for j, d in enumerate(hops):
            keep *= 1.0 - d.loss_pct / 100.0
            if j >= slowest:  # a link's loss is at its receiving end, after its own rate limit
                keep_after *= 1.0 - d.loss_pct / 100.0
        neck = by_link[route.bottleneck]
        out.append(replace(neck, path=path, rate_mbps=hops[slowest].rate_mbps,
                           delay_ms=sum(d.delay_ms for d in hops),
                           jitter_ms=math.sqrt(sum(d.jitter_ms ** 2 for d in hops)), loss_pct=100.0 * (1.0 - keep),
                           loss_after_pct=100.0 * (1.0 - keep_after)))
    return out


@dataclass(frozen=True)
class LinkHosts:
    """Names and addresses of link ``k``: routers A (sender side) and B, competitor hosts X, Y."""

    index: int
    prefix: str

    @property
    def a(self) -> str:
        return f"{self.prefix}a{self.index}"

    @property
    def b(self) -> str:
        return f"{self.prefix}b{self.index}"

    @property
    def x(self) -> str:
        return f"{self.prefix}x{self.index}"

    @property
    def y(self) -> str:
        return f"{self.prefix}y{self.index}"

    @property
    def a_if(self) -> str:  # A's end of the link (forward bottleneck)
        return f"{self.prefix}L{self.index}a"

    @property
    def b_if(self) -> str:  # B's end (reverse bottleneck)
        return f"{self.prefix}L{self.index}b"

    @property
    def a_ip(self) -> str:
        return f"10.203.{self.index}.1"

    @property
    def b_ip(self) -> str:
        return f"10.203.{self.index}.2"

    # competitor hosts: X behind A, Y behind B
    @property
    def x_if(self) -> str:
        return f"{self.prefix}x{self.index}a"

    @property
    def ax_if(self) -> str:
        return f"{self.prefix}x{self.index}b"

    @property
    def y_if(self) -> str:
        return f"{self.prefix}y{self.index}b"

    @property
    def by_if(self) -> str:
        return f"{self.prefix}y{self.index}a"

    @property
    def x_ip(self) -> str:
        return f"10.210.{self.index}.1"

    @property
    def ax_ip(self) -> str:
        return f"10.210.{self.index}.254"

    @property
    def y_ip(self) -> str:
        return f"10.211.{self.index}.2"

    @property
    def by_ip(self) -> str:
        return f"10.211.{self.index}.254"


@dataclass(frozen=True)
class _ViewPath:
    index: int
    client_ip: str
    server_ip: str


class _PathView:
    """One path of a network testbed as ``envs.live.verification.verify`` reads a testbed: the
    client, the server and that path, numbered 0 (the caller renumbers the checks)."""

    def __init__(self, tb: NetworkTestbed, path: int) -> None:
        self.tb, self.scenario = tb, tb.scenario
        self.paths = [_ViewPath(0, tb.paths[path].client_ip, tb.paths[path].server_ip)]
        self.directions = [replace(d, path=0) for d in tb.path_directions(path)]
        self.client_pid, self.server_pid = tb.client_pid, tb.server_pid
        self.emulation = tb.emulation  # its delay lines report their lateness over each path's verification

    def socket(self, host: str, proto: int = 0, type_: int = socket.SOCK_STREAM) -> socket.socket:
        return self.tb.socket(host, proto, type_)


class NetworkTestbed(Testbed):
    """``with NetworkTestbed(scenario) as tb: ...``: ``envs.live.testbed.Testbed`` for a network
    (same interface: sockets in ``"client"``/``"server"``, ``verify``, ``bottleneck``, ``close``),
    plus ``link_hosts``/``host_pid`` for the competing traffic. ``directions`` are the paths
    end to end (as verification and reports read them); ``link_directions`` the links."""

    def __init__(self, scenario: Scenario, *, emulation: str = "auto", seed: int = 0, mss: int = 1448,
                 verify: bool = True, tcp_mem_bytes: int | None = None) -> None:
        if emulation not in MODES:
            raise LiveError(f"live.emulation must be one of {', '.join(MODES)}, got {emulation!r}")
        self.network, self.link_directions = plan_links(scenario, mss)  # refuses unsupported scenarios first
        for link in self.network.links:
            if _competing(link):
                check_cc(link.competing.cc)
        # Testbed.__init__ plans one path per router: give it the scenario's paths as inline stand-ins
        super().__init__(_inline(scenario, self.network), emulation=emulation, seed=seed, mss=mss, verify=False,
                         tcp_mem_bytes=tcp_mem_bytes)
        self.scenario = scenario
        self.verify_on_start = verify
        self.directions = [d for i in range(len(self.paths)) for d in route_directions(self.network,
                                                                                     self.link_directions, i)]
        self.links = [LinkHosts(k, self.prefix) for k in range(len(self.network.links))]
        self.junctions: dict[tuple[int, int], int] = {}
        for route in self.network.routes:
            for a, b in zip(route.links, route.links[1:]):
                self.junctions.setdefault((a, b), len(self.junctions))
        if len(self.junctions) > MAX_LINKS:
            raise LiveError(f"scenario {scenario.name!r}: more than {MAX_LINKS} junctions between links")
        self.competition: Competition | None = None  # the competing traffic while it runs

    # ------------------------------------------------------------------ names
    def competing_links(self) -> list[int]:
        return [k for k, link in enumerate(self.network.links) if _competing(link)]

    def host_pid(self, name: str) -> int:
        """The pid of one of our hosts: ``client``, ``server`` or a host name (``LinkHosts``)."""
        if name == "client":
            return self.client_pid
        if name == "server":
            return self.server_pid
        return self.record.host_pids[name]

    def _interface_names(self) -> list[str]:
        names = super()._interface_names()
        names += [n for h in self.links for n in (h.a_if, h.b_if)]
        names += [n for k in self.competing_links() for n in (self.links[k].x_if, self.links[k].ax_if,
                                                              self.links[k].y_if, self.links[k].by_if)]
        names += [n for j in self.junctions.values() for n in self._junction_ifs(j)]
        return names

    def _junction_ifs(self, j: int) -> tuple[str, str]:
        return f"{self.prefix}J{j}a", f"{self.prefix}J{j}b"  # on B of the first link, on A of the next

    def path_directions(self, path: int) -> list[Direction]:
        return [d for d in self.directions if d.path == path]

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        load_mininet()
        from mininet.link import TCLink
        from mininet.net import Mininet

        net = Mininet(topo=None, build=False, controller=None, switch=None, link=TCLink, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        comp = set(self.competing_links())
        names = [self.client_name, self.server_name] + [n for h in self.links for n in (h.a, h.b)] \
            + [n for k in sorted(comp) for n in (self.links[k].x, self.links[k].y)]
        hosts = {name: net.addHost(name, ip=None) for name in names}
        for name, host in hosts.items():
            self.record.host_pids[name] = host.pid
            inode = ns_inode(host.pid)
            if inode is not None:
                self.record.namespaces[name] = inode
        self.record.interfaces += self._interface_names()
        client, server = hosts[self.client_name], hosts[self.server_name]
        rates = {(d.path, d.direction): d.rate_mbps for d in self.link_directions}
        for h in self.links:  # the links themselves: the rate on each sender side
            net.addLink(hosts[h.a], hosts[h.b], intfName1=h.a_if, intfName2=h.b_if,
                        params1={"bw": rates[(h.index, "forward")]}, params2={"bw": rates[(h.index, "reverse")]})
        for p, route in zip(self.paths, self.network.routes):
            net.addLink(client, hosts[self.links[route.links[0]].a], intfName1=p.client_if,
                        intfName2=p.router_client_if)
            net.addLink(hosts[self.links[route.links[-1]].b], server, intfName1=p.router_server_if,
                        intfName2=p.server_if)
        for (first, second), j in self.junctions.items():
            ja, jb = self._junction_ifs(j)
            net.addLink(hosts[self.links[first].b], hosts[self.links[second].a], intfName1=ja, intfName2=jb)
        for k in sorted(comp):
            h = self.links[k]
            net.addLink(hosts[h.x], hosts[h.a], intfName1=h.x_if, intfName2=h.ax_if)
            net.addLink(hosts[h.b], hosts[h.y], intfName1=h.by_if, intfName2=h.y_if)
        net.build()
        self._configure_host(self.client_pid, client=True)
        self._configure_host(self.server_pid, client=False)
        self._configure_routers()
        for name, ifname in self._owners():  # wire-size packets on every hop
            run(["ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx-udp-segmentation", "off"],
                self.host_pid(name))
        endpoints = {}
        for h in self.links:
            apid, bpid = self.host_pid(h.a), self.host_pid(h.b)
            endpoints[(h.index, "forward")] = (apid, h.a_if, bpid, h.b_if)
            endpoints[(h.index, "reverse")] = (bpid, h.b_if, apid, h.a_if)
        self._emulate(self.link_directions, endpoints, self.client_pid, unit="link")

    def _owners(self) -> list[tuple[str, str]]:
        """(host, interface) of every interface we created."""
        out = [("client", p.client_if) for p in self.paths] + [("server", p.server_if) for p in self.paths]
        for p, route in zip(self.paths, self.network.routes):
            out += [(self.links[route.links[0]].a, p.router_client_if), (self.links[route.links[-1]].b, p.router_server_if)]
        for h in self.links:
            out += [(h.a, h.a_if), (h.b, h.b_if)]
        for (first, second), j in self.junctions.items():
            ja, jb = self._junction_ifs(j)
            out += [(self.links[first].b, ja), (self.links[second].a, jb)]
        for k in self.competing_links():
            h = self.links[k]
            out += [(h.x, h.x_if), (h.a, h.ax_if), (h.b, h.by_if), (h.y, h.y_if)]
        return out

    def _configure_routers(self) -> None:
        cmds: dict[str, list[str]] = {n: ["link set lo up"] for h in self.links for n in (h.a, h.b)}
        for h in self.links:
            cmds[h.a] += [f"addr add {h.a_ip}/24 dev {h.a_if}", f"link set {h.a_if} up"]
            cmds[h.b] += [f"addr add {h.b_ip}/24 dev {h.b_if}", f"link set {h.b_if} up"]
        for (first, second), j in self.junctions.items():
            ja, jb = self._junction_ifs(j)
            cmds[self.links[first].b] += [f"addr add 10.204.{j}.1/24 dev {ja}", f"link set {ja} up"]
            cmds[self.links[second].a] += [f"addr add 10.204.{j}.2/24 dev {jb}", f"link set {jb} up"]
        for p, route in zip(self.paths, self.network.routes):
            entry, exit_ = self.links[route.links[0]], self.links[route.links[-1]]
            cmds[entry.a] += [f"addr add {p.router_client_ip}/24 dev {p.router_client_if}",
                              f"link set {p.router_client_if} up"]
            cmds[exit_.b] += [f"addr add {p.router_server_ip}/24 dev {p.router_server_if}",
                             f"link set {p.router_server_if} up"]
            table = 100 + p.index
            for pos, k in enumerate(route.links):
                h = self.links[k]
                # forward: path i's data by its source address, along the route
                cmds[h.a] += [f"rule add from {p.client_ip} table {table} priority {table}",
                              f"route add default via {h.b_ip} dev {h.a_if} table {table}"]
                if pos + 1 < len(route.links):
                    ja, _ = self._junction_ifs(self.junctions[(k, route.links[pos + 1])])
                    nxt = f"10.204.{self.junctions[(k, route.links[pos + 1])]}.2 dev {ja}"
                else:
                    nxt = f"{p.server_ip} dev {p.router_server_if}"
                cmds[h.b] += [f"rule add from {p.client_ip} table {table} priority {table}",
                              f"route add default via {nxt} table {table}"]
                # reverse: toward the client by destination
                cmds[h.b] += [f"route replace {p.client_ip}/32 via {h.a_ip} dev {h.b_if}"]
                if pos > 0:
                    j = self.junctions[(route.links[pos - 1], k)]
                    cmds[h.a] += [f"route replace {p.client_ip}/32 via 10.204.{j}.1 dev {self._junction_ifs(j)[1]}"]
        for k in self.competing_links():
            h = self.links[k]
            cmds[h.a] += [f"addr add {h.ax_ip}/24 dev {h.ax_if}", f"link set {h.ax_if} up",
                          f"route add 10.211.{k}.0/24 via {h.b_ip} dev {h.a_if}"]
            cmds[h.b] += [f"addr add {h.by_ip}/24 dev {h.by_if}", f"link set {h.by_if} up",
                          f"route add 10.210.{k}.0/24 via {h.a_ip} dev {h.b_if}"]
            cmds[h.x] = ["link set lo up", f"addr add {h.x_ip}/24 dev {h.x_if}", f"link set {h.x_if} up",
                         f"route add default via {h.ax_ip} dev {h.x_if}"]
            cmds[h.y] = ["link set lo up", f"addr add {h.y_ip}/24 dev {h.y_if}", f"link set {h.y_if} up",
                         f"route add default via {h.by_ip} dev {h.y_if}"]
        mem = f"4096 131072 {self.tcp_mem_bytes}"
        for name, lines in cmds.items():
            pid = self.host_pid(name)
            router = name not in {h.x for h in self.links} | {h.y for h in self.links}
            run(["sysctl", "-q", "-w", f"net.ipv4.ip_forward={int(router)}", "net.ipv4.conf.all.rp_filter=0",
                 "net.ipv4.conf.default.rp_filter=0", f"net.ipv4.tcp_rmem={mem}", f"net.ipv4.tcp_wmem={mem}",
                 "net.ipv4.tcp_no_metrics_save=1"], pid)
            # every token above is generated here (addresses, our interface names, integers)
            run(["ip", "-batch", "-"], pid, input="\n".join(lines) + "\n")
        for name, ifname in self._owners():  # routes are asymmetric here: no reverse-path filtering anywhere
            run(["sysctl", "-q", "-w", f"net.ipv4.conf.{ifname}.rp_filter=0"], self.host_pid(name))

    # ------------------------------------------------------------------ use
    def bottleneck(self, path: int) -> dict:
        """Counters of the forward queue of path ``path``'s bottleneck link (shared with every
        path and competing flow crossing that link)."""
        return self.link_queue(self.network.routes[path].bottleneck)

    def link_queue(self, k: int) -> dict:
        """Counters of link ``k``'s forward buffer (qdisc ``10:``), as ``tc -s -j qdisc`` reports them."""
        import json
        h = self.links[k]
        out = run(["tc", "-s", "-j", "qdisc", "show", "dev", h.a_if], self.host_pid(h.a)).stdout
        for qdisc in json.loads(out):
            if qdisc.get("handle") == "10:":
                return qdisc
        raise LiveError(f"link {self.network.names[k]}: no bottleneck buffer (qdisc 10:) on {h.a_if}")

    @property
    def counters_per_path(self) -> bool:
        """Whether a path's drop counters are its own (no link carries two paths or competition)."""
        used = [k for r in self.network.routes for k in r.links]
        return len(used) == len(set(used)) and not self.competing_links() and all(
            len(r.links) == 1 for r in self.network.routes)

    def verify(self, **kwargs):
        """Measure every path alone, one after another (before any competing traffic), and refuse
        (VerificationError) when one misses its route."""
        from envs.live.verification import Report, refusal, verify
        if self.competition is not None:
            raise LiveError("a network is verified before its competing traffic starts, which would take the "
                            "paths' rate: live.verify_every_run does not combine with competing traffic")
        report = Report()
        for i in range(len(self.paths)):
            view = _PathView(self, i)
            part = verify(view, **{**kwargs, "raise_on_failure": False})
            for c in part.checks:
                c.path = i
            report.checks += part.checks
            report.seconds += part.seconds
            report.delay_lines += part.delay_lines
        self.verification = report
        if kwargs.get("raise_on_failure", True) and not report.ok:
            raise refusal(report, self.scenario.name,
                          **{k: kwargs[k] for k in ("jitter_abs_ms", "rate_rel") if k in kwargs})
        return report

    def start(self) -> NetworkTestbed:
        super().start()
        if self.competing_links() and self.competition is None:
            try:
                self.competition = Competition(self, seed=self.seed).start()
            except BaseException:
                self.close()
                raise
        return self

    def close(self) -> list[str]:
        problems: list[str] = []
        if self.competition is not None:
            try:
                self.competition.stop()
            except BaseException as err:  # keep tearing down
                problems.append(f"stopping the competing traffic: {err}")
            self.competition = None
        return problems + super().close()

    def describe(self) -> str:
        lines = [f"network testbed {self.prefix}: {len(self.network.links)} link(s), {len(self.paths)} path(s), "
                 f"emulation={self.emulation_mode}"]
        for d in self.link_directions:
            link = self.network.links[d.path]
            comp = link.competing
            extra = ""
            if d.forward and _competing(link):
                extra = f", competing: {comp.flows} x {comp.cc}" + (
                    f" + arrivals {comp.arrivals.rate_per_s:g}/s, mean {comp.arrivals.mean_kb:g} kB, "
                    f"Pareto {comp.arrivals.shape:g}, {comp.arrivals.slots} slots" if comp.arrivals else "")
            lines.append(f"  link {self.network.names[d.path]} {d.direction:7s}: {d.rate_mbps:g} Mbit/s, queue "
                         f"{d.queue_packets} pkts, delay {d.delay_ms:g} ms, jitter {d.jitter_ms:g} ms, loss "
                         f"{d.loss_pct:g} %{extra}")
        for i, r in enumerate(self.network.routes):
            lines.append(f"  path {i + 1}: " + " -> ".join(self.network.names[k] for k in r.links))
        return "\n".join(lines)


def _inline(scenario: Scenario, net: Network) -> Scenario:
    """The scenario with each path as its route's inline equivalent and no competition (what
    ``Testbed``'s bookkeeping needs: names, addresses, the receive buffer)."""
    paths = []
    for r in net.routes:
        neck = net.links[r.bottleneck]
        paths.append({"bandwidth_mbps": neck.nominal_mbps(), "delay_ms": r.forward_ms, "reverse_delay_ms": r.reverse_ms,
                      "jitter_ms": r.jitter_ms, "loss_pct": 100.0 * r.transit_loss + float(neck.loss_pct),
                      "queue_packets": max(net.queue_bytes(r.bottleneck, 1448) / 1448, 2.0)})
    base = scenario.model_dump(exclude_none=True)
    base.pop("links", None)
    base["paths"] = paths
    return scenario_from_dict(base)


def make_testbed(scenario: Scenario, **kwargs) -> Testbed:
    """The testbed a scenario needs: ``NetworkTestbed`` for named links or competing traffic,
    else the one-router-per-path ``Testbed``."""
    return NetworkTestbed(scenario, **kwargs) if has_network(scenario) else Testbed(scenario, **kwargs)


__all__ = ["LinkHosts", "MAX_LINKS", "NetworkTestbed", "has_network", "make_testbed", "plan_links",
           "route_directions", "unsupported"]
