"""Policy diagnostics (agents/diagnostics.py), the headroom search (studies/headroom.py) and the
ISPRAS reward's in-flight credit (envs/rewards.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agents.diagnostics import CLONE_AGREEMENT, DecisionLog, format_table, pool_seeds, summarise
from agents.training import format_rows
from envs.errors import ConfigError
from envs.multipath_env import build_process
from envs.scenario import load_scenario, resolve_scenarios
from envs.sim.layout import COBS_ELAPSED, OBS_AVAILABLE, OBS_INFLIGHT, OBS_LOSSES, OBS_NAMES, OBS_SENT, OBS_SRTT
from envs.sim.simulator import SimConfig
from envs.schedulers import wait_rule
from studies.headroom import Candidate, Headroom, candidates, evaluate_candidate, gain, search
from studies.runner import merge_seeds
from conftest import refused

DATA = Path(__file__).parent / "data"


def short_s1(file_mb: float = 1.0):
    return resolve_scenarios("ispras_s1")[0].with_workload(type="file", file_mb=file_mb)


def diagnose(policy, decision: str = "blocked", observation: str = "ispras_dqn", runs: int = 3, seed: int = 5):
    """Run ``policy`` (features -> actions) for one episode per connection, logging decisions."""
    p = build_process(runs, scenario=short_s1(), cc="cubic", seed=seed, decision=decision, observation=observation)
    p.reset()
    log = DecisionLog(p)
    while not p.sim.done.all():
        actions = policy(p.observe())
        log.record(actions)
        p.step(actions)
    return log.result()


def test_constant_wait_is_flagged_constant_and_a_fast_only_clone():
    d = diagnose(lambda x: np.zeros(len(x), dtype=np.int64))
    assert d.decisions > 100
    assert d.constant == "wait" and d.action_shares == (1.0, 0.0)
    assert d.clone_of == ("fast_only",)
    assert d.agreement["fast_only"] == 1.0 and d.agreement["minrtt"] == 0.0
    assert any(w.startswith("constant policy: 'wait'") for w in d.warnings)
    assert any("clone of fast_only" in w for w in d.warnings)


def test_constant_send_is_a_minrtt_clone_in_blocked_mode():
    d = diagnose(lambda x: np.ones(len(x), dtype=np.int64))
    assert d.constant == "send_second"
    assert "minrtt" in d.clone_of and "fast_only" not in d.clone_of
    assert d.agreement["minrtt"] == 1.0


def test_minrtt_clone_that_is_not_constant_is_flagged():
    """Packet mode: the lowest-srtt available path (else wait), from the full feature set, varies
    between paths and waiting, yet agrees with minRTT at every decision."""
    srtt = [f"srtt_{i + 1}" for i in range(2)]
    avail = [f"available_{i + 1}" for i in range(2)]
    from envs.features import feature_set
    names = [f.name for f in feature_set("full", 2)]
    cols_s, cols_a = [names.index(n) for n in srtt], [names.index(n) for n in avail]

    def minrtt_clone(x):
        s = np.where(x[:, cols_a] > 0, x[:, cols_s], np.inf)
        return np.where(np.isfinite(s.min(axis=1)), np.argmin(s, axis=1), 2).astype(np.int64)

    d = diagnose(minrtt_clone, decision="packet", observation="full")
    assert d.constant is None
    assert max(d.action_shares) < 0.99
    assert d.agreement["minrtt"] >= CLONE_AGREEMENT and "minrtt" in d.clone_of
    assert np.count_nonzero(d.action_counts) >= 2
    assert OBS_NAMES[OBS_SRTT] == "srtt" and OBS_NAMES[OBS_AVAILABLE] == "available"


def test_random_policy_raises_no_warning():
    rng = np.random.default_rng(0)
    d = diagnose(lambda x: rng.integers(0, 2, len(x)))
    assert d.warnings == () and d.constant is None and d.clone_of == ()
    assert 0.4 < d.action_shares[0] < 0.6


def test_eval_table_prints_the_warning():
    d = summarise(("wait", "send_second"), np.array([500, 0]), {"minrtt": 0, "fast_only": 500})
    rows = [{"scenario": "s", "cc": "bbr", "scheduler": "dqn", "runs": 2, "goodput_mbps": 1.0, "goodput_ci95": 0.1,
             "diagnostics": d},
            {"scenario": "s", "cc": "bbr", "scheduler": "minrtt", "runs": 2, "goodput_mbps": 2.0, "goodput_ci95": 0.1}]
    text = format_rows(rows)
    assert "| dqn | s | bbr | 500 | 100.0 | 0.0 | 0.0 | 100.0 |" in text
    assert "WARNING s/bbr: constant policy: 'wait'" in text
    assert d.metrics("final/s/bbr/dqn/diag")["final/s/bbr/dqn/diag/degenerate"] == 1.0
    assert summarise(("wait", "send_second"), np.zeros(2), {"minrtt": 0}).warnings[0].startswith("never asked")


def test_a_clone_whose_goodput_differs_beyond_the_cis_is_noted():
    """A policy making minRTT's decision at 98.1% of them and 6.1% faster (the policy search on
    ispras_s3 under BBRv2, docs/cc_robustness.md): the table says so beside the clone warning;
    within the CIs, or for a clone of another heuristic, it says nothing more."""
    d = summarise(("wait", "send_second"), np.array([81, 4239]), {"minrtt": 4239, "fast_only": 81})
    rows = [{"scenario": "ispras_s3", "cc": "bbr2", "scheduler": "policy_search", "runs": 10, "goodput_mbps": 114.286,
             "goodput_ci95": 0.0, "diagnostics": d},
            {"scenario": "ispras_s3", "cc": "bbr2", "scheduler": "minrtt", "runs": 10, "goodput_mbps": 107.672,
             "goodput_ci95": 0.0}]
    text = format_rows(rows)
    assert "WARNING ispras_s3/bbr2: clone of minrtt (98.1% same decisions)" in text
    assert ("NOTE ispras_s3/bbr2: flagged a clone of minrtt, yet its goodput is 114.286 against minrtt's 107.672 "
            "(+6.1%, beyond both CIs): the 1.9% of decisions where it differs carry that") in text
    rows[0] = dict(rows[0], goodput_ci95=4.0, goodput_mbps=110.0)
    rows[1] = dict(rows[1], goodput_ci95=3.0)
    assert "NOTE" not in format_rows(rows)
    waits = summarise(("wait", "send_second"), np.array([500, 0]), {"minrtt": 0, "fast_only": 500})
    assert "NOTE" not in format_rows([dict(rows[0], diagnostics=waits, goodput_ci95=0.0), rows[1]])


def test_each_training_seed_is_flagged_on_its_own():
    """One learner, one cell, two training seeds: seed 7's policy always sends (constant, a minRTT
    clone), seed 8's flips a coin. Pooled (the study's cell over its seeds, decision-weighted) it
    is neither constant nor a clone: the coin's waits make most of the decisions. Per seed, seed 7
    is flagged and seed 8 is not: "1 of 2" in the table's column and MLflow, seed 7 named in the
    warnings."""
    rng = np.random.default_rng(0)
    sends = diagnose(lambda x: np.ones(len(x), dtype=np.int64))
    coin = diagnose(lambda x: rng.integers(0, 2, len(x)))
    metrics = {"goodput_mbps": np.ones(3)}
    cell = merge_seeds({0: {"metrics": metrics, "error": None, "diagnostics": sends},
                        1: {"metrics": metrics, "error": None, "diagnostics": coin}}, [7, 8])
    d = cell["diagnostics"]
    assert d.decisions == sends.decisions + coin.decisions
    assert d.constant is None and d.clone_of == () and not d.degenerate, d  # pooling hides the constant seed
    assert d.per_seed == {7: sends, 8: coin} and d.seeds_flagged == [7] and d.seeds_note == "1 of 2"
    assert d.per_seed[7].constant == "send_second" and "minrtt" in d.per_seed[7].clone_of
    assert not d.per_seed[8].degenerate
    assert d.warnings == ("seed 7: " + ", ".join(sends.warnings),)
    table = format_table([("dqn_bbr", "ispras_s1", "cubic")], [d])
    assert "| seeds flagged | warning |" in table and "| 1 of 2 | seed 7: constant" in table
    assert table.count("1 of 2") == 1  # the count once, in its column
    m = d.metrics("diag/ispras_s1/cubic/dqn_bbr")
    assert m["diag/ispras_s1/cubic/dqn_bbr/degenerate"] == 0.0
    assert m["diag/ispras_s1/cubic/dqn_bbr/seeds"] == 2.0 and m["diag/ispras_s1/cubic/dqn_bbr/seeds_degenerate"] == 1.0
    both = pool_seeds({7: sends, 8: sends})  # both seeds send: flagged pooled and per seed
    assert both.constant == "send_second" and both.seeds_note == "2 of 2"
    assert "seeds flagged" not in format_table([("dqn", "s", "cc")], [sends])  # one seed: no per-seed column


# ---------------------------------------------------------------------------------- headroom
def test_headroom_finds_the_better_policy_where_waiting_matters_and_is_reproducible():
    """On wait_matters, minRTT's data on the slow, long path blocks a small file; waiting for the
    fast path (fast_only, or the wait rule with a small k) is much better."""
    scen = load_scenario(str(DATA / "wait_matters.yaml"))
    a = search(scen, "cubic", runs=4, search_runs=3, samples=4, seed=7)
    b = search(scen, "cubic", runs=4, search_runs=3, samples=4, seed=7)
    assert a.search == b.search and a.best == b.best and a.best_mean == b.best_mean
    assert a.best.scheduler in ("fast_only", "wait_rule", "ecf", "blest")
    assert a.headroom > 0.10, a
    assert a.best_mean > a.minrtt_mean + a.best_ci + a.minrtt_ci
    assert a.recovered(a.minrtt_mean) == 0.0 and a.recovered(a.best_mean) == pytest.approx(1.0)
    labels = [label for label, _ in a.search]
    assert "minrtt" in labels and "fast_only" in labels and len(labels) == len(candidates(2, 4, 7))


def test_wait_rule_limits_are_minrtt_and_fast_only():
    scen = short_s1(0.5)
    for k, same in ((math.inf, "minrtt"), (0.0, "fast_only")):
        rule = search(scen, "bbr", runs=2, search_runs=2, family=[Candidate("wait_rule", (("k", k),))])
        ref = search(scen, "bbr", runs=2, search_runs=2, family=[Candidate(same)])
        assert rule.best_mean == pytest.approx(ref.best_mean, rel=0.02), (k, rule.best_mean, ref.best_mean)


def test_heuristics_asked_at_the_blocked_decision():
    """``@blocked`` members: minRTT asked only at blocked decisions is minRTT and fast_only is
    fast_only, to the digit; the blocked-mode best is one a blocked-decision policy can express."""
    scen = short_s1(0.5)
    for name in ("minrtt", "fast_only"):
        asked = evaluate_candidate(Candidate(name, blocked=True), scen, "bbr", 3, 5, SimConfig())
        own = evaluate_candidate(Candidate(name), scen, "bbr", 3, 5, SimConfig())
        assert np.array_equal(asked["goodput_mbps"], own["goodput_mbps"]), name
    family = candidates(2)
    assert {c.label for c in family if c.blocked} == {c.label.replace("(", "@blocked(", 1) for c in family
                                                      if c.scheduler in ("ecf", "blest") and not c.blocked}
    assert not Candidate("wrr", (("by_rate", 1.0),)).in_blocked_mode and Candidate("wait_rule").in_blocked_mode
    h = search(scen, "bbr", runs=2, search_runs=2, family=[Candidate("wrr", (("by_rate", 1.0),)), Candidate("minrtt"),
                                                          Candidate("blest", (("lambda", 1.0),), blocked=True)])
    assert h.blocked_best in (Candidate("minrtt"), Candidate("blest", (("lambda", 1.0),), blocked=True))
    assert math.isfinite(h.blocked_best_mean) and (h.blocked_best != h.best or h.blocked_best_mean == h.best_mean)


def test_wait_rule_answer_from_sender_state():
    obs = np.zeros((2, 2, len(OBS_NAMES)))
    obs[:, 0, OBS_SRTT], obs[:, 1, OBS_SRTT] = 0.02, 0.2  # path 0 is the fast one
    obs[:, 1, OBS_AVAILABLE] = 1.0
    obs[:, 0, 0] = 14480.0  # cwnd of 10 packets, full
    obs[:, 0, 6] = 14480.0
    cobs = np.zeros((2, 10))
    cobs[0, 0], cobs[1, 0] = 1448.0, 1448.0 * 1000  # backlog: one packet, or a thousand
    rng, st = np.zeros(2, dtype=np.uint64), np.zeros(1)
    acts = [wait_rule.pick(np.array([1.0]), st, obs[b], cobs[b], 2, 1448.0, rng, b) for b in range(2)]
    assert acts == [0, 1 << 1]  # one packet: F delivers sooner (wait); a thousand: S's delay is worth it
    # k = inf is minRTT (send on S), k = 0 fast_only (wait)
    assert wait_rule.pick(np.array([math.inf]), st, obs[0], cobs[0], 2, 1448.0, rng, 0) == 1 << 1
    assert wait_rule.pick(np.array([0.0]), st, obs[1], cobs[1], 2, 1448.0, rng, 1) == 0


def test_headroom_refuses_bad_input():
    with pytest.raises(ConfigError, match="search_runs"):
        search(short_s1(), "bbr", search_runs=0)
    with pytest.raises(ConfigError, match="samples"):
        candidates(2, samples=-1)
    scen = short_s1(0.5)
    for params, shown in (((("k", -1.0),), "-1.0"), ((), "None"), ((("k", (1.0, 2.0)),), r"\(1.0, 2.0\)")):
        with pytest.raises(ConfigError, match=f"wait_rule k must be a number >= 0, got {shown}"):
            evaluate_candidate(Candidate("wait_rule", params), scen, "bbr", 2, 5, SimConfig())
    # a k given by hand as an integer is the same rule as the float
    as_int = evaluate_candidate(Candidate("wait_rule", (("k", 1),)), scen, "bbr", 2, 5, SimConfig())
    as_float = evaluate_candidate(Candidate("wait_rule", (("k", 1.0),)), scen, "bbr", 2, 5, SimConfig())
    assert np.array_equal(as_int["goodput_mbps"], as_float["goodput_mbps"])


def test_headroom_gain_in_one_home():
    """The relative gain over minRTT, as the cell's headroom and its blocked-decision headroom read
    it, for a metric where higher is better and one where lower is."""
    assert gain(12.0, 10.0) == pytest.approx(0.2) and gain(8.0, 10.0, higher_is_better=False) == pytest.approx(0.2)
    h = Headroom("s", "bbr", "download_time_s", Candidate("fast_only"), 8.0, 0.1, 10.0, 0.1, higher_is_better=False,
                 blocked_best=Candidate("wait_rule", (("k", 1.0),)), blocked_best_mean=9.0)
    assert h.headroom == pytest.approx(0.2) and h.blocked_headroom == pytest.approx(0.1)


# ---------------------------------------------------------------------------------- reward credit
def test_ispras_credit_adds_the_change_of_bytes_in_flight():
    """credit = 0 is the published reward; credit = c adds c x the change of the bytes in flight on
    the paths other than the fast one (at the decision) over the interval, normalised as the
    throughput term."""
    rewards = {}
    for credit in (0.0, 1.0):
        p = build_process(2, scenario=short_s1(), cc="bbr", seed=3, observation="ispras_dqn", reward="ispras",
                          reward_params={"alpha": 1.0, "beta": 0.1, "credit": credit})
        p.reset()
        out, moved = [], []
        rows = np.arange(2)
        for i in range(40):
            second = 1 - np.argmin(p.sim.obs[:, :2, OBS_SRTT], axis=1)  # the path other than the fast one
            before = p.sim.obs[rows, second, OBS_INFLIGHT].copy()
            t0 = p.sim.cobs[:, 2].copy()
            r, *_ = p.step(np.full(2, i % 2))
            moved.append((p.sim.obs[rows, second, OBS_INFLIGHT] - before) / np.maximum(p.sim.cobs[:, 2] - t0, 1e-9)
                         / (100 * 125_000.0))
            out.append(r)
        rewards[credit] = (np.array(out), np.array(moved))
    diff = rewards[1.0][0] - rewards[0.0][0]
    np.testing.assert_allclose(diff, rewards[1.0][1], rtol=1e-4, atol=1e-5)
    with pytest.raises(ConfigError, match="reward.credit"):
        build_process(1, reward="ispras", reward_params={"credit": -1.0})


def test_ispras_per_ms_counts_bytes_per_decision():
    """per_ms = 0 divides the throughput and credit terms' bytes by the interval to the next
    decision (a rate, as published); per_ms = p by a fixed p ms, so each term is the bytes of one
    decision: the same reward times interval / p, the RTT term untouched."""
    out, dts = {}, []
    for per_ms in (0.0, 2.0):
        p = build_process(2, scenario=short_s1(), cc="cubic", seed=3, observation="ispras_dqn", reward="ispras",
                          reward_params={"alpha": 1.0, "beta": 0.0, "credit": 1.0, "per_ms": per_ms})
        p.reset()
        rs = []
        for i in range(40):
            t0 = p.sim.cobs[:, 2].copy()
            r, *_ = p.step(np.full(2, i % 3 != 0))
            rs.append(r)
            if per_ms == 0.0:
                dts.append(p.sim.cobs[:, 2] - t0)
        out[per_ms] = np.array(rs)
    dt = np.array(dts)
    assert dt.max() > 2 * dt.min() > 0  # decisions at unequal intervals: the two forms differ
    np.testing.assert_allclose(out[2.0], out[0.0] * dt / 2e-3, rtol=1e-4, atol=1e-6)
    with pytest.raises(ConfigError, match="reward.per_ms"):
        build_process(1, reward="ispras", reward_params={"per_ms": -1.0})


def test_study_headroom_key_and_checkpoint_as_scheduler(tmp_path):
    from omegaconf import OmegaConf

    from studies.spec import _headroom, wanted
    assert _headroom(True) == {"search_runs": 5, "samples": 0} and _headroom(None) is None
    assert _headroom({"samples": 8}) == {"search_runs": 5, "samples": 8}
    with pytest.raises(ConfigError, match="headroom.search_runs"):
        _headroom({"search_runs": 0})
    with pytest.raises(ConfigError, match="search_runs, samples"):
        _headroom({"runs": 3})
    base = {"study": None, "scenario": {"ispras_s1": {}}, "cc": {"bbr": {}}}
    assert wanted(OmegaConf.create({**base, "scheduler": str(tmp_path)}))  # a checkpoint: its diagnostics
    assert not wanted(OmegaConf.create({**base, "scheduler": "minrtt"}))


def test_completion_rate_mbps_shapes_without_changing_the_return():
    """With ``rate_mbps`` each decision earns the bytes it sent (less those declared lost) over
    that rate on top of minus its interval; summed over a file transfer those bytes are the
    file's but for what went out before the first decision, so the undiscounted return stays minus
    the completion time plus a constant (potential-based shaping), while single decisions differ.
    A 2 MB file: a 0.5 MB one is out (0.16 s) before any decision, the slow path opening after
    XQUIC's path setup (2 x 20 + 80 ms); the return counts from the first decision, at that opening."""
    scen = resolve_scenarios("lossy_slow")[0].with_workload(type="file", file_mb=2)
    returns, steps = {}, {}
    for rate in (0.0, 40.0):
        p = build_process(2, scenario=scen, cc="bbr", seed=4, observation="ispras_backlog", reward="completion",
                          reward_params={"time_norm_s": 0.01, "rate_mbps": rate})
        p.reset()
        obs = p.sim.obs[:, :2]
        before = (obs[:, :, OBS_SENT] - p.sim.mss * obs[:, :, OBS_LOSSES]).sum(axis=1)  # sent before it
        start = p.sim.cobs[:, COBS_ELAPSED].copy()  # the first decision
        total, rs = np.zeros(2), []
        for i in range(100_000):
            if p.sim.done.all():
                break
            r, *_ = p.step(np.full(2, i % 4 != 0))
            total += r
            rs.append(r.copy())
        returns[rate], steps[rate] = total, np.array(rs)
        completion = p.sim.results()["completion_s"]
    np.testing.assert_allclose(start, 0.12, atol=1e-9)
    np.testing.assert_allclose(returns[0.0] * 0.01, -(completion - start), rtol=1e-6)
    assert before.min() > 0
    rest = (2e6 - before) / (40.0 * 125_000.0)  # the file after the first decision at 40 Mbit/s, in seconds
    np.testing.assert_allclose(returns[40.0] * 0.01, -(completion - start) + rest, rtol=0, atol=1e-6)
    assert np.abs(steps[40.0] - steps[0.0]).max() > 0.01  # single decisions do move
    with pytest.raises(ConfigError, match="reward.rate_mbps"):
        build_process(1, reward="completion", reward_params={"rate_mbps": -1.0})


