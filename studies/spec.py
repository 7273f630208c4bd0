"""What a study is: schedulers x scenarios x CCs x runs, read from ``configs/study/*.yaml``
(``evaluate.py study=ispras``) or from evaluate.py's command-line lists
(``scheduler=[minrtt,rr] scenario=[ispras_s1,ispras_s2] cc=[cubic,bbr]``), and checked in full
before any work starts: every name, every checkpoint, every training config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from agents import checkpoint
from envs import config
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.metrics import ALL_METRICS, LOWER_IS_BETTER
from envs.plugins import cc_params, scheduler_names, scheduler_params
from envs.scenario import Scenario, load_scenario
from envs.sim import stacks
from envs.sim.simulator import SimConfig

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
HEURISTIC, CHECKPOINT, TRAIN = "heuristic", "checkpoint", "train"
ENTRY_KEYS = ("label", "scheduler", "params", "checkpoint", "train")
CHECKPOINT_FORMS = "a checkpoint directory, runs:/<run_id>/checkpoint or mlflow:<run_id>"


@dataclass
class Entry:
    """One scheduler of a study: a heuristic (``scheduler`` + ``params``), a checkpoint
    (``source``: a directory or an MLflow reference) or an agent the study trains (``train``:
    train.py overrides), once per training seed (``study.seeds``). ``checkpoints`` are the local
    checkpoint directories once known, one per seed of ``seeds``."""

    label: str
    kind: str
    scheduler: str = ""
    params: dict[str, float] = field(default_factory=dict)
    source: str = ""
    train: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # the training seed of each checkpoint
    train_yamls: list[str] = field(default_factory=list)  # a TRAIN entry's composed config per seed
    meta: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # why the entry has no checkpoint (its training failed): reported in its cells

    @property
    def checkpoint(self) -> str:
        """The first seed's checkpoint directory ("" while unknown)."""
        return self.checkpoints[0] if self.checkpoints else ""

    @property
    def train_yaml(self) -> str:
        """The first seed's training config ("" unless trained here)."""
        return self.train_yamls[0] if self.train_yamls else ""


@dataclass
class Study:
    name: str
    schedulers: list[Entry]
    scenarios: list[Scenario]
    ccs: dict[str, dict[str, float]]
    runs: int
    seed: int
    seeds: int  # training seeds per learner the study trains
    metric: str
    higher_is_better: bool
    sim: SimConfig
    workers: int
    agents_dir: Path
    mlflow: dict[str, Any]
    ray: dict[str, Any]  # where the tasks run (agents.cluster) and max_retries of a task whose worker died
    headroom: dict[str, int] | None = None  # search_runs, samples (studies.headroom); None: no search

    @property
    def learned(self) -> list[Entry]:
        return [e for e in self.schedulers if e.kind != HEURISTIC]


def wanted(cfg: DictConfig) -> bool:
    """Whether evaluate.py's request is a study: ``study=``, a list in scheduler/scenario/cc, or a
    checkpoint as the scheduler (evaluated with its policy diagnostics)."""
    scheduler = cfg.get("scheduler")
    return (cfg.get("study") is not None or OmegaConf.is_list(scheduler)
            or (isinstance(scheduler, str) and scheduler not in scheduler_names() and is_checkpoint_ref(scheduler))
            or len(cfg.get("scenario") or {}) > 1 or len(cfg.get("cc") or {}) > 1)


# evaluate.py's own keys that a study file sets in its own words: with study=<name>, the file's value is read
SET_BY_STUDY = {"scheduler": "schedulers", "scenario": "scenarios", "cc": "ccs", "runs": "runs", "metric": "metric",
                "headroom": "headroom"}
STUDY_ONLY = ("headroom", "workers", "agents_dir", "metric", "ray")  # evaluate.py's keys only a study reads
# env keys evaluate.py never reads: a heuristic observes nothing, a checkpoint keeps its own (its config.yaml),
# a learner trained in a study takes the study's train_overrides
POLICY_ENV = ("env.observation", "env.decision", "env.interval_ms", "env.modes", "env.reward")


