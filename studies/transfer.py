"""Transfer report: a policy trained in the simulator, beside the same policy inside live XQUIC.

For a learned policy (a checkpoint directory, ``runs:/<id>/checkpoint``, ``mlflow:<run_id>``, or a
preset given as train.py overrides, trained first) and the heuristics minRTT, ECF and BLEST (and on
request the fixed split fast_only: wait whenever the fast path is blocked), on every scenario x CC
cell (default: ispras_s1-s3 x cubic, bbr, bbr2), each scenario's own file (ISPRAS: 10 MB) unless
``--file-mb`` sets one for all:

- goodput in the simulator and in live XQUIC (the exported header running in XQUIC's
  ``get_path``; the heuristics as XQUIC's minRTT and the C versions of ECF and BLEST, fast_only
  as an exported always-wait policy, ``export.fast_only_header``), mean and
  95% CI (Student t) over ``--runs`` (policy, minRTT) or ``--heuristic-runs`` (the others);
- the forecast error ``(sim - live) / live`` and whether the simulator got the sign of
  (policy - minRTT) right: a difference counts as ``+`` or ``-`` only beyond its 95% Welch CI,
  else ``0``;
- the decision mix: each path's share of the bytes delivered, and the share of waits among the
  blocked decisions (the fast path without window, another path with; ``envs.sim.roles``), in
  the simulator from the policy's own decisions, live from XQUIC's sampled decision records;
- per input feature of the policy, its quantiles at the policy's blocked decisions in both;
- the acceptance figures: live policy / live minRTT per cell (>= 0.95), with its 95% CI and
  whether the runs tell it from 0.95 (else about how many would, given their spread), the cells where a live
  heuristic or fixed split has more than 10% headroom over minRTT and whether the policy is above
  minRTT beyond the CI there, and the count of sign matches;
- ``report.md``, ``cells.csv``, ``transfer.png`` and the measurements (``record.json``, with
  their provenance: XQUIC commit, kernel, date, command, every run, load average), all logged as
  artifacts of one MLflow run ``transfer-<label>``.

Measurements accumulate in ``<out>/record.json``, one cell and side at a time, so live runs can
go in short batches (``--scenarios``/``--ccs``/``--side live``) and a rerun skips what is there.
``--side none`` only writes the report from a record (CI does that on ``tests/data``).

The simulator side runs in the environment of the policy's own training config
(``envs.schema.EnvConfig`` through ``agents.training.setup``) under the XQUIC stack profile
(``env.stack=xquic``, the stack measured live; README, "Stack profiles"); ``--sim-override
KEY=VALUE`` changes that config (validated by the schema) for the simulator side only, e.g.
``env.stack=linux`` to see the other profile's forecast.

    python -m studies.transfer --policy outputs/<date>/<time>/checkpoint
    python -m studies.transfer --policy "agent=dqn cc=bbr2" --scenarios ispras_s1 --ccs cubic --side live
    python -m studies.transfer --record tests/data/transfer_dqn_bbr2.json --side none --out /tmp/report
"""

from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import json
import math
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from scipy import stats

from agents import checkpoint
from envs.errors import ConfigError, make_writable_dir, out_of_range, unknown_name, write_atomic
from envs.evaluation import EVAL_SEED_OFFSET, evaluate_heuristic
from envs.features import feature_set
from envs.live.provenance import load_average, utc_now
from envs.live.provenance import provenance as live_provenance
from envs.live.xquic import paths_validated  # one home: the reference recorder keeps it too
from envs.metrics import mean_ci
from envs.plugins import cc_id
from envs.policy_library import header_info
from envs.scenario import Scenario, resolve_scenarios
from envs.sim.stacks import BACKEND_STACK, check_ccs

POLICY = "policy"
HEURISTICS = ("minrtt", "ecf", "blest")  # simulator and XQUIC both have them; measured by default
FIXED_SPLITS = ("fast_only",)  # on request (--heuristics): live, an exported always-wait policy
SIDES = ("sim", "live")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
RECORD_FORMAT = 1
PROGRAM = "python -m studies.transfer"
ACCEPT_RATIO = 0.95  # live policy >= this x live minRTT in every cell
HEADROOM = 0.10  # a cell with more than this live headroom over minRTT (a heuristic) is one to win
# per packet when the fast path is blocked, or a mode (heuristic) every interval: both run inside XQUIC
DECISIONS = ("blocked", "interval")


# ------------------------------------------------------------------------------- measurements
@dataclass
class Measurement:
    """One scheduler in one scenario x CC cell on one side (``sim`` or ``live``): every run's
    goodput and per-path bytes, the blocked decisions seen and the waits among them, and (for the
    policy) its input features' quantiles at those decisions. Live runs also keep their outcome,
    the load average at their end, their wall time and how many paths XQUIC created (a path it
    never created carries nothing; records before 2026-11-28 22:30 UTC do not have it)."""

    side: str
    scenario: str
    cc: str
    scheduler: str
    goodput_mbps: list[float]
    path_bytes: list[list[float]]
    blocked: int = 0
    waits: int = 0
    feature_count: int = 0
    feature_quantiles: dict[str, list[float]] = field(default_factory=dict)
    outcomes: list[str] = field(default_factory=list)
    load_avg: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    date: str = ""
    paths_created: list[int] = field(default_factory=list)
    # paths XQUIC validated (the client found them active; README, "XQUIC": a lost PATH_RESPONSE left a
    # created path validating for good until the event loop re-sent PATH_CHALLENGE)
    paths_validated: list[int] = field(default_factory=list)
    # an interval policy: the share of its decisions that picked each of its modes (the policy's ``modes``)
    mode_share: list[float] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.side, self.scenario, self.cc, self.scheduler

    @property
    def path_share(self) -> list[float]:
        """Each path's share of all the bytes delivered over the runs."""
        tot = np.nansum(np.asarray(self.path_bytes, dtype=float), axis=0)
        return (tot / tot.sum()).tolist() if tot.sum() > 0 else [math.nan] * len(tot)

    @property
    def wait_share(self) -> float:
        return self.waits / self.blocked if self.blocked else math.nan

    def outcome_summary(self) -> str:
        """The runs' distinct outcomes, and how many runs XQUIC left without one of the paths: never
        created, or created and never validated."""
        text = ", ".join(sorted(set(self.outcomes)))
        paths = len(self.path_bytes[0]) if self.path_bytes else 0
        short = sum(1 for n in self.paths_created if n < paths)
        if short:
            text += f"; {short} of {len(self.paths_created)} runs without every path created"
        unvalidated = sum(1 for c, v in zip(self.paths_created, self.paths_validated) if v < c)
        if unvalidated:
            text += f"; {unvalidated} of {len(self.paths_validated)} runs with a path created and never validated"
        return text


