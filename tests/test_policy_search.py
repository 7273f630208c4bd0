"""The policy-search learner (agents/policy_search.py): it starts at minRTT and keeps or improves its
score, the same seed gives the same numbers (a resumed search included), its config is checked by
field, and it goes through train.py's checkpoints. Export parity is in tests/test_export.py."""

from __future__ import annotations

import numpy as np
import pytest

from agents import checkpoint
from agents.policy_search import PolicySearch, required_t, stratified_mean, stratified_t
from agents.training import Progress, run
from agents.registry import make_agent, preset
from envs.errors import ConfigError
from envs.evaluation import EVAL_SEED_OFFSET
from envs.multipath_env import build_process
from envs.vector_env import SB3VecEnv
from conftest import ROOT, compose_config

WAIT_MATTERS = str(ROOT / "tests" / "data" / "wait_matters.yaml")  # fast_only +59% over minRTT under CUBIC


class CountingMonitor:
    """A monitor counting the decisions it is shown."""

    def __init__(self) -> None:
        self.seen = 0
        self.logged: list[dict] = []

    def on_step(self, n, rewards, infos) -> bool:
        assert len(infos) == len(rewards)
        self.seen += n
        return True

    def log(self, metrics: dict) -> None:
        self.logged.append(metrics)


def spec(**params) -> tuple[dict, dict]:
    cfg = preset("policy_search")
    agent = {**cfg["agent"], "params": {**cfg["agent"]["params"], **params}}
    env = cfg["env"]
    kw = {"decision": env["decision"], "observation": env["observation"], "reward": env["reward"]["name"],
          "reward_params": {k: v for k, v in env["reward"].items() if k != "name"}}
    return agent, kw


def trained(steps: int, seed: int = 0, scenario: str = WAIT_MATTERS, cc: str = "cubic", **params):
    """Trained for ``steps`` decisions; with ``generations`` (default 0 here: the decision budget
    alone, which the tests below this one measure) the search stops there too."""
    params.setdefault("generations", 0)
    agent_spec, kw = spec(**params)
    env = SB3VecEnv(8, scenario=scenario, cc=cc, seed=seed, **kw)
    agent = make_agent(agent_spec, env.observation_space.shape[0], int(env.action_space.n), seed)
    monitor = CountingMonitor()
    agent.learn(env, steps, monitor)
    return agent, env, kw, monitor


def held_out(policy, kw: dict, scenario: str = WAIT_MATTERS, cc: str = "cubic", runs: int = 10) -> np.ndarray:
    p = build_process(runs, scenario=scenario, cc=cc, seed=EVAL_SEED_OFFSET, **kw)
    p.reset()
    while not p.sim.done.all():
        p.step(policy(p.last_obs))
    return p.sim.results()["goodput_mbps"]


def test_it_starts_at_minrtt_and_improves_on_a_scenario_where_waiting_pays():
    agent_spec, kw = spec()
    fresh = make_agent(agent_spec, 7, 2, 0)
    minrtt = held_out(lambda x: np.ones(len(x), dtype=np.int64), kw)
    assert np.array_equal(held_out(fresh.act, kw), minrtt)  # the initial policy is minRTT
    agent, _, _, monitor = trained(60_000)
    assert agent.generation >= 3 and agent.accepted >= 1
    assert monitor.seen >= 60_000 and monitor.logged  # every decision counted; per-generation metrics logged
    mine = held_out(agent.act, kw)
    # on held-out episodes: fast_only's gain (+59%) is within reach; at least half of it found
    assert np.mean(mine) > 1.3 * np.mean(minrtt), (np.mean(mine), np.mean(minrtt))
    # the incumbent's score never fell below the one it replaced on the episodes of that generation
    for rec in agent.history:
        if rec["accepted"]:
            assert rec["mean"] > rec["incumbent"]


def test_it_keeps_minrtt_where_nothing_beats_it():
    """ispras_s3 under CUBIC: minRTT is the searched best (docs/cc_robustness.md); whatever the
    search tries, the policy it ends with scores at least minRTT's goodput."""
    kw = spec()[1]
    agent, *_ = trained(150_000, scenario="ispras_s3", cc="cubic")
    mine = held_out(agent.act, kw, "ispras_s3", "cubic", runs=5)
    base = held_out(lambda x: np.ones(len(x), dtype=np.int64), kw, "ispras_s3", "cubic", runs=5)
    assert np.mean(mine) >= 0.995 * np.mean(base)