def test_reward_signal_tosses_its_coin_where_the_wait_rule_waits():
    """``benchmarks/reward_signal.py --coin-at-waits-of wait_rule``: the decisions kept are the wait
    rule's waits (``studies.headroom.blocked_answers``): none with k = inf (minRTT never waits), all
    with k = 0 (fast_only always does); elsewhere the policy sends."""
    from benchmarks.reward_signal import PUBLISHED, collect
    for k, share in ((math.inf, 0.0), (0.0, 1.0)):
        acts, _, _, _ = collect(PUBLISHED, short_s1(0.5), "bbr", 2, 5, heuristic=("wait_rule", {"k": k}))
        kept = np.concatenate(collect.kept)
        assert kept.size > 0 and kept.mean() == share, k
        if share == 0.0:
            assert np.concatenate(acts).all()  # no coin: the rule's answer, send


def test_own_ack_outcome_times_each_decisions_packet_on_the_path_that_carried_it():
    """``benchmarks/own_ack_outcome.py`` on 4 connections of a 2 MB ispras_s1 file: with minRTT's
    answer (the rule with k = inf) every decision sends, and its packet is acknowledged over the
    second path (80 ms of base round trip) but where the fast path freed within the decision's step
    and took it first (92% of 232 resolved decisions above 80 ms, median 91 ms; 93% of 234 before a
    copy of a spurious declaration was queued whole or cancelled, 2026-12-02); reversed every time,
    every decision waits and its packet goes on the fast path as the sender sees it: the 20 ms one,
    but in the 25 ms after it opens, before its first RTT sample, when XQUIC shows it at 250 ms and
    the 80 ms path is F (9% of 3,726 here above 60 ms, median 50 ms, at most 117); the decisions not
    seen arriving are counted by the rule's answer and the action. (A 0.5 MB file resolves 7
    decisions of 25, too few to tell the paths' shares.)"""
    from benchmarks.own_ack_outcome import collect
    sends, _ = collect(short_s1(2.0), "bbr", 4, math.inf, 0.0, 5)
    assert sends.delay_ms and set(sends.rule) == {1} and set(sends.action) == {1}
    delay = np.array(sends.delay_ms)
    assert np.mean(delay > 80.0) > 0.8 and set(sends.unresolved) <= {(1, 1)}
    waits, _ = collect(short_s1(2.0), "bbr", 4, math.inf, 1.0, 5)
    assert waits.delay_ms and set(waits.action) == {0} and set(waits.unresolved) <= {(1, 0)}
    early = np.array(waits.delay_ms) > 60.0  # waited for the 80 ms path, the 20 ms one unsampled
    assert 0 < early.sum() < 0.5 * early.size and max(waits.delay_ms) < 130.0
    assert 15.0 < float(np.median(waits.delay_ms)) < 60.0 < float(np.median(sends.delay_ms))