@dataclass
class Record:
    """Everything measured for one policy: what it is, where and how it was measured, the cells."""

    policy: dict[str, Any]
    features: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)

    def get(self, side: str, scenario: str, cc: str, scheduler: str) -> Measurement | None:
        return next((m for m in self.measurements if m.key == (side, scenario, cc, scheduler)), None)

    def put(self, m: Measurement) -> None:
        self.measurements = [x for x in self.measurements if x.key != m.key] + [m]

    def cells(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((m.scenario, m.cc) for m in self.measurements))

    def schedulers(self) -> list[str]:
        found = list(dict.fromkeys(m.scheduler for m in self.measurements))
        known = (POLICY, *HEURISTICS, *FIXED_SPLITS)
        return [s for s in known if s in found] + [s for s in found if s not in known]

    def save(self, path: Path) -> None:
        data = {"format": RECORD_FORMAT, "policy": self.policy, "features": self.features,
                "provenance": self.provenance, "measurements": [asdict(m) for m in self.measurements]}
        write_atomic(path, json.dumps(data, indent=1, default=_plain))

    @classmethod
    def load(cls, path: Path) -> Record:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"cannot read the transfer record {path}: {err}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a transfer record is a JSON object (format, policy, features, "
                              f"measurements), got a {type(data).__name__}")
        if data.get("format") != RECORD_FORMAT:
            raise ConfigError(f"{path}: transfer record format {data.get('format')!r}, expected {RECORD_FORMAT}")
        missing = [k for k in ("policy", "features", "measurements") if k not in data]
        if missing:
            raise ConfigError(f"{path}: the transfer record has no {', '.join(missing)}")
        try:
            measurements = [Measurement(**m) for m in data["measurements"]]
            return cls(dict(data["policy"]), list(data["features"]), dict(data.get("provenance") or {}), measurements)
        except (TypeError, ValueError) as err:  # a measurement with other fields, a policy that is no mapping
            raise ConfigError(f"{path}: not a transfer record of this version ({err})") from None


def say_now(text: str) -> None:
    """A live run's line, out at once: a batch writes one per run, minutes apart, often into a pipe."""
    print(text, flush=True)


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def quantiles(features: np.ndarray, names: Sequence[str]) -> dict[str, list[float]]:
    """Per feature, its values at ``QUANTILES`` over the rows of ``features`` (empty: none)."""
    if not len(features):
        return {}
    q = np.quantile(np.asarray(features, dtype=float), QUANTILES, axis=0)
    return {n: q[:, j].tolist() for j, n in enumerate(names)}


# --------------------------------------------------------------------------------- the policy
@dataclass
class Policy:
    """A checkpoint ready to measure: its directory, metadata, the exported header, the
    training setup (``agents.training.Setup``) its simulator side runs in, and how it was trained
    (``training``: the stack its simulator imitated, its randomisation and checkpoint selection)."""

    label: str
    source: str
    directory: Path
    meta: dict[str, Any]
    header: Path
    setup: Any
    agent: Any
    training: dict[str, Any] = field(default_factory=dict)


def resolve_policy(ref: str, work: Path, label: str = "", tracking_uri: str | None = None,
                   sim_overrides: Sequence[str] = (), train_store: str | None = None) -> Policy:
    """The policy of ``ref``: a checkpoint directory, ``runs:/<id>/checkpoint``, ``mlflow:<id>``
    (found in ``tracking_uri``), or train.py overrides (``"agent=dqn cc=bbr2"``: trained into
    ``work/agents`` unless there, its MLflow run in ``train_store``, else in ``tracking_uri``)."""
    from export import export_checkpoint, resolve_checkpoint

    if "=" in ref and not Path(ref).exists() and not ref.startswith(("runs:/", "mlflow:")):
        directory = train_preset(shlex.split(ref), work / "agents", train_store or tracking_uri)
    else:
        run_id = ref.removeprefix("mlflow:").removeprefix("runs:/").split("/")[0] \
            if ref.startswith(("mlflow:", "runs:/")) else ref
        directory = resolve_checkpoint(run_id, tracking_uri, work / "downloads")
    from agents.training import apply_runtime, setup

    agent, meta = checkpoint.load(directory)
    cfg = OmegaConf.load(directory / checkpoint.CONFIG)
    assert isinstance(cfg, DictConfig)  # a composed training config is a mapping
    training = trained_with(cfg)
    # the simulator imitates the stack measured live (XQUIC), whatever the policy was trained under
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist([f"env.stack={BACKEND_STACK['xquic']}", *sim_overrides]))
    assert isinstance(cfg, DictConfig)
    s = setup(cfg, directory.parent)
    apply_runtime(s)
    if meta.get("decision") not in DECISIONS:
        raise ConfigError(f"the transfer report measures policies of decision modes {', '.join(DECISIONS)}; "
                          f"{directory} was trained with decision={meta.get('decision')!r}")
    header = work / "policy.h"
    export_checkpoint(directory, header)
    label = label or f"{meta.get('agent')}_{'+'.join(meta.get('ccs', []))}"
    return Policy(label, ref, directory, meta, header, s, agent, training)


def trained_with(cfg: DictConfig) -> dict[str, Any]:
    """The stack the policy's training simulated (``none``: a checkpoint from before the stack
    profiles), its ``train.randomise`` (False when off) and ``train.select``."""
    rnd = OmegaConf.select(cfg, "train.randomise")
    return {"stack": str(OmegaConf.select(cfg, "env.stack", default="none")),
            "randomise": OmegaConf.to_container(rnd) if rnd is not None and rnd.enabled else False,
            "select": str(OmegaConf.select(cfg, "train.select", default="last"))}


def train_preset(overrides: list[str], agents_dir: Path, tracking_uri: str | None) -> Path:
    """train.py's run for ``overrides`` into ``agents_dir/<config hash>``, reused when finished."""
    from agents.training import run, setup
    from studies.spec import compose_train

    cfg = compose_train(overrides)
    if tracking_uri:
        cfg.mlflow.tracking_uri = tracking_uri
    out = agents_dir / setup(cfg, agents_dir).config_hash
    done = out / "checkpoint" / checkpoint.META
    if done.is_file() and checkpoint.read_meta(done.parent).get("finished"):
        return done.parent
    return Path(run(cfg, out)["checkpoint"])


