"""The testbed: a scenario file as a Mininet network on this machine.

A client (the sender) and a server, and one router host per path, each in its own network
namespace (Mininet hosts; no switch, no controller): path ``i`` is client -- router ``i`` --
server over two veth pairs. The router's egress toward the receiver holds the path's bottleneck
(Mininet's ``TCLink`` HTB class sets the rate; ``envs.live.emulation`` adds the queue, delay,
jitter and loss). The bottleneck cannot sit on the sender's own interface: Linux TCP keeps its
local queues short (TCP small queues: about 1 ms of the pacing rate per socket) and queues
unsegmented GSO packets there, so a drop-tail buffer on the sender would never fill.

Addresses (private to the namespaces, so concurrent runs never meet): client ``10.201.i.1`` and
router ``10.201.i.254`` on the client side of path ``i``, server ``10.202.i.2`` and router
``10.202.i.254`` on its server side. The client reaches the server's first address over every
path by source-address routing, and an ``ip mptcp endpoint ... subflow`` per extra path makes
the kernel open one MPTCP subflow per path.

Safety: every name starts with a unique prefix (``mps<pid><n>``); a name already present (an
interface in this namespace) is refused before anything is created. Everything created is
recorded (host processes and their namespaces, interfaces, delay-line processes, iptables and
nftables rules, qdiscs) and ``close()`` removes exactly that, also on errors, KeyboardInterrupt
and interpreter exit (atexit). If the process is killed outright, the hosts' shells lose their
terminal and exit and the delay lines die with their parent (PR_SET_PDEATHSIG), so the
namespaces and everything in them disappear with it. ``leftovers()`` says what, if anything,
is still there.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import signal
import socket
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envs.live import delayline
from envs.live.emulation import MODES, Direction, LinkEmulation, plan
from envs.live.system import (LiveError, boot_clock, load_mininet, namespace_alive, netns, ns_inode, pid_alive,
                              preflight, run)
from envs.scenario import Scenario

_counter = itertools.count()
_active: weakref.WeakSet = weakref.WeakSet()


def netem_available(ns_pid: int) -> bool:
    """Whether this kernel has netem: try it on the loopback of one of our own namespaces."""
    res = run(["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "netem", "delay", "0ms"], ns_pid,
              check=False)
    if res.returncode == 0:
        run(["tc", "qdisc", "del", "dev", "lo", "root"], ns_pid, check=False)
        return True
    return False


@dataclass
class PathLink:
    """Names and addresses of path ``index``: client -- router -- server."""

    index: int
    prefix: str

    @property
    def router(self) -> str:
        return f"{self.prefix}r{self.index}"

    @property
    def client_if(self) -> str:
        return f"{self.prefix}c{self.index}"

    @property
    def router_client_if(self) -> str:  # router's interface toward the client
        return f"{self.prefix}r{self.index}a"

    @property
    def router_server_if(self) -> str:  # router's interface toward the server
        return f"{self.prefix}r{self.index}b"

    @property
    def server_if(self) -> str:
        return f"{self.prefix}s{self.index}"

    @property
    def client_ip(self) -> str:
        return f"10.201.{self.index}.1"

    @property
    def router_client_ip(self) -> str:
        return f"10.201.{self.index}.254"

    @property
    def router_server_ip(self) -> str:
        return f"10.202.{self.index}.254"

    @property
    def server_ip(self) -> str:
        return f"10.202.{self.index}.2"

    def interfaces(self) -> list[str]:
        return [self.client_if, self.router_client_if, self.router_server_if, self.server_if]


@dataclass
class Record:
    """Everything a testbed created, so that teardown removes exactly that."""

    prefix: str
    host_pids: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, int] = field(default_factory=dict)  # host -> netns inode
    interfaces: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)  # delay lines (and helpers) by pid
    rules: list[str] = field(default_factory=list)  # human-readable list of rules and qdiscs


class Testbed:
    """``with Testbed(scenario) as tb: ...`` builds, emulates and (``verify=True``) verifies the
    network, and always tears it down.

    emulation: ``auto`` (netem where the kernel has it, else the delay line), ``delayline`` or
    ``netem``. mss: the payload size used to convert ``queue_bdp`` to packets (as the simulator).
    """

    def __init__(self, scenario: Scenario, *, emulation: str = "auto", seed: int = 0, mss: int = 1448,
                 verify: bool = True, tcp_mem_bytes: int | None = None) -> None:
        if emulation not in MODES:
            raise LiveError(f"live.emulation must be one of {', '.join(MODES)}, got {emulation!r}")
        self.scenario = scenario
        self.directions: list[Direction] = plan(scenario, mss)  # refuses unsupported scenarios first
        self.emulation_mode = emulation
        self.seed, self.mss, self.verify_on_start = int(seed), int(mss), verify
        self.prefix = f"mps{os.getpid()}{next(_counter) % 256:02x}"
        self.paths = [PathLink(i, self.prefix) for i in range(len(scenario.paths))]
        self.client_name, self.server_name = f"{self.prefix}c", f"{self.prefix}s"
        self.record = Record(self.prefix)
        self.net = None
        self.emulation: LinkEmulation | None = None
        self.verification = None
        self.started = self.closed = False
        self.closed_at: float | None = None  # boot_clock() when close began
        rcvbuf = scenario.receive_buffer(mss)
        self.tcp_mem_bytes = int(tcp_mem_bytes or max(8 << 20, 4 * rcvbuf))
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------------ names
    @property
    def client_pid(self) -> int:
        return self.record.host_pids[self.client_name]

    @property
    def server_pid(self) -> int:
        return self.record.host_pids[self.server_name]

    def router_pid(self, path: int) -> int:
        return self.record.host_pids[self.paths[path].router]

    def _interface_names(self) -> list[str]:
        return [n for p in self.paths for n in p.interfaces()]

    def names_in_use(self) -> list[str]:
        """Our names that already exist here (interfaces in this namespace)."""
        return [n for n in self._interface_names() if Path("/sys/class/net", n).exists()]

    # ------------------------------------------------------------------ build
    def start(self) -> Testbed:
        if self.started:
            return self
        t0 = time.monotonic()
        preflight()
        delayline.binary()  # compile before creating anything
        taken = self.names_in_use()
        if taken:
            raise LiveError(f"interface name(s) already in use: {', '.join(taken)}; refusing to create the "
                            "testbed (remove them, or they belong to another run)")
        self.started = True
        _active.add(self)
        try:
            self._build()
            self.timings["build_s"] = time.monotonic() - t0
            if self.verify_on_start:
                t1 = time.monotonic()
                self.verify()
                self.timings["verify_s"] = time.monotonic() - t1
        except BaseException as err:
            left = self.close()
            if left:
                err.add_note(f"tearing the testbed down left: {', '.join(left)}")
            raise
        return self

    def _build(self) -> None:
        load_mininet()
        from mininet.link import TCLink
        from mininet.net import Mininet

        net = Mininet(topo=None, build=False, controller=None, switch=None, link=TCLink, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        client = net.addHost(self.client_name, ip=None)
        server = net.addHost(self.server_name, ip=None)
        routers = [net.addHost(p.router, ip=None) for p in self.paths]
        for host in [client, server, *routers]:
            self.record.host_pids[host.name] = host.pid
            inode = ns_inode(host.pid)
            if inode is not None:  # None: the host's shell is already gone, nothing to clean up
                self.record.namespaces[host.name] = inode
        rates = {(d.path, d.direction): d.rate_mbps for d in self.directions}
        for p, router in zip(self.paths, routers):
            self.record.interfaces += p.interfaces()
            # the rate sits on the router's egress toward the receiver of each direction
            net.addLink(client, router, intfName1=p.client_if, intfName2=p.router_client_if,
                        params2={"bw": rates[(p.index, "reverse")]})
            net.addLink(router, server, intfName1=p.router_server_if, intfName2=p.server_if,
                        params1={"bw": rates[(p.index, "forward")]})
        net.build()
        cpid, spid = self.client_pid, self.server_pid
        self._configure_host(cpid, client=True)
        self._configure_host(spid, client=False)
        for p in self.paths:
            self._configure_router(p)
        endpoints = {}
        for p in self.paths:
            rpid = self.router_pid(p.index)
            endpoints[(p.index, "forward")] = (rpid, p.router_server_if, spid, p.server_if)
            endpoints[(p.index, "reverse")] = (rpid, p.router_client_if, cpid, p.client_if)
        self._emulate(self.directions, endpoints, cpid)

    def _emulate(self, directions: list[Direction], endpoints: dict[tuple[int, str], tuple[int, str, int, str]],
                 probe_pid: int, unit: str = "path") -> None:
        """Resolve ``live.emulation`` (``auto``: netem where the kernel in ``probe_pid``'s
        namespace has it, else the delay line), apply ``directions`` at ``endpoints``, record the
        delay lines' processes and the rules, and refuse emulation not applied as planned (each
        problem named by its ``unit``: a path, or a link of a network)."""
        mode = self.emulation_mode
        if mode == "auto":
            mode = "netem" if netem_available(probe_pid) else "delayline"
        elif mode == "netem" and not netem_available(probe_pid):
            raise LiveError("live.emulation=netem, but this kernel has no netem (sch_netem); use delayline or auto")
        self.emulation_mode = mode
        self.emulation = LinkEmulation(directions, endpoints, mode, tag=self.prefix, seed=self.seed)
        try:
            self.emulation.apply()
        finally:
            self.record.processes = [line.pid for line in self.emulation.delay_lines.values() if line.pid]
            self.record.rules = self._describe_rules()
        problems = self.emulation.check_applied()
        if problems:
            raise LiveError("link emulation not applied as planned: " + "; ".join(
                p.replace("path ", f"{unit} ", 1) for p in problems))

    def _configure_host(self, pid: int, client: bool) -> None:
        mem = f"4096 131072 {self.tcp_mem_bytes}"
        run(["sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={mem}", f"net.ipv4.tcp_wmem={mem}",
             "net.ipv4.tcp_no_metrics_save=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
             "net.mptcp.enabled=1"], pid)
        n_extra = len(self.paths) - 1
        cmds = []
        first = self.paths[0].server_ip
        for p in self.paths:
            if client:
                table = 100 + p.index
                cmds += [f"addr add {p.client_ip}/24 dev {p.client_if}", f"link set {p.client_if} up",
                         f"route add 10.202.{p.index}.0/24 via {p.router_client_ip} dev {p.client_if}",
                         # source-address routing: the subflow from path i's address leaves by path i
                         f"rule add from {p.client_ip} table {table} priority {table}",
                         f"route add {first}/32 via {p.router_client_ip} dev {p.client_if} table {table}"]
            else:
                cmds += [f"addr add {p.server_ip}/24 dev {p.server_if}", f"link set {p.server_if} up",
                         f"route add 10.201.{p.index}.0/24 via {p.router_server_ip} dev {p.server_if}"]
        cmds += ["link set lo up", f"mptcp limits set subflow {max(n_extra, 0)} add_addr_accepted {max(n_extra, 0)}"]
        if client:
            cmds += [f"mptcp endpoint add {p.client_ip} dev {p.client_if} subflow" for p in self.paths[1:]]
        # every token above is generated here (addresses, our interface names, integers)
        run(["ip", "-batch", "-"], pid, input="\n".join(cmds) + "\n")
        for p in self.paths:  # rp_filter takes the max of all and the interface
            ifname = p.client_if if client else p.server_if
            run(["sysctl", "-q", "-w", f"net.ipv4.conf.{ifname}.rp_filter=0"], pid)

    def _configure_router(self, p: PathLink) -> None:
        pid = self.router_pid(p.index)
        run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
             "net.ipv4.conf.default.rp_filter=0"], pid)
        cmds = [f"addr add {p.router_client_ip}/24 dev {p.router_client_if}", f"link set {p.router_client_if} up",
                f"addr add {p.router_server_ip}/24 dev {p.router_server_if}", f"link set {p.router_server_if} up",
                # every server address (the first path's included) lies beyond the server side
                f"route add 10.202.0.0/16 via {p.server_ip} dev {p.router_server_if}",
                f"route add 10.201.0.0/16 via {p.client_ip} dev {p.router_client_if}",
                "link set lo up"]
        run(["ip", "-batch", "-"], pid, input="\n".join(cmds) + "\n")

    def _describe_rules(self) -> list[str]:
        e = self.emulation
        if e is None:
            return []
        return ([f"iptables -t mangle PREROUTING {' '.join(spec)} (ns of pid {pid})" for pid, spec in e.iptables]
                + [f"nft table inet {t} (ns of pid {pid})" for pid, t in e.nft_tables]
                + [f"tc qdisc 10: on {ifname} (ns of pid {pid})" for pid, ifname in e.qdiscs])

    # ------------------------------------------------------------------ use
    def host_pid(self, name: str) -> int:
        """The pid of one of our hosts: ``"client"`` or ``"server"``."""
        return self.client_pid if name == "client" else self.server_pid

    def socket(self, host: str, proto: int = 0, type_: int = socket.SOCK_STREAM) -> socket.socket:
        """A socket in the namespace of ``host`` (``"client"``, ``"server"``, or another of
        ``host_pid``'s hosts)."""
        with netns(self.host_pid(host)):
            return socket.socket(socket.AF_INET, type_, proto)

    def run(self, host: str, argv: list[str], **kwargs):
        return run(argv, self.client_pid if host == "client" else self.server_pid, **kwargs)

    def bottleneck(self, path: int) -> dict:
        """Counters of path ``path``'s forward bottleneck buffer (the leaf ``10:`` under the rate
        class, see ``envs.live.emulation``), as ``tc -s -j qdisc`` reports them: ``backlog`` (bytes
        queued now, frames on the wire), ``qlen`` (packets queued now), ``packets`` (sent on),
        ``drops``."""
        p = self.paths[path]
        out = run(["tc", "-s", "-j", "qdisc", "show", "dev", p.router_server_if], self.router_pid(path)).stdout
        for qdisc in json.loads(out):
            if qdisc.get("handle") == "10:":
                return qdisc
        raise LiveError(f"path {path + 1}: no bottleneck buffer (qdisc 10:) on {p.router_server_if}")

    def verify(self, **kwargs):
        """Measure every path and refuse (VerificationError) when it misses the scenario."""
        from envs.live.verification import verify
        self.verification = verify(self, **kwargs)
        return self.verification

    # ------------------------------------------------------------------ teardown
    def close(self) -> list[str]:
        """Remove everything recorded; returns what could not be removed (empty: clean)."""
        if self.closed or not self.started:
            self.closed = True
            return []
        self.closed = True
        self.closed_at = boot_clock()  # what is ours started before this (a namespace inode is reused later)
        problems: list[str] = []
        t0 = time.monotonic()
        if self.emulation is not None:
            try:
                problems += self.emulation.remove()
            except BaseException as err:  # keep tearing down
                problems.append(f"removing link emulation: {err}")
        if self.net is not None:
            try:
                self.net.stop()  # deletes our veth pairs and ends the host shells (SIGHUP to each one's group)
            except BaseException as err:
                problems.append(f"stopping Mininet: {err}")
        for name, pid in self.record.host_pids.items():  # a shell Mininet did not end (it raised, or it lived on)
            ino = self.record.namespaces.get(name)
            if ino is not None and ns_inode(pid) == ino:  # still our shell in our namespace, not a reused pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        _active.discard(self)
        problems += self.leftovers(wait_s=2.0)
        self.timings["teardown_s"] = time.monotonic() - t0
        return problems

    def leftovers(self, wait_s: float = 0.0) -> list[str]:
        """What this testbed created that still exists (processes, namespaces, interfaces)."""
        deadline = time.monotonic() + wait_s
        while True:
            left = [f"process {pid}" for pid in list(self.record.host_pids.values()) + self.record.processes
                    if pid_alive(pid, self.closed_at)]
            left += [f"namespace of {name} (net:[{ino}])" for name, ino in self.record.namespaces.items()
                     if ino is not None and namespace_alive(ino, self.closed_at)]
            left += [f"interface {n}" for n in self.record.interfaces if Path("/sys/class/net", n).exists()]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def __enter__(self) -> Testbed:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def describe(self) -> str:
        lines = [f"testbed {self.prefix}: {len(self.paths)} path(s) (client - router - server), "
                 f"emulation={self.emulation_mode}"]
        for d in self.directions:
            lines.append(f"  path {d.path + 1} {d.direction:7s}: {d.rate_mbps:g} Mbit/s, queue {d.queue_packets} pkts, "
                         f"delay {d.delay_ms:g} ms, jitter {d.jitter_ms:g} ms, loss {d.loss_pct:g} %"
                         + ("" if d.reorder or not d.jitter_ms else " (order-preserving)"))
        return "\n".join(lines)


def verified(scenario: Scenario, say: Callable[[str], None] = print, **kwargs: Any) -> AbstractContextManager[Testbed]:
    """A verified ``Testbed(scenario, **kwargs)`` for a ``with`` block, closed at its end: built again
    when its verification fails, up to ``live.verify_attempts`` builds (a marginal reading on a busy
    machine passes on the next), each failure said in one line by ``say``; after the last, its
    ``VerificationError`` says what did not match. How the live tools get their testbed."""
    from envs.live.verification import verified_testbed
    from envs.schema import LiveOptions

    attempts = LiveOptions.verify_attempts
    return verified_testbed(functools.partial(Testbed, scenario, verify=True, **kwargs), attempts,
                            on_failure=lambda attempt, err: say(f"verification attempt {attempt} of {attempts} "
                                                                f"failed: {str(err).splitlines()[0]}"))


@atexit.register
def _close_all() -> None:
    for tb in list(_active):
        tb.close()