def test_rollout_labels_reverse_one_decision_on_common_random_numbers():
    """``benchmarks/rollout_labels.py``: on a jittery, lossy path the connections that reverse
    nothing repeat the reference to the bit (common draws); one decision reversed, or the network's
    stream moved at it (the placebo), changes its connection's transfer; under minRTT's continuation
    a stretch of the wait rule is a reversal the rule's sends leave unchanged."""
    from benchmarks.rollout_labels import _episode, effects
    none = np.array([-1, -1, -1])
    goodput, tags = _episode(short_s1(0.5), "bbr", 5, 1.25, 1.25, none, none)
    assert len(set(goodput.tolist())) == 1 and len(tags) > 20
    e = effects(short_s1(0.5), "bbr", 5, 1.25, 1.25, 7)
    assert len(e.tag) == len(e.reversed) == len(e.placebo) > 2 and (e.placebo != 0).any()
    switched = effects(short_s1(0.5), "bbr", 5, math.inf, 1.25, 7, switch_ms=20.0)
    assert (switched.reversed[switched.tag == 1] == 0).mean() > 0.5


def test_reward_signal_reverses_one_decision_per_connection():
    """``--flip-each-decision-of``: in a deterministic cell (ispras_s3: no jitter, no random loss)
    one change of goodput per decision of the followed rule, each the effect of reversing that decision
    alone (reversing none changes nothing); a cell whose runs differ is refused."""
    from benchmarks.reward_signal import ascend, flip_each, follow
    s3 = resolve_scenarios("ispras_s3")[0].with_workload(type="file", file_mb=2.0)
    acts, change = flip_each(("minrtt", {}), s3, "cubic", 3)
    assert len(acts) > 5 and acts.all() and change.shape == acts.shape and np.isfinite(change).all()
    assert (change != 0).any()  # some waits move the transfer's end
    # the greedy ascent: each round's reversal raises goodput, and replaying its reversals gives that goodput
    # (under Reno one wait, the 11th decision's, ends 1.5 MB sooner, and under XQUIC's CUBIC, which leaves
    # slow start only on a loss, the same one; with 1 MB no wait does)
    assert ascend(("minrtt", {}), s3.with_workload(type="file", file_mb=1.0), "cubic", 3, rounds=2) == []
    s3 = s3.with_workload(type="file", file_mb=1.5)
    base, _, _ = follow(("minrtt", {}), s3, "reno", 3, [frozenset()])
    steps = ascend(("minrtt", {}), s3, "reno", 3, rounds=2)
    scores = [float(base[0])] + [g for _, g, _, _ in steps]
    assert steps and all(b > a for a, b in zip(scores, scores[1:]))
    assert ascend(("minrtt", {}), s3, "cubic", 3, rounds=2) == steps
    replay, done, _ = follow(("minrtt", {}), s3, "reno", 3, [frozenset(j for j, _, _, _ in steps)])
    assert replay[0] == steps[-1][1] and (done == 0).sum() == steps[-1][2]
    with pytest.raises(SystemExit, match="differ"):
        flip_each(("wait_rule", {"k": 1.0}), short_s1(1.0), "bbr", 3)  # 0.5 MB: both runs end at the same step