def policy_record(p: Policy, features: Sequence[str]) -> Record:
    meta = {k: p.meta.get(k) for k in ("agent", "kind", "observation", "decision", "seed", "steps_done",
                                       "config_hash", "scenarios", "ccs", "mlflow_run_id", "selected_step",
                                       "validation_score", "software")}
    sha = hashlib.sha256(p.header.read_bytes()).hexdigest()[:16]
    if p.meta.get("decision") == "interval":  # what XQUIC runs: the header's own modes and interval
        info = header_info(p.header.read_text())
        meta |= {"modes": info["modes"], "interval_ms": info["interval_ms"]}
    return Record({"label": p.label, "source": p.source, **meta, "training": p.training, "header_sha256": sha},
                  list(features))


# ------------------------------------------------------------------------------ the simulator
def simulate_policy(p: Policy, scenario: Scenario, cc: str, runs: int, seed: int) -> Measurement:
    """The policy in the simulator (its training environment, deterministic actions, every CC with
    its default parameters as live; ``agents.training.evaluate_policy``): goodput, path bytes, and
    at its decisions the feature quantiles and either (blocked mode: every decision is blocked,
    action 0 the wait) the waits, or (interval mode) each mode's share of the decisions."""
    from agents.training import evaluate_policy

    rows: list[np.ndarray] = []
    res, diag = evaluate_policy(p.agent, p.setup, scenario, cc, runs, seed, cc_params={cc: {}},
                                on_decision=lambda obs, live: rows.append(obs[live]))
    names = feature_set(p.setup.env_kwargs["observation"], len(scenario.paths))
    feats = np.concatenate(rows) if rows else np.zeros((0, len(names)))
    if p.meta.get("decision") == "interval":
        return Measurement("sim", scenario.name, cc, POLICY, res["goodput_mbps"].tolist(), _path_bytes(res),
                           feature_count=len(feats), feature_quantiles=quantiles(feats, [f.name for f in names]),
                           date=utc_now(), mode_share=(np.asarray(diag.action_counts) / diag.decisions).tolist())
    return Measurement("sim", scenario.name, cc, POLICY, res["goodput_mbps"].tolist(),
                       _path_bytes(res), diag.decisions, diag.action_counts[0], len(feats),
                       quantiles(feats, [f.name for f in names]), date=utc_now())


def _path_bytes(res: dict[str, np.ndarray]) -> list[list[float]]:
    """Per run, each path's goodput: proportional to its delivered bytes within the run (the
    span is the same for every path), which is all ``Measurement.path_share`` needs."""
    return np.asarray(res["per_path_goodput_mbps"], dtype=float).tolist()


def simulate_heuristic(p: Policy, scenario: Scenario, cc: str, name: str, runs: int, seed: int) -> Measurement:
    res = evaluate_heuristic(scenario, cc, name, runs, seed, p.setup.sim, {})
    return Measurement("sim", scenario.name, cc, name, res["goodput_mbps"].tolist(), _path_bytes(res), date=utc_now())


# ---------------------------------------------------------------------------------- live XQUIC
@dataclass
class LiveTally:
    """One scheduler's live runs in a cell, accumulated run by run."""

    goodput: list[float] = field(default_factory=list)
    path_bytes: list[list[float]] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    load_avg: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    paths_created: list[int] = field(default_factory=list)
    paths_validated: list[int] = field(default_factory=list)
    blocked: int = 0
    waits: int = 0
    features: list[np.ndarray] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    policy_features: list[np.ndarray] = field(default_factory=list)  # an interval policy's, at its decisions
    mode_counts: list[list[int]] = field(default_factory=list)  # an interval policy's decisions per mode, per run


def measure_live(p: Policy, scenario: Scenario, cc: str, runs: dict[str, int], decision_every: int,
                 datasets: Path | None = None, say: Callable[[str], None] = say_now) -> list[Measurement]:
    """The cell's schedulers live in XQUIC on one verified testbed, their runs interleaved
    (run 0 of each, then run 1, ...), every ``decision_every``-th decision recorded; each
    scheduler's blocked decisions (with the policy's features) go to
    ``datasets/<scenario>-<cc>-<scheduler>.npz`` (``envs.live.dataset``, for ``agents.offline``).
    An interval policy's features are those of its own decisions (every one XQUIC made), beside
    each mode's share of them."""
    from envs.live.dataset import BlockedDecisions, policy_decision_features, run_transfer
    from envs.live.testbed import verified

    tallies = {name: LiveTally() for name in runs}
    sched = {name: live_scheduler(p, name) for name in runs}
    interval = header_info(p.header.read_text()).get("modes", [])  # an interval policy's modes
    date = utc_now()
    with verified(scenario, say=lambda line: say(f"  {line}")) as tb:
        for i in range(max(runs.values())):
            for name, n in runs.items():
                if i >= n:
                    continue
                t = tallies[name]
                r, d = run_transfer(tb, cc, scenario.workload, sched[name], decision_every, p.meta["observation"])
                t.blocked, t.waits = t.blocked + len(d), t.waits + d.waits
                t.features.append(d.features)
                t.actions.append(d.actions)
                if name == POLICY and interval:
                    t.policy_features.append(policy_decision_features(r.extra["policy_decisions"],
                                                                      p.meta["observation"]))
                    t.mode_counts.append(list(r.extra["policy_intervals"][:len(interval)]))
                g = float(r.metrics()["goodput_mbps"][0]) if not r.error else math.nan
                t.goodput.append(g)
                t.path_bytes.append([float(x) for x in r.path_bytes])
                t.outcomes.append(r.extra.get("outcome", "") if not r.error else f"error: {r.error}")
                t.load_avg.append(load_average())
                t.wall_s.append(float(r.wall_s))
                t.paths_created.append(int(r.extra.get("paths_created", 0)))
                t.paths_validated.append(paths_validated(r.extra))
                say(f"  live {scenario.name} {cc} {name} run {i}: {g:.2f} Mbit/s ({t.outcomes[-1]}, "
                    f"{t.paths_created[-1]} paths created, {t.paths_validated[-1]} validated), "
                    f"load {t.load_avg[-1]:.2f}")
    names = [f.name for f in feature_set(p.meta["observation"], len(scenario.paths))]
    out = []
    for name, t in tallies.items():
        f = np.concatenate(t.features) if t.features else np.zeros((0, len(names)))
        if datasets is not None:
            datasets.mkdir(parents=True, exist_ok=True)
            BlockedDecisions(names, f, np.concatenate(t.actions) if t.actions else np.zeros(0, np.int64), {
                "scenario": scenario.name, "cc": cc, "scheduler": name, "observation": p.meta["observation"],
                "goodput_mbps": t.goodput, "date": date, **provenance(sys.argv[1:]),
                "load_avg": t.load_avg}).save(datasets / f"{scenario.name}-{cc}-{name}.npz")
        if name != POLICY:  # the report shows the policy's features only
            f = f[:0]
        elif interval:
            f = np.concatenate(t.policy_features) if t.policy_features else f[:0]
        counts = np.sum(t.mode_counts, axis=0) if t.mode_counts else np.zeros(0)
        out.append(Measurement("live", scenario.name, cc, name, t.goodput, t.path_bytes, t.blocked, t.waits,
                               len(f), quantiles(f, names), t.outcomes, t.load_avg, t.wall_s, date,
                               t.paths_created, t.paths_validated,
                               (counts / counts.sum()).tolist() if counts.sum() else []))
    return out


