"""Training runs (``train.py``): build the environment and agent from a composed config, train
with a progress bar, evaluate and checkpoint periodically, track everything in MLflow, and compare
the trained agent with minRTT at the end."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import shlex
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.utils import set_random_seed
from tqdm import tqdm

from agents import checkpoint, tracking
from agents.base import Agent
from agents.diagnostics import DecisionLog, PolicyDiagnostics, format_table
from agents.registry import make_agent
from envs import compilation, config
from envs.errors import ConfigError, Interrupted, sigterm_as_interrupt
from envs.decision import DecisionProcess, mode_labels
from envs.evaluation import EVAL_SEED_OFFSET, evaluate_heuristic
from envs.randomisation import StackDraw, randomise, stack_draw
from envs.schema import TrainSettings
from envs.metrics import DASH_METRICS, ITEM_METRICS, capped, mean_ci, metric_names
from envs.multipath_env import build_process
from envs.scenario import Scenario
from envs.sim.simulator import SimConfig
from envs.vector_env import SB3VecEnv

log = logging.getLogger(__name__)
VALIDATION_SEED_OFFSET = 3_000_000  # validation episodes: neither training, evaluation nor headroom-search seeds


@dataclass
class Setup:
    """Everything a run needs, resolved and validated from the config."""

    scenarios: list[Scenario]
    ccs: dict[str, dict[str, float]]
    env_kwargs: dict[str, Any]
    agent_spec: dict[str, Any]
    seed: int
    steps: int
    n_envs: int
    eval_every: int
    eval_runs: int
    checkpoint_every: int
    out_dir: Path
    config_yaml: str
    sim: SimConfig
    torch_threads: int
    interface: dict[str, Any] = field(default_factory=dict)
    train_scenarios: list[Scenario] = field(default_factory=list)  # the scenarios, randomised with train.randomise
    stack_draw: StackDraw | None = None  # the stack profile drawn per training episode (train.randomise)
    select: str = TrainSettings.select  # which agent a run ends with
    validation_runs: int = TrainSettings.validation_runs
    config_hash: str = ""  # what the run trains (``identity_hash``): a study's or report's agent cache key


# sections of the config that say where a run is logged, not what it trains
NOT_TRAINED = ("mlflow",)


def identity_hash(cfg: DictConfig) -> str:
    """12 hex digits of the resolved config without ``NOT_TRAINED``: the same agent trained into
    another MLflow store or experiment has the same hash, so a study's ``agents_dir`` reuses it."""
    whole = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(whole, dict)  # a config's root is a mapping
    trained = {k: v for k, v in whole.items() if k not in NOT_TRAINED}
    return hashlib.sha256(OmegaConf.to_yaml(trained).encode()).hexdigest()[:12]


def setup(cfg: DictConfig, out_dir: Path) -> Setup:
    config.validate(cfg)
    t = cfg.train
    scenarios = config.scenarios(cfg)
    rnd = t.get("randomise")  # absent from the configs of checkpoints made before it existed
    on = rnd is not None and rnd.enabled
    randomised = [randomise(sc, rnd) for sc in scenarios] if on else scenarios
    ccs = config.ccs(cfg)
    draw = stack_draw(rnd, str(cfg.env.stack), list(ccs)) if on else None
    # absent from the configs of checkpoints made before they existed; a value given is the schema's to check
    select = str(t.get("select", TrainSettings.select))
    if select == "validation" and not t.eval_every:
        raise ConfigError("train.select=validation scores the periodic evaluations: set train.eval_every > 0")
    return Setup(scenarios, ccs, config.env_kwargs(cfg.env), config.plain(cfg.agent),
                 int(cfg.seed), int(t.steps), int(t.n_envs), int(t.eval_every), int(t.eval_runs),
                 int(t.checkpoint_every), out_dir, OmegaConf.to_yaml(cfg, resolve=True), config.sim_config(cfg.env),
                 int(t.torch_threads), train_scenarios=randomised, stack_draw=draw, select=select,
                 validation_runs=int(t.get("validation_runs", TrainSettings.validation_runs)),
                 config_hash=identity_hash(cfg))


def apply_runtime(s: Setup) -> None:
    """Seed every random source and size torch's thread pool (small networks run fastest on one
    thread, leaving the other core to the simulator)."""
    set_random_seed(s.seed)
    torch.set_num_threads(s.torch_threads)


