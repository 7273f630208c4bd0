"""XQUIC backend (``live.backend=xquic``): one multipath QUIC transfer from the client to the server
host with XQUIC (alibaba/xquic) through the ``mpsched_xquic`` extension (``bindings/``), one UDP
socket per path on the client (bound to the path's address, so source routing sends it over that
path) and one on the server. XQUIC runs one CC instance per path (``lia``, ``olia``, ``balia``: the
coupled MPTCP CCs across the connection's paths, ``bindings/src/mps_coupled.c``; the others XQUIC's own) and
calls our scheduler once per packet: XQUIC's own (minrtt, backup, rap), the C versions of rr, ecf, blest, hsr, lws, lts,
kato and wait_rule (``bindings/src/mps_rules.c``; an extension built before the wait rule is refused, naming the rebuild), or ``policy``: an exported policy header (``python -m export``)
compiled into a shared object (``envs.policy_library.build_library``) whose ``decide`` runs inside
``get_path`` on XQUIC's per-path state in the header's units.

Telemetry: the scheduler records XQUIC's per-path state every ``telemetry_ms`` (interval
records) and optionally every k-th decision with the path it chose (decision records) in ring
buffers; ``XquicTransfer.intervals`` / ``decisions()`` read them in the simulator's units
(``envs.transport.from_raw``). ``set_mode`` switches the scheduler from Python while the
transfer runs (``mpsched/Live-v0`` with ``backend="xquic"``: the action of an interval).

XQUIC closes a connection whose stream has more than 8192 out-of-order frames buffered; that is
reported as an outcome (``outcome == "ooo_abort"``, metric ``ooo_exceeded`` = 1), not as an error;
so is a connection XQUIC closed for being idle (``stalled``: the scheduler waited and nothing
woke it). Other endings are errors: ``timeout`` (the time limit), ``stopped`` (the caller stopped
it first, e.g. ``run(timeout)``), ``failed`` (a connection closed before the end; the error
quotes XQUIC's close statistics: its error code, close message and close times).

Time zero is the end of the handshake (where the client starts sending), as in the MPTCP backend.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.errors import unknown_name
from envs.live.mptcp import TransferResult, network_counters, workload_bytes
from envs.live.system import LiveError
from envs.live.telemetry import Sample
from envs.metrics import transfer_metrics
from envs.plugins import parse_scheduler_label, scheduler_values
from envs.policy_library import build_library, header_info
from envs.scenario import WorkloadSpec
from envs.sim.layout import COBS_NAMES, OBS_NAMES
from envs.sim.stacks import XQC_AEAD_TAG, XQC_PACKET_OUT_SIZE
from envs.transport import from_raw

# XQUIC's four, and LIA, OLIA and BALIA coupled across the paths (bindings/src/mps_coupled.c)
CCS = ("reno", "cubic", "bbr", "bbr2", "lia", "olia", "balia")
SCHEDULERS = ("minrtt", "backup", "rap", "rr", "ecf", "blest", "hsr", "lws", "lts", "kato",
              "wait_rule")  # plus policy=<header>
SOCKET_BUFFER = 8 << 20
# the extension's backlog column (bindings/src/mps_xquic.c, conn_backlog): the stream data awaiting
# retransmission plus the new data no scheduler call has put on a path, as envs/sim/kernel.py counts it
BACKLOG = "retransmissions+unsent"
# The simulator's scheduler parameters (envs/schedulers/*.py PARAMS) that the C rules take
# (bindings/src/mps_rules.c), as the extension's keyword arguments; their defaults are the
# simulator's, so both sides run the same rule unless scheduler_params says otherwise.
RULE_PARAMS = {"ecf": {"beta": "ecf_beta"},
               "blest": {"lambda": "blest_lambda", "step": "blest_lambda_step", "lambda_max": "blest_lambda_max"},
               "kato": {"alpha": "kato_alpha"}, "wait_rule": {"k": "wait_k"}}


def extension():
    """The ``mpsched_xquic`` module, or a LiveError saying how to build it."""
    try:
        import mpsched_xquic
    except ImportError as err:
        raise LiveError("live.backend=xquic needs the mpsched_xquic extension: build it with "
                        f"python -m envs.live.setup --xquic (README, 'XQUIC') ({err})") from None
    if tuple(mpsched_xquic.OBS_NAMES.split(",")) != OBS_NAMES or tuple(mpsched_xquic.COBS_NAMES.split(",")) != COBS_NAMES:
        raise LiveError("the mpsched_xquic extension records other columns than envs/sim/layout.py: rebuild it")
    reason = outdated(mpsched_xquic)
    if reason:
        raise LiveError(reason)
    return mpsched_xquic


def outdated(ext: Any) -> str | None:
    """Why an importable ``mpsched_xquic`` cannot run this version's transfers (None: it can)."""
    if "kato" not in ext.MODES:  # the rules' parameters (RULE_PARAMS) came with KATO
        return ("the installed mpsched_xquic extension predates the C rules' parameters (no kato): rebuild it "
                "with python -m envs.live.setup --xquic")
    if "wait_rule" not in ext.MODES:  # its k came with the rule (RULE_PARAMS)
        return ("the installed mpsched_xquic extension predates the wait rule (envs/schedulers/wait_rule.py): "
                "rebuild it with python -m envs.live.setup --xquic")
    if not set(CCS) <= set(ext.CCS):
        return (f"the installed mpsched_xquic extension has no {', '.join(c for c in CCS if c not in ext.CCS)} "
                "(the coupled CCs of bindings/src/mps_coupled.c): rebuild it with python -m envs.live.setup --xquic")
    if getattr(ext, "BACKLOG", None) != BACKLOG:
        return ("the installed mpsched_xquic extension counts the backlog as the file minus the bytes on the wire "
                "(retransmissions and headers included), not as the simulator does: rebuild it with "
                "python -m envs.live.setup --xquic")
    if not getattr(ext, "RESUMES_STUCK_SEND", False):
        return ("the installed mpsched_xquic extension leaves a connection XQUIC left with data, window and nothing "
                "in flight waiting for its idle timeout (README, 'XQUIC'; a near-stall of Reno on jittery paths): "
                "rebuild it with python -m envs.live.setup --xquic")
    if not getattr(ext, "REVALIDATES_PATHS", False):
        return ("the installed mpsched_xquic extension leaves a path whose PATH_RESPONSE was lost validating for the "
                "whole transfer, which then runs on one path (README, 'XQUIC'): rebuild it with "
                "python -m envs.live.setup --xquic")
    return None