def test_reward_signal_imitates_a_heuristic_from_a_feature_set():
    """``--imitate``: the features of every decision where the heuristic is followed, per feature set
    (``ispras_backlog`` is ``ispras_dqn`` plus the backlog), its answers and its own goodput (the
    headroom search's score of the rule); a heuristic that never waits (the rule with k = inf, minRTT)
    is imitated exactly on any features, its imitation scoring minRTT's goodput at every threshold."""
    from benchmarks.reward_signal import IMITATION_P_WAIT, imitate, imitation_data
    s1 = short_s1(0.5)
    rule = ("wait_rule", {"k": 0.5})
    x, y, own = imitation_data(rule, ["ispras_dqn", "ispras_backlog"], s1, "bbr", 2, 5)
    assert x["ispras_dqn"].shape == (len(y), 6) and x["ispras_backlog"].shape == (len(y), 7)
    np.testing.assert_array_equal(x["ispras_backlog"][:, :6], x["ispras_dqn"])
    assert 0 < (y == 0).sum() < len(y)  # the rule both waits and sends here
    searched = evaluate_candidate(Candidate("wait_rule", (("k", 0.5),)), s1, "bbr", 2, 5, SimConfig())
    assert own == pytest.approx(float(searched["goodput_mbps"].mean()))
    [row] = imitate(("wait_rule", {"k": math.inf}), ["ispras_dqn"], s1, "bbr", 2, 5)
    assert row["waits"] == 0.0 and row["accuracy"] == 1.0 and row["heuristic"] == row["minrtt"]
    assert list(row["imitation"]) == list(IMITATION_P_WAIT)
    assert all(g == row["minrtt"] for g in row["imitation"].values())
    with pytest.raises(ConfigError, match="observation set"):
        imitation_data(rule, ["no_such_set"], s1, "bbr", 1, 5)