def check_overrides(cfg: DictConfig, overrides: list[str]) -> None:
    """Refuse a command-line override (Hydra's ``overrides.task``) that would be left unread: with
    a study file, one the file sets in its own words (``runs=2 study=headroom`` ran the file's 10
    runs without a word), naming the study's key to override instead (``study.runs=2``); without
    a study, one only a study reads (``headroom=true scheduler=ecf``)."""
    given_keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides]
    for key in given_keys:
        if key == "transport" or key.startswith("live."):  # this is the simulator side (evaluate.py's live one returned)
            raise ConfigError(f"{key}= is read by live runs only (backend=live, or compare=[sim,live]); this run is "
                              "simulated (its stack: stack=xquic|linux)")
        if any(key == k or key.startswith(k + ".") for k in POLICY_ENV):
            raise ConfigError(f"{key}= is not read by evaluate.py: a checkpoint is evaluated with the observation, "
                              "decision and reward it was trained with, a heuristic observes nothing, and a learner "
                              "a study trains takes its train_overrides (study.train_overrides=[...])")
    keys = [key.split(".", 1)[0] for key in given_keys]
    if not wanted(cfg):
        for key in keys:
            if key in STUDY_ONLY:
                raise ConfigError(f"{key}= is read by studies only (study=<name>, or lists of schedulers, "
                                  "scenarios or CCs); this evaluates one scheduler in one cell")
        return
    node = cfg.get("study")
    if node is None:
        return
    given = config.plain(node)
    for key in keys:
        own = SET_BY_STUDY.get(key)
        if own is not None and own in given:
            shown = repr(given[own]) if len(repr(given[own])) <= 60 else repr(given[own])[:56] + " ..."
            raise ConfigError(f"{key}= is not read with study={given.get('name', '?')}, whose file sets {own}: "
                              f"{shown}; override that instead: study.{own}=...")


def from_config(cfg: DictConfig, out_dir: Path) -> Study:
    """The study ``cfg`` asks for, fully validated (MLflow checkpoints are downloaded into
    ``agents_dir`` here, so that their interface can be checked)."""
    node = cfg.get("study")
    given = config.plain(node) if node is not None else {}
    if not isinstance(given, dict):
        raise ConfigError(f"study must be a mapping (a file in configs/study), got {given!r}")
    unknown = sorted(set(given) - {"name", "metric", "higher_is_better", "runs", "seeds", "scenarios", "ccs",
                                   "schedulers", "train_overrides", "description", "headroom", "stack"})
    if unknown:
        raise ConfigError(f"study has unknown keys {', '.join(unknown)}; valid: name, metric, higher_is_better, "
                          "runs, seeds, scenarios, ccs, schedulers, train_overrides, description, headroom, stack")
    # the stack a study file names (its CCs may need it: MPTCP-TUT's coupled CCs are Linux's) wins
    sim = config.sim_config(cfg.env)
    if given.get("stack") is not None:
        sim = dataclasses.replace(sim, stack=str(given["stack"]))
    if node is not None:
        if config.plain(cfg.get("scheduler_params")):
            raise ConfigError("scheduler_params is for one scheduler; in a study give "
                              "{label, scheduler, params} entries")
        scenarios = config.with_workload([load_scenario(str(n)) for n in _names(given, "scenarios")], cfg)
        ccs = _ccs(given.get("ccs"))
        items = _names(given, "schedulers")
    else:
        scenarios, ccs = config.scenarios(cfg), config.ccs(cfg)
        if config.plain(cfg.get("scheduler_params")) and OmegaConf.is_list(cfg.scheduler):
            raise ConfigError("scheduler_params is for one scheduler; in a study give "
                              "{label, scheduler, params} entries in a configs/study file")
        items = config.plain(cfg.scheduler)
        items = items if isinstance(items, list) else [items]
        if not items:
            raise ConfigError("scheduler: the list is empty; give at least one, e.g. scheduler=[minrtt,rr]")
    for cc, params in ccs.items():
        cc_params(cc, params)  # unknown CC or parameter: lists the valid ones
    stacks.check_ccs(sim.stack, ccs)
    runs = given.get("runs", cfg.runs)
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise out_of_range("runs", runs, "an integer >= 1")
    config.validate(cfg)  # evaluate.yaml's ranges (workers, ray, ...): envs/schema.py EvaluateConfig
    seeds = given.get("seeds", 1)
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise out_of_range("study.seeds", seeds, "an integer >= 1")
    workers = int(cfg.workers)
    ray_cfg = config.plain(cfg.get("ray")) or {}
    metric = given.get("metric") or cfg.metric
    if metric not in ALL_METRICS:
        raise unknown_name("metric", metric, ALL_METRICS)
    higher = given.get("higher_is_better")
    agents_dir = Path(cfg.get("agents_dir") or out_dir / "agents").absolute()  # the same for every task
    mlflow_cfg = config.plain(cfg.get("mlflow")) or {}
    study = Study(str(given.get("name") or "study"), [], scenarios, ccs, runs, int(cfg.seed), seeds, metric,
                  metric not in LOWER_IS_BETTER if higher is None else bool(higher), sim,
                  workers, agents_dir, mlflow_cfg, ray_cfg)
    study.headroom = _headroom(given.get("headroom", cfg.get("headroom")))
    common = [f"env.stack={sim.stack}", *(str(o) for o in given.get("train_overrides") or [])]
    study.schedulers = [parse_entry(item, common, study) for item in items]
    for entry in study.schedulers:
        if entry.kind == CHECKPOINT:
            _check_fits_some(entry, scenarios)
    labels = [e.label for e in study.schedulers]
    repeated = sorted({x for x in labels if labels.count(x) > 1})
    if repeated:
        raise ConfigError(f"schedulers: repeated label(s) {', '.join(repeated)}; give each entry its own label")
    return study


