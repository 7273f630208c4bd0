"""Domain randomisation of the training scenarios (train.randomise) and checkpoint selection by
held-out validation (train.select=validation)."""

from pathlib import Path

import numpy as np
import pytest

from agents import checkpoint
from agents.base import Agent
from agents.training import Progress, make_env, run, setup, validation_score
from envs.errors import ConfigError
from envs.plugins import cc_params
from envs.randomisation import CC_CONSTANTS, FIELDS, STACK_CONSTANTS, StackDraw
from envs.scenario import resolve_scenarios
from envs.sim import stacks
from envs.sim.simulator import SimConfig, Simulator
from conftest import compose_config

RANGES = ("train.randomise.delay_factor=[0.5,2.0]", "train.randomise.loss_factor=[0.25,3.0]",
          "train.randomise.queue_factor=[0.5,4.0]", "train.randomise.jitter_add_ms=[-2.0,3.0]",
          "train.randomise.bandwidth_factor=[0.9,1.1]")


def compose_cfg(tmp_path: Path, *overrides: str):
    return compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "train.eval_every=0",
                          "train.eval_runs=3", "file_mb=1", *overrides)


def drawn(tmp_path: Path, seed: int, episodes: int = 6, *overrides: str) -> list:
    """The concrete scenarios the training env's connections draw over ``episodes`` resets."""
    s = setup(compose_cfg(tmp_path, "scenario=[ispras_s1,ispras_s3]", "train.randomise.enabled=true", *RANGES,
                          f"seed={seed}", *overrides), tmp_path)
    env = make_env(s, 4, s.seed)
    sim = env.process.sim
    out = []
    for _ in range(episodes):
        sim.reset()
        out += [sim.current[b] for b in range(sim.B)]
    return out


def test_randomised_draws_stay_within_the_declared_ranges(tmp_path):
    nominal = {sc.name: sc for sc in resolve_scenarios(["ispras_s1", "ispras_s3"])}
    ranges = {"delay_factor": (0.5, 2.0), "loss_factor": (0.25, 3.0), "queue_factor": (0.5, 4.0),
              "jitter_add_ms": (-2.0, 3.0), "bandwidth_factor": (0.9, 1.1)}
    scenarios = drawn(tmp_path, 0, 8)
    seen = {k: [] for k in ranges}
    for sc in scenarios:
        assert not sc.is_distribution
        base = nominal[sc.name]
        for path, ref in zip(sc.paths, base.paths):
            for key, (lo, hi) in ranges.items():
                targets, how = FIELDS[key]
                name = next(t for t in targets if getattr(ref, t) is not None)
                v, r = float(getattr(path, name)), float(getattr(ref, name))
                a, b = (r * lo, r * hi) if how == "factor" else (max(0.0, r + lo), max(0.0, r + hi))
                assert a - 1e-9 <= v <= b + 1e-9, (key, name, v, a, b)
                if b > a:
                    seen[key].append((v - a) / (b - a))
    for key, xs in seen.items():  # the draws cover the range, not one point of it
        assert len(xs) >= 16 and min(xs) < 0.25 and max(xs) > 0.75, key
    # the randomised episodes change the paths: the drawn delays differ between episodes
    assert len({sc.paths[0].delay_ms for sc in scenarios if sc.name == "ispras_s1"}) > 8


def test_randomisation_is_reproducible_per_seed(tmp_path):
    a, b, c = drawn(tmp_path, 3), drawn(tmp_path, 3), drawn(tmp_path, 4)
    dump = [[sc.model_dump() for sc in x] for x in (a, b, c)]
    assert dump[0] == dump[1]
    assert dump[0] != dump[2]


def test_disabled_randomisation_trains_on_the_scenario_as_it_is(tmp_path):
    s = setup(compose_cfg(tmp_path), tmp_path)
    assert s.train_scenarios == s.scenarios and not s.train_scenarios[0].is_distribution


STACK_RANGES = ("train.randomise.stack_factor=[0.5,1.4]", "train.randomise.stacks=[xquic,linux]", "cc=[cubic,bbr]")