def parse_scheduler(name: str) -> tuple[str, Path | None]:
    """(mode, policy header) of ``minrtt`` ... or ``policy=<header.h>``."""
    if name.startswith("policy="):
        header = Path(name.split("=", 1)[1]).expanduser()
        if not header.is_file():
            raise LiveError(f"policy header {header} does not exist (make one with python -m export)")
        return "policy", header
    if name not in SCHEDULERS:
        raise unknown_name("XQUIC scheduler", name, (*SCHEDULERS, "policy=<header.h>"))
    modes = extension().MODES
    if name not in modes:
        raise LiveError(f"the installed mpsched_xquic extension has no scheduler {name!r} (it has "
                        f"{', '.join(modes)}): rebuild it with python -m envs.live.setup --xquic")
    return name, None


def rule_params(mode: str, overrides: Mapping[str, object] | None = None) -> dict[str, float]:
    """The extension's keyword arguments for its C rules: every rule's parameters at the
    simulator's defaults, those of scheduler ``mode`` updated with ``overrides`` and checked as
    the simulator checks them (``scheduler_params=`` of evaluate.py). A parameter the live
    scheduler does not take is refused, naming the ones it takes."""
    overrides = dict(overrides or {})
    takes = RULE_PARAMS.get(mode, {})
    unknown = sorted(set(overrides) - set(takes))
    if unknown:
        raise LiveError(f"XQUIC scheduler {mode!r} has no parameter {', '.join(map(repr, unknown))}; valid: "
                        f"{', '.join(takes) or 'none'}")
    out = {}
    for name, kws in RULE_PARAMS.items():
        values = scheduler_values(name, overrides if name == mode else None)
        out.update({kw: float(values[p]) for p, kw in kws.items()})  # type: ignore[arg-type]
    return out


@dataclass(frozen=True)
class IntervalPolicy:
    """How XQUIC runs an exported interval policy (a header of decision mode ``interval``): every
    ``interval_ms`` its ``decide`` picks one of ``modes`` (XQUIC scheduler names) to run until the
    next decision (bindings/src/mps_xquic.c, ``interval_decide``), with the C rules' parameters
    its modes set (``rules``, the extension's keyword arguments). Empty for a per-packet policy."""

    modes: tuple[str, ...] = ()
    interval_ms: float = 0.0
    rules: Mapping[str, float] = field(default_factory=dict)