def _check_fits_some(entry: Entry, scenarios: list[Scenario]) -> None:
    """Refuse, before any work, a checkpoint that acts in none of the study's scenarios (each of
    its cells would end in the interface error of ``agents.checkpoint.check_compatible``): its
    policy takes a fixed number of paths. One that fits some is measured there and reports the
    others as n/a. A scenario that draws its path count (``n_paths``) is decided when it runs."""
    trained = entry.meta.get("n_paths")
    counts = {sc.name: sc.fixed_paths for sc in scenarios}
    if trained is None or None in counts.values():
        return
    if trained not in counts.values():
        shown = ", ".join(f"{name} {n}" for name, n in counts.items())
        raise ConfigError(f"checkpoint {entry.source} ({entry.label}) acts on {trained} paths; no scenario of this "
                          f"run has {trained} (paths: {shown}): give scenarios with {trained} paths or another "
                          "checkpoint")


def _headroom(value: Any) -> dict[str, int] | None:
    """``headroom: true`` (search with the defaults), ``{search_runs: 5, samples: 0}``, or off."""
    if value is None or value is False:
        return None
    out = {"search_runs": 5, "samples": 0}
    if value is not True:
        if not isinstance(value, dict) or set(value) - set(out):
            raise ConfigError(f"headroom: give true or a mapping with search_runs, samples; got {value!r}")
        out.update(value)
    for key, v in out.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < (1 if key == "search_runs" else 0):
            raise out_of_range(f"headroom.{key}", v, f"an integer >= {1 if key == 'search_runs' else 0}")
    return out


def _names(given: dict, key: str) -> list:
    value = given.get(key)
    if not isinstance(value, list) or not value:
        raise ConfigError(f"study.{key}: give a non-empty list, got {value!r}")
    return value


def _ccs(value: Any) -> dict[str, dict[str, float]]:
    """``[cubic, bbr]`` or ``{bbr: {params: {...}}}``."""
    if isinstance(value, list) and value:
        return {str(name): {} for name in value}
    if isinstance(value, dict) and value:
        return {str(name): dict((spec or {}).get("params") or {}) for name, spec in value.items()}
    raise ConfigError(f"study.ccs: give a non-empty list of CCs, got {value!r}")