def live_scheduler(p: Policy, name: str) -> str:
    """What XQUIC runs for ``name``: the policy's exported header, fast_only as an exported
    always-wait policy (``export.fast_only_header``, beside the policy's header), or the
    scheduler of that name."""
    if name == POLICY:
        return f"policy={p.header}"
    if name == "fast_only":
        return f"policy={_fast_only(p.header.with_name('fast_only.h'))}"
    return name


@functools.cache
def _fast_only(path: Path) -> Path:
    """``export.fast_only_header`` written once per run and path (every live cell runs the same)."""
    from export import fast_only_header

    return fast_only_header(path)


def provenance(argv: Sequence[str]) -> dict[str, Any]:
    """Where and how (``envs.live.provenance``): XQUIC commit, kernel, date, the command, mpsched's commit."""
    return live_provenance(PROGRAM, argv)


# ------------------------------------------------------------------------------------- report
def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean of a - mean of b, and the half-width of its 95% Welch CI (nan with < 2 runs each)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if len(x) < 2 or len(y) < 2:
        return (float(x.mean() - y.mean()) if len(x) and len(y) else math.nan), math.nan
    return float(x.mean() - y.mean()), _welch_half(x.var(ddof=1) / len(x), y.var(ddof=1) / len(y), len(x), len(y))


def _welch_half(vx: float, vy: float, nx: int, ny: int) -> float:
    """Half-width of the 95% CI of a difference of two means whose squared standard errors are
    ``vx`` and ``vy`` (from ``nx`` and ``ny`` runs), Welch-Satterthwaite degrees of freedom."""
    se = math.sqrt(vx + vy)
    if se == 0:
        return 0.0
    dof = (vx + vy) ** 2 / (vx ** 2 / (nx - 1) + vy ** 2 / (ny - 1))
    return float(stats.t.ppf(0.975, dof) * se)


@dataclass(frozen=True)
class RatioCI:
    """Live policy / live minRTT with its 95% CI, and what the runs can tell about the acceptance
    threshold: the ratio of means, its CI from the delta method on log(ratio) (the relative standard
    errors of the two means add, Welch-Satterthwaite degrees of freedom), and the runs per scheduler at
    which a CI of that width would just clear the threshold, given the spread measured."""

    ratio: float
    lo: float
    hi: float
    runs_to_tell: float  # inf: the ratio is at the threshold; nan: unknown

    def verdict(self, threshold: float) -> str:
        """``at least`` / ``below`` when the CI is on one side of ``threshold``, else ``undecided``."""
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            return "n/a"
        return "at least" if self.lo >= threshold else "below" if self.hi < threshold else "undecided"


def ratio_ci(a: Sequence[float], b: Sequence[float], threshold: float = ACCEPT_RATIO) -> RatioCI:
    """``RatioCI`` of mean(a) / mean(b) (finite runs only; nan with < 2 runs each or a mean <= 0)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if len(x) < 2 or len(y) < 2 or x.mean() <= 0 or y.mean() <= 0:
        return RatioCI(math.nan, math.nan, math.nan, math.nan)
    r = float(x.mean() / y.mean())
    cx, cy = x.var(ddof=1) / x.mean() ** 2, y.var(ddof=1) / y.mean() ** 2  # squared coefficients of variation
    half = _welch_half(cx / len(x), cy / len(y), len(x), len(y))  # of log(mean a) - log(mean b)
    if half == 0:
        return RatioCI(r, r, r, 1.0 if r != threshold else math.inf)
    gap = abs(math.log(r / threshold))
    # n runs of each: z * sqrt((cx + cy) / n) = gap (the normal quantile: many runs)
    runs = math.inf if gap == 0 else math.ceil((stats.norm.ppf(0.975) ** 2) * (cx + cy) / gap ** 2)
    return RatioCI(r, r * math.exp(-half), r * math.exp(half), float(runs))


def sign(diff: float, half: float) -> str:
    """``+`` / ``-`` when the difference is beyond its CI, ``0`` when within, ``?`` when unknown."""
    if not math.isfinite(diff):
        return "?"
    h = half if math.isfinite(half) else 0.0
    return "+" if diff - h > 0 else "-" if diff + h < 0 else "0"


@dataclass
class CellSummary:
    """The report's numbers for one scenario x CC cell."""

    scenario: str
    cc: str
    goodput: dict[tuple[str, str], tuple[float, float, int]]  # (side, scheduler) -> mean, ci, runs
    diff: dict[str, tuple[float, float]]  # side -> policy - minRTT and its CI
    sign_sim: str
    sign_live: str
    ratio_live: float  # live policy / live minRTT
    headroom_live: float  # best live heuristic / live minRTT - 1
    headroom_by: str
    ratio_ci_live: RatioCI  # ratio_live with its CI, and the runs it would take to tell it from ACCEPT_RATIO

    @property
    def sign_match(self) -> bool | None:
        return None if "?" in (self.sign_sim, self.sign_live) else self.sign_sim == self.sign_live

    @property
    def has_headroom(self) -> bool:
        """A live heuristic or fixed split more than ``HEADROOM`` above live minRTT."""
        return self.headroom_live > HEADROOM

    @property
    def won(self) -> bool:
        """Headroom, and the policy above minRTT live beyond the CI."""
        return self.has_headroom and self.sign_live == "+"

    @property
    def accepted(self) -> bool | None:
        """Live policy >= ACCEPT_RATIO x live minRTT (None: not measured live)."""
        return None if not math.isfinite(self.ratio_live) else self.ratio_live >= ACCEPT_RATIO