class TimedVecEnv(SB3VecEnv):
    """The training environment, adding up the wall time of its resets and steps (the
    simulator's share of a run, the env's Python around the compiled core included)."""

    seconds = 0.0

    def reset(self) -> np.ndarray:
        start = time.perf_counter()
        try:
            return super().reset()
        finally:
            self.seconds += time.perf_counter() - start

    def step_wait(self):
        start = time.perf_counter()
        try:
            return super().step_wait()
        finally:
            self.seconds += time.perf_counter() - start


def make_env(s: Setup, batch: int, seed: int, scenarios: list[Scenario] | None = None,
             ccs: list[str] | None = None) -> TimedVecEnv:
    return TimedVecEnv(batch, scenario=scenarios or s.train_scenarios or s.scenarios, cc=ccs or list(s.ccs), seed=seed,
                       cc_params=s.ccs, stack_draw=s.stack_draw, **s.env_kwargs)


def interface(s: Setup, process: DecisionProcess, scenarios: list[Scenario]) -> dict[str, Any]:
    """What an agent of this setup needs from the environment of ``process`` on ``scenarios``
    (``agents.checkpoint.INTERFACE``): a checkpoint acts only where this matches its own."""
    fixed = [sc.fixed_paths for sc in scenarios if sc.fixed_paths is not None]
    out = {"agent": s.agent_spec.get("name"), "kind": s.agent_spec.get("kind", "sb3"),
           "observation": s.env_kwargs["observation"], "n_features": len(process.features),
           "n_actions": int(process.n_actions), "n_paths": min(fixed) if fixed else process.sim.P,
           "decision": s.env_kwargs["decision"]}
    if process.decision.mode == "interval":  # what an action means, for the exported header (export/)
        out |= {"modes": mode_labels(process.decision.modes), "interval_ms": float(process.decision.interval_ms)}
    return out


# ---------------------------------------------------------------------------------- evaluation
def evaluate_agent(agent: Agent, s: Setup, scenario: Scenario, cc: str, runs: int, seed: int,
                   stack_draw: StackDraw | None = None) -> dict[str, np.ndarray]:
    """One episode per run with deterministic actions; per-run metrics."""
    return evaluate_policy(agent, s, scenario, cc, runs, seed, stack_draw)[0]


def evaluate_policy(agent: Agent, s: Setup, scenario: Scenario, cc: str, runs: int, seed: int,
                    stack_draw: StackDraw | None = None, cc_params: dict[str, dict[str, float]] | None = None,
                    on_decision: Callable[[np.ndarray, np.ndarray], None] | None = None,
                    ) -> tuple[dict[str, np.ndarray], PolicyDiagnostics]:
    """``evaluate_agent`` plus the policy's diagnostics on the same episodes (action shares,
    agreement with the reference heuristics, warnings: ``agents.diagnostics``). ``cc_params``
    replaces the setup's CC parameters (``s.ccs``); ``on_decision(obs, live)`` sees every
    decision's observations and which connections are still running, before the step."""
    process = build_process(runs, scenario=scenario, cc=cc, seed=seed, cc_params=s.ccs if cc_params is None else cc_params,
                            stack_draw=stack_draw, **s.env_kwargs)
    process.reset()
    log = DecisionLog(process)
    while not process.sim.done.all():
        obs = process.observe()
        if on_decision is not None:
            on_decision(obs, ~process.sim.done)
        actions = agent.act(obs, deterministic=True)
        log.record(actions)
        process.step(actions)
    return process.sim.results(), log.result()


def compare_with_minrtt(agent: Agent, s: Setup, runs: int) -> list[dict[str, Any]]:
    """Rows of (scenario, cc, scheduler, mean and 95% CI of goodput, completion and the
    workload's own metrics, e.g. chunk download time and rebuffering for dash) for the agent
    and minRTT on every training scenario and CC, on the same evaluation seeds. The agent's rows
    carry its ``diagnostics`` (``agents.diagnostics.PolicyDiagnostics``)."""
    rows = []
    name = s.agent_spec.get("name", "agent")
    for scen in s.scenarios:
        names = ("goodput_mbps", "completion_s") + tuple(
            m for m in metric_names(scen.workload) if m in ITEM_METRICS + DASH_METRICS)
        for cc in s.ccs:
            seed = s.seed + EVAL_SEED_OFFSET
            per_run, diagnostics = evaluate_policy(agent, s, scen, cc, runs, seed)
            minrtt = evaluate_heuristic(scen, cc, "minrtt", runs, seed, s.sim, s.ccs.get(cc))
            for label, r in ((name, per_run), ("minrtt", minrtt)):
                row: dict[str, Any] = {"scenario": scen.name, "cc": cc, "scheduler": label, "runs": runs,
                                       "capped": int(capped(scen.workload, r["completion_s"]).sum())}
                for m in names:
                    row[m], row[m.rsplit("_", 1)[0] + "_ci95"] = mean_ci(r[m])
                if label == name:
                    row["diagnostics"] = diagnostics
                rows.append(row)
    return rows