@pytest.mark.parametrize("optimiser", ["cma", "cem"])
def test_same_seed_same_numbers_and_a_resumed_search_continues_the_same(optimiser, tmp_path):
    a, *_ = trained(40_000, optimiser=optimiser)
    b, *_ = trained(40_000, optimiser=optimiser)
    assert a.generation >= 2
    assert np.array_equal(a.theta, b.theta) and a.history == [{**r, "seconds": a.history[i]["seconds"]}
                                                               for i, r in enumerate(b.history)]
    c, *_ = trained(40_000, seed=1, optimiser=optimiser)
    assert not np.array_equal([r["samples"] for r in a.history], [r["samples"] for r in c.history])
    # saved and loaded half-way (within a generation: the budget cut it), the search goes on as if never stopped
    whole, *_ = trained(40_000, seed=2, optimiser=optimiser)
    half, env, _, seen = trained(20_000, seed=2, optimiser=optimiser)
    half.save(tmp_path)
    again = make_agent(spec(optimiser=optimiser)[0], 7, 2, 2)
    assert isinstance(again, PolicySearch)
    again.load_state(tmp_path)
    assert np.array_equal(again.theta, half.theta) and again.generation == half.generation
    again.learn(env, 40_000 - seen.seen, CountingMonitor())  # the rest of the budget
    scores = [(r["incumbent"], r["mean"], r["samples"]) for r in again.history]
    expected = [(r["incumbent"], r["mean"], r["samples"]) for r in whole.history]
    n = min(len(scores), len(expected))
    assert n > half.generation and scores[:n] == expected[:n]
    assert np.array_equal(again.theta, whole.theta) or len(scores) != len(expected)


def test_a_generation_budget_stops_where_the_decisions_that_bought_those_generations_did():
    """``generations: g`` with an ample train.steps ends with the policy, history and optimiser a
    decision budget that bought exactly g generations ends with (the (g+1)th it cut is discarded),
    having run only those g generations' decisions."""
    by_steps, *_, seen_steps = trained(40_000)
    g = by_steps.generation
    assert g >= 2
    by_gens, *_, seen_gens = trained(10**9, generations=g)
    assert by_gens.generation == g and np.array_equal(by_gens.theta, by_steps.theta)
    assert [{**r, "seconds": 0} for r in by_gens.history] == [{**r, "seconds": 0} for r in by_steps.history]
    assert np.array_equal(by_gens._mean(), by_steps._mean())
    assert 0 < seen_gens.seen < seen_steps.seen  # the cut generation's decisions are not spent
    assert len(seen_gens.logged) == g


@pytest.mark.parametrize("cc", ["reno", "bbr"])
def test_the_generation_budget_is_the_same_under_every_cc(cc):
    """The decisions a generation costs depend on the CC; the generations the budget buys do not."""
    agent, *_, seen = trained(10**9, cc=cc, generations=3, population=4, runs=8)
    assert agent.generation == 3 and len(agent.history) == 3 and seen.seen > 0


def test_train_steps_stays_an_upper_bound_of_the_generation_budget(caplog):
    """With too few decisions for its generations, the search stops where train.steps alone would
    have stopped it, and says so."""
    alone, *_ = trained(20_000)
    with caplog.at_level("WARNING", logger="agents.policy_search"):
        bounded, *_, seen = trained(20_000, generations=50)
    assert bounded.generation == alone.generation < 50 and np.array_equal(bounded.theta, alone.theta)
    assert seen.seen >= 20_000
    assert f"ran out after {bounded.generation} of 50 generations" in caplog.text