def summarise(record: Record) -> list[CellSummary]:
    out = []
    for scen, cc in record.cells():
        g: dict[tuple[str, str], tuple[float, float, int]] = {}
        for side in SIDES:
            for s in record.schedulers():
                m = record.get(side, scen, cc, s)
                if m is not None:
                    mean, ci = mean_ci(np.asarray(m.goodput_mbps, dtype=float))
                    g[side, s] = (mean, ci, int(np.isfinite(m.goodput_mbps).sum()))
        diff = {}
        for side in SIDES:
            p, b = record.get(side, scen, cc, POLICY), record.get(side, scen, cc, "minrtt")
            diff[side] = welch(p.goodput_mbps, b.goodput_mbps) if p and b else (math.nan, math.nan)
        base = g.get(("live", "minrtt"), (math.nan,))[0]
        pol = g.get(("live", POLICY), (math.nan,))[0]
        heur = {s: v[0] for (side, s), v in g.items() if side == "live" and s not in (POLICY, "minrtt")}
        best = max(heur, key=lambda s: heur[s]) if heur else ""
        lp, lb = record.get("live", scen, cc, POLICY), record.get("live", scen, cc, "minrtt")
        out.append(CellSummary(scen, cc, g, diff, sign(*diff["sim"]), sign(*diff["live"]),
                               pol / base if base > 0 else math.nan,
                               heur[best] / base - 1 if best and base > 0 else math.nan, best,
                               ratio_ci(lp.goodput_mbps, lb.goodput_mbps) if lp and lb
                               else RatioCI(math.nan, math.nan, math.nan, math.nan)))
    return out


@dataclass
class Acceptance:
    """One record against the transfer acceptance (module docstring): its ISPRAS cells measured
    live, those at or above ``ACCEPT_RATIO`` x live minRTT by the point estimate and beyond the CI,
    those below beyond it; the cells (any scenario) with more than ``HEADROOM`` live headroom and
    those the policy wins there beyond the CI; the ISPRAS cells whose sign of (policy - minRTT) both
    sides tell, and those it matches in."""

    label: str
    agent: str
    ispras: int
    at_least: int
    at_least_ci: int
    below_ci: int
    chances: int
    wins: int
    signs: int
    signs_right: int

    @property
    def ratio_holds(self) -> bool:
        """Clause 1 by the point estimates: every ISPRAS cell (of 9) at or above the ratio, and a win
        beyond the CI in a cell with headroom (a record without such a cell shows none)."""
        return self.ispras == 9 and self.at_least == 9 and self.wins > 0

    @property
    def sign_holds(self) -> bool:
        """Clause 2: the simulator's sign right in at least 8 of the 9 ISPRAS cells."""
        return self.signs == 9 and self.signs_right >= 8


def acceptance(record: Record) -> Acceptance:
    cells = summarise(record)
    ispras = [c for c in cells if c.scenario.startswith("ispras_") and c.accepted is not None]
    signed = [c for c in cells if c.scenario.startswith("ispras_") and c.sign_match is not None]
    chances = [c for c in cells if c.has_headroom]
    return Acceptance(str(record.policy.get("label", "")), str(record.policy.get("agent", "")), len(ispras),
                      sum(bool(c.accepted) for c in ispras),
                      sum(c.ratio_ci_live.verdict(ACCEPT_RATIO) == "at least" for c in ispras),
                      sum(c.ratio_ci_live.verdict(ACCEPT_RATIO) == "below" for c in ispras),
                      len(chances), sum(c.won for c in chances),
                      len(signed), sum(bool(c.sign_match) for c in signed))


def acceptance_table(paths: Sequence[Path]) -> str:
    """The acceptance of every record in ``paths``, one markdown row each."""
    from studies.report import _md

    rows = []
    for path in paths:
        a = acceptance(Record.load(path))
        rows.append([Path(path).name, a.label, a.agent, f"{a.ispras} of 9",
                     f"{a.at_least} ({a.at_least_ci} beyond the CI, {a.below_ci} below it)",
                     f"{a.wins} of {a.chances}", f"{a.signs_right} of {a.signs}",
                     "yes" if a.ratio_holds else "no", "yes" if a.sign_holds else "no"])
    return _md(["record", "label", "agent", "ISPRAS cells live", f">= {ACCEPT_RATIO} x minRTT live (point estimate)",
                f"won where live headroom > {100 * HEADROOM:.0f}%", "sign right (ISPRAS)", "clause 1", "clause 2"],
               rows)


def _training_line(pol: dict[str, Any]) -> str:
    tr = pol.get("training")
    if not tr:
        return "Training: not recorded."
    rnd = tr.get("randomise")
    drawn = (", ".join(f"{k} {v}" for k, v in rnd.items() if k != "enabled" and v not in ([], None))
             if isinstance(rnd, dict) else "off")
    sel = tr.get("select", "last")
    if sel == "validation" and pol.get("selected_step") is not None:
        sel += f" (step {pol['selected_step']}, score {pol.get('validation_score', math.nan):.3f})"
    sw = pol.get("software")
    libs = "; software: " + ", ".join(f"{k} {v}" for k, v in sw.items()) if sw else ""
    return f"Training: simulator stack {tr.get('stack')}; randomisation: {drawn}; checkpoint selection: {sel}{libs}."


def _cell(v: tuple[float, float, int] | None) -> str:
    if v is None or not math.isfinite(v[0]):
        return "n/a"
    return f"{v[0]:.2f} ± {v[1]:.2f} ({v[2]})"


def _ratio_ci(r: RatioCI) -> str:
    verdict = r.verdict(ACCEPT_RATIO)
    if verdict == "n/a":
        return "n/a"
    tell = f" (~{r.runs_to_tell:.0f} runs)" if verdict == "undecided" and math.isfinite(r.runs_to_tell) else ""
    return f"[{r.lo:.3f}, {r.hi:.3f}]: {verdict}{tell}"


