"""Reproducibility of the simulator and the Gymnasium environment.

Every random number of an episode comes from a per-connection stream seeded from
(seed, connection, episode) (envs/sim/simulator.py, envs/sim/rng.py), so: the same seed gives
bitwise identical states; different seeds give different trajectories when the network is
random; a connection does not depend on its batch, on how its run is chunked, or on the
episodes the Simulator ran before.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import envs  # noqa: F401 (registers mpsched/Multipath-v0)
from envs.plugins import cc_names
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim.layout import CN_N_FLOWS
from envs.sim.simulator import Simulator

# every array of the simulator's state (the kernel's full input/output set)
STATE = ("obs", "cobs", "fl", "cc", "ccp", "bn", "cn", "seg", "segi", "ring", "hole", "sched", "ctrace",
         "atrace", "rng")
# CCs whose decisions draw no random numbers (BBRv1 draws its ProbeBW phase, BBRv2 its probe wait)
CC_NAMES = cc_names()
DETERMINISTIC_CCS = tuple(cc for cc in ("reno", "cubic") if cc in CC_NAMES)


def ispras_bulk(**path_overrides: float) -> Scenario:
    """ISPRAS S1 (jittery, lossy, reordering) with a 2 s bulk workload."""
    d = load_scenario("ispras_s1").model_dump()
    d["workload"] = {"type": "bulk", "duration_s": 2.0}
    d["paths"] = [dict(p, **path_overrides) for p in d["paths"]]
    return scenario_from_dict(d)


def run(scen: Scenario | list[Scenario], cc: str | list[str], seed: int, batch: int = 1,
        chunk: int | None = None) -> Simulator:
    sim = Simulator(scen, cc, batch=batch, seed=seed)
    sim.reset()
    if chunk is None:
        sim.run()
    else:
        while not sim.done.all():
            sim.advance(chunk)
    return sim


def assert_results_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray], rows=slice(None)) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key][rows], b[key][rows], err_msg=f"results()[{key!r}] differ")


def assert_state_equal(a: Simulator, b: Simulator, names=STATE, rows=slice(None)) -> None:
    for name in names:
        x, y = getattr(a, name)[rows], getattr(b, name)[rows]
        assert x.dtype == y.dtype and x.shape == y.shape, name
        # bitwise: compare the raw bytes, so -0.0 / 0.0 and NaN payloads count too
        assert x.tobytes() == y.tobytes(), \
            f"sim.{name} differs at {np.argwhere(~((x == y) | (np.isnan(x) & np.isnan(y))))[:5].tolist()}" \
            if x.dtype.kind == "f" else f"sim.{name} differs"


def results_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


# --------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("cc", CC_NAMES)
def test_same_seed_identical(cc):
    scen = ispras_bulk()
    a, b = Simulator(scen, cc, batch=2, seed=11), Simulator(scen, cc, batch=2, seed=11)
    a.reset()
    b.reset()
    assert_state_equal(a, b)
    a.advance(700)
    b.advance(700)
    assert_state_equal(a, b)  # mid-run
    a.run()
    b.run()
    assert_state_equal(a, b)
    assert_results_equal(a.results(), b.results())


@pytest.mark.parametrize("cc", CC_NAMES)
def test_different_seeds_differ_with_jitter_and_loss(cc):
    """The seed reaches every random result. Two seeds may still give the same value of a result
    that counts whole packets: wVegas's largest reorder buffer here is the same 11 packets (12,969
    bytes) for seeds 1, 2, 3 and 5 and 16 for seed 4, so each result must differ within four seeds."""
    scen = ispras_bulk()
    results = [run(scen, cc, seed=seed).results() for seed in (1, 2, 3, 4)]
    for key in ("goodput_mbps", "mean_rtt_ms", "loss_rate", "reorder_max_bytes"):
        assert any(not np.array_equal(results[0][key], r[key]) for r in results[1:]), \
            f"{key} identical for seeds 1 to 4"


@pytest.mark.parametrize("cc", CC_NAMES)
def test_jitter_only_and_loss_only_are_random(cc):
    """Each random element alone makes the seed matter."""
    for overrides in ({"loss_pct": 0.0}, {"jitter_ms": 0.0}):
        scen = ispras_bulk(**overrides)
        ra, rb = run(scen, cc, seed=1).results(), run(scen, cc, seed=2).results()
        assert not results_equal(ra, rb), f"seeds 1 and 2 identical with {overrides}"


@pytest.mark.parametrize("cc", DETERMINISTIC_CCS)
def test_no_randomness_identical_across_seeds(cc):
    """Jitter 0 and loss 0 with a CC that draws nothing: the seed cannot matter, and the network
    draws no random number at all."""
    scen = ispras_bulk(jitter_ms=0.0, loss_pct=0.0)
    sims = []
    for seed in (1, 2, 3):
        sim = Simulator(scen, cc, batch=2, seed=seed)
        sim.reset()
        start = sim.rng.copy()
        sim.run()
        np.testing.assert_array_equal(sim.rng, start, err_msg="a random number was drawn")
        sims.append(sim)
    for other in sims[1:]:
        assert_results_equal(sims[0].results(), other.results())
        assert_state_equal(sims[0], other, names=tuple(n for n in STATE if n != "rng"))


@pytest.mark.parametrize("cc", CC_NAMES)
def test_seed_acts_only_through_the_random_stream(cc):
    """Without network randomness, two seeds whose streams are forced equal give identical runs
    (the CC's own draws, e.g. BBR's ProbeBW phase, are the only other use of the seed)."""
    scen = ispras_bulk(jitter_ms=0.0, loss_pct=0.0)
    a, b = Simulator(scen, cc, batch=1, seed=1), Simulator(scen, cc, batch=1, seed=2)
    a.reset()
    b.reset()
    b.rng[:] = a.rng
    a.run()
    b.run()
    assert_state_equal(a, b)
    assert_results_equal(a.results(), b.results())


# --------------------------------------------------------------------------- independence


@pytest.mark.parametrize("cc", CC_NAMES)
def test_batch_independence(cc):
    scen = ispras_bulk()
    one = run(scen, cc, seed=9, batch=1)
    eight = run(scen, cc, seed=9, batch=8, chunk=250)
    assert_results_equal(one.results(), eight.results(), rows=slice(0, 1))
    assert_state_equal(one, eight, rows=slice(0, 1))
    # connection 5 of a batch of 8 equals connection 5 of a batch of 6
    six = run(scen, cc, seed=9, batch=6)
    assert_results_equal(six.results(), eight.results(), rows=slice(5, 6))
    assert_state_equal(six, eight, rows=slice(5, 6))
    # and the connections of one batch are not copies of each other
    assert len(set(eight.results()["goodput_mbps"].tolist())) > 1


def test_first_connection_runs_a_batch_as_the_tail_of_a_larger_one():
    """``SimConfig.first_connection``: connections 5-7 of a batch of 8 are a batch of 3 numbered from
    5; ``evaluate_heuristic`` splits a batch above ``MAX_BATCH`` so, with the same runs."""
    from envs import evaluation
    from envs.sim.simulator import SimConfig
    scen = ispras_bulk()
    eight = run(scen, "bbr", seed=9, batch=8)
    tail = Simulator(scen, "bbr", batch=3, seed=9, config=SimConfig(first_connection=5))
    tail.reset()
    tail.run()
    churn = load_scenario("kato_churn_3")  # competing flows arriving at random: a stream of their own
    whole, part = (Simulator(churn, "bbr", batch=n, seed=9, config=SimConfig(first_connection=k))
                   for n, k in ((4, 0), (2, 2)))
    whole.reset(), part.reset()
    assert np.array_equal(whole.atrace[2:4], part.atrace) and not np.array_equal(whole.atrace[0], whole.atrace[1])
    for key, values in eight.results().items():
        np.testing.assert_array_equal(values[5:8], tail.results()[key], err_msg=key)
    whole = evaluation.evaluate_heuristic(scen, "bbr", "minrtt", 7, seed=3)
    saved, evaluation.MAX_BATCH = evaluation.MAX_BATCH, 3
    try:
        split = evaluation.evaluate_heuristic(scen, "bbr", "minrtt", 7, seed=3)
    finally:
        evaluation.MAX_BATCH = saved
    for key, values in whole.items():
        np.testing.assert_array_equal(values, split[key], err_msg=key)
    assert len(set(whole["goodput_mbps"].tolist())) > 1


def test_common_draws_run_every_connection_as_connection_zero():
    """``SimConfig.common_draws``: every connection runs connection 0's episode (its random streams
    on a jittery, lossy path), so that a batch compares what the connections are told to do on
    common random numbers (benchmarks/rollout_labels.py); connection 0 is the one it runs alone."""
    from envs.sim.simulator import SimConfig
    scen = ispras_bulk()
    twins = Simulator(scen, "bbr", batch=3, seed=9, config=SimConfig(common_draws=True))
    twins.reset()
    twins.run()
    for b in (1, 2):
        for name in STATE:
            if name != "rng":  # [network streams, then sender streams], one each per connection
                assert getattr(twins, name)[b].tobytes() == getattr(twins, name)[0].tobytes(), name
    assert len(set(twins.rng[:3].tolist())) == 1 and len(set(twins.rng[3:].tolist())) == 1
    assert_state_equal(run(scen, "bbr", seed=9), twins, rows=slice(0, 1))
    churn = Simulator(load_scenario("kato_churn_3"), "bbr", batch=2, seed=9, config=SimConfig(common_draws=True))
    churn.reset()
    assert np.array_equal(churn.atrace[0], churn.atrace[1])  # the competing flows' arrivals too


@pytest.mark.parametrize("cc", CC_NAMES)
def test_chunking_does_not_change_the_trajectory(cc):
    scen = ispras_bulk()
    whole = run(scen, cc, seed=4, batch=2)
    for chunk in (1, 37, 1000):
        if chunk == 1:  # single steps through the first 300 ms (the interesting start), then on
            sim = Simulator(scen, cc, batch=2, seed=4)
            sim.reset()
            for _ in range(300):
                sim.advance(1)
            sim.run()
        else:
            sim = run(scen, cc, seed=4, batch=2, chunk=chunk)
        assert_state_equal(whole, sim)


def test_reused_simulator_equals_fresh_one():
    """Episode k of a Simulator that already ran k - 1 episodes (over a list of scenarios with
    different path and flow counts, and every CC) equals episode k of a fresh Simulator: no state
    leaks from one episode into the next."""
    scens = []
    for name in ("ispras_s1", "sod_1", "kato_2", "mptcp_tut_e3"):
        d = load_scenario(name).model_dump()
        d["workload"] = {"type": "bulk", "duration_s": 0.4}
        scens.append(scenario_from_dict(d))
    used = Simulator(scens, list(CC_NAMES), batch=2, seed=3)
    for episode in range(5):
        used.reset()
        used.run()
        fresh = Simulator(scens, list(CC_NAMES), batch=2, seed=3)
        fresh.episode[:] = episode
        fresh.reset()
        fresh.run()
        assert [s.name for s in used.current] == [s.name for s in fresh.current]
        assert used.current_cc == fresh.current_cc
        assert_results_equal(used.results(), fresh.results())
        # dead state may differ: "cc" columns the episode's CC does not use, "ccp" rows of flows
        # the episode does not have, "seg" slots outside the FIFO indices; the rest must match
        assert_state_equal(used, fresh, names=("obs", "cobs", "fl", "bn", "cn", "segi", "hole", "sched",
                                               "ctrace", "atrace", "rng"))
        for b in range(used.B):
            nflows = int(used.cn[b, CN_N_FLOWS])
            np.testing.assert_array_equal(used.ccp[b, :nflows], fresh.ccp[b, :nflows])


# --------------------------------------------------------------------------- Gymnasium env


def rollout(env: gymnasium.Env, seed: int, n_steps: int = 400) -> tuple[np.ndarray, np.ndarray, list]:
    actions = np.random.default_rng(123).integers(0, env.action_space.n, size=n_steps)
    obs, _ = env.reset(seed=seed)
    observations, rewards, flags = [obs], [], []
    for a in actions:
        obs, rew, terminated, truncated, _ = env.step(int(a))
        observations.append(obs)
        rewards.append(rew)
        flags.append((terminated, truncated))
        if terminated or truncated:
            break
    return np.array(observations), np.array(rewards), flags


@pytest.mark.parametrize("decision", ["blocked", "interval", "packet"])
def test_gym_env_reproducible(decision):
    make = lambda: gymnasium.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr",  # noqa: E731
                                  decision=decision)
    env = make()
    first = rollout(env, seed=5)
    second = rollout(make(), seed=5)  # a fresh env
    again = rollout(env, seed=5)  # the same env, reseeded after an episode
    for other in (second, again):
        np.testing.assert_array_equal(first[0], other[0])
        np.testing.assert_array_equal(first[1], other[1])
        assert first[2] == other[2]
    other_seed = rollout(env, seed=6)
    assert not (len(other_seed[1]) == len(first[1]) and np.array_equal(other_seed[0], first[0]))