def test_a_resumed_generation_budget_counts_the_whole_run(tmp_path):
    """Saved after 2 of 4 generations and resumed with the same budget, the search runs the other
    2 and ends as the uninterrupted one; resumed once more, it has nothing left to run."""
    whole, *_ = trained(10**9, seed=4, generations=4)
    half, env, *_ = trained(10**9, seed=4, generations=2)
    assert half.generation == 2
    half.save(tmp_path)
    again = make_agent(spec(generations=4)[0], 7, 2, 4)
    assert isinstance(again, PolicySearch)
    again.load_state(tmp_path)
    again.learn(env, 10**9, CountingMonitor())
    assert again.generation == 4 and np.array_equal(again.theta, whole.theta)
    assert [(r["incumbent"], r["mean"], r["samples"]) for r in again.history] == \
        [(r["incumbent"], r["mean"], r["samples"]) for r in whole.history]
    idle = CountingMonitor()
    again.learn(env, 10**9, idle)
    assert idle.seen == 0 and again.generation == 4


def test_a_hidden_layer_starts_at_minrtt_too_and_is_seeded():
    agent_spec, kw = spec(hidden=4, activation="relu")
    a = make_agent(agent_spec, 7, 2, 3)
    b = make_agent(agent_spec, 7, 2, 3)
    assert np.array_equal(a.theta, b.theta) and a.size == 4 * 7 + 4 + 4 + 1
    x = np.random.default_rng(0).uniform(0, 10, (500, 7))
    assert (a.act(x) == 1).all()


@pytest.mark.parametrize("params, message", [
    ({"population": 1}, "agent.params.population must be an integer >= 2, got 1"),
    ({"sigma0": 0}, "agent.params.sigma0 must be a number > 0.0, got 0"),
    ({"optimiser": "adam"}, "agent.params.optimiser must be one of cma, cem, got 'adam'"),
    ({"objective": "rtt"}, "agent.params.objective must be one of log_goodput, goodput, return"),
    ({"init_action": 2}, "agent.params.init_action must be an action of this environment (0..1), got 2"),
    ({"hidden": -1}, "agent.params.hidden must be an integer >= 0, got -1"),
    ({"generations": -1}, "agent.params.generations must be an integer >= 0, got -1"),
    ({"generations": 2.5}, "agent.params.generations must be an integer >= 0, got 2.5"),
    ({"speed": 1}, "unknown agent.params key 'speed'"),
])
def test_config_errors_name_the_field(params, message):
    agent_spec, _ = spec(**params)
    with pytest.raises(ConfigError) as err:
        make_agent(agent_spec, 7, 2, 0)
    assert message in str(err.value)


def test_a_checkpoint_of_another_shape_is_refused(tmp_path):
    agent_spec, _ = spec()
    make_agent(agent_spec, 7, 2, 0).save(tmp_path)
    other = make_agent(spec(hidden=3)[0], 7, 2, 0)
    with pytest.raises(ConfigError, match="8 policy parameters, this agent needs 28"):
        other.load_state(tmp_path)


def test_checkpoint_round_trip(tmp_path):
    agent, *_ = trained(20_000)
    meta = {"agent": "policy_search", "kind": "policy_search", "observation": "ispras_backlog", "n_features": 7,
            "n_actions": 2, "n_paths": 2, "decision": "blocked", "spec": agent.spec, "seed": 0, "steps_done": 20_000,
            "finished": True, "config_hash": "0123456789ab", "scenarios": ["wait_matters"], "ccs": ["cubic"]}
    d = checkpoint.save(tmp_path / "ckpt", agent, meta, "test: true\n")
    loaded, _ = checkpoint.load(d)
    x = np.random.default_rng(1).uniform(0, 2, (1000, 7))
    assert np.array_equal(loaded.act(x), agent.act(x))


@pytest.mark.parametrize("generations", [0, 3])
def test_the_progress_bar_counts_the_budget(tmp_path, generations):
    """train.py's bar counts generations when they are the budget (its total and final count the
    generations run, with train.steps far above what they cost), and decisions without them."""
    bars: list[tuple[str, float, float]] = []

    def seen(progress: Progress, rows) -> None:
        bars.append((progress.bar.unit, progress.bar.total, progress.bar.n))

    steps = 10**7 if generations else 5000
    cfg = compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "agent=policy_search",
                         "cc=bbr", "file_mb=1", "train.eval_every=0", "train.eval_runs=1", "train.checkpoint_every=0",
                         f"train.steps={steps}", f"agent.params.generations={generations}",
                         "agent.params.population=2", "agent.params.runs=8")
    result = run(cfg, tmp_path / "run", on_eval=seen)
    if generations:
        assert bars == [("generation", generations, generations)] and result["steps"] < steps
    else:
        # the episodes overshoot train.steps: the bar's total follows what was spent (it ends at 100%)
        assert bars == [("step", result["steps"], result["steps"])] and result["steps"] >= steps