def validation_score(agent: Agent, s: Setup) -> float:
    """Held-out validation (as SB3's ``EvalCallback``, on episodes no training or evaluation uses):
    the agent's goodput over minRTT's on the same ``validation_runs`` episodes of every training
    scenario (randomised as in training, the stack profile too) and CC, averaged over the episodes."""
    ratios = []
    seed = s.seed + VALIDATION_SEED_OFFSET
    sim = replace(s.sim, stack_draw=s.stack_draw)
    for scen in s.train_scenarios or s.scenarios:
        for cc in s.ccs:
            mine = evaluate_agent(agent, s, scen, cc, s.validation_runs, seed, s.stack_draw)["goodput_mbps"]
            base = evaluate_heuristic(scen, cc, "minrtt", s.validation_runs, seed, sim, s.ccs.get(cc))["goodput_mbps"]
            ratios.append(np.asarray(mine) / np.maximum(np.asarray(base), 1e-9))
    return float(np.mean(np.concatenate(ratios)))


def diagnostic_metrics(rows: list[dict[str, Any]], prefix: str) -> dict[str, float]:
    """The agent rows' diagnostics as MLflow metrics ``<prefix>/<scenario>/<cc>/<agent>/diag/...``."""
    out: dict[str, float] = {}
    for r in rows:
        if "diagnostics" in r:
            out.update(r["diagnostics"].metrics(f"{prefix}/{r['scenario']}/{r['cc']}/{r['scheduler']}/diag"))
    return out


_COLUMNS = {"goodput_mbps": "goodput Mbit/s", "completion_s": "completion s", "items_done": "items",
            "download_time_s": "chunk/item time s", "avg_bitrate_mbps": "bitrate Mbit/s", "rebuffer_s": "rebuffer s"}


def format_rows(rows: list[dict[str, Any]]) -> str:
    """Markdown table of ``compare_with_minrtt`` rows: every metric they carry, mean ± 95% CI (a
    row of one run has no CI and says so: ``mean_ci`` gives 0, which would read as a certain value)."""
    metrics = [m for m in _COLUMNS if any(m in r for r in rows)]
    lines = ["| scenario | cc | scheduler | " + " | ".join(f"{_COLUMNS[m]} (95% CI)" for m in metrics) + " |",
             "|---|---|---|" + "---|" * len(metrics)]
    for r in rows:
        cells = []
        for m in metrics:
            v, ci = r.get(m, math.nan), r.get(m.rsplit("_", 1)[0] + "_ci95", math.nan)
            spread = "(one run: no CI)" if r.get("runs", 2) < 2 else f"± {ci:.3f}"
            cells.append("n/a" if math.isnan(v) else f"{v:.3f} {spread}")
        lines.append(f"| {r['scenario']} | {r['cc']} | {r['scheduler']} | " + " | ".join(cells) + " |")
    lines += [f"\n{note}" for note in capped_notes(rows)]
    diag = [r for r in rows if "diagnostics" in r]
    if diag:
        lines += ["", ("Policy diagnostics (same episodes; agreement: the heuristic's answer on the same sender "
                       "state at each decision):"), "",
                  format_table([(r["scheduler"], r["scenario"], r["cc"]) for r in diag],
                               [r["diagnostics"] for r in diag])]
        warned = [f"WARNING {r['scenario']}/{r['cc']}: {w}" for r in diag for w in r["diagnostics"].warnings]
        warned += [note for r in diag if (note := clone_apart(r, rows))]
        lines += [""] + warned if warned else []
    return "\n".join(lines)