def _pct(x: float, signed: bool = True) -> str:
    return "n/a" if not math.isfinite(x) else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def write_report(record: Record, out: Path) -> dict[str, Path]:
    """``report.md``, ``cells.csv`` and ``transfer.png`` in ``out`` from ``record``."""
    from studies.report import _md  # the studies' markdown table (imports matplotlib: here, not at the top)

    out.mkdir(parents=True, exist_ok=True)
    cells = summarise(record)
    scheds = record.schedulers()
    pol = record.policy
    prov = record.provenance
    lines = [f"# Transfer report: {pol.get('label')}", "",
             f"Policy: {pol.get('agent')} ({pol.get('kind')}), trained on {', '.join(pol.get('scenarios') or [])} "
             f"under {', '.join(pol.get('ccs') or [])}, {pol.get('steps_done')} steps, seed {pol.get('seed')}; "
             f"source `{pol.get('source')}`, header sha256 {pol.get('header_sha256')}.",
             _training_line(pol),
             f"Live: XQUIC {prov.get('xquic_commit', '?')}, kernel {prov.get('kernel', '?')}; "
             f"measured {prov.get('date', '?')}; commands: "
             + "; ".join(f"`{c}`" for c in prov.get("commands", [prov.get("command", "?")])) + ".", "",
             "## Goodput (Mbit/s, mean ± 95% CI (runs)), forecast error (sim - live) / live", ""]
    head = ["scenario", "cc"] + [f"{s} {side}" for s in scheds for side in SIDES] + [f"{s} error" for s in scheds]
    rows = []
    for c in cells:
        row = [c.scenario, c.cc] + [_cell(c.goodput.get((side, s))) for s in scheds for side in SIDES]
        for s in scheds:
            sv, lv = c.goodput.get(("sim", s)), c.goodput.get(("live", s))
            err = (sv[0] - lv[0]) / lv[0] if sv and lv and lv[0] else math.nan
            row.append(_pct(err))
        rows.append(row)
    lines += [_md(head, rows), ""]
    matches = [c.sign_match for c in cells if c.sign_match is not None]
    lines += ["## Sign of (policy - minRTT): simulator vs live", "",
              "`+`/`-`: beyond the 95% Welch CI of the difference; `0`: within it.", ""]
    rows = [[c.scenario, c.cc, f"{c.diff['sim'][0]:+.2f} ± {c.diff['sim'][1]:.2f}", c.sign_sim,
             f"{c.diff['live'][0]:+.2f} ± {c.diff['live'][1]:.2f}", c.sign_live,
             {True: "yes", False: "no", None: "n/a"}[c.sign_match]] for c in cells]
    lines += [_md(["scenario", "cc", "sim diff", "sim sign", "live diff", "live sign", "match"], rows), "",
              f"Sign right in {sum(matches)} of {len(matches)} cells.", ""]
    lines += ["## Acceptance", "",
              f"Live policy / live minRTT >= {ACCEPT_RATIO} in every cell; above minRTT beyond the CI in a cell "
              f"where a live heuristic or fixed split ({', '.join(FIXED_SPLITS)}, when measured) shows more than "
              f"{100 * HEADROOM:.0f}% headroom over minRTT.", ""]
    rows = [[c.scenario, c.cc, f"{c.ratio_live:.3f}" if math.isfinite(c.ratio_live) else "n/a",
             {True: "yes", False: "no", None: "n/a"}[c.accepted], _ratio_ci(c.ratio_ci_live),
             f"{_pct(c.headroom_live)} ({c.headroom_by})" if c.headroom_by else "n/a",
             c.sign_live] for c in cells]
    lines += [_md(["scenario", "cc", "policy/minRTT live", f">= {ACCEPT_RATIO}", "95% CI: what the runs tell",
                   "best live heuristic/split headroom", "policy vs minRTT live"], rows), ""]
    told = [c.ratio_ci_live.verdict(ACCEPT_RATIO) for c in cells]
    lines += [f"The CI of the ratio (delta method on its logarithm) shows it at least {ACCEPT_RATIO} in "
              f"{told.count('at least')} cells and below in {told.count('below')}; {told.count('undecided')} "
              "are undecided by these runs (the runs per scheduler that would tell, given the spread measured, "
              "in brackets).", ""]
    wins = [c for c in cells if c.won]
    chances = [c for c in cells if c.has_headroom]
    measured = [c.accepted for c in cells if c.accepted is not None]
    lines += [f"Cells at >= {ACCEPT_RATIO}: {sum(measured)} of {len(measured)} measured live; cells with > "
              f"{100 * HEADROOM:.0f}% live headroom: {len(chances)}, won beyond the CI there: {len(wins)}"
              + "".join(f"{'; ' if i else ' ('}{c.scenario} {c.cc}: policy {_pct(c.ratio_live - 1)} "
                        f"({c.diff['live'][0]:+.2f} ± {c.diff['live'][1]:.2f} Mbit/s), {c.headroom_by} "
                        f"{_pct(c.headroom_live)}" for i, c in enumerate(wins)) + (")." if wins else "."), ""]
    lines += ["## Decision mix", "",
              "Path 1's share of the bytes delivered; waits among the blocked decisions (fast path without "
              "window, another path with), live from every k-th decision XQUIC recorded. The simulator's "
              "heuristics decide per packet inside the core and are not asked the blocked question: n/a.", ""]
    rows = []
    for scen, cc in record.cells():
        for s in scheds:
            ms = {side: record.get(side, scen, cc, s) for side in SIDES}
            if not any(ms.values()):
                continue
            rows.append([scen, cc, s] + [_pct(m.path_share[0], False) if m else "n/a" for m in ms.values()]
                        + [f"{_pct(m.wait_share, False)} of {m.blocked}" if m and m.blocked else "n/a"
                           for m in ms.values()]
                        + [ms["live"].outcome_summary() if ms["live"] else "n/a"])
    lines += [_md(["scenario", "cc", "scheduler", "path 1 sim", "path 1 live", "waits sim", "waits live",
                   "live outcomes"], rows), ""]
    interval = pol.get("decision") == "interval"
    if interval:
        lines += _mode_mix(record)
    lines += ["## Input features at the policy's " + ("decisions" if interval else "blocked decisions"), "",
              "Quantiles " + "/".join(f"{q:g}" for q in QUANTILES) + " of each feature (its normalised "
              "value as the policy reads it)" + (", at every interval decision on both sides." if interval
                                                 else "."), ""]
    rows = []
    for scen, cc in record.cells():
        ms = {side: record.get(side, scen, cc, POLICY) for side in SIDES}
        for name in record.features:
            qs = [(m.feature_quantiles.get(name) if m else None) for m in ms.values()]
            rows.append([scen, cc, name] + [" / ".join(f"{v:.3g}" for v in q) if q else "n/a" for q in qs])
    lines += [_md(["scenario", "cc", "feature", "sim", "live"], rows), ""]
    loads = [x for m in record.measurements if m.side == "live" for x in m.load_avg]
    if loads:
        lines += [f"Load average (1 min) at the end of the live runs: {min(loads):.2f}-{max(loads):.2f} "
                  f"(median {float(np.median(loads)):.2f}) on {prov.get('cpus', '?')} CPUs.", ""]
    files = {"report.md": out / "report.md", "cells.csv": out / "cells.csv", "transfer.png": out / "transfer.png"}
    files["report.md"].write_text("\n".join(lines))
    _csv(record, cells, files["cells.csv"])
    _figure(cells, scheds, files["transfer.png"])
    return files


def _mode_mix(record: Record) -> list[str]:
    """An interval policy's report section: the share of its decisions that picked each mode."""
    from studies.report import _md

    modes = list(record.policy.get("modes") or [])
    lines = ["## Modes the policy ran", "",
             f"Share of the policy's decisions (one every {record.policy.get('interval_ms', '?')} ms) that picked "
             "each mode, in the simulator and in XQUIC (its own decisions, counted by the extension). The "
             "waits above are then the modes' own, per packet, live.", ""]
    rows = []
    for scen, cc in record.cells():
        ms = [record.get(side, scen, cc, POLICY) for side in SIDES]
        rows.append([scen, cc] + [_pct(m.mode_share[i], False) if m and len(m.mode_share) > i else "n/a"
                                  for i in range(len(modes)) for m in ms])
    return lines + [_md(["scenario", "cc"] + [f"{mode} {side}" for mode in modes for side in SIDES], rows), ""]