S1 = ["--scenario", "ispras_s1", "--cc", "bbr", "--runs", "1"]


@pytest.mark.parametrize("argv, message", [
    (["--reward", "throughputt", *S1], "unknown --reward 'throughputt'; valid: chunk, completion, ispras"),
    (["--reward", "ispras", "--set", "alpah=1", *S1], "--set: unknown reward setting 'alpah'; valid: alpha, beta"),
    (["--set", "beta", *S1], "--set takes KEY=NUMBER items"),
    (["--checkpoint", "/nonexistent", *S1], "--checkpoint: not a checkpoint: /nonexistent has no meta.json"),
    (["--runs", "0", "--scenario", "ispras_s1", "--cc", "bbr"], "--runs must be an integer >= 1, got 0"),
    (["--gamma", "1.5", *S1], "--gamma must be in [0, 1], got 1.5"),
    (["--gamma", "nan", *S1], "--gamma must be in [0, 1], got nan"),
    (["--scenario", "ispras_s9", "--cc", "bbr"], "--scenario: unknown scenario 'ispras_s9'; valid: "),
    (["--scenario", "ispras_s1", "--cc", "bbr3"], "--cc: unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
    (["--preset", "dqnn", *S1], "--preset: unknown agent 'dqnn'; valid: "),
    (["--imitate", "wait_rule", "--heuristic-param", "kk=0.5", *S1],
     "--imitate wait_rule --heuristic-param kk=0.5: scheduler 'wait_rule' has no parameter 'kk'; valid: k"),
    (["--coin-at-waits-of", "ecf", "--heuristic-param", "bta=1", *S1],
     "--coin-at-waits-of ecf --heuristic-param bta=1: scheduler 'ecf' has no parameter 'bta'; valid: beta"),
    (["--flip-each-decision-of", "minrt", *S1], "--flip-each-decision-of minrt: unknown scheduler 'minrt'; valid: "),
    (["--coin-at-waits-of", "wait_rule", *S1], "--coin-at-waits-of wait_rule: give the rule's k"),
    (["--heuristic-param", "k=1", *S1], "--heuristic-param applies to --coin-at-waits-of"),
    (["--imitate", "minrtt", "--observation", "bogus", *S1], "--observation: unknown observation set 'bogus'"),
    (["--ascend", "2", *S1], "--ascend takes a number of rounds >= 0, with --flip-each-decision-of"),
])
def test_reward_signal_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    """``python -m benchmarks.reward_signal``: a bad flag ends, before any simulation, in one line
    naming it and what it takes (the valid names, the range); an unknown heuristic parameter is
    refused by the registry's check (``envs.plugins.scheduler_values``), not as a missing k."""
    assert message in refused("benchmarks.reward_signal", argv, monkeypatch, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "ispras_s9"], "--scenario: unknown scenario 'ispras_s9'; valid: "),
    (["--cc", "bbr3"], "--cc: unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
    (["--runs", "0"], "--runs must be an integer >= 1, got 0"),
    (["--k", "-1"], "--k must be >= 0 (inf: minRTT), got -1.0"),
    (["--eps", "1.5"], "--eps must be in [0, 1], got 1.5"),
])
def test_own_ack_outcome_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    assert message in refused("benchmarks.own_ack_outcome", argv, monkeypatch, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "ispras_s9"], "--scenario: unknown scenario 'ispras_s9'; valid: "),
    (["--cc", "bbr3"], "--cc: unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
    (["--seeds", "0"], "--seeds must be an integer >= 1, got 0"),
    (["--every", "-1"], "--every must be an integer >= 1, got -1"),
    (["--policy-k", "-2"], "--policy-k must be >= 0 (inf: minRTT), got -2.0"),
    (["--switch-ms", "-1"], "--switch-ms must be >= 0"),
])
def test_rollout_labels_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    assert message in refused("benchmarks.rollout_labels", argv, monkeypatch, capsys)