def test_stack_draws_stay_within_the_declared_ranges(tmp_path):
    """Each training episode simulates a stack drawn from train.randomise.stacks, its constants
    within the declared range around the profile's, in the rows the core reads for that connection."""
    s = setup(compose_cfg(tmp_path, "train.randomise.enabled=true", *STACK_RANGES), tmp_path)
    assert s.stack_draw is not None and s.sim.stack_draw is None  # the final comparison: the profile as it is
    env = make_env(s, 4, s.seed)
    sim = env.process.sim
    seen: dict[str, list[float]] = {}
    stacks_seen = set()
    for _ in range(8):
        sim.reset()
        for b in range(sim.B):
            prof, cc = sim.current_stack[b], sim.current_cc[b]
            stacks_seen.add(prof.name)
            nominal = stacks.profile(prof.name)
            ranges = s.stack_draw.ranges(prof.name)
            drawn = {n: getattr(prof, n) for n in STACK_CONSTANTS}
            drawn.update({f"{c}.{k}": v for c, params in prof.cc_defaults.items() for k, v in params.items()
                          if k in CC_CONSTANTS})
            assert set(drawn) == set(ranges)
            for key, v in drawn.items():
                lo, hi = ranges[key]
                assert lo - 1e-12 <= v <= hi + 1e-12, (prof.name, key, v, lo, hi)
                if hi > lo:
                    seen.setdefault(f"{prof.name}.{key}", []).append((v - lo) / (hi - lo))
            for c, params in prof.cc_defaults.items():  # what is not drawn stays the profile's
                assert {k: v for k, v in params.items() if k not in CC_CONSTANTS} == \
                    {k: v for k, v in nominal.cc_defaults[c].items() if k not in CC_CONSTANTS}
            assert (prof.rule, prof.packet_threshold, prof.undo) == (nominal.rule, nominal.packet_threshold, nominal.undo)
            # the core reads the episode's draw: its stack row and its subflows' CC parameters
            assert np.array_equal(sim.constants.stack[b, 0], stacks.stack_vector(prof))
            assert np.array_equal(sim.ccp[b, 0], cc_params(cc, stacks.cc_overrides(prof, cc)))
    assert stacks_seen == {"xquic", "linux"}
    assert "xquic.bbr.cwnd_gain" in seen and "linux.rto_min" in seen
    for key, xs in seen.items():  # the draws cover each range, not one point of it
        assert len(xs) >= 4 and min(xs) < 0.4 and max(xs) > 0.6, key


def test_stack_draws_are_reproducible_per_seed(tmp_path):
    def profiles(seed):
        s = setup(compose_cfg(tmp_path, "train.randomise.enabled=true", *STACK_RANGES, f"seed={seed}"), tmp_path)
        sim = make_env(s, 3, s.seed).process.sim
        out = []
        for _ in range(3):
            sim.reset()
            out += list(sim.current_stack)
        return out
    assert profiles(5) == profiles(5) != profiles(6)


def test_each_connection_runs_its_own_drawn_stack():
    """A batch drawing xquic or linux per connection (factor 1) gives each connection exactly the
    run of a simulator configured with that stack: the core reads the stack per connection."""
    scen = resolve_scenarios(["ispras_s1"])[0].with_workload(file_mb=1.0)
    draw = Simulator(scen, "cubic", batch=6, seed=2, config=SimConfig(stack_draw=StackDraw(("xquic", "linux"), (1.0, 1.0))))
    draw.reset()
    draw.run()
    got = draw.results()["goodput_mbps"]
    names = [p.name for p in draw.current_stack]
    assert set(names) == {"xquic", "linux"}
    for stack in ("xquic", "linux"):
        plain = Simulator(scen, "cubic", batch=6, seed=2, config=SimConfig(stack=stack))
        plain.reset()
        plain.run()
        ref = plain.results()["goodput_mbps"]
        for b, name in enumerate(names):
            if name == stack:
                assert got[b] == ref[b], (b, stack)