def _csv(record: Record, cells: list[CellSummary], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "cc", "scheduler", "side", "goodput_mbps", "ci95", "runs", "path1_share",
                    "blocked_decisions", "wait_share", "sign", "sign_match", "ratio_to_minrtt", "ratio_ci95_lo",
                    "ratio_ci95_hi", "ratio_verdict", "runs_to_tell"])
        for c in cells:
            for s in record.schedulers():
                for side in SIDES:
                    m = record.get(side, c.scenario, c.cc, s)
                    if m is None:
                        continue
                    mean, ci, n = c.goodput[side, s]
                    base = c.goodput.get((side, "minrtt"), (math.nan,))[0]
                    r = c.ratio_ci_live if (side, s) == ("live", POLICY) else None
                    w.writerow([c.scenario, c.cc, s, side, mean, ci, n, m.path_share[0], m.blocked, m.wait_share,
                                c.sign_sim if side == "sim" else c.sign_live if s == POLICY else "",
                                c.sign_match if s == POLICY else "", mean / base if base else math.nan,
                                *((r.lo, r.hi, r.verdict(ACCEPT_RATIO), r.runs_to_tell) if r else ("", "", "", ""))])


def _figure(cells: list[CellSummary], scheds: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 4.8), gridspec_kw={"width_ratios": [3, 1.2]})
    labels = [f"{c.scenario.removeprefix('ispras_')}\n{c.cc}" for c in cells]
    x = np.arange(len(cells))
    width = 0.8 / (2 * len(scheds))
    colours = plt.get_cmap("tab10")
    for i, s in enumerate(scheds):
        for j, side in enumerate(SIDES):
            vals = [c.goodput.get((side, s), (math.nan, math.nan, 0)) for c in cells]
            pos = x - 0.4 + width * (2 * i + j + 0.5)
            ax.bar(pos, [v[0] for v in vals], width, yerr=[v[1] for v in vals], color=colours(i),
                   hatch="//" if side == "sim" else None, alpha=0.55 if side == "sim" else 1.0,
                   label=f"{s} ({side})", edgecolor="black", linewidth=0.3)
    ax.set_xticks(x, labels)
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_yscale("log")
    ax.set_title("simulator (hatched) vs live XQUIC")
    ax.legend(fontsize=7, ncol=2)
    for c in cells:
        sd, lv = c.diff["sim"], c.diff["live"]
        base = {side: c.goodput.get((side, "minrtt"), (math.nan,))[0] for side in SIDES}
        xs, ys = 100 * sd[0] / base["sim"], 100 * lv[0] / base["live"]
        ax2.errorbar(xs, ys, xerr=100 * sd[1] / base["sim"], yerr=100 * lv[1] / base["live"], fmt="o",
                     color="green" if c.sign_match else "red", capsize=2)
        ax2.annotate(f"{c.scenario.removeprefix('ispras_')} {c.cc}", (xs, ys), fontsize=7)
    ax2.axhline(0, color="grey", lw=0.5)
    ax2.axvline(0, color="grey", lw=0.5)
    ax2.set_xlabel("simulator: policy - minRTT (% of minRTT)")
    ax2.set_ylabel("live: policy - minRTT (% of minRTT)")
    ax2.set_title("sign forecast (green: right)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def log_mlflow(record: Record, files: dict[str, Path], record_path: Path, tracking_uri: str | None) -> str:
    """One MLflow run ``transfer-<label>``: the cells' numbers as metrics, the files as artifacts."""
    import mlflow

    from agents import tracking
    from envs.schema import MlflowSettings

    tracking.open_store(tracking_uri, MlflowSettings.experiment)
    cells = summarise(record)
    with mlflow.start_run(run_name=f"transfer-{record.policy.get('label')}") as run:
        mlflow.log_params({k: v for k, v in record.policy.items() if not isinstance(v, (list, dict))})
        metrics: dict[str, float] = {}
        for c in cells:
            for (side, s), (mean, _, _) in c.goodput.items():
                metrics[f"{c.scenario}/{c.cc}/{s}/{side}_goodput_mbps"] = mean
            metrics[f"{c.scenario}/{c.cc}/live_ratio_to_minrtt"] = c.ratio_live
        matches = [c.sign_match for c in cells if c.sign_match is not None]
        metrics["sign_matches"], metrics["sign_cells"] = float(sum(matches)), float(len(matches))
        metrics["cells_accepted"] = float(sum(bool(c.accepted) for c in cells))
        mlflow.log_metrics({k: v for k, v in metrics.items() if math.isfinite(v)})
        for p in [*files.values(), record_path]:
            mlflow.log_artifact(str(p))
        return str(run.info.run_id)


# --------------------------------------------------------------------------------------- main
def _positive(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--{name} must be an integer >= 1, got {text!r}") from None
        if v < 1:
            raise argparse.ArgumentTypeError(str(out_of_range(f"--{name}", v, "an integer >= 1")))
        return v
    return parse


def file_workload(scenario: Scenario, file_mb: float | None) -> Scenario:
    """``scenario`` transferring a ``file_mb`` file, or its own file when None (a scenario without
    a file workload needs ``--file-mb``)."""
    if file_mb is not None:
        return scenario.with_workload(file_mb=file_mb)
    if scenario.workload.type != "file":
        raise ConfigError(f"scenario {scenario.name!r} has a {scenario.workload.type!r} workload; the transfer "
                          f"report measures file transfers: give --file-mb")
    return scenario


def file_sizes(before: float | dict[str, float] | None, earlier: Sequence[str],
               scenarios: Sequence[Scenario]) -> float | dict[str, float]:
    """The file size in MB for the record's provenance: one number when every scenario measured
    (``earlier`` ones, with the size ``before`` held for them, and ``scenarios``) had the same file,
    else each scenario's. A scenario with cells in the record (``earlier``) asked for at another
    size is refused: its cells measured so far would sit beside new ones of another file
    (``--file-mb``), and a record's cells must stay comparable."""
    old = before if isinstance(before, dict) else dict.fromkeys(earlier, before) if before else {}
    new = {s.name: float(s.workload.file_mb or math.nan) for s in scenarios}
    for name, mb in new.items():
        if name in earlier and name in old and not math.isclose(old[name], mb):
            raise ConfigError(f"scenario {name!r} is in the record with a {old[name]:g} MB file, this run asks for "
                              f"{mb:g} MB: a record's cells must stay comparable; give --file-mb {old[name]:g} "
                              "to continue it, or another --out for the new size")
    sizes = {**old, **new}
    return next(iter(sizes.values())) if len(set(sizes.values())) == 1 else sizes


def measure(record: Record, p: Policy, scenarios: list[Scenario], ccs: list[str], a: argparse.Namespace,
            out: Path, save: Callable[[], None]) -> None:
    """Every missing (side, cell, scheduler) of the selection, saved as each cell ends (live
    decision datasets in ``out/decisions``)."""
    runs = {POLICY: a.runs, **{h: a.runs if h == "minrtt" else a.heuristic_runs for h in a.heuristics}}
    seed = p.setup.seed + EVAL_SEED_OFFSET
    for scen in scenarios:
        for cc in ccs:
            if a.side in ("sim", "both"):
                for name, n in runs.items():
                    if record.get("sim", scen.name, cc, name) is None:
                        record.put(simulate_policy(p, scen, cc, n, seed) if name == POLICY
                                   else simulate_heuristic(p, scen, cc, name, n, seed))
                save()
            if a.side in ("live", "both"):
                todo = {k: n for k, n in runs.items() if record.get("live", scen.name, cc, k) is None}
                if todo:
                    print(f"live {scen.name} {cc}: {', '.join(f'{k} x{n}' for k, n in todo.items())}", flush=True)
                    for m in measure_live(p, scen, cc, todo, a.decision_every, out / "decisions"):
                        record.put(m)
                    save()


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m studies.transfer", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", help="checkpoint directory, runs:/<id>/checkpoint, mlflow:<id>, or train.py "
                                     "overrides of a preset, e.g. 'agent=dqn cc=bbr2'")
    ap.add_argument("--label", default="")
    ap.add_argument("--scenarios", nargs="+", default=["ispras_s1", "ispras_s2", "ispras_s3"])
    ap.add_argument("--ccs", nargs="+", default=["cubic", "bbr", "bbr2"])
    ap.add_argument("--heuristics", nargs="+", default=list(HEURISTICS),
                    help=f"schedulers beside the policy: {', '.join(HEURISTICS + FIXED_SPLITS)} "
                         f"(default {' '.join(HEURISTICS)})")
    ap.add_argument("--runs", type=_positive("runs"), default=5, help="runs of the policy and minRTT per cell")
    ap.add_argument("--heuristic-runs", type=_positive("heuristic-runs"), default=3)
    ap.add_argument("--file-mb", type=float, default=None,
                    help="file size for every scenario (default: each scenario's own file; the ISPRAS ones 10 MB)")
    ap.add_argument("--side", choices=("both", "sim", "live", "none"), default="both",
                    help="what to measure (none: only the report from --record)")
    ap.add_argument("--decision-every", type=_positive("decision-every"), default=4,
                    help="record every k-th live decision")
    ap.add_argument("--sim-override", action="append", default=[], metavar="KEY=VALUE",
                    help="change the policy's training config for the simulator side (repeatable)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--record", type=Path, help="measurements to start from (default: <out>/record.json)")
    ap.add_argument("--summary", type=Path, nargs="+", metavar="RECORD",
                    help="print each record's acceptance in one table (nothing measured)")
    ap.add_argument("--tracking-uri")
    ap.add_argument("--no-mlflow", action="store_true",
                    help="log no MLflow run of the report; a preset trained first keeps its run in <out>/agents/mlflow.db")
    a = ap.parse_args(argv)
    if a.summary:
        print(acceptance_table(a.summary))
        return
    for h in a.heuristics:
        if h not in HEURISTICS + FIXED_SPLITS:
            raise unknown_name("--heuristics entry", h, HEURISTICS + FIXED_SPLITS)
    if a.file_mb is not None and not a.file_mb > 0:
        raise out_of_range("--file-mb", a.file_mb, "> 0")
    if a.side != "none" and not a.policy:
        raise ConfigError("--policy is required unless --side none (a report from --record)")
    if a.record is not None and not a.record.is_file():  # was ignored by a measuring run, which began a new record
        raise ConfigError(f"no measurements: --record {a.record} " + (
            f"is a directory; give its record file, e.g. {a.record / 'record.json'}" if a.record.is_dir()
            else "does not exist"))
    try:  # before the policy (a preset is trained first): both sides run the CCs of XQUIC's stack
        for cc in a.ccs:
            cc_id(cc)  # an unknown name lists the valid ones (the stack lets a plug-in of another name through)
        check_ccs(BACKEND_STACK["xquic"], a.ccs)
    except ConfigError as err:
        raise ConfigError(f"--ccs: {err}") from None
    out = a.out or Path("outputs") / "transfer" / (a.label or (Path(a.policy).name if a.policy else "report"))
    try:  # before the policy is trained or measured
        make_writable_dir(out)
    except OSError as err:
        raise ConfigError(f"--out {out}: cannot write the report there ({err.strerror or err})") from None
    path = out / "record.json"
    source = a.record or path
    record = Record.load(source) if source.is_file() else None
    if a.side != "none":
        scenarios = [file_workload(s, a.file_mb) for s in resolve_scenarios(a.scenarios)]
        # --no-mlflow: a preset's training run (train.py always tracks one) goes to a store of the
        # report's own, not to the working directory's
        train_store = None if a.tracking_uri or not a.no_mlflow else \
            f"sqlite:///{(out / 'agents').resolve() / 'mlflow.db'}"
        p = resolve_policy(a.policy, out, a.label, a.tracking_uri, a.sim_override, train_store)
        names = [f.name for f in feature_set(p.meta["observation"], len(scenarios[0].paths))]
        fresh = policy_record(p, names)
        if record is None or record.policy.get("header_sha256") != fresh.policy["header_sha256"]:
            if record is not None:
                print(f"{source} holds another policy ({record.policy.get('label')}): starting a new record")
            record = fresh
        else:  # the same policy: keep what the record says of it, add what it lacks
            record.policy = {**fresh.policy, **record.policy}
        prov = provenance(argv)
        commands = record.provenance.get("commands", []) + [prov["command"]]
        record.provenance = {**record.provenance, **prov, "commands": commands,
                             "file_mb": file_sizes(record.provenance.get("file_mb"),
                                                   [scen for scen, _ in record.cells()], scenarios),
                             "decision_every": a.decision_every, "sim_overrides": a.sim_override}
        measure(record, p, scenarios, a.ccs, a, out, lambda: record.save(path))
        record.save(path)
    if record is None:
        raise ConfigError(f"no measurements: {source} does not exist")
    files = write_report(record, out)
    if source != path:
        record.save(path)
    print(files["report.md"].read_text())
    if not a.no_mlflow:
        run_id = log_mlflow(record, files, path, a.tracking_uri)
        print(f"MLflow run: {run_id}")
    print(f"outputs in {out}")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):
        main(debug_argv(sys.argv[1:]))