def mode_rules(modes: Iterable[tuple[str, Mapping[str, object]]], owner: str) -> tuple[tuple[str, ...], dict[str, float]]:
    """XQUIC's scheduler for each of ``modes`` (a scheduler name and its parameters: an interval
    policy's modes, or those ``mpsched/Live-v0`` switches between) and the C rules' parameters they
    set, every other rule at the simulator's defaults (the extension's keyword arguments). A mode
    XQUIC does not have, a parameter its rule does not take, or one rule twice with different
    parameters (the extension keeps one set per rule) is refused, naming ``owner``."""
    names, rules, seen = [], rule_params("policy"), dict[str, dict[str, float]]()
    for name, params in modes:
        mode, _ = parse_scheduler(name)
        own = {kw: v for kw, v in rule_params(mode, params).items() if kw in RULE_PARAMS.get(mode, {}).values()}
        if seen.setdefault(mode, own) != own:
            raise LiveError(f"{owner}: modes {mode!r} with two sets of parameters ({seen[mode]} and {own}); "
                            "XQUIC runs one set per scheduler")
        rules.update(own)
        names.append(mode)
    return tuple(names), rules


def interval_policy(header: Path) -> IntervalPolicy:
    """The header's interval decision as XQUIC runs it (``IntervalPolicy``; empty for a per-packet
    policy), its modes checked by ``mode_rules``."""
    info = header_info(header.read_text())
    if info["decision"] != "interval":
        return IntervalPolicy()
    if not getattr(extension(), "INTERVAL_POLICIES", False):
        raise LiveError("the installed mpsched_xquic extension runs no interval policy (decision mode interval): "
                        "rebuild it with python -m envs.live.setup --xquic")
    modes, rules = mode_rules((parse_scheduler_label(label) for label in info["modes"]), f"policy {header}")
    return IntervalPolicy(modes, float(info["interval_ms"]), rules)


def policy_library(header: Path) -> str:
    """The exported header compiled into a shared object with ``run_decide`` (cached by content)."""
    return str(build_library(header.read_text()))


def certificate() -> tuple[str, str]:
    """A self-signed certificate and key for the server (made once, cached)."""
    d = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mpsched" / "xquic"
    cert, key = d / "cert.pem", d / "key.pem"
    if not (cert.is_file() and key.is_file()):
        if not shutil.which("openssl"):
            raise LiveError("the XQUIC server needs a certificate: install openssl")
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "3650", "-subj", "/CN=mpsched"],
                       check=True, capture_output=True)
    return str(cert), str(key)