@pytest.mark.parametrize("override, field", [
    ("train.randomise.stacks=[xquic,linux]", "train.randomise.stacks: cc 'bbr2' is not in stack 'linux'"),
    ("train.randomise.stacks=[quiche]", "train.randomise.stacks entry"),
    ("train.randomise.stack_factor=[0.8,1.5]", "train.randomise.stack_factor must be a range keeping stack xquic's"),
    ("train.randomise.stack_factor=[0,1]", "train.randomise.stack_factor must be [lo, hi] with 0 < lo <= hi"),
])
def test_bad_stack_randomisation_is_refused_naming_the_field(tmp_path, override, field):
    with pytest.raises(ConfigError) as err:
        setup(compose_cfg(tmp_path, "cc=bbr2", "train.randomise.enabled=true", override), tmp_path)
    assert field in str(err.value)


@pytest.mark.parametrize("override, field", [
    ("train.randomise.delay_factor=[1.5,0.5]", "train.randomise.delay_factor must be [lo, hi] with 0 < lo <= hi"),
    ("train.randomise.queue_factor=[0,2]", "train.randomise.queue_factor must be [lo, hi] with 0 < lo <= hi"),
    ("train.randomise.jitter_add_ms=[1,2,3]", "train.randomise.jitter_add_ms must be [lo, hi] with lo <= hi"),
    ("train.randomise.loss_factor=[1,300]", "train.randomise.: the randomised 'ispras_s1' leaves the scenario's"),
    ("train.select=best", "unknown train.select 'best'; valid: last, validation"),
])
def test_bad_ranges_are_refused_naming_the_field(tmp_path, override, field):
    with pytest.raises(ConfigError, match=None) as err:
        setup(compose_cfg(tmp_path, "train.randomise.enabled=true", override), tmp_path)
    assert field in str(err.value)


def test_validation_needs_periodic_evaluations(tmp_path):
    with pytest.raises(ConfigError, match="train.select=validation scores the periodic evaluations"):
        setup(compose_cfg(tmp_path, "train.select=validation"), tmp_path)


class Constant:
    """A blocked-mode policy that always takes one action (1: send on the second path = minRTT)."""

    def __init__(self, action: int) -> None:
        self.action = action

    def act(self, obs, deterministic=True):
        return np.full(len(obs), self.action)

    budget = Agent.budget  # what the training loop's progress bar counts: decisions, as every agent's default


def test_validation_scores_against_minrtt_on_held_out_randomised_episodes(tmp_path):
    s = setup(compose_cfg(tmp_path, "cc=bbr", "train.randomise.enabled=true", "train.validation_runs=4",
                          "train.eval_every=100", "train.select=validation"), tmp_path)
    assert validation_score(Constant(1), s) == pytest.approx(1.0)  # always send: minRTT itself
    assert validation_score(Constant(0), s) < 0.8  # always wait: fast_only, far below minRTT under BBRv1


def test_progress_keeps_the_best_validated_agent_not_the_last(tmp_path, monkeypatch):
    s = setup(compose_cfg(tmp_path, "cc=bbr", "train.eval_every=100", "train.select=validation"), tmp_path)
    scores = iter([0.7, 0.9, 0.8])
    monkeypatch.setattr("agents.training.validation_score", lambda agent, s: next(scores))
    kept, logged = [], []

    class Tracker:
        def log(self, metrics, step):
            logged.append((step, metrics))

        def flush(self):
            pass

    progress = Progress(s, Constant(1), Tracker(), 0, lambda finished: None, None,
                        lambda score: kept.append((score, progress.steps)))
    for step in (100, 200, 300):
        progress.steps = step
        progress.validate()
    progress.close()
    assert kept == [(0.7, 100), (0.9, 200)] and progress.best_step == 200
    assert logged == [(100, {"validation/score": 0.7}), (200, {"validation/score": 0.9}), (300, {"validation/score": 0.8})]


@pytest.mark.slow
def test_a_validated_run_ends_with_its_best_checkpoint(tmp_path):
    cfg = compose_cfg(tmp_path, "cc=bbr", "train.steps=1200", "train.eval_every=400", "train.select=validation",
                      "train.validation_runs=2", "train.randomise.enabled=true")
    result = run(cfg, tmp_path / "run")
    meta = checkpoint.read_meta(result["best_checkpoint"])
    assert meta["selected_step"] in (400, 800, 1200) and np.isfinite(meta["validation_score"])
    checkpoint.load(result["best_checkpoint"])
