"""The typed schema of every config group: the one home of each default, type and range.

Hydra structured configs (https://hydra.cc/docs/tutorials/structured_config/intro/): each
dataclass below is registered in Hydra's ``ConfigStore`` by ``register()`` and named in the
defaults list of a YAML file in ``configs/`` (``train.yaml``, ``evaluate.yaml``, ``tune.yaml``,
``env/default.yaml``, ``live/default.yaml``), which therefore hold comments and group choices but
no default values. Composition checks types (``env.mss=abc`` and ``train.stepz=1`` are refused by
Hydra with the key's name); ``check`` then checks ranges, names and keys appended with ``+``, declared next to each default
with ``setting(...)``, and reports the first offence as ``ConfigError`` naming the field and its
range. The environment's defaults and ranges belong to the objects they configure
(``SimConfig``, ``DecisionSpec``, ``RewardSpec``): ``EnvConfig`` reads its defaults from them and
checks by building them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import numpy as np

from envs.decision import DecisionSpec
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.evaluation import EVAL_SEED_OFFSET
from envs.rewards import RewardSpec
from envs.sim.simulator import SimConfig
from envs.sim.stacks import STACKS


def setting(default: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None,
            one_of: tuple[str, ...] | None = None, integer: bool = False, matches: tuple[str, str] | None = None,
            hint: str = "") -> Any:
    """A dataclass field with its default and the range ``check`` enforces (None passes): bounds,
    names, or ``matches`` (a regular expression a string must match in full, and what it means);
    ``hint`` is added to the error."""
    return field(default=default, metadata={"ge": ge, "gt": gt, "le": le, "one_of": one_of, "integer": integer,
                                            "matches": matches, "hint": hint})


def _check_value(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    try:
        _check_range(name, value, meta)
    except ConfigError as err:
        raise ConfigError(f"{err} {meta['hint']}".rstrip()) from None


def _check_range(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    if value is None:
        return
    if meta.get("one_of") and value not in meta["one_of"]:
        raise unknown_name(name, value, meta["one_of"])
    if meta.get("matches") and not (isinstance(value, str) and re.fullmatch(meta["matches"][0], value)):
        raise out_of_range(name, value, meta["matches"][1])
    ge, gt = meta.get("ge"), meta.get("gt")
    if ge is None and gt is None:
        return
    le = meta.get("le")
    bound = f">= {ge:g}" if ge is not None else f"> {gt:g}"
    if le is not None:
        bound += f" and <= {le:.0f}" if meta.get("integer") else f" and <= {le:g}"
    allowed = f"an integer {bound}" if meta.get("integer") else bound
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (meta.get("integer")
                                                                          and not isinstance(value, int)):
        raise out_of_range(name, value, allowed)
    if (ge is not None and not value >= ge) or (gt is not None and not value > gt) or (le is not None
                                                                                        and not value <= le):
        raise out_of_range(name, value, allowed)


def check_field(node: Any, schema: type, name: str) -> None:
    """Check one field of ``node`` (see ``check``)."""
    f = next(f for f in fields(schema) if f.name == name)
    _check_value(name, node.get(name, f.default) if hasattr(node, "get") else getattr(node, name), f.metadata)


def check(node: Any, schema: type, prefix: str = "") -> None:
    """Check the ranges and names ``schema`` declares on ``node`` (a composed config section or a
    mapping), recursing into nested schemas; raise ``ConfigError`` naming the first bad field.
    A key the schema does not have is refused too: Hydra appends one given with ``+``
    (``+train.stpes=100``) to a typed section without a word, and nothing would read it."""
    if hasattr(node, "keys"):
        known = {f.name for f in fields(schema)}
        for key in node.keys():
            if key not in known:
                raise unknown_name("key", f"{prefix}{key}", known)
    for f in fields(schema):
        value = node.get(f.name) if hasattr(node, "get") else getattr(node, f.name, None)
        name = f"{prefix}{f.name}"
        nested = f.type if isinstance(f.type, type) else _SCHEMAS.get(str(f.type))
        if nested is not None and is_dataclass(nested) and value is not None:
            check(value, nested, f"{name}.")
        elif f.metadata:
            _check_value(name, value, f.metadata)
    extra = getattr(schema, "check_more", None)
    if extra is not None:
        extra(node, prefix)


# ------------------------------------------------------------------------------------ env group
@dataclass
class RewardConfig:
    """``env.reward``: the reward preset and its weights (``envs.rewards.RewardSpec``)."""

    name: str = RewardSpec.name
    alpha: float = RewardSpec.alpha
    beta: float = RewardSpec.beta
    gamma: float = RewardSpec.gamma
    thr_norm_mbps: float = RewardSpec.thr_norm_mbps
    rtt_norm_ms: float = RewardSpec.rtt_norm_ms
    time_norm_s: float = RewardSpec.time_norm_s
    credit: float = RewardSpec.credit
    inorder: bool = RewardSpec.inorder
    per_ms: float = RewardSpec.per_ms
    rate_mbps: float = RewardSpec.rate_mbps


@dataclass
class EnvConfig:
    """``configs/env``: simulator (``SimConfig``), decision mode (``DecisionSpec``), observation
    (``envs.features``) and reward (``RewardSpec``) of an environment."""

    dt_ms: float = SimConfig.dt_ms
    mss: int | None = SimConfig.mss  # None: the stack's packet (envs/sim/stacks.py packet_bytes)
    max_duration_s: float = SimConfig.max_duration_s
    ooo_limit_bytes: float = SimConfig.ooo_limit_bytes
    end_on_ooo: bool = SimConfig.end_on_ooo
    record_bin_ms: float = SimConfig.record_bin_ms
    # the transport stack the simulator imitates (envs/sim/stacks.py); the stack config group
    # (configs/stack/, ``stack=linux``) sets it
    stack: str = setting(SimConfig.stack, one_of=STACKS)
    decision: str = DecisionSpec.mode
    interval_ms: float = DecisionSpec.interval_ms
    modes: list[Any] | None = None  # None: DecisionSpec's default modes (minrtt, rr)
    observation: str = "peekaboo"  # a feature set of envs.features
    reward: RewardConfig = field(default_factory=RewardConfig)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> EnvConfig:
        """The settings given as keyword arguments (``build_process``, ``gym.make``): the fields
        above, with ``reward`` a preset name or a mapping and ``reward_params`` its weights."""
        names = [f.name for f in fields(cls)]
        for key in kwargs:
            if key not in names and key != "reward_params":
                raise unknown_name("environment setting", key, [*names, "reward_params"])
        reward = kwargs.pop("reward", None)
        reward = dict(reward) if isinstance(reward, Mapping) else ({} if reward is None else {"name": reward})
        reward.update(kwargs.pop("reward_params", None) or {})
        rnames = [f.name for f in fields(RewardConfig)]
        for key in reward:
            if key not in rnames:
                raise unknown_name("reward setting", key, rnames)
        return cls(**kwargs, reward=RewardConfig(**reward))

    def sim_config(self) -> SimConfig:
        return SimConfig(dt_ms=_number("dt_ms", self.dt_ms), mss=None if self.mss is None else _integer("mss", self.mss),
                         max_duration_s=_number("max_duration_s", self.max_duration_s),
                         ooo_limit_bytes=_number("ooo_limit_bytes", self.ooo_limit_bytes),
                         end_on_ooo=_flag("end_on_ooo", self.end_on_ooo),
                         record_bin_ms=_number("record_bin_ms", self.record_bin_ms), stack=str(self.stack))

    def decision_spec(self) -> DecisionSpec:
        if self.modes is not None and (isinstance(self.modes, (str, Mapping)) or not isinstance(self.modes, Iterable)):
            raise out_of_range("modes", self.modes, "a list of modes, e.g. [minrtt, rr]")
        modes = tuple(self.modes) if self.modes is not None else DecisionSpec.modes  # [] is refused there
        return DecisionSpec(self.decision, _number("interval_ms", self.interval_ms), modes)

    def reward_spec(self) -> RewardSpec:
        r = self.reward
        w = {k: _number(f"reward.{k}", getattr(r, k)) for k in ("alpha", "beta", "gamma", "thr_norm_mbps",
                                                                "rtt_norm_ms", "time_norm_s", "credit", "per_ms",
                                                                "rate_mbps")}
        return RewardSpec(name=r.name, inorder=_flag("reward.inorder", r.inorder), **w)

    @staticmethod
    def check_more(node: Any, prefix: str) -> None:
        """Ranges of the objects the settings build (their own checks, named under ``env.``)."""
        from envs.features import feature_set
        from envs.sim.simulator import MAX_PATHS

        env = env_config(node)
        try:
            env.sim_config(), env.decision_spec(), env.reward_spec()
            feature_set(env.observation, MAX_PATHS)
        except ConfigError as err:  # "dt_ms must be ..." as "env.dt_ms must be ..."
            text = str(err)
            raise ConfigError(f"{prefix.rstrip('.')}: {text}" if text.startswith("unknown ") else f"{prefix}{text}") \
                from None


def _number(name: str, value: Any) -> float:
    """``value`` as a float (a number, or a string of one as ``gym.make`` may be given), else a
    ConfigError naming the setting (``float('fast')`` would end in a ValueError of no name)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise out_of_range(name, value, "a number") from None