def test_a_generation_covers_every_cell_of_the_mix_alike():
    """Under a mix of scenarios and CCs every (scenario, CC) cell has the same number of a
    generation's episodes (at least two: ``runs`` grows to twice the cells), each episode index
    drawing the cell it was chosen for, and the next generation takes fresh indices; with one cell
    the episodes are the first ``runs`` indices, as without strata."""
    agent_spec = spec(generations=1, population=2, runs=8)[0]
    kw = spec()[1]
    mixed = build_process(8, scenario=["ispras_s1", WAIT_MATTERS], cc=["reno", "cubic", "bbr", "bbr2"], seed=3, **kw)
    agent = make_agent(agent_spec, 7, 2, 3)
    assert isinstance(agent, PolicySearch)
    cells = agent.cells(mixed.sim)
    assert len(cells) == 8
    episodes, strata, nxt = agent.design(mixed.sim, 2)  # the 16 episodes learn() runs for 8 cells
    assert np.bincount(strata, minlength=8).tolist() == [2] * 8
    s = mixed.sim
    for r in range(2):
        s.episode[:] = episodes[r]
        mixed.reset()
        assert [(sc.name, cc) for sc, cc in zip(s.current, s.current_cc)] == \
            [cells[k] for k in strata[r * 8:(r + 1) * 8]]
    assert nxt > episodes.max()
    one = build_process(8, scenario=WAIT_MATTERS, cc="cubic", seed=3, **kw)
    agent.episodes_used = 5
    episodes, strata, nxt = agent.design(one.sim, 2)
    assert episodes.tolist() == [[5] * 8, [6] * 8] and not strata.any() and nxt == 7


def test_the_acceptance_t_counts_the_noise_within_cells_not_the_differences_between_them():
    """A gain that differs between cells but is steady within each is significant, one that is
    noise within them is not; with one cell it is the paired t."""
    strata = np.repeat(np.arange(8), 2)  # as cc=mix on two scenarios: the wait pays in one cell of 8
    steady = np.repeat([0.0, 0.0, 0.04, 0.0, 0.0, 0.0, 0.0, 0.0], 2)
    steady[4:6] += [0.001, -0.001]
    mean, t, df = stratified_t(steady, strata)
    plain = steady.mean() / (steady.std(ddof=1) / 4)
    assert mean == pytest.approx(0.005) and plain < 2 < required_t(2.0, 16, df) < t
    # all the variance in one cell of two episodes: one degree of freedom, and the t of the paired
    # test's level at one degree (9.9 for t = 2 at 15)
    assert df == pytest.approx(1.0) and required_t(2.0, 16, df) == pytest.approx(9.92, abs=0.01)
    noisy = np.repeat([0.0, 0.0, 0.04, 0.0, 0.0, 0.0, 0.0, 0.0], 2) * np.tile([1.0, -0.5], 8)
    assert stratified_t(noisy, strata)[1] < 2
    spread = np.tile([0.01, 0.02, 0.0, 0.01], 4)  # every cell alike: the degrees of the unstratified test, less 3
    assert stratified_t(spread, np.repeat(np.arange(4), 4))[2] == pytest.approx(12.0)
    gain = np.array([0.02, -0.01, 0.03, 0.01, 0.0])
    assert stratified_t(gain, np.zeros(5, dtype=np.int64))[1:] == \
        pytest.approx((gain.mean() / (gain.std(ddof=1) / 5**0.5), 4.0))
    assert required_t(2.0, 5, 4.0) == 2.0 and required_t(2.0, 24, 3.0) > 2.0
    assert stratified_mean(np.array([[1.0, 1.0, 1.0, 4.0]]), np.array([0, 0, 0, 1])).tolist() == [2.5]