def clone_apart(row: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """For an agent row flagged a clone of minRTT whose goodput differs from minRTT's (same
    episodes, ``rows``) by more than the two 95% CIs together: one sentence saying so. Agreement
    counts decisions, not what they move; a few different ones can be the whole difference."""
    if "minrtt" not in row["diagnostics"].clone_of:
        return None
    base = next((r for r in rows if r["scheduler"] == "minrtt" and (r["scenario"], r["cc"]) == (row["scenario"], row["cc"])),
                None)
    if base is None:
        return None
    diff = row["goodput_mbps"] - base["goodput_mbps"]
    if not abs(diff) > row["goodput_ci95"] + base["goodput_ci95"]:
        return None
    return (f"NOTE {row['scenario']}/{row['cc']}: flagged a clone of minrtt, yet its goodput is "
            f"{row['goodput_mbps']:.3f} against minrtt's {base['goodput_mbps']:.3f} ({100 * diff / base['goodput_mbps']:+.1f}%, "
            f"beyond both CIs): the {100 * (1 - row['diagnostics'].agreement['minrtt']):.1f}% of decisions where it "
            "differs carry that")


def capped_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per row whose runs ended at the episode cap before the workload completed."""
    return [f"capped: {r['capped']} of {r['runs']} runs of {r['scheduler']} on {r['scenario']} under {r['cc']} "
            f"ended at the episode cap (env.max_duration_s or the workload's duration_s) before completing; "
            f"their completion time is n/a" for r in rows if r.get("capped")]


# ---------------------------------------------------------------------------------- monitoring
class Tracker:
    """Batches metrics into the run's MLflow run (one write per second at most)."""

    def __init__(self, log: tracking.RunLog | tracking.RunLogProcess) -> None:
        self.log_to = log
        self.pending: list[tuple[str, float, int, int]] = []  # key, value, timestamp (ms), step
        self.last_flush = time.monotonic()

    def log(self, metrics: dict[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        self.pending += [(k, float(v), now, step) for k, v in metrics.items() if np.isfinite(v)]
        if time.monotonic() - self.last_flush > 1.0 or len(self.pending) > 500:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.log_to.log_batch(self.pending)
        self.pending = []
        self.last_flush = time.monotonic()


class Progress:
    """The training monitor: progress bar, per-episode metrics, periodic evaluation and
    checkpoints. ``on_eval(progress, rows)`` (hyperparameter sweeps report to Ray Tune through it)
    runs after every evaluation, with a fresh checkpoint written."""

    def __init__(self, s: Setup, agent: Agent, tracker: Tracker, start_step: int, save,
                 on_eval: EvalHook | None = None, save_best: Callable[[float], None] | None = None) -> None:
        self.s, self.agent, self.tracker, self.save, self.on_eval = s, agent, tracker, save, on_eval
        self.save_best = save_best
        self.best_score, self.best_step = -math.inf, -1  # train.select=validation: the best agent so far
        self.steps = self.start_step = start_step
        self.episodes = 0
        self.returns = np.zeros(s.n_envs)
        self.recent: deque[float] = deque(maxlen=50)
        self.next_eval = start_step + s.eval_every if s.eval_every else math.inf
        self.next_ckpt = start_step + s.checkpoint_every if s.checkpoint_every else math.inf
        self.eval_seconds = 0.0  # periodic evaluations
        budget = agent.budget(start_step, s.steps)  # the bar counts what the agent's budget is
        self.bar = tqdm(total=budget.total, initial=budget.done, unit=budget.unit, dynamic_ncols=True, mininterval=0.5)
        self.last_infos: list[dict] = []

    def on_step(self, n: int, rewards: np.ndarray, infos: list[dict]) -> bool:
        if self.steps == self.start_step:  # the bar's clock starts at the first step, not at the
            self.bar.unpause()              # agent's set-up (SB3 builds its networks in learn)
        self.steps += n
        self.returns += np.asarray(rewards, dtype=float)
        for b, info in enumerate(infos):
            ep = info.get("episode_metrics")
            if ep is not None:
                self.episodes += 1
                self.recent.append(ep["goodput_mbps"])
                self.tracker.log({"episode/goodput_mbps": ep["goodput_mbps"], "episode/return": self.returns[b],
                                  "episode/reorder_max_bytes": ep["reorder_max_bytes"]}, self.steps)
                self.returns[b] = 0.0
        self.last_infos = infos
        if time.time() - self.bar.last_print_t >= self.bar.mininterval:  # the bar is due to print (tqdm's clock)
            self.postfix(infos)
        self.advance()
        final = self.steps >= self.s.steps  # run() evaluates and checkpoints the finished agent itself
        saved = False
        if self.steps >= self.next_eval and not final:
            self.next_eval += self.s.eval_every
            start = time.perf_counter()
            rows = compare_with_minrtt(self.agent, self.s, min(self.s.eval_runs, 5))
            self.eval_seconds += time.perf_counter() - start
            for r in rows:
                self.tracker.log({f"eval/{r['scenario']}/{r['cc']}/{r['scheduler']}/goodput_mbps": r["goodput_mbps"]},
                                 self.steps)
            self.tracker.log(diagnostic_metrics(rows, "eval"), self.steps)
            if self.s.select == "validation":
                self.validate()
            if self.on_eval is not None:
                self.save(finished=False)
                saved = True
                self.on_eval(self, rows)
        if self.steps >= self.next_ckpt and not final:
            self.next_ckpt += self.s.checkpoint_every
            if not saved:  # the evaluation's checkpoint is this step's
                self.save(finished=False)
        return self.steps < self.s.steps

    def log(self, metrics: dict[str, float]) -> None:
        """An agent's own metrics (a policy search's per-generation scores) into the run, at this
        step; the agent logs them where its budget moved (a generation ended), so the bar follows."""
        self.tracker.log(metrics, self.steps)
        self.advance()

    def advance(self) -> None:
        """The bar to the agent's budget as spent now (``Agent.budget``); its total grows to what
        was spent where the last update overshoots it (train.steps not a multiple of
        train.n_envs: the connections step together), so the bar ends at 100%, not without a total."""
        done = self.agent.budget(self.steps, self.s.steps).done
        if self.bar.total is not None and done > self.bar.total:
            self.bar.total = done
        self.bar.update(done - self.bar.n)

    def postfix(self, infos: list[dict]) -> None:
        """The bar's episodes and recent goodput (of finished episodes, or of the running ones
        before any has finished), set where the bar prints (every ``mininterval`` s)."""
        goodput = np.mean(self.recent) if self.recent else np.mean([i["goodput_mbps"] for i in infos])
        self.bar.set_postfix(episodes=self.episodes, goodput=f"{goodput:.1f}Mb/s", refresh=False)

    def validate(self) -> None:
        """Score the agent on the held-out validation episodes; keep it (``save_best``) when it
        beats every earlier score."""
        start = time.perf_counter()
        score = validation_score(self.agent, self.s)
        self.eval_seconds += time.perf_counter() - start
        self.tracker.log({"validation/score": score}, self.steps)
        if score > self.best_score:
            self.best_score, self.best_step = score, self.steps
            if self.save_best is not None:
                self.save_best(score)

    def close(self) -> None:
        self.advance()
        if self.last_infos:
            self.postfix(self.last_infos)  # the final figures on the bar's last line
        self.bar.close()
        self.tracker.flush()


EvalHook = Callable[[Progress, list[dict[str, Any]]], None]


@dataclass
class TimeSplit:
    """Where a run's wall time went, in seconds: ``startup`` from the start (train.py's first
    line, else ``run``'s) to training, ``compile`` of it the simulator core's compilation or cache
    load, ``simulator`` the training env's resets and steps, ``agent`` the rest of training
    (acting, updates, monitoring, checkpoints), ``evaluation`` the comparisons with minRTT
    (periodic and final), ``other`` the rest (saving and logging at the end)."""

    startup: float = 0.0
    compile: float = 0.0
    simulator: float = 0.0
    agent: float = 0.0
    evaluation: float = 0.0
    other: float = 0.0

    @property
    def total(self) -> float:
        return self.startup + self.simulator + self.agent + self.evaluation + self.other

    def metrics(self) -> dict[str, float]:
        """As MLflow metrics (``time/<part>_s``)."""
        return {f"time/{k}_s": v for k, v in {**vars(self), "total": self.total}.items()}

    def __str__(self) -> str:
        return (f"time: start-up {self.startup:.1f} s (of which the simulator core {self.compile:.1f} s), "
                f"simulator {self.simulator:.1f} s, agent updates {self.agent:.1f} s, evaluation "
                f"{self.evaluation:.1f} s, other {self.other:.1f} s; total {self.total:.1f} s")


# ---------------------------------------------------------------------------------- the run
def prepare(cfg: DictConfig, out_dir: Path,
            split: TimeSplit | None = None) -> tuple[Setup, TimedVecEnv, Agent, dict[str, Any]]:
    """The validated setup, environment and agent (new, or from ``train.resume``'s checkpoint
    with its metadata): every bad value, hyperparameter or checkpoint is refused here, before
    anything runs or is tracked. The simulator core compiles here, as its own announced stage
    (its time in ``split.compile``)."""
    s = setup(cfg, out_dir)
    apply_runtime(s)
    env = make_env(s, s.n_envs, s.seed)
    compile_s = compilation.prepare(lambda: build_process(
        1, scenario=s.scenarios[0], cc=next(iter(s.ccs)), seed=s.seed, cc_params=s.ccs, **s.env_kwargs))
    if split is not None:
        split.compile = compile_s
    s.interface = interface(s, env.process, s.scenarios)
    resume = cfg.train.get("resume")
    if not resume:
        return s, env, make_agent(s.agent_spec, s.interface["n_features"], s.interface["n_actions"], s.seed), {}
    agent, meta = checkpoint.load(Path(resume), expect=s.interface)
    if int(meta["steps_done"]) >= s.steps:
        raise ConfigError(f"checkpoint {resume} already finished its {meta['steps_done']} steps "
                          f"(train.steps={s.steps}); raise train.steps to train further")
    return s, env, agent, meta


def run(cfg: DictConfig, out_dir: Path, on_eval: EvalHook | None = None,
        started: float | None = None, run_log: tracking.RunLog | tracking.RunLogProcess | None = None,
        ) -> dict[str, Any]:
    """Train (or resume) as configured; returns the evaluation rows, where things are and the
    time split (``TimeSplit``; ``started``: the ``time.perf_counter()`` its start-up counts from).
    ``on_eval`` sees every periodic evaluation and the final one (see ``Progress``);
    ``mlflow.parent_run_id`` nests the run under another (a sweep's trials). ``run_log`` (default:
    ``tracking.run_log()``, made here) records the run in MLflow; ``train.py`` makes it before
    importing this module, so that MLflow's import in its helper process overlaps torch's here."""
    split = TimeSplit()
    started = time.perf_counter() if started is None else started
    run_log = tracking.run_log() if run_log is None else run_log  # MLflow's import, beside the start-up below
    try:
        s, env, agent, meta = prepare(cfg, out_dir, split)
        tracking.check_local_store(cfg.mlflow.tracking_uri)  # a server is asked before training, below
    except BaseException:
        run_log.close()  # refused (or interrupted) before anything was tracked
        raise
    resume = cfg.train.get("resume")
    start = int(meta["steps_done"]) if resume else 0
    ckpt_dir = out_dir / "checkpoint"
    mlflow_cfg = cfg.mlflow  # envs.schema.MlflowSettings
    run_log.start(tracking.RunSpec(
        mlflow_cfg.tracking_uri, mlflow_cfg.experiment,
        mlflow_cfg.get("run_name") or f"{s.interface['agent']}-{'+'.join(s.ccs)}", mlflow_cfg.get("parent_run_id"),
        _params(s, resume), str(resume) if resume else None, start, meta.get("mlflow_run_id")))
    with run_log:
        # the run's id and store, asked for when first needed: a server that does not answer is refused
        # here, before training starts; a local store is created by the helper process while training
        # starts (1-2.5 s for a new one), and the first checkpoint, which names the run (a resumed run
        # continues it, also after kill -9), waits for what is left of that
        where = functools.cache(run_log.where)
        if not tracking.is_local(mlflow_cfg.tracking_uri):
            where()
        tracker = Tracker(run_log)

        def save(finished: bool, directory: Path = ckpt_dir, **extra: Any) -> None:
            meta = {**s.interface, "spec": s.agent_spec, "seed": s.seed, "steps_done": progress.steps,
                    "steps_target": s.steps, "finished": finished, "config_hash": s.config_hash,
                    "scenarios": [sc.name for sc in s.scenarios], "ccs": list(s.ccs),
                    "software": checkpoint.software(), **extra}
            try:
                meta["mlflow_run_id"] = where()[0]
            except Exception:  # the MLflow run did not start: the training done so far is kept all the same
                checkpoint.save(directory, agent, {**meta, "mlflow_run_id": None}, s.config_yaml)
                raise
            checkpoint.save(directory, agent, meta, s.config_yaml)

        best_dir = out_dir / "best"
        progress = Progress(s, agent, tracker, start, save, on_eval, lambda score: save(
            True, best_dir, validation_score=score, selected_step=progress.steps))
        if resume and (best_dir / checkpoint.META).is_file():
            progress.best_score = float(checkpoint.read_meta(best_dir).get("validation_score", -math.inf))
        learning = time.perf_counter()
        split.startup = learning - started
        try:
            with sigterm_as_interrupt():
                agent.learn(env, s.steps - start, progress)
        except KeyboardInterrupt:
            progress.close()
            save(finished=False)
            run_log.log_artifacts(str(ckpt_dir), "checkpoint")
            run_log.end("KILLED")
            raise Interrupted(f"checkpoint at {progress.steps} of {s.steps} steps in {ckpt_dir}; "
                              f"resume with: {resume_command(ckpt_dir)}") from None
        except BaseException:
            progress.close()  # the last periodic checkpoint stays as it was
            if ckpt_dir.exists():
                run_log.log_artifacts(str(ckpt_dir), "checkpoint")
            run_log.end("FAILED")
            raise
        progress.close()
        evaluating = time.perf_counter()
        split.simulator, split.evaluation = env.seconds, progress.eval_seconds
        split.agent = evaluating - learning - env.seconds - progress.eval_seconds
        save(finished=True)
        final = time.perf_counter()
        chosen = agent
        if s.select == "validation":
            progress.validate()  # the agent as training ended is a candidate too
            chosen = checkpoint.load(best_dir, expect=s.interface)[0]
            run_log.log_metrics({"validation/best_score": progress.best_score,
                                 "validation/selected_step": float(checkpoint.read_meta(best_dir)["selected_step"])})
            run_log.log_artifacts(str(best_dir), "best")
        rows = compare_with_minrtt(chosen, s, s.eval_runs)
        final = time.perf_counter() - final
        split.evaluation += final
        if on_eval is not None:
            on_eval(progress, rows)
        table = format_rows(rows)
        (out_dir / "eval.md").write_text(table + "\n")
        for r in rows:
            run_log.log_metrics({f"final/{r['scenario']}/{r['cc']}/{r['scheduler']}/goodput_mbps": r["goodput_mbps"],
                                 f"final/{r['scenario']}/{r['cc']}/{r['scheduler']}/capped_runs": r["capped"]})
        for note in capped_notes(rows):
            log.warning(note)
        run_log.log_metrics(diagnostic_metrics(rows, "final"))
        run_log.log_artifacts(str(ckpt_dir), "checkpoint")
        run_log.log_artifact(str(out_dir / "eval.md"))
        run_log.log_text(s.config_yaml, "config.yaml")
        split.other = time.perf_counter() - evaluating - final
        run_log.log_metrics(split.metrics())
        run_id, tracking_uri = where()
        return {"rows": rows, "table": table, "checkpoint": ckpt_dir, "run_id": run_id,
                "best_checkpoint": best_dir if s.select == "validation" else None,
                "tracking_uri": tracking_uri, "steps": progress.steps, "episodes": progress.episodes,
                "time": split}


def resume_command(ckpt_dir: Path) -> str:
    """``python train.py`` with this run's command-line overrides and ``train.resume=ckpt_dir``."""
    from hydra.core.hydra_config import HydraConfig
    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    kept = [o for o in overrides if o.lstrip("+").split("=", 1)[0] != "train.resume"]
    return " ".join(["python train.py", *map(shlex.quote, kept), shlex.quote(f"train.resume={ckpt_dir}")])


def _params(s: Setup, resume: str | None) -> dict[str, Any]:
    flat = {"seed": s.seed, "steps": s.steps, "n_envs": s.n_envs, "scenarios": ",".join(x.name for x in s.scenarios),
            "ccs": ",".join(s.ccs), "stack": s.sim.stack, "resume": resume or "", "config_hash": s.config_hash}
    flat.update(_flatten(s.env_kwargs, "env"))
    flat.update(_flatten(s.agent_spec, "agent"))
    return {k: str(v)[:500] for k, v in flat.items()}


def _flatten(d: dict, prefix: str) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}.{k}"))
        else:
            out[f"{prefix}.{k}"] = v
    return out