def _integer(name: str, value: Any) -> int:
    """``value`` as an int; a fraction is refused, not cut (``int(1448.5)`` is 1448)."""
    number = _number(name, value)
    if not number.is_integer():
        raise out_of_range(name, value, "an integer")
    return int(number)


def _flag(name: str, value: Any) -> bool:
    """``value`` as a bool: true or false only (``bool('false')`` is True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise out_of_range(name, value, "true or false")
    return bool(value)


def env_config(node: Any) -> EnvConfig:
    """The ``env`` section of a composed config (or a plain mapping) as ``EnvConfig``."""
    from omegaconf import OmegaConf

    if isinstance(node, EnvConfig):
        return node
    plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    if not isinstance(plain, Mapping):
        raise ConfigError(f"env must be a mapping of settings, got {plain!r}")
    return EnvConfig.from_kwargs(**{str(k): v for k, v in plain.items()})


# --------------------------------------------------------------------- train, mlflow, live, tune
SELECTIONS = ("last", "validation")


@dataclass
class RandomiseSettings:
    """``train.randomise.*``: domain randomisation of the training scenarios (``envs.randomisation``):
    each episode draws every path's value from ``[lo, hi]`` around the scenario's (factors multiply
    it, ``*_ms`` ranges add to it, clipped at 0), and a stack from ``stacks`` with its profile's
    constants x ``stack_factor``; ``[1, 1]`` (``[0, 0]``) leaves a field alone."""

    enabled: bool = False
    bandwidth_factor: list[float] = field(default_factory=lambda: [1.0, 1.0])  # x bandwidth_mbps
    delay_factor: list[float] = field(default_factory=lambda: [0.8, 1.25])  # x delay_ms (and reverse_delay_ms)
    jitter_add_ms: list[float] = field(default_factory=lambda: [-1.0, 1.0])  # + jitter_ms (std, ms)
    loss_factor: list[float] = field(default_factory=lambda: [0.5, 2.0])  # x loss_pct
    queue_factor: list[float] = field(default_factory=lambda: [0.5, 2.0])  # x queue_bdp or queue_packets
    # x each loss-detection, timer and CC constant of the stack profile (envs.randomisation.STACK_CONSTANTS)
    stack_factor: list[float] = field(default_factory=lambda: [0.8, 1.25])
    stacks: list[str] = field(default_factory=list)  # the stacks drawn per episode ([]: env.stack alone)

    @staticmethod
    def check_more(node: Any, prefix: str) -> None:
        """Each range is ``[lo, hi]`` with lo <= hi; factors > 0; ``stacks`` names stacks (also
        while ``enabled`` is false: a typo is refused, not kept for the day it is turned on)."""
        stacks: Any = node.get("stacks") if hasattr(node, "get") else getattr(node, "stacks", None)
        for name in stacks or ():
            if name not in STACKS:
                raise unknown_name(f"{prefix}stacks entry", name, STACKS)
        for f in fields(RandomiseSettings):
            if f.name in ("enabled", "stacks"):
                continue
            value = node.get(f.name) if hasattr(node, "get") else getattr(node, f.name)
            pair = list(value) if value is not None and not isinstance(value, str) else None
            factor = f.name.endswith("_factor")
            ok = (pair is not None and len(pair) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                               for x in pair) and pair[0] <= pair[1]
                  and (not factor or pair[0] > 0))
            if not ok:
                raise out_of_range(f"{prefix}{f.name}", pair if pair is not None else value,
                                   "[lo, hi] with 0 < lo <= hi" if factor else "[lo, hi] with lo <= hi")


@dataclass
class TrainSettings:
    """``train.*`` of ``train.py`` (a trial's budget in ``tune.py``)."""

    steps: int = setting(60000, ge=1, integer=True)  # environment transitions, summed over the parallel connections
    n_envs: int = setting(8, ge=1, integer=True)  # connections simulated side by side (one compiled batch)
    eval_every: int = setting(20000, ge=0, integer=True)  # compare with minRTT during training (0: never)
    eval_runs: int = setting(10, ge=1, integer=True)  # runs (seeds) of the final comparison with minRTT
    checkpoint_every: int = setting(10000, ge=0, integer=True)  # 0: only at the end
    resume: str | None = None  # a checkpoint directory to continue from
    torch_threads: int = setting(1, ge=1, integer=True)  # small networks train fastest on one thread
    randomise: RandomiseSettings = field(default_factory=RandomiseSettings)
    # last: the agent as training ends | validation: the periodic evaluation (eval_every) that scores best on
    # validation_runs held-out (randomised, with train.randomise) episodes per scenario and CC, as best/
    select: str = setting("last", one_of=SELECTIONS)
    validation_runs: int = setting(16, ge=1, integer=True)


@dataclass
class MlflowSettings:
    """``mlflow.*``: where runs are recorded."""

    tracking_uri: str | None = None  # None: MLflow's local default store; or http://host:5000
    experiment: str = setting("mpsched", matches=(r".*\S.*", "a name that is not blank"))
    run_name: str | None = None  # None: <agent>-<ccs> (train.py)
    # nest the run under another (tune.py sets it for its trials)
    parent_run_id: str | None = setting(None, matches=(r"[0-9a-f]{32}", "an MLflow run id (32 hexadecimal digits)"))


LIVE_BACKENDS = ("mptcp", "xquic")
EMULATIONS = ("auto", "delayline", "netem")


@dataclass
class LiveOptions:
    """``live.*`` (``configs/live/default.yaml``): options of live runs (``evaluate.py backend=live``)."""

    backend: str = setting("mptcp", one_of=LIVE_BACKENDS)  # kernel MPTCP (its own scheduler) | xquic (needs bindings/)
    policy: str | None = None  # xquic with scheduler=policy: an exported policy header (python -m export)
    emulation: str = setting("auto", one_of=EMULATIONS)  # auto: netem where the kernel has it, else the delay line
    telemetry_ms: float = setting(10.0, gt=0)  # sender telemetry (per-subflow tcp_info) sampling interval
    verify: bool = True  # measure RTT, jitter, rate and loss of every path before running; refuse on a miss
    verify_every_run: bool = False  # verify again before each further run on the same testbed
    verify_attempts: int = setting(3, ge=1, integer=True)  # testbeds built before a failed verification refuses the run
    retries: int = setting(2, ge=0, integer=True)  # re-runs of a transfer whose MPTCP connection fell back to TCP
    mss: int = setting(1448, ge=500, integer=True)  # payload bytes per packet (queue_bdp to packets, as the simulator)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> LiveOptions:
        m = dict(m or {})
        unknown = sorted(set(m) - {f.name for f in fields(cls)})
        if unknown:
            from envs.live.system import LiveError

            raise LiveError(f"unknown live option(s) {', '.join(unknown)}; valid: "
                            f"{', '.join(f.name for f in fields(cls))}")
        opts = cls(**m)
        check(opts, cls, "live.")
        return opts


OBJECTIVES = ("goodput", "cc_robust")
TUNE_SCHEDULERS = ("asha", "fifo")


@dataclass
class ObjectiveSettings:
    name: str = setting("goodput", one_of=OBJECTIVES)  # goodput: mean over scenarios and CCs | cc_robust: worst CC
    ccs: list[str] = field(default_factory=lambda: ["reno", "cubic", "bbr", "bbr2"])  # cc_robust's CCs
    runs: int = setting(5, ge=1, integer=True)  # episodes per scenario and CC behind each cc_robust evaluation


@dataclass
class TuneSchedulerSettings:
    name: str = setting("asha", one_of=TUNE_SCHEDULERS)  # asha: early stopping | fifo: every trial runs its budget
    grace_steps: int = setting(5000, ge=1, integer=True)  # no trial stops before this many environment steps
    reduction_factor: float = setting(3, gt=1)  # ASHA keeps the best 1/reduction_factor at each rung


@dataclass
class TuneSettings:
    """``tune.*`` of ``tune.py``."""

    name: str | None = None  # the sweep's directory in storage_path; None: <agent>-<date>-<time>
    storage_path: str = "ray_results"  # a shared filesystem or s3://... when trials run on several nodes
    resume: bool = False  # continue an interrupted sweep (tune.name, or the newest of this agent)
    num_samples: int = setting(8, ge=1, integer=True)  # draws from the search space (times any grid's size)
    cpus_per_trial: float = setting(1, gt=0)  # Ray CPUs per trial: concurrent trials = CPUs / cpus_per_trial
    max_failures: int = setting(0, ge=0, integer=True)  # retries of a crashed trial
    objective: ObjectiveSettings = field(default_factory=ObjectiveSettings)
    scheduler: TuneSchedulerSettings = field(default_factory=TuneSchedulerSettings)
    space: dict[str, Any] = field(default_factory=dict)  # configs/tune/<agent>.yaml: key path -> {distribution: args}


@dataclass
class RaySettings:
    address: str | None = None  # host:port or ray://host:10001; None: $RAY_ADDRESS, else local
    num_cpus: int | None = setting(None, ge=1, integer=True)  # local Ray: CPUs to use (None: all)


STUDY_TASKS = ("auto", "always", "never")


@dataclass
class StudyRaySettings(RaySettings):
    """``ray.*`` of ``evaluate.py study=...``: where a study's tasks run (``studies/tasks.py``)."""

    max_retries: int = setting(2, ge=0, integer=True)  # re-runs of a task whose worker died (not of one that raised)
    # auto: Ray where a study trains or evaluates learned agents (or on a cluster), a heuristics-only study in
    # this process (its batched cells take less than Ray's start); always | never
    tasks: str = setting("auto", one_of=STUDY_TASKS)


SEED_MAX = 2**32 - 1 - EVAL_SEED_OFFSET  # numpy's legacy seeding takes 32 bits; evaluation adds its offset


# ------------------------------------------------------------------------- top-level configs
@dataclass
class CommonConfig:
    """Keys of every entry point; ``scenario``, ``cc``, ``workload`` are config groups (checked by
    ``envs.config`` when read)."""

    seed: int = setting(0, ge=0, le=SEED_MAX, integer=True)
    scenario_file: str | None = None  # your own scenario YAML instead of the scenario group
    duration_s: float | None = setting(None, gt=0)  # override every scenario's workload: bulk of this length
    file_mb: float | None = setting(None, gt=0)  # ... or a file of this many MB (with duration_s: a time cap)
    scenario: Any = None
    cc: Any = None
    workload: Any = None
    env: EnvConfig = field(default_factory=EnvConfig)
    mlflow: MlflowSettings = field(default_factory=MlflowSettings)


AGENT_KEYS = ("name", "kind", "algorithm", "hyperparams", "params")  # an agent preset's keys (configs/agent/)


@dataclass
class TrainConfig(CommonConfig):
    """``configs/train.yaml`` (``train.py``)."""

    agent: Any = None  # configs/agent: the keys of AGENT_KEYS (the agent's own ``hyperparams`` and ``params`` it checks)
    train: TrainSettings = field(default_factory=TrainSettings)

    @staticmethod
    def check_more(node: Any, prefix: str) -> None:
        agent: Any = node.get("agent") if hasattr(node, "get") else None
        for key in agent.keys() if hasattr(agent, "keys") else ():
            if key not in AGENT_KEYS:
                raise unknown_name("key", f"{prefix}agent.{key}", AGENT_KEYS)


@dataclass
class TuneConfig(TrainConfig):
    """``configs/tune.yaml`` (``tune.py``): a training config plus the sweep's settings; a trial's
    training budget is smaller than ``train.py``'s."""

    train: TrainSettings = field(default_factory=lambda: TrainSettings(
        steps=20000, eval_every=5000, eval_runs=5, checkpoint_every=0))  # every evaluation reports to Ray
    tune: TuneSettings = field(default_factory=TuneSettings)
    ray: RaySettings = field(default_factory=RaySettings)


FORMATS = ("table", "json")
EVAL_BACKENDS = ("sim", "live")


@dataclass
class EvaluateConfig(CommonConfig):
    """``configs/evaluate.yaml`` (``evaluate.py``): every key it accepts."""

    scheduler: Any = "minrtt"  # a heuristic; a list (heuristics or checkpoints) makes a study
    scheduler_params: dict[str, Any] = field(default_factory=dict)
    runs: int = setting(10, ge=1, integer=True)  # independent runs (seeds seed..seed+runs-1)
    format: str = setting("table", one_of=FORMATS)
    metrics: Any = None  # metrics to print, e.g. [goodput_mbps,rebuffer_s]; None: all that apply
    window_s: float = setting(1.0, gt=0)  # window of throughput_mean_mbps / throughput_var_mbps2
    # studies
    study: Any = None  # configs/study
    metric: str = "goodput_mbps"  # the study's score (a study file may set its own)
    workers: int = setting(2, ge=1, integer=True)  # processes evaluating cells (and training agents) side by side
    agents_dir: str | None = None  # where a study trains and caches agents; None: <output dir>/agents
    headroom: Any = None  # true or {search_runs, samples}: search a scheduler family per cell (studies/headroom.py)
    ray: StudyRaySettings = field(default_factory=StudyRaySettings)  # where a study's tasks run
    # live runs (README "Live runs")
    backend: str = setting("sim", one_of=EVAL_BACKENDS,  # live: run on the live testbed (live.backend's transport)
                           hint="(the live transport is live.backend: mptcp or xquic)")
    compare: Any = None  # [sim,live]: the simulator and the live testbed side by side
    transport: str | None = setting(None, one_of=LIVE_BACKENDS)  # short for live.backend
    live: LiveOptions = field(default_factory=LiveOptions)


_SCHEMAS: dict[str, type] = {c.__name__: c for c in (
    RewardConfig, EnvConfig, RandomiseSettings, TrainSettings, MlflowSettings, LiveOptions, ObjectiveSettings, TuneSchedulerSettings,
    TuneSettings, RaySettings, StudyRaySettings)}


def register() -> None:
    """Store the schemas in Hydra's ConfigStore under the names the YAML defaults lists use."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for name, node in (("train", TrainConfig), ("evaluate", EvaluateConfig), ("tune", TuneConfig)):
        cs.store(group="schema", name=name, node=node, package="_global_")
    cs.store(group="env", name="schema", node=EnvConfig)
    cs.store(group="live", name="schema", node=LiveOptions)
