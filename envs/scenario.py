"""The scenario schema: the network paths and workload of one experiment.

This is the only scenario schema in the project. Rules cite the domain spec:
``docs/transport.md`` ("Paths", "Workloads", "Connection level") and ``docs/scenarios.md``.
Scenario files live in ``configs/scenario/*.yaml``; each file is the scenario mapping at
top level, so it doubles as a Hydra config-group option (group ``scenario``).

Any scenario number may be a distribution instead of a constant, written in YAML as
``{uniform: [lo, hi]}``, ``{loguniform: [lo, hi]}`` or ``{choice: [a, b, ...]}``; a
scenario containing one is a *distribution* and ``Scenario.sample(rng)`` turns it into a
concrete scenario.
"""

from __future__ import annotations

import abc
import difflib
import math
import numbers
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
import yaml
from envs.errors import ConfigError
from envs.network import Network, NetworkError, resolve, short_form
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

SCENARIO_DIR: Path = Path(__file__).resolve().parent.parent / "configs" / "scenario"

MIN_RECEIVE_BUFFER_BYTES = 64 * 1024


class ScenarioError(ConfigError):
    """A scenario that cannot be found, read or validated; the message says why."""


# --------------------------------------------------------------------------- distributions


class _DistModel(BaseModel, abc.ABC):
    """A distribution over one scenario number; the YAML form is ``{<kind>: [...]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @abc.abstractmethod
    def values(self) -> tuple[float, ...]:
        """The numbers that bound the distribution (range rules apply to each)."""

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator) -> float:
        """Draw one value."""


class Uniform(_DistModel):
    """``{uniform: [lo, hi]}``: uniform on [lo, hi]."""

    uniform: tuple[float, float]

    @field_validator("uniform")
    @classmethod
    def _ordered(cls, bounds: tuple[float, float]) -> tuple[float, float]:
        if bounds[0] > bounds[1]:
            raise ValueError(f"needs lo <= hi, got {_fmt_list(bounds)}")
        return bounds

    def values(self) -> tuple[float, ...]:
        return self.uniform

    def sample(self, rng: np.random.Generator) -> float:
        lo, hi = self.uniform
        return float(rng.uniform(lo, hi))


class LogUniform(_DistModel):
    """``{loguniform: [lo, hi]}``: log(x) uniform on [log lo, log hi], 0 < lo <= hi."""

    loguniform: tuple[float, float]

    @field_validator("loguniform")
    @classmethod
    def _positive_ordered(cls, bounds: tuple[float, float]) -> tuple[float, float]:
        if not 0 < bounds[0] <= bounds[1]:
            raise ValueError(f"needs 0 < lo <= hi, got {_fmt_list(bounds)}")
        return bounds

    def values(self) -> tuple[float, ...]:
        return self.loguniform

    def sample(self, rng: np.random.Generator) -> float:
        lo, hi = self.loguniform
        # Clamp: exp(log(hi)) can exceed hi by one ulp, which would break a reload.
        return min(max(math.exp(rng.uniform(math.log(lo), math.log(hi))), lo), hi)


class Choice(_DistModel):
    """``{choice: [a, b, ...]}``: one of the listed values, each equally likely."""

    choice: list[float] = Field(min_length=1)

    def values(self) -> tuple[float, ...]:
        return tuple(self.choice)

    def sample(self, rng: np.random.Generator) -> float:
        return float(self.choice[int(rng.integers(len(self.choice)))])


_DIST_KINDS: dict[str, type[_DistModel]] = {"uniform": Uniform, "loguniform": LogUniform, "choice": Choice}
_DIST_FORMS = "a number or one of {uniform: [lo, hi]}, {loguniform: [lo, hi]}, {choice: [a, b, ...]}"


def _parse_dist(value: object) -> object:
    """Turn a YAML value into a float or a distribution model, with one readable error."""
    if isinstance(value, _DistModel):
        return value
    if isinstance(value, (numbers.Real, str)) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"expected {_DIST_FORMS}, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"must be a finite number, got {value!r}")
        return number
    if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in _DIST_KINDS:
        try:
            return _DIST_KINDS[next(iter(value))].model_validate(dict(value))
        except ValidationError as exc:
            raise ValueError("; ".join(_problem(err) for err in exc.errors())) from None
    raise ValueError(f"expected {_DIST_FORMS}, got {value!r}")


Dist = Annotated[float | Uniform | LogUniform | Choice, BeforeValidator(_parse_dist)]
"""A scenario number: a constant or a distribution (see the module docstring)."""


def sample_value(value: Dist, rng: np.random.Generator) -> float:
    """A constant as is, or one draw from a distribution."""
    return value.sample(rng) if isinstance(value, _DistModel) else float(value)


def min_value(value: Dist) -> float:
    """Smallest value ``value`` can take."""
    return min(value.values()) if isinstance(value, _DistModel) else float(value)


def max_value(value: Dist) -> float:
    """The largest value a constant or distribution can take."""
    return max(value.values()) if isinstance(value, _DistModel) else float(value)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _fmt_list(xs: typing.Iterable[float]) -> str:
    return "[" + ", ".join(_fmt(x) for x in xs) + "]"


def _fmt_rows(rows: typing.Iterable[typing.Iterable[float]]) -> str:
    return "[" + ", ".join(_fmt_list(row) for row in rows) + "]"


def _describe(dist: _DistModel) -> str:
    kind = next(iter(type(dist).model_fields))
    return f"{{{kind}: {_fmt_list(dist.values())}}}"


def _range(
    *, gt: float | None = None, ge: float | None = None, lt: float | None = None, le: float | None = None
) -> AfterValidator:
    """A range rule applied to a constant, or to every bound/choice of a distribution."""
    rule = " and ".join(
        f"{op} {_fmt(bound)}" for op, bound in ((">", gt), (">=", ge), ("<", lt), ("<=", le)) if bound is not None
    )

    def check(value: Any) -> Any:
        numbers_ = value.values() if isinstance(value, _DistModel) else (value,)
        for x in numbers_:
            if (
                (gt is not None and not x > gt)
                or (ge is not None and not x >= ge)
                or (lt is not None and not x < lt)
                or (le is not None and not x <= le)
            ):
                where = f" in {_describe(value)}" if isinstance(value, _DistModel) else ""
                raise ValueError(f"must be {rule}, got {_fmt(x)}{where}")
        return value

    return AfterValidator(check)


def _concrete(value: Dist, field: str) -> float:
    """The constant behind ``value``; distributions must be sampled first."""
    if isinstance(value, _DistModel):
        raise ScenarioError(
            f"{field} is a distribution {_describe(value)}: sample the scenario first (Scenario.sample(rng))"
        )
    return value


# --------------------------------------------------------------------------- models


class _Model(BaseModel):
    """Unknown fields are refused by name; non-finite numbers are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ArrivalSpec(_Model):
    """Competing flows that come and go (docs/transport.md, "Network"): Poisson arrivals of
    flows with Pareto (heavy-tailed) sizes, as web traffic's flow sizes are (Crovella and
    Bestavros, "Self-similarity in World Wide Web traffic", IEEE/ACM ToN 5(6), 1997). Each flow
    runs the competing ``cc``, sends its size once and leaves; at most ``slots`` run at once (a
    flow arriving while all are busy starts when one frees)."""

    rate_per_s: Annotated[float, _range(gt=0, le=1000)]
    """Mean arrivals per second."""
    mean_kb: Annotated[float, _range(gt=0, le=1e7)]
    """Mean flow size, kB (10^3 bytes)."""
    shape: Annotated[float, _range(gt=1, le=10)] = 1.5
    """Pareto shape (tail index); below 2 the sizes' variance is infinite."""
    slots: Annotated[int, _range(ge=1, le=64)] = 16
    """Most flows at once."""

    def sizes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` flow sizes in bytes, Pareto (type I) of mean ``mean_kb`` and tail index ``shape``
        (scale x_m = mean (shape - 1) / shape), rounded, at least one byte: the one rule the
        simulator and the live testbed draw from."""
        scale = self.mean_kb * 1e3 * (self.shape - 1.0) / self.shape
        return np.maximum(1, np.round(scale * (1.0 + rng.pareto(self.shape, n)))).astype(np.int64)


class CompetingSpec(_Model):
    """Cross traffic on the path's bottleneck (docs/transport.md, "Paths")."""

    flows: Annotated[int, _range(ge=0, le=64)] = 0
    """Competing long-lived flows, each running congestion control ``cc``."""
    cc: str = "cubic"
    """CC of the competing flows (the name is checked where CCs are registered)."""
    stack: Literal["linux", "connection"] = "linux"
    """Whose CC constants the competing flows run: ``linux``, kernel TCP's, whatever the
    connection's stack (the live testbed runs competing flows as kernel TCP sockets,
    ``envs/live/competition.py``); ``connection``, the connection's own stack's (simulator only: a
    second connection of the same stack, as in the two-flow standing-queue law,
    ``envs.evaluation.shared_bottleneck``, which runs the run's CC overrides as the connection
    does)."""
    udp_mbps: Annotated[Dist, _range(ge=0)] = 0.0
    """Constant-rate UDP cross traffic, Mbit/s."""
    flows_schedule: list[tuple[float, int]] | None = None
    """``[[t_s, n_active], ...]``: from t_s on, n_active of the ``flows`` run (a step function)."""
    arrivals: ArrivalSpec | None = None
    """Flows arriving and leaving besides the long-lived ``flows``."""

    @field_validator("cc")
    @classmethod
    def _lower(cls, cc: str) -> str:
        return cc.strip().lower()

    @field_validator("flows_schedule")
    @classmethod
    def _schedule(cls, steps: list[tuple[float, int]] | None, info: ValidationInfo) -> list[tuple[float, int]] | None:
        if steps is None:
            return None
        if not steps or steps[0][0] != 0:
            raise ValueError(f"must start at time 0, got {_fmt_rows(steps)}")
        flows = info.data.get("flows")
        for i, (t, n) in enumerate(steps):
            if i and t <= steps[i - 1][0]:
                raise ValueError(f"times must increase: entry [{i}] has time {_fmt(t)} after {_fmt(steps[i - 1][0])}")
            if flows is not None and not 0 <= n <= flows:
                raise ValueError(f"entry [{i}]: active flows must be >= 0 and <= flows ({flows}), got {n}")
        return steps


def _outage(interval: tuple[float, float]) -> tuple[float, float]:
    start, end = interval
    if not 0 <= start < end:
        raise ValueError(f"must satisfy 0 <= start_s < end_s, got {_fmt_list(interval)}")
    return interval


class _LinkFields(_Model):
    """What a link carries and does to packets (docs/transport.md, "Paths" and "Network"): the
    fields a link of ``links`` has, and a path of the short form (one link per path) inline.
    Delays are one-way (docs/scenarios.md)."""

    bandwidth_mbps: Annotated[Dist, _range(gt=0, le=100_000)] | None = None
    """Capacity, Mbit/s; the nominal value used for the BDP even with a trace."""
    bandwidth_trace: list[tuple[float, float]] | None = None
    """Piecewise-constant capacity ``[[t_s, mbps], ...]`` (0 = outage); overrides bandwidth_mbps over time."""
    delay_ms: Annotated[Dist, _range(ge=0, le=5000)] | None = None
    """One-way propagation delay, forward (data) direction."""
    reverse_delay_ms: Annotated[Dist, _range(ge=0, le=5000)] | None = None
    """One-way delay of the reverse (ACK) direction; None = same as delay_ms."""
    jitter_ms: Annotated[Dist, _range(ge=0, le=1000)] = 0.0
    """Standard deviation of the per-packet delay in each direction (a study's variance v gives sqrt(v))."""
    loss_pct: Annotated[Dist, _range(ge=0, lt=100)] = 0.0
    """Random (non-congestive) loss probability, percent."""
    queue_packets: Annotated[Dist, _range(gt=0)] | None = None
    """Drop-tail buffer in packets (of one MSS)."""
    queue_bdp: Annotated[Dist, _range(gt=0)] | None = None
    """Drop-tail buffer as a multiple of the BDP (bandwidth_mbps x base RTT of the longest path over
    it); default 1.0."""
    competing: CompetingSpec = Field(default_factory=CompetingSpec)
    outages: list[Annotated[tuple[float, float], AfterValidator(_outage)]] = []
    """``[[start_s, end_s], ...]``: intervals with zero capacity (the link fails and comes back)."""

    @field_validator("bandwidth_trace")
    @classmethod
    def _trace(cls, trace: list[tuple[float, float]] | None) -> list[tuple[float, float]] | None:
        if trace is None:
            return None
        if not trace or trace[0][0] != 0:
            raise ValueError(f"must start at time 0, got {_fmt_rows(trace)}")
        for i, (t, mbps) in enumerate(trace):
            if i and t < trace[i - 1][0]:
                previous = _fmt(trace[i - 1][0])
                raise ValueError(f"times must not decrease: entry [{i}] has time {_fmt(t)} after {previous}")
            if mbps < 0:
                raise ValueError(f"entry [{i}]: mbps must be >= 0, got {_fmt(mbps)}")
        return trace

    def _check_queue(self) -> None:
        if self.queue_packets is not None and self.queue_bdp is not None:
            raise ValueError("set at most one of queue_packets and queue_bdp, not both")
        if self.queue_packets is None and self.queue_bdp is None:
            self.queue_bdp = 1.0

    def nominal_mbps(self) -> float:
        """The capacity the BDP and the bottleneck choice use: bandwidth_mbps, else the trace's
        largest value (concrete links only)."""
        if self.bandwidth_mbps is not None:
            return _concrete(self.bandwidth_mbps, "bandwidth_mbps")
        return max(mbps for _, mbps in self.bandwidth_trace or [(0.0, 0.0)])

    def link_queue_bytes(self, mss: int, base_rtt_ms: float) -> float:
        """Drop-tail buffer in bytes for paths of base RTT ``base_rtt_ms`` (queue_bdp), never less
        than 2 MSS (concrete links only)."""
        if self.queue_packets is not None:
            size = _concrete(self.queue_packets, "queue_packets") * mss
        else:
            assert self.queue_bdp is not None  # _check_queue sets one of queue_packets, queue_bdp
            bdp = self.nominal_mbps() * 125_000 * base_rtt_ms / 1000
            size = _concrete(self.queue_bdp, "queue_bdp") * bdp
        return max(size, 2.0 * mss)

    def max_bandwidth_mbps(self) -> float:
        """Largest capacity the link can have at any time (nominal or trace)."""
        nominal = [] if self.bandwidth_mbps is None else [max_value(self.bandwidth_mbps)]
        return max(nominal + [mbps for _, mbps in self.bandwidth_trace or []])

    def max_one_way_ms(self) -> float:
        """Upper bound of one-way delay + 4 jitter standard deviations, either direction."""
        forward = 0.0 if self.delay_ms is None else self.delay_ms
        reverse = forward if self.reverse_delay_ms is None else self.reverse_delay_ms
        return max(max_value(forward), max_value(reverse)) + 4 * max_value(self.jitter_ms)


class LinkSpec(_LinkFields):
    """One link of a scenario's ``links`` (docs/transport.md, "Network"): a capacity or a trace,
    delays (default 0), jitter, random loss, a drop-tail buffer, failures and competing traffic."""

    @model_validator(mode="after")
    def _capacity(self) -> LinkSpec:
        if self.bandwidth_mbps is None and self.bandwidth_trace is None:
            raise ValueError("a link needs bandwidth_mbps or bandwidth_trace (it has neither)")
        if self.bandwidth_mbps is None and self.nominal_mbps() <= 0:
            raise ValueError("bandwidth_trace: a link without bandwidth_mbps needs a trace value > 0")
        self._check_queue()
        return self

    def forward_ms(self) -> float:
        return 0.0 if self.delay_ms is None else _concrete(self.delay_ms, "delay_ms")

    def reverse_ms(self) -> float:
        return self.forward_ms() if self.reverse_delay_ms is None else _concrete(self.reverse_delay_ms,
                                                                                 "reverse_delay_ms")


class PathSpec(_LinkFields):
    """One path of a connection (docs/transport.md, "Paths"): either its one link inline (the short
    form: bandwidth_mbps and delay_ms required) or ``links``, the names of the scenario's links it
    crosses in order (the network form: nothing else)."""

    links: list[str] | None = None
    """Network form: the names of the links of the scenario's ``links`` this path crosses, in order."""

    @model_validator(mode="after")
    def _one_form(self) -> PathSpec:
        if self.links is not None:
            fields = type(self).model_fields
            inline = sorted(name for name in fields if name != "links"
                            and getattr(self, name) != fields[name].get_default(call_default_factory=True))
            if inline:
                raise ValueError(f"a path given as links takes no fields of its own, got {', '.join(inline)}")
            if not self.links:
                raise ValueError("links: must name at least one link")
            return self
        missing = [name for name in ("bandwidth_mbps", "delay_ms") if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{', '.join(missing)}: required field is missing (or give the path as links)")
        self._check_queue()
        return self

    @property
    def capacity(self) -> Dist:
        """bandwidth_mbps of a short-form path (required there)."""
        self._inline()
        assert self.bandwidth_mbps is not None  # _one_form requires it in the short form
        return self.bandwidth_mbps

    @property
    def delay(self) -> Dist:
        """delay_ms of a short-form path (required there)."""
        self._inline()
        assert self.delay_ms is not None  # _one_form requires it in the short form
        return self.delay_ms

    def _inline(self) -> None:
        if self.links is not None:
            raise ScenarioError(f"a path given as links ({', '.join(self.links)}) has no delays or buffer of its "
                                "own: read them from Scenario.network()")

    def forward_ms(self) -> float:
        self._inline()
        return _concrete(self.delay_ms, "delay_ms")  # type: ignore[arg-type]  # the short form has one

    def reverse_ms(self) -> float:
        return self.forward_ms() if self.reverse_delay_ms is None else _concrete(self.reverse_delay_ms,
                                                                                 "reverse_delay_ms")

    def base_rtt_ms(self) -> float:
        """Propagation RTT: forward plus reverse one-way delay (concrete short-form paths only)."""
        self._inline()
        forward = _concrete(self.delay_ms, "delay_ms")  # type: ignore[arg-type]
        if self.reverse_delay_ms is None:
            return 2 * forward
        return forward + _concrete(self.reverse_delay_ms, "reverse_delay_ms")

    def queue_bytes(self, mss: int) -> float:
        """Bottleneck buffer in bytes, never less than 2 MSS (concrete short-form paths only)."""
        self._inline()
        if self.queue_packets is not None:
            return self.link_queue_bytes(mss, 0.0)
        self.nominal_mbps()  # a distribution is named here first (then the delays)
        return self.link_queue_bytes(mss, self.base_rtt_ms())


# Fields each workload type needs and accepts (docs/transport.md, "Workloads"), and the defaults of the
# optional ones. To add a type: extend WORKLOAD_TYPES, add its fields, add a row to each table,
# and a branch in envs/sim/workload.py.
WORKLOAD_TYPES = ("bulk", "file", "dash", "web")
_WORKLOAD_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # type: (required, optional)
    "file": (("file_mb",), ("duration_s",)),
    "bulk": ((), ("duration_s", "messages", "message_mb")),
    "dash": ((), ("duration_s", "chunks", "chunk_s", "bitrates_mbps", "buffer_s", "throughput_chunks",
                  "safety")),
    "web": (("objects", "object_kb"), ("duration_s", "parallel")),
}
_WORKLOAD_DEFAULTS: dict[str, dict[str, Any]] = {
    # LEEYOO: 300 chunks of 1 s over the ladder 1 / 5 / 10 Mbit/s; the buffer, history and safety
    # factor follow dash.js (bufferTimeAtTopQuality 30 s, ThroughputRule bandwidthSafetyFactor 0.9)
    # and FESTIVE's harmonic mean of the last 5 chunks (Jiang et al., CoNEXT 2012)
    "dash": {"chunks": 300, "chunk_s": 1.0, "bitrates_mbps": [1.0, 5.0, 10.0], "buffer_s": 30.0,
             "throughput_chunks": 5, "safety": 0.9},
    # six requests in flight: the classic per-host limit of browsers (RFC 2616 said two; browsers use six)
    "web": {"parallel": 6},
    "bulk": {},
    "file": {},
}


class WorkloadSpec(_Model):
    """What the application sends (docs/transport.md, "Workloads"); ``envs/sim/workload.py`` runs it."""

    type: str
    """bulk | file | dash | web (WORKLOAD_TYPES)."""
    file_mb: Annotated[float, _range(gt=0)] | None = None
    """File: size in MB (1 MB = 10^6 bytes)."""
    duration_s: Annotated[float, _range(gt=0)] | None = None
    """Bulk: transfer length (required unless messages are given). Others: optional episode cap."""
    messages: Annotated[int, _range(ge=1, le=100_000)] | None = None
    """Bulk: send this many messages of message_mb back to back (MPTCP-TUT: 500 x 3 MB)."""
    message_mb: Annotated[float, _range(gt=0)] | None = None
    """Bulk: size of one message, MB."""
    chunks: Annotated[int, _range(ge=1, le=100_000)] | None = None
    """Dash: video segments to download (default 300)."""
    chunk_s: Annotated[float, _range(gt=0, le=60)] | None = None
    """Dash: playback length of one segment, s (default 1)."""
    bitrates_mbps: list[Annotated[float, _range(gt=0)]] | None = None
    """Dash: the bitrate ladder, increasing, at most 16 rungs (default 1, 5, 10)."""
    buffer_s: Annotated[float, _range(gt=0)] | None = None
    """Dash: client buffer; no request while it holds more than buffer_s - chunk_s (default 30)."""
    throughput_chunks: Annotated[int, _range(ge=1, le=16)] | None = None
    """Dash: chunks in the harmonic-mean throughput estimate (default 5)."""
    safety: Annotated[float, _range(gt=0, le=1)] | None = None
    """Dash: pick the highest bitrate <= safety x estimate (default 0.9)."""
    objects: Annotated[int, _range(ge=1, le=100_000)] | None = None
    """Web: objects to fetch."""
    object_kb: Annotated[float, _range(gt=0)] | None = None
    """Web: size of one object, kB (10^3 bytes)."""
    parallel: Annotated[int, _range(ge=1, le=64)] | None = None
    """Web: requests outstanding at once (default 6)."""

    @field_validator("type")
    @classmethod
    def _known_type(cls, kind: str) -> str:
        kind = kind.strip().lower()
        if kind not in WORKLOAD_TYPES:
            raise ValueError(f"unknown workload {kind!r}; valid: {', '.join(WORKLOAD_TYPES)}")
        return kind

    @field_validator("bitrates_mbps")
    @classmethod
    def _ladder(cls, rates: list[float] | None) -> list[float] | None:
        if rates is not None and not 1 <= len(rates) <= 16:
            raise ValueError(f"must list 1..16 bitrates, got {len(rates)}")
        if rates is not None and any(b <= a for a, b in zip(rates, rates[1:])):
            raise ValueError(f"must increase, got {_fmt_list(rates)}")
        return rates

    @model_validator(mode="after")
    def _fields_match_type(self) -> WorkloadSpec:
        required, optional = _WORKLOAD_FIELDS[self.type]
        all_params = {f for req, opt in _WORKLOAD_FIELDS.values() for f in req + opt}
        missing = [f for f in required if getattr(self, f) is None]
        unused = sorted(f for f in all_params - set(required) - set(optional) if getattr(self, f) is not None)
        if missing:
            raise ValueError(f"type {self.type!r} needs {', '.join(missing)}")
        if unused:
            raise ValueError(f"type {self.type!r} does not use {', '.join(unused)}")
        if self.type == "bulk" and (self.messages is None) != (self.message_mb is None):
            raise ValueError("type 'bulk' needs messages and message_mb together")
        if self.type == "bulk" and self.messages is None and self.duration_s is None:
            raise ValueError("type 'bulk' needs duration_s (or messages and message_mb)")
        for name, value in _WORKLOAD_DEFAULTS[self.type].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.type == "dash" and self.buffer_s is not None and self.chunk_s is not None \
                and self.buffer_s < self.chunk_s:
            raise ValueError(f"buffer_s must be >= chunk_s ({_fmt(self.chunk_s)}), got {_fmt(self.buffer_s)}")
        return self

    def total_bytes(self) -> float:
        """Whole bytes the application offers in all (inf: bulk for a duration; dash depends on the
        bitrates chosen)."""
        if self.type == "file" and self.file_mb is not None:
            return float(round(self.file_mb * 1e6))
        if self.type == "bulk" and self.messages is not None:
            return self.messages * self.item_bytes()
        if self.type == "web" and self.objects is not None:
            return self.objects * self.item_bytes()
        return math.inf

    def item_bytes(self) -> float:
        """Whole bytes of one message (bulk) or object (web); the file's size for a file."""
        if self.type == "web" and self.object_kb is not None:
            return float(round(self.object_kb * 1e3))
        size_mb = self.file_mb if self.type == "file" else self.message_mb
        return math.nan if size_mb is None else float(round(size_mb * 1e6))

    def items(self) -> int:
        """Units the workload completes one by one: messages, chunks, objects; one file; bulk none."""
        return {"file": 1, "bulk": self.messages or 0, "dash": self.chunks or 0, "web": self.objects or 0}[self.type]


def _integer_count(value: Dist) -> Dist:
    if isinstance(value, (Uniform, LogUniform)):
        raise ValueError(f"must be an integer or {{choice: [...]}} of integers, got {_describe(value)}")
    counts = value.values() if isinstance(value, Choice) else (value,)
    if not all(float(n).is_integer() for n in counts):
        raise ValueError(f"must be whole numbers, got {_fmt_list(counts)}")
    return value


class Scenario(_Model):
    """Paths plus workload of one experiment (docs/scenarios.md); may be a distribution."""

    name: str = Field(min_length=1)
    description: str = ""
    source: str = ""
    """Short name of the study (ISPRAS, SOD, LEEYOO, MPTCP-TUT, KATO, M-PEEKABOO, MPQUIC-SPACE, ...)."""
    notes: str = ""
    """Where the study leaves a value open: which value was chosen and why (docs/scenarios.md)."""
    links: dict[str, LinkSpec] | None = None
    """The network's links by name (docs/transport.md, "Network"); then every path is ``links: [...]``."""
    paths: list[PathSpec]
    """1..8 paths (XQUIC's limit is 8, docs/transport.md); with n_paths: exactly one template path."""
    n_paths: Annotated[Dist, _range(ge=1, le=8), AfterValidator(_integer_count)] | None = None
    """Number of paths to draw from the single template path (a constant or a choice)."""
    workload: WorkloadSpec
    receive_buffer_bytes: Annotated[float, _range(gt=0)] | None = None
    """Connection receive buffer; None = the stack's own window (XQUIC's 16 MiB) or RFC 6182's
    2 * max RTT * sum BW (see receive_buffer). With receive_buffer_max_bytes: the initial window of
    auto-tuning."""
    receive_buffer_max_bytes: Annotated[float, _range(gt=0)] | None = None
    """Auto-tune the receive window from receive_buffer_bytes up to this, by the stack's rule
    (envs/sim/stacks.py window_rule: XQUIC doubles it while the application reads half of it
    within 2 RTTs, Linux sizes it to twice what the application reads per RTT); None: fixed."""
    jitter_reorders: bool = True
    """True: jitter reorders packets as netem does; False: order-preserving delay variation (docs/transport.md)."""

    @field_validator("paths")
    @classmethod
    def _path_count(cls, paths: list[PathSpec]) -> list[PathSpec]:
        if not 1 <= len(paths) <= 8:
            raise ValueError(f"must list 1..8 paths, got {len(paths)}")
        return paths

    @field_validator("n_paths")
    @classmethod
    def _single_template(cls, n_paths: Dist | None, info: ValidationInfo) -> Dist | None:
        paths = info.data.get("paths")
        if n_paths is not None and paths is not None and len(paths) != 1:
            raise ValueError(f"is set, so paths must hold exactly one template path, got {len(paths)} paths")
        return n_paths

    @model_validator(mode="after")
    def _autotuned_window(self) -> Scenario:
        top = self.receive_buffer_max_bytes
        if top is not None and (self.receive_buffer_bytes is None or top < self.receive_buffer_bytes):
            raise ValueError("receive_buffer_max_bytes: needs receive_buffer_bytes (the initial window) "
                             f"<= it, got {self.receive_buffer_bytes} and {_fmt(top)}")
        return self

    @model_validator(mode="after")
    def _network(self) -> Scenario:
        """Either every path inline (the short form) or every path as links of ``links``; a
        network is resolved here, so a bad one is refused before any work (envs/network.py)."""
        as_links = [i for i, path in enumerate(self.paths) if path.links is not None]
        if self.links is None:
            if as_links:
                raise ValueError(f"paths[{as_links[0]}].links: names links, but the scenario has no links")
            return self
        inline = [i for i in range(len(self.paths)) if i not in as_links]
        if inline:
            raise ValueError(f"paths[{inline[0]}]: with links, give every path as links: [...]")
        if self.n_paths is not None:
            raise ValueError("n_paths: draws copies of one inline path; it does not combine with links")
        if not self.links:
            raise ValueError("links: must name at least one link")
        for name, link in self.links.items():
            if _has_dist(link):
                raise ValueError(f"links.{name}: a link takes constant values, not distributions")
        try:
            self.network()
        except NetworkError as exc:
            raise ValueError(str(exc)) from None
        return self

    def network(self) -> Network:
        """The links and the paths' routes (concrete scenarios; envs/network.py)."""
        if self.links is None:
            return short_form(self.paths)
        return resolve(self.links, [list(path.links or []) for path in self.paths])

    @property
    def fixed_paths(self) -> int | None:
        """How many paths every draw has, None when ``n_paths`` draws it (what a policy trained on
        a fixed number of paths can act on: agents.training.interface)."""
        return len(self.paths) if self.n_paths is None else None

    @property
    def is_distribution(self) -> bool:
        """True if any number is a distribution or n_paths is set: sample() before use."""
        return self.n_paths is not None or any(_has_dist(path) for path in self.paths)

    def sample(self, rng: np.random.Generator) -> Scenario:
        """A concrete scenario drawn with ``rng`` (deterministic for a given generator state).

        Draws n_paths first, then every distribution of each path in field order; the
        template path is drawn independently for each path. A concrete scenario is copied.
        """
        templates = self.paths
        if self.n_paths is not None:
            templates = templates * int(sample_value(self.n_paths, rng))
        paths = [_sample_fields(path, rng) for path in templates]
        return self.model_copy(update={"paths": paths, "n_paths": None}, deep=True)

    def with_workload(self, **fields: Any) -> Scenario:
        """A validated copy whose workload has ``fields`` replaced, e.g. ``file_mb=1`` or ``chunks=8``."""
        return scenario_from_dict({**self.model_dump(exclude_none=True),
                                   "workload": {**self.workload.model_dump(exclude_none=True), **fields}})

    def max_one_way_ms(self) -> float:
        """Upper bound over all paths (and the distribution) of one-way delay + 4 jitter std."""
        if self.links is not None:
            return self.network().max_one_way_ms()
        return max(path.max_one_way_ms() for path in self.paths)

    def max_bandwidth_mbps(self) -> float:
        """Upper bound over all paths (and the distribution) of one path's capacity."""
        if self.links is not None:
            return max(link.max_bandwidth_mbps() for link in self.links.values())
        return max(path.max_bandwidth_mbps() for path in self.paths)

    def receive_buffer(self, mss: int, stack_window: float | None = None) -> float:
        """Receive buffer in bytes (concrete scenarios only).

        receive_buffer_bytes if set, else the stack's own window where it has one (``stack_window``:
        ``StackProfile.receive_window``, XQUIC's 16 MiB), else RFC 6182's ``2 * max_i RTT_i * sum_i BW_i``
        (docs/transport.md, "Connection level") with RTT_i the base RTT plus the time to drain
        a full bottleneck buffer (the largest RTT drop-tail allows) and BW_i the path's
        peak capacity; at least 64 KiB.
        """
        if self.receive_buffer_bytes is not None:
            return self.receive_buffer_bytes
        if stack_window is not None:
            return stack_window
        if self.is_distribution:
            raise ScenarioError("receive_buffer() needs a concrete scenario: sample it first (Scenario.sample(rng))")
        if self.links is not None:  # the paths' bottlenecks, each counted once
            net = self.network()
            max_rtt_s = max((r.base_rtt_ms + net.queue_bytes(r.bottleneck, mss)
                             / (net.links[r.bottleneck].nominal_mbps() * 125)) / 1000 for r in net.routes)
            peaks = {r.bottleneck: net.links[r.bottleneck].max_bandwidth_mbps() for r in net.routes}
            return max(2 * max_rtt_s * sum(peaks.values()) * 125_000, float(MIN_RECEIVE_BUFFER_BYTES))
        max_rtt_s = max(
            (path.base_rtt_ms() + path.queue_bytes(mss) / (_concrete(path.capacity, "bandwidth_mbps") * 125)) / 1000
            for path in self.paths
        )
        sum_bw_bytes_s = sum(path.max_bandwidth_mbps() for path in self.paths) * 125_000
        return max(2 * max_rtt_s * sum_bw_bytes_s, float(MIN_RECEIVE_BUFFER_BYTES))


_M = TypeVar("_M", bound=BaseModel)


def _has_dist(model: BaseModel) -> bool:
    return any(
        isinstance(value, _DistModel) or (isinstance(value, _Model) and _has_dist(value))
        for value in (getattr(model, name) for name in type(model).model_fields)
    )


def _sample_fields(model: _M, rng: np.random.Generator) -> _M:
    """A copy of ``model`` with every distribution (nested models included) drawn."""
    update: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, _DistModel):
            update[name] = value.sample(rng)
        elif isinstance(value, _Model):
            update[name] = _sample_fields(value, rng)
    return model.model_copy(update=update, deep=True)


# --------------------------------------------------------------------------- loading and errors


def list_scenarios() -> list[str]:
    """Names (file stems) of the scenarios shipped in SCENARIO_DIR, sorted."""
    return sorted(path.stem for path in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """Load a shipped scenario by name (see list_scenarios) or any scenario YAML file by path."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or len(candidate.parts) > 1:
        path = candidate
        if path.is_dir():
            found = sorted(path.glob("*.yaml"))
            raise ScenarioError(f"scenario file {path} is a directory; give a scenario YAML file"
                                + (f", e.g. {found[0]}" if found else ""))
        if not path.is_file():
            raise ScenarioError(f"scenario file not found: {path}")
    else:
        names = list_scenarios()
        if name_or_path not in names:
            raise ScenarioError(
                f"unknown scenario {name_or_path!r}; valid: {', '.join(names)} (or a path to a YAML file)"
            )
        path = SCENARIO_DIR / f"{name_or_path}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario file {path} is not valid YAML: {exc}") from None
    return _validate(data, f" in {path}")


def scenario_from_dict(d: Mapping[str, Any]) -> Scenario:
    """Validate a plain mapping (convert an OmegaConf config with OmegaConf.to_container first)."""
    return _validate(d, "")


ScenarioLike = typing.Union[str, Path, Mapping[str, Any], "Scenario"]


def resolve_scenarios(spec: ScenarioLike | typing.Sequence[ScenarioLike]) -> list[Scenario]:
    """One scenario or a list, each given as a Scenario, a mapping, a name or a file path."""
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if not items:
        raise ScenarioError("scenario: give at least one scenario")
    out = []
    for item in items:
        if isinstance(item, Scenario):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(scenario_from_dict(item))
        else:
            out.append(load_scenario(str(item)))
    return out


def _validate(data: object, origin: str) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"a scenario must be a mapping of fields{origin}, got {type(data).__name__}")
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as exc:
        problems = "\n".join(f"  {_problem(err)}" for err in exc.errors(include_url=False))
        raise ScenarioError(f"invalid scenario{origin}:\n{problems}") from None


def _loc(loc: tuple[int | str, ...]) -> str:
    """Pydantic's location as the user wrote it: ``paths[0].bandwidth_mbps``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _problem(err: Mapping[str, Any]) -> str:
    """One readable line for one pydantic error."""
    where = _loc(err["loc"]) or "scenario"
    kind = err["type"]
    if kind == "value_error":
        message = str(err["ctx"]["error"])
        if not err["loc"] and message.startswith(("paths", "links", "n_paths", "receive_buffer")):
            return message  # the scenario's own checks name the field themselves
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "extra_forbidden":
        message = _unknown_field(err["loc"])
    else:
        message = f"{err['msg']}, got {err['input']!r}"
    return f"{where}: {message}"


def _unknown_field(loc: tuple[int | str, ...]) -> str:
    model: type[BaseModel] | None = Scenario
    for part in loc[:-1]:
        if isinstance(part, str) and model is not None:
            model = _submodel(model.model_fields[part].annotation)
    if model is None:
        return "unknown field"
    valid = sorted(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field{hint}; valid fields: {', '.join(valid)}"


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The schema model inside a field annotation such as ``list[PathSpec]``."""
    if isinstance(annotation, type) and issubclass(annotation, _Model):
        return annotation
    for arg in typing.get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


__all__ = [
    "ArrivalSpec",
    "SCENARIO_DIR",
    "Choice",
    "CompetingSpec",
    "Dist",
    "LinkSpec",
    "LogUniform",
    "PathSpec",
    "Scenario",
    "ScenarioError",
    "Uniform",
    "WORKLOAD_TYPES",
    "WorkloadSpec",
    "list_scenarios",
    "load_scenario",
    "max_value",
    "sample_value",
    "scenario_from_dict",
]