def parse_entry(item: Any, train_overrides: list[str], study: Study) -> Entry:
    """One scheduler entry: a heuristic's name, a checkpoint reference, or a mapping with
    ``label`` and one of ``scheduler`` (+ ``params``), ``checkpoint``, ``train``."""
    if isinstance(item, str):
        if item in scheduler_names():
            return Entry(item, HEURISTIC, scheduler=item)
        if is_checkpoint_ref(item):
            return resolve_checkpoint(Entry("", CHECKPOINT, source=item), study)
        raise ConfigError(f"{unknown_name('scheduler', item, scheduler_names())} (or {CHECKPOINT_FORMS})")
    if not isinstance(item, dict):
        raise ConfigError(f"scheduler entry must be a name or a mapping, got {item!r}")
    bad = sorted(set(item) - set(ENTRY_KEYS))
    kinds = [k for k in ("scheduler", "checkpoint", "train") if item.get(k)]
    if bad or len(kinds) != 1:
        raise ConfigError(f"scheduler entry {item!r}: give a label and exactly one of scheduler (with params), "
                          f"checkpoint or train" + (f"; unknown keys {', '.join(bad)}" if bad else ""))
    label = str(item.get("label") or "")
    if kinds[0] == "scheduler":
        name = str(item["scheduler"])
        params = dict(item.get("params") or {})
        scheduler_params(name, params)  # unknown name or parameter: lists the valid ones
        return Entry(label or name, HEURISTIC, scheduler=name, params=params)
    if item.get("params"):
        raise ConfigError(f"scheduler entry {label or item!r}: params belong to heuristics")
    if kinds[0] == "checkpoint":
        return resolve_checkpoint(Entry(label, CHECKPOINT, source=str(item["checkpoint"])), study)
    if not label:
        raise ConfigError(f"scheduler entry {item!r}: a trained agent needs a label")
    overrides = item["train"]
    if not isinstance(overrides, list):
        raise ConfigError(f"scheduler entry {label}: train takes a list of train.py overrides, got {overrides!r}")
    return prepare_training(Entry(label, TRAIN, train=[*train_overrides, *map(str, overrides)]), study)


def is_checkpoint_ref(text: str) -> bool:
    return text.startswith(("runs:/", "mlflow:")) or "/" in text or Path(text).exists()


def resolve_checkpoint(entry: Entry, study: Study) -> Entry:
    """A local checkpoint directory for ``entry.source`` (MLflow artifacts are downloaded), its
    metadata read, and a label from it when none was given."""
    source = entry.source
    if source.startswith(("runs:/", "mlflow:")):
        import mlflow
        if study.mlflow.get("tracking_uri"):
            mlflow.set_tracking_uri(study.mlflow["tracking_uri"])
        uri = source if source.startswith("runs:/") else f"runs:/{source.removeprefix('mlflow:')}/checkpoint"
        dst = study.agents_dir / "downloads" / uri.removeprefix("runs:/").replace("/", "_")
        dst.mkdir(parents=True, exist_ok=True)
        try:
            local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(dst))
        except Exception as err:  # MLflow raises several types for a missing run or artifact
            raise ConfigError(f"cannot fetch checkpoint {source}: {err}") from None
    else:
        local = source
    entry.meta = checkpoint.read_meta(Path(local))
    entry.checkpoints, entry.seeds = [str(local)], [int(entry.meta.get("seed", 0))]
    entry.label = entry.label or f"{entry.meta.get('agent')}_{'+'.join(entry.meta.get('ccs', []))}"
    return entry


def prepare_training(entry: Entry, study: Study) -> Entry:
    """Compose train.py's config for ``entry`` and validate it (agents.training.setup), once per
    training seed (the config's ``seed`` and the ``study.seeds - 1`` after it), fixing where each
    checkpoint will be: ``agents_dir/<label>-<config hash>`` (reused when finished)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from agents.training import setup
    try:
        cfg = compose_train(entry.train)
        if study.mlflow:
            cfg.mlflow.merge_with(study.mlflow)  # the study's tracking store, into the typed section
        first = int(cfg.seed)
        for seed in range(first, first + study.seeds):
            cfg.seed = seed
            s = setup(cfg, study.agents_dir)
            entry.seeds.append(seed)
            entry.train_yamls.append(OmegaConf.to_yaml(cfg, resolve=True))
            entry.checkpoints.append(str(study.agents_dir / f"{entry.label}-{s.config_hash}" / "checkpoint"))
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"scheduler {entry.label}: bad train overrides {entry.train}: {err}") from None
    except ConfigError as err:
        raise ConfigError(f"scheduler {entry.label}: {err}") from None
    entry.meta = {"agent": s.agent_spec.get("name"), "ccs": list(s.ccs), "scenarios": [x.name for x in s.scenarios]}
    return entry


def compose_train(overrides: list[str]) -> DictConfig:
    """train.py's config with ``overrides`` (inside evaluate.py's Hydra app or outside it)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        if GlobalHydra.instance().is_initialized():
            return compose(config_name="train", overrides=overrides)
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            return compose(config_name="train", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:  # cc=bbr9, seed=abc: Hydra's words, as train.py's
        text = str(err).split("\nConfig search path:")[0].rstrip()  # the options, without Hydra's search path
        raise ConfigError(f"train.py {' '.join(overrides)}: {text}") from None