def test_the_wait_rule_member_names_an_unknown_parameter():
    """``studies.headroom.blocked_answers``: a parameter the wait rule does not have is refused by the
    registry's check, naming it and the valid ones, before the rule's required k is asked for."""
    with pytest.raises(ConfigError, match="scheduler 'wait_rule' has no parameter 'kk'; valid: k"):
        evaluate_candidate(Candidate("wait_rule", (("kk", 0.5),)), short_s1(0.5), "bbr", 1, 5, SimConfig())


def test_a_one_run_row_says_it_has_no_ci():
    """``train.eval_runs=1``: one episode per row, whose CI ``mean_ci`` gives as 0; the table says
    there is none instead of printing "± 0.000"."""
    rows = [{"scenario": "s", "cc": "bbr", "scheduler": s, "runs": runs, "goodput_mbps": 2.0, "goodput_ci95": 0.0}
            for s, runs in (("dqn", 1), ("minrtt", 3))]
    text = format_rows(rows)
    assert "| s | bbr | dqn | 2.000 (one run: no CI) |" in text
    assert "| s | bbr | minrtt | 2.000 ± 0.000 |" in text


def test_a_policy_keeping_one_interval_mode_is_a_clone_of_that_modes_heuristic():
    """In the interval mode every action is a heuristic: a policy that keeps minRTT's mode is
    minRTT (clone of ``minrtt``), one that keeps the wait rule's mode is the rule with its
    parameters (``wait_rule(k=1)``, the form the headroom search names its members in), and one
    that alternates is neither. Before, interval policies were reported constant and never a clone,
    so the study verdict did not judge them."""
    from agents.diagnostics import DecisionLog, action_names, mode_heuristics
    from envs.multipath_env import build_process
    modes = [{"scheduler": "minrtt"}, {"scheduler": "wait_rule"}, {"scheduler": "wait_rule", "params": {"k": 1.25}}]
    found = {}
    for label, pick in (("min", lambda t: 0), ("rule", lambda t: 1), ("both", lambda t: t % 2)):
        p = build_process(3, scenario="ispras_s2", cc="bbr", seed=0, decision="interval",
                          observation="ispras_backlog", interval_ms=50.0, modes=modes)
        assert mode_heuristics(p) == ("minrtt", "wait_rule(k=1)", "wait_rule(k=1.25)")
        assert action_names(p) == ("0:minrtt", "1:wait_rule", "2:wait_rule(k=1.25)")
        log = DecisionLog(p)
        p.reset()
        for t in range(20):
            actions = np.full(3, pick(t), dtype=np.int64)
            log.record(actions)
            p.step(actions)
        found[label] = log.result()
    assert found["min"].clone_of == ("minrtt",) and found["min"].agreement["wait_rule(k=1)"] == 0.0
    assert found["rule"].clone_of == ("wait_rule(k=1)",) and found["rule"].constant == "1:wait_rule"
    assert found["both"].clone_of == () and found["both"].constant is None
    assert found["both"].agreement["minrtt"] == pytest.approx(0.5, abs=0.05)
    assert "x/agree/wait_rule_k_1.25_" in found["rule"].metrics("x")  # a name MLflow takes


def test_the_diagnostics_table_shows_each_policys_own_actions():
    """A study with per-packet learners and a learner over modes: each row shows its own action
    shares (before, the modes' shares read n/a under the blocked mode's columns)."""
    blocked = summarise(("wait", "send_second"), np.array([10, 90]), {"minrtt": 90, "fast_only": 10})
    modes = summarise(("0:minrtt", "1:wait_rule"), np.array([74, 26]), {"minrtt": 74, "wait_rule(k=1)": 26})
    table = format_table([("dqn", "s", "bbr"), ("dqn_modes", "s", "bbr")], [blocked, modes])
    assert "| wait % | send_second % | 0:minrtt % | 1:wait_rule % |" in table
    assert "| dqn | s | bbr | 100 | 10.0 | 90.0 | n/a | n/a |" in table
    assert "| dqn_modes | s | bbr | 100 | n/a | n/a | 74.0 | 26.0 |" in table