def records_to_sim(rec: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw records (transport units) -> (obs [N, P, N_OBS], cobs [N, N_COBS]) in the simulator's
    units, and the active mask [N, P]."""
    obs, cobs = from_raw(rec["obs"], rec["cobs"])
    return obs, cobs, np.asarray(rec["active"], dtype=bool)


CLOSE_FIELDS = ("err", "close_msg", "close_recv", "close_send", "last_recv", "last_send")


def close_line(report: str) -> str:
    """The fields of XQUIC's connection-close statistics line (``xqc_conn_destroy``) that tell why
    and when it closed: error code, close message, and the ms since creation of the peer's close,
    our close, and the last packet received and sent."""
    fields = {m[1]: m[2] for m in re.finditer(r"\|([a-z_]+):([^|]*)", report)}
    return " ".join(f"{k}={fields[k]}" for k in CLOSE_FIELDS if k in fields)


def paths_validated(extra: dict) -> int:
    """How many paths of a live XQUIC run the client found active (``path_validated_s`` not NaN; the
    first path counts from the handshake); ``paths_created`` for an extension without the field."""
    times = extra.get("path_validated_s")
    if times is None:
        return int(extra.get("paths_created", 0))
    return sum(1 for x in times if not math.isnan(float(x)))


class XquicResult(TransferResult):
    """A TransferResult whose per-path bytes are what the server received on each path (XQUIC's
    path statistics), with XQUIC's own counters in ``extra``."""

    @property
    def path_bytes(self) -> np.ndarray:
        return np.asarray(self.extra["path_recv"], dtype=float)

    def metrics(self) -> dict[str, np.ndarray]:
        rtt_sum, rtt_cnt = self.rtt_weighted()
        m = transfer_metrics(self.delivered_bytes, self.span_s, self.completion_s, self.path_bytes, rtt_sum, rtt_cnt,
                             self.sent_pkts.sum(), self.lost_pkts.sum())
        m["ooo_exceeded"] = np.array([1.0 if self.extra.get("outcome") == "ooo_abort" else 0.0])
        return m


class XquicTransfer:
    """One XQUIC transfer on a started testbed: ``start()``, ``wait()``, ``result()`` (the MPTCP
    backend's interface), plus ``set_mode`` and ``decisions()``."""

    def __init__(self, testbed, cc: str, workload: WorkloadSpec, telemetry_ms: float = 10.0,
                 scheduler: str = "minrtt", decision_every: int = 0, max_duration_s: float = 600.0,
                 scheduler_params: Mapping[str, object] | None = None, seed: int = 0,
                 pacing: bool | None = None, modes: Sequence[tuple[str, Mapping[str, object]]] = ()) -> None:
        self.tb, self.cc = testbed, XquicBackend.check(cc)
        # XQUIC's pacer (conn_settings.pacing_on); None: as bindings/ sets it, for bbr and bbr2 only
        self.pacing = -1 if pacing is None else int(pacing)
        self.mx = extension()
        self.mode, header = parse_scheduler(scheduler)
        self.scheduler = scheduler
        self.policy_lib = policy_library(header) if header else None
        self.interval = interval_policy(header) if header else IntervalPolicy()
        self.workload = workload
        total, limit = workload_bytes(workload)
        if not math.isfinite(total):
            raise LiveError("live.backend=xquic runs file transfers (workload type file); bulk is not supported yet")
        self.total, self.limit_s = int(total), limit or max_duration_s
        if not telemetry_ms > 0:
            raise LiveError(f"live.telemetry_ms must be > 0, got {telemetry_ms}")
        self.telemetry_ms, self.decision_every = float(telemetry_ms), int(decision_every)
        # the C rules' parameters (RULE_PARAMS): the scheduler's, those of the modes ``set_mode``
        # switches between (mpsched/Live-v0), and those an interval policy's modes set
        if modes and scheduler_params:
            raise LiveError("give the parameters of the schedulers set_mode switches between with their modes, "
                            "not as scheduler_params")
        switched = mode_rules(modes, "the transfer's modes")[1] if modes else {}
        self.rules = {**rule_params(self.mode, scheduler_params), **switched, **self.interval.rules}
        self.seed = int(seed)
        self.done = threading.Event()
        self.t0: float | None = None
        self._socks: list[socket.socket] = []
        self._thread: threading.Thread | None = None
        self._t: Any = None  # the extension's transfer object (mpsched_xquic, no type stubs)
        self._intervals: list[dict] = []
        self._decisions: list[dict] = []
        self._policy: list[dict] = []  # an interval policy's decisions (policy_decisions)
        self.dropped = {"intervals": 0, "decisions": 0}  # records the rings overwrote before a read
        self._lock = threading.Lock()
        self._error: str | None = None
        self._counters0: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ run
    def start(self) -> XquicTransfer:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _udp(self, host: str, ip: str) -> socket.socket:
        s = self.tb.socket(host, 0, socket.SOCK_DGRAM)
        self._socks.append(s)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            s.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
        s.bind((ip, 0))
        return s

    def _start(self) -> XquicTransfer:
        tb = self.tb
        cert, key = certificate()
        self._counters0 = network_counters(tb)
        server = self._udp("server", tb.paths[0].server_ip)
        clients = [self._udp("client", p.client_ip) for p in tb.paths]
        self._t = self.mx.Transfer(
            [c.fileno() for c in clients], [c.getsockname() for c in clients], server.fileno(), server.getsockname(),
            self.total, self.cc, self.mode, self.policy_lib, cert, key, float(self.limit_s),
            decision_every=self.decision_every, interval_ms=self.telemetry_ms, ring_capacity=1 << 14, pacing=self.pacing,
            **self._rule_kwargs(), **self._interval_kwargs())
        self._wall0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while not self._t.started and not self.done.is_set():
            if time.monotonic() > deadline:
                raise LiveError("the XQUIC handshake did not finish within 10 s: " + self._t.result()["errors"])
            time.sleep(0.002)
        if not self._t.started:
            raise LiveError("the XQUIC connection ended before its handshake: " + self._t.result()["errors"])
        self.t0 = time.monotonic() - self._t.elapsed
        return self

    def _rule_kwargs(self) -> dict:
        """The extension's keyword arguments for its C rules: ``self.rules`` and the seed of KATO's draws."""
        return {**self.rules, "seed": self.seed}

    def _interval_kwargs(self) -> dict:
        """The extension's keyword arguments for an interval policy (none for others: an extension
        from before interval policies runs the rest)."""
        if not self.interval.modes:
            return {}
        return {"policy_modes": list(self.interval.modes), "policy_interval_ms": self.interval.interval_ms}

    def _run(self) -> None:
        try:
            self._t.run()
        except Exception as err:  # reported by result()
            self._error = f"XQUIC event loop: {err}"
        finally:
            self.done.set()

    def set_mode(self, mode: str) -> None:
        """Switch XQUIC's scheduler (one of the modes; ``policy`` only with a policy loaded)."""
        if self._t is not None and not self.done.is_set():
            self._t.set_mode(mode)

    def _drain(self) -> None:
        with self._lock:
            if self._t is None:
                return
            for which, store in (("intervals", self._intervals), ("decisions", self._decisions)):
                rec = self._t.read(which)
                self.dropped[which] += rec.pop("dropped")
                if which == "intervals" and len(rec["t"]):  # an interval policy's decisions come in this ring
                    policy = np.asarray(rec["chosen"]) >= 0
                    if policy.any():
                        self._policy.append({k: v[policy] for k, v in rec.items()})
                        rec = {k: v[~policy] for k, v in rec.items()}
                if len(rec["t"]):
                    store.append(rec)

    @staticmethod
    def _concat(parts: list[dict], P: int) -> dict:
        if not parts:
            return {"t": np.zeros(0), "mode": np.zeros(0, np.int32), "chosen": np.zeros(0, np.int32),
                    "decisions": np.zeros(0, np.uint64), "obs": np.zeros((0, P, len(OBS_NAMES)), np.uint64),
                    "cobs": np.zeros((0, len(COBS_NAMES)), np.uint64), "active": np.zeros((0, P), bool),
                    "cc_bw": np.zeros((0, P), np.uint64)}
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def intervals(self) -> dict:
        """Every interval record so far: raw counters (transport units) and times."""
        self._drain()
        return self._concat(self._intervals, len(self.tb.paths))

    def policy_decisions(self) -> dict:
        """An interval policy's decisions so far: the state each was taken on, ``chosen`` the mode
        index it picked, ``mode`` that mode (the extension's ``MODES``)."""
        self._drain()
        return self._concat(self._policy, len(self.tb.paths))

    def decisions(self) -> dict:
        """The sampled per-decision records so far (``chosen``: path index, -1 = wait)."""
        self._drain()
        return self._concat(self._decisions, len(self.tb.paths))

    def take_decisions(self) -> dict:
        """The decision records collected since the last call (which forgets them: a long transfer
        is read in pieces without keeping every record twice)."""
        rec = self.decisions()
        with self._lock:
            self._decisions.clear()
        return rec

    def sample_now(self) -> Sample | None:
        """The newest interval record as a telemetry Sample (simulator units)."""
        self._drain()
        if not self._intervals:
            return None
        last = {k: v[-1:] for k, v in self._intervals[-1].items()}
        obs, cobs, active = records_to_sim(last)
        return Sample(float(last["t"][0]), obs[0], cobs[0], active[0])

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(self.limit_s + 30.0 if timeout is None else timeout)

    def run(self, timeout: float | None = None) -> XquicResult:
        """Start, wait for the end (at most ``timeout`` s), measure, and release the sockets."""
        try:
            self.start()
            self.wait(timeout)
            return self.result()
        finally:
            self.stop()

    def stop(self) -> None:
        if self._t is not None:
            self._t.stop()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for s in self._socks:
            s.close()
        self._socks.clear()

    def result(self) -> XquicResult:
        """Stop (if still running: outcome ``stopped`` unless the file was delivered) and measure."""
        finished_at = time.monotonic()
        stopped = not self.done.is_set()
        if stopped:
            self._t.stop()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self._drain()
        r = self._t.result()
        self.stop()
        with self._lock:
            self._t = None  # frees XQUIC's engines; the records are in Python now
        counters1 = network_counters(self.tb)
        assert self._counters0 is not None  # read when the transfer started
        sent, lost = counters1[0] - self._counters0[0], counters1[1] - self._counters0[1]
        iv = self._concat(self._intervals, len(self.tb.paths))
        obs, cobs, active = records_to_sim(iv)
        outcome = "finished" if r["finished"] else "ooo_abort" if r["ooo_abort"] else \
            "stalled" if r["stalled"] else "timeout" if r["timed_out"] else "stopped" if stopped else "failed"
        errors = [e for e in (self._error, r["errors"] if outcome in ("timeout", "failed") else None) if e]
        if outcome == "stopped":
            errors.append(f"stopped by the caller after {finished_at - self._wall0:.1f} s with "
                          f"{r['delivered']} of {self.total} bytes delivered")
        elif outcome == "failed" and not errors:
            closed = "; ".join(f"{side} closed: {close_line(line)}"
                               for side, line in zip(("client", "server"), r.get("close_report", ())) if line)
            errors.append(f"XQUIC transfer ended early (client errno {r['client_errno']}, server errno "
                          f"{r['server_errno']}{'; ' + closed if closed else ''})")
        done = bool(r["finished"])
        completion = float(r["completion_s"]) if done else math.nan
        span = completion if done else min(self.limit_s, finished_at - (self.t0 or finished_at))
        extra = dict(r, outcome=outcome, scheduler=self.scheduler, dropped_records=dict(self.dropped),
                     path_active=(active.mean(axis=0) if len(active) else np.zeros(active.shape[1])).tolist())
        if self.interval.modes:  # an interval policy's decisions, with the states they were taken on
            extra["policy_decisions"] = self._concat(self._policy, len(self.tb.paths))
        return XquicResult(self.cc, self.workload.type, float(self.total), self.workload.duration_s,
                           float(self.total if done else r["delivered"]), completion, span,
                           float(r["handshake_s"]), iv["t"], obs, cobs, active, sent, lost,
                           wall_s=finished_at - self._wall0, error="; ".join(errors) or None, extra=extra)


class XquicBackend:
    """``live.backend=xquic``: XQUIC with the chosen scheduler inside it (it controls scheduling)."""

    name = "xquic"
    controls_scheduler = True
    scheduler = "minrtt"

    @staticmethod
    def sent_per_packet(mss: int) -> int:
        """Bytes a full packet adds to a path's ``sent`` counter (the reward's packet): XQUIC counts
        each packet encrypted (xqc_send_ctl.c: ctl_bytes_send += po_enc_size), its 1200 bytes and
        the AEAD tag, whatever the testbed's ``mss``."""
        return XQC_PACKET_OUT_SIZE + XQC_AEAD_TAG

    @staticmethod
    def check(cc: str) -> str:
        """``cc`` if XQUIC has it and the extension is installed (before anything is built)."""
        if cc not in CCS:
            raise unknown_name("XQUIC congestion control", cc, CCS)
        if cc not in extension().CCS:
            raise LiveError(f"the installed mpsched_xquic extension has no congestion control {cc!r} (it has "
                            f"{', '.join(extension().CCS)}): rebuild it with python -m envs.live.setup --xquic")
        return cc

    @staticmethod
    def check_scheduler(scheduler: str, params: Mapping[str, object] | None = None) -> str:
        """``scheduler`` if XQUIC runs it with ``params`` (its parameters, as ``scheduler_params``)."""
        mode, header = parse_scheduler(scheduler)
        rule_params(mode, params)
        if header:
            interval_policy(header)
        return scheduler

    @staticmethod
    def check_modes(modes: Sequence[tuple[str, Mapping[str, object]]]) -> tuple[str, ...]:
        """XQUIC's scheduler for each of the modes ``set_mode`` switches between (name and
        parameters), checked by ``mode_rules``."""
        return mode_rules(modes, "mpsched/Live-v0 modes")[0]

    @staticmethod
    def transfer(testbed, cc: str, workload: WorkloadSpec, telemetry_ms: float = 10.0, scheduler: str = "minrtt",
                 decision_every: int = 0, scheduler_params: Mapping[str, object] | None = None,
                 modes: Sequence[tuple[str, Mapping[str, object]]] = ()) -> XquicTransfer:
        return XquicTransfer(testbed, cc, workload, telemetry_ms, scheduler, decision_every,
                             scheduler_params=scheduler_params, modes=modes)


__all__ = ["CCS", "RULE_PARAMS", "SCHEDULERS", "IntervalPolicy", "XquicBackend", "XquicResult", "XquicTransfer", "extension",
           "interval_policy", "mode_rules", "paths_validated", "parse_scheduler", "records_to_sim", "rule_params"]
