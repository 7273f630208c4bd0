"""The headroom parts of a study's report (studies/report.py: the learners against the searched
best, the worst-CC table) and the live headroom runs kept in tests/data (studies/headroom.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from agents.diagnostics import BLOCKED_ACTIONS, PolicyDiagnostics, pool_seeds, summarise
from envs.errors import ConfigError
from envs.scenario import resolve_scenarios
from envs.sim.simulator import SimConfig
from studies.headroom import Candidate, Headroom, format_live, live_cells, search
from studies.report import learning_verdict, worst_cc_table
from studies.spec import HEURISTIC, TRAIN, Entry, Study
from conftest import refused

LIVE = Path(__file__).parent / "data" / "headroom_live.json"


def small_study(seeds: int = 3) -> Study:
    scen = resolve_scenarios(["hetero_small_file"])
    return Study("t", [Entry("minrtt", HEURISTIC, "minrtt"), Entry("fast_only", HEURISTIC, "fast_only"),
                       Entry("dqn", TRAIN), Entry("bandit", TRAIN)], scen, {"cubic": {}, "bbr": {}}, 10, 0, seeds,
                 "goodput_mbps", True, SimConfig(), 1, Path("."), {}, {})


def policy(clone_of=()) -> PolicyDiagnostics:
    """Blocked-mode diagnostics of 100 decisions: always waiting (a fast_only clone), always
    sending (a minRTT clone) or half and half (neither)."""
    wait = {("fast_only",): 100, ("minrtt",): 0, (): 50}[tuple(clone_of)]
    return summarise(BLOCKED_ACTIONS, np.array([wait, 100 - wait]), {"minrtt": 100 - wait, "fast_only": wait})


def cell(values, seed_means=None, clone_of=(), seeds_clone_of=None):
    """A cell's result; ``seeds_clone_of``: one learner's policy per training seed (what each copies)."""
    diagnostics = (pool_seeds({seed: policy(c) for seed, c in enumerate(seeds_clone_of)}) if seeds_clone_of
                   else policy(clone_of))
    r = {"metrics": {"goodput_mbps": np.asarray(values, float)}, "error": None, "diagnostics": diagnostics}
    if seed_means is not None:
        r["seed_means"] = {"goodput_mbps": np.asarray(seed_means, float)}
    return r


def results():
    """minRTT 15, fast_only 19 (the best) in both cells; dqn waits (a fast_only clone, fine), the
    bandit sends (a minRTT clone: 21% below the best, a failure)."""
    out = {}
    for cc, dqn_seeds in (("cubic", [19.0, 19.0, 18.0]), ("bbr", [19.0, 17.0, 19.0])):
        out[("minrtt", "hetero_small_file", cc)] = cell([15.0] * 10)
        out[("fast_only", "hetero_small_file", cc)] = cell([19.0] * 10)
        out[("dqn", "hetero_small_file", cc)] = cell(dqn_seeds, dqn_seeds, clone_of=("fast_only",))
        out[("bandit", "hetero_small_file", cc)] = cell([15.0] * 3, [15.0] * 3, clone_of=("minrtt",))
    return out


def found(cc: str) -> Headroom:
    return Headroom("hetero_small_file", cc, "goodput_mbps", Candidate("fast_only"), 19.0, 0.0, 15.0, 0.0,
                    [("minrtt", 15.0), ("fast_only", 19.0)])


def test_verdict_accepts_a_clone_of_the_best_and_fails_a_clone_of_minrtt():
    study, res = small_study(), results()
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    text = learning_verdict(study, res, [found("cubic"), found("bbr")], means, cis)
    assert "dqn / hetero_small_file / cubic: clone of fast_only (fast_only +0.0% below the best): ok" in text
    assert "bandit / hetero_small_file / bbr: clone of minrtt (minrtt +21.1% below the best): FAILS" in text
    assert "2 degenerate cell(s) copy a heuristic more than 2% below the best" in text
    # both cells have +26.7% headroom; dqn recovers (18.67 - 15) / 4 = 92% in cubic, the bandit 0%
    line = next(x for x in text.splitlines() if x.startswith("- hetero_small_file / cubic: +26.7%"))
    assert "found" in line and "dqn 92% [" in line and "bandit 0% [0, 0]" in line


def test_verdict_says_when_the_best_is_outside_the_blocked_action_space():
    """A minRTT clone fails against a best that sends on the slow path while the fast one has
    window (WRR), and the report says that minRTT is what a blocked-decision policy reaches there."""
    study, res = small_study(), results()
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    cells = []
    for cc in ("cubic", "bbr"):
        h = found(cc)
        h.best = Candidate("wrr", (("by_rate", 1.0),))
        h.blocked_best, h.blocked_best_mean, h.blocked_best_ci = Candidate("minrtt"), 15.0, 0.0
        cells.append(h)
    text = learning_verdict(study, res, cells, means, cis)
    assert ("bandit / hetero_small_file / bbr: clone of minrtt (minrtt +21.1% below the best): FAILS; within 2% of "
            "the best a blocked-decision policy reaches (minrtt, 15.00): the cell's best is outside the learner's "
            "action space") in text
    assert "2 degenerate cell(s) copy a heuristic more than 2% below the best; 2 of them copy one within 2%" in text


def test_verdict_says_which_policy_a_failing_clones_own_reward_prefers():
    """With the returns of runner.check_rewards in a failing clone's cell, the report says whether
    its reward prefers the heuristic it copies (the reward falls short) or the best (learning does)."""
    study, res = small_study(), results()
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    res[("bandit", "hetero_small_file", "bbr")]["reward_check"] = {"minrtt": (63.7, 0.1), "fast_only": (37.6, 0.2)}
    res[("bandit", "hetero_small_file", "cubic")]["reward_check"] = {"minrtt": (-11.5, 0.0), "fast_only": (-5.4, 0.0)}
    cells = []
    for cc in ("cubic", "bbr"):
        h = found(cc)
        h.blocked_best, h.blocked_best_mean, h.blocked_best_ci = Candidate("fast_only"), 19.0, 0.0
        cells.append(h)
    text = learning_verdict(study, res, cells, means, cis)
    assert ("bandit / hetero_small_file / bbr: clone of minrtt (minrtt +21.1% below the best): FAILS; the best a "
            "blocked-decision policy reaches: fast_only, 19.00; its own reward per episode: minrtt 63.7 ± 0.1, "
            "fast_only 37.6 ± 0.2; its reward prefers the heuristic it copies: the reward, not the learning, falls "
            "short of the score") in text
    assert ("its own reward per episode: minrtt -11.5 ± 0, fast_only -5.4 ± 0; its reward prefers fast_only: the "
            "learner falls short of its own reward (its training, or what it observes)") in text


def test_returns_under_a_learners_reward_tell_the_ispras_reward_from_the_completion_one():
    """On hetero_file under BBRv1, where waiting for the fast path (fast_only) is the cell's best:
    the main job's reward (ISPRAS with its credit for bytes moved to the second path) sums to more
    for minRTT, which sends on the slow path, and dqn_backlog's completion reward to more for
    fast_only (studies.headroom.reward_returns; README "Where learning pays")."""
    from agents.registry import preset
    from studies.headroom import reward_returns

    scen = resolve_scenarios(["hetero_file"])[0]
    members = [Candidate("minrtt"), Candidate("fast_only")]
    ispras = reward_returns(members, scen, "bbr", 5, 1_000_000, dict(preset("dqn")["env"]))
    completion = reward_returns(members, scen, "bbr", 5, 1_000_000, dict(preset("dqn_backlog")["env"]))
    assert ispras["minrtt"][0] > ispras["fast_only"][0] + ispras["minrtt"][1] + ispras["fast_only"][1]
    assert completion["fast_only"][0] > completion["minrtt"][0] + completion["minrtt"][1] + completion["fast_only"][1]
    assert reward_returns(members, scen, "bbr", 5, 1_000_000, dict(preset("dqn")["env"])) == ispras


def test_a_heuristic_outside_the_study_is_read_on_the_search_seeds_only():
    """The bandit in the bbr cell copies ECF, which is not one of the study's schedulers: its gap
    and its distance to the best blocked-decision policy both come from the search seeds (ECF
    12.0 against WRR's 24.0 and the wait rule's 12.2 there), never mixed with the held-out
    scores (WRR 19.0, the wait rule 15.0): 50% below the best, within 2% (1.6%) of what a
    blocked-decision policy reaches."""
    study, res = small_study(), results()
    ecf_clone = summarise(BLOCKED_ACTIONS, np.array([40, 60]), {"minrtt": 60, "fast_only": 40, "ecf": 100})
    assert ecf_clone.clone_of == ("ecf",)
    res[("bandit", "hetero_small_file", "bbr")]["diagnostics"] = ecf_clone
    from studies.report import _clone_gaps, cube
    means, cis = cube(study, res, "goodput_mbps")
    wait = Candidate("wait_rule", (("k", 1.0),))
    h = Headroom("hetero_small_file", "bbr", "goodput_mbps", Candidate("wrr", (("by_rate", 1.0),)), 19.0, 0.0, 15.0,
                 0.0, [("minrtt", 15.0), ("fast_only", 11.0), ("ecf", 12.0), ("wrr(by_rate=1)", 24.0),
                       (wait.label, 12.2)], blocked_best=wait, blocked_best_mean=15.0, blocked_best_ci=0.0)
    (ecf,) = _clone_gaps(("ecf",), h, means, {e.label: i for i, e in enumerate(study.schedulers)}, 0, 1)
    assert (ecf.score, ecf.best, ecf.blocked_best) == (12.0, 24.0, 12.2)
    assert ecf.gap == pytest.approx(0.5) and ecf.blocked_gap == pytest.approx(1 - 12.0 / 12.2)
    text = learning_verdict(study, res, [found("cubic"), h], means, cis)
    assert ("bandit / hetero_small_file / bbr: clone of ecf (ecf +50.0% below the best): FAILS; within 2% of the best "
            "a blocked-decision policy reaches (wait_rule(k=1), 15.00)") in text
    # a study scheduler keeps its held-out score: minRTT 15.0 against the held-out references
    (ll,) = _clone_gaps(("minrtt",), h, means, {e.label: i for i, e in enumerate(study.schedulers)}, 0, 1)
    assert (ll.score, ll.best, ll.blocked_best) == (15.0, 19.0, 15.0) and ll.blocked_gap == 0.0


def test_a_clone_of_a_lower_is_better_metric_is_measured_in_its_direction():
    """A study scored by completion time (lower is better): a heuristic taking 12 s where the
    search's best takes 10 s is 20% below it, not 20% above; ECF, outside the study, is read
    against the search's shortest time (8 s: 50% below), never its longest."""
    study, res = small_study(), results()
    from studies.report import _clone_gaps, _clone_ok, cube
    means, _ = cube(study, res, "goodput_mbps")
    index = {e.label: i for i, e in enumerate(study.schedulers)}
    means[index["minrtt"], 0, 1] = 12.0
    h = Headroom("hetero_small_file", "bbr", "download_time_s", Candidate("fast_only"), 10.0, 0.0, 12.0, 0.0,
                 [("minrtt", 12.0), ("ecf", 12.0), ("fast_only", 8.0), ("wrr(by_rate=1)", 30.0)],
                 higher_is_better=False)
    (ll,) = _clone_gaps(("minrtt",), h, means, index, 0, 1)
    assert ll.gap == pytest.approx(0.2) and not _clone_ok([ll])
    (ecf,) = _clone_gaps(("ecf",), h, means, index, 0, 1)
    assert ecf.best == 8.0 and ecf.gap == pytest.approx(0.5)


def test_verdict_flags_each_training_seed_on_its_own():
    """The bandit's three seeds in the bbr cell: one waits (a fast_only clone, the best: ok), one
    sends (a minRTT clone, 21% below the best: fails), one mixes. Pooled, it is no clone; per
    seed, 2 of 3 are flagged and 1 fails, in the verdict and its count."""
    study, res = small_study(), results()
    res[("bandit", "hetero_small_file", "bbr")] = cell([17.0] * 3, [19.0, 15.0, 17.0],
                                                       seeds_clone_of=[("fast_only",), ("minrtt",), ()])
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    text = learning_verdict(study, res, [found("cubic"), found("bbr")], means, cis)
    assert ("- bandit / hetero_small_file / bbr: pooled over its seeds no clone [per seed: 2 of 3 flagged, 1 fail "
            "(seed 1)]") in text
    assert "1 degenerate cell(s) copy a heuristic more than 2% below the best" in text  # the pooled count
    assert "Per training seed: 1 of 3 seed policies in 1 learner cells copy a heuristic more than 2% below" in text
    d = res[("bandit", "hetero_small_file", "bbr")]["diagnostics"]
    assert not d.degenerate and d.seeds_flagged == [0, 1] and d.seeds_note == "2 of 3"
    assert [w.split(":")[0] for w in d.warnings] == ["seed 0", "seed 1"]
    assert d.warnings[0].startswith("seed 0: constant policy: 'wait'")


def test_headroom_is_judged_on_the_paired_difference_of_common_seeds():
    """The best and minRTT run on the same held-out seeds, so their per-run difference carries
    little of the network's noise: on ispras_s2 under BBRv1 the wait rule's gain lies within the
    two means' CIs at 10 runs but far beyond the CI of the paired difference (at its default k 1:
    +0.76 Mbit/s, the paired CI ±0.24, the two means' ±2.8). Without a paired CI (``diff_ci`` NaN)
    the two CIs add up, as before."""
    from envs.scenario import load_scenario
    h = search(load_scenario("ispras_s2"), "bbr", runs=10, seed=0,
               family=[Candidate("minrtt"), Candidate("wait_rule", (("k", 1.0),))])
    gap = h.best_mean - h.minrtt_mean
    assert h.best.label == "wait_rule(k=1)" and 0.0 < gap < h.best_ci + h.minrtt_ci, h
    assert h.diff_ci < gap / 2 and h.significant, h
    unpaired = Headroom("s", "bbr", "goodput_mbps", h.best, h.best_mean, h.best_ci, h.minrtt_mean, h.minrtt_ci)
    assert math.isnan(unpaired.diff_ci) and not unpaired.significant
    assert math.isnan(unpaired.recovered(h.best_mean)) and h.recovered(h.best_mean) == 1.0
    same = search(load_scenario("ispras_s2"), "bbr", runs=4, seed=0, family=[Candidate("minrtt")])
    assert same.diff_ci == 0.0 and not same.significant  # minRTT against itself


def test_verdict_says_when_no_learner_finds_the_headroom():
    study, res = small_study(), results()
    for cc in ("cubic", "bbr"):
        res[("dqn", "hetero_small_file", cc)] = cell([16.0] * 3, [16.0] * 3)
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    text = learning_verdict(study, res, [found("cubic"), found("bbr")], means, cis)
    assert "- hetero_small_file / bbr: +26.7% (fast_only); NOT found by any learner: dqn 25% [25, 25]" in text


def test_worst_cc_takes_each_seeds_worst_cc():
    text = worst_cc_table(small_study(), results(), [found("cubic"), found("bbr")])
    rows = {r.split("|")[1].strip(): r.split("|")[2].strip() for r in text.splitlines() if r.startswith("| ")}
    # per seed: min(19, 19), min(19, 17), min(18, 19) = 19, 17, 18 -> mean 18, t(2) CI 2.48
    m, h = 18.0, 4.302652729911275 * 1.0 / math.sqrt(3)
    assert rows["dqn"] == f"{m:.2f} ± {h:.2f} (cubic/bbr)"
    assert rows["minrtt"] == "15.00 ± 0.00 (cubic)"
    assert rows["searched best (per cell)"].startswith("19.00 ± 0.00")


def test_live_report_refuses_a_record_without_minrtt():
    rec = {"scenario": "s", "cc": "c", "date": "d", "schedulers": ["x"],
           "runs": [{"scheduler": "x", "outcome": "finished", "error": "", "goodput_mbps": 1.0}]}
    with pytest.raises(ConfigError, match="no finished minrtt run"):
        live_cells([rec])


def test_live_headroom_data_has_provenance_and_says_what_docs_say():
    """The live runs kept in tests/data (benchmarks/headroom_live.py): every batch says when, on
    which kernel and stack, with which command and load, passed the testbed's verification and has
    >= 3 finished runs per scheduler. What docs/cc_robustness.md reads from them: on the two
    short-transfer cells XQUIC's minRTT puts almost nothing on the second path (it opens after the
    handshake and a round trip of that path). On hetero_small_file that is nothing at all (the
    file is out before the second path opens), and waiting for the fast path gains nothing beyond
    the CIs. On hetero_file the second path opens
    0.25 s after the handshake, before the fast path alone has finished the 2 MB, so the little minRTT
    sends there arrives last: at low load waiting for the fast path beats minRTT by more than 10%
    beyond both CIs under BBRv1 and BBRv2 (a batch at load average 16 could not resolve it). On
    ispras_s2 under BBRv1 the wait rule (k = 1.25) beats minRTT live as in the simulator. On
    ispras_s3 round robin is no better than minRTT live under BBRv1 and Reno (the simulator's
    +5.4% and +2.3% there came from a receive window XQUIC does not have: docs/transport.md,
    "Connection level")."""
    records = json.loads(LIVE.read_text())["cells"]
    for rec in records:
        assert rec["date"] and rec["kernel"] and rec["stack"].startswith("XQUIC ")
        assert rec["command"].startswith("python benchmarks/headroom_live.py")
        assert len(rec["load_before"]) == 3 and "passed" in rec["verification"]
    cells = live_cells(records)
    assert all(c.runs >= 3 for c in cells), format_live(records)
    assert all(c.gain == 0.0 and not c.significant for c in cells if c.scheduler == "minrtt")  # against itself
    short = [r for r in records if r["scenario"] in ("hetero_small_file", "hetero_file")]
    assert {r["scenario"] for r in short} == {"hetero_small_file", "hetero_file"}
    for rec in short:
        second = [run["path_bytes"][1] / sum(run["path_bytes"]) for run in rec["runs"] if run["scheduler"] == "minrtt"]
        assert max(second) < 0.05, (rec["scenario"], second)
    for c in cells:
        if c.scenario == "hetero_small_file" and c.scheduler == "fast_only":
            assert not c.significant and abs(c.gain) < 0.10, c
    for rec in records:
        if rec["scenario"] == "hetero_small_file":
            for run in rec["runs"]:
                if "path_opening" in run:  # recorded since the low-load batches
                    assert run["path_opening"]["first_sent_s"][1] is None, run  # the file is out first
    for c in cells:  # ispras_s3: two identical loss-free paths, no scheduler beyond minRTT's CI
        if c.scenario == "ispras_s3":
            assert not c.significant and (c.scheduler != "rr" or abs(c.gain) < 0.01), c
    # ispras_s2 under BBRv1: the wait rule's +3.6% in the simulator is there live too (the batches
    # pooled, runs paired in their order: 40 each, +4.0% [1.0, 7.1])
    pairs = [(run["goodput_mbps"], rec["runs"][i + 1]["goodput_mbps"])
             for rec in records if (rec["scenario"], rec["cc"]) == ("ispras_s2", "bbr")
             for i, run in enumerate(rec["runs"][:-1])
             if run["scheduler"] == "minrtt" and rec["runs"][i + 1]["scheduler"] == "wait_rule(k=1.25)"]
    diff = np.array([w - m for m, w in pairs])
    assert len(pairs) >= 40
    half = stats.t.ppf(0.975, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
    assert diff.mean() - half > 0.0, (diff.mean(), half)
    quiet = [r for r in records if r["scenario"] == "hetero_file" and r["load_before"][0] < 2.0]
    assert {r["cc"] for r in quiet} == {"bbr", "bbr2"}
    for rec in quiet:
        fast = [c for c in live_cells([rec]) if c.scheduler == "fast_only"]
        assert fast and all(c.significant and c.gain > 0.10 for c in fast), fast
        for run in rec["runs"]:
            opening = run["path_opening"]
            assert opening["first_sent_s"][1] >= 0.2, run  # one round trip of the 200 ms path
            if run["scheduler"] == "minrtt":
                assert opening["first_sent_s"][1] < min(r["completion_s"] for r in rec["runs"]), run


def paired_gain(records: list[dict], scheduler: str) -> np.ndarray:
    """``scheduler``'s goodput less minRTT's, run for run in the order the batches alternated them
    (benchmarks/headroom_live.py records)."""
    return np.array([w["goodput_mbps"] - m["goodput_mbps"] for rec in records
                     for m, w in zip([r for r in rec["runs"] if r["scheduler"] == "minrtt"],
                                     [r for r in rec["runs"] if r["scheduler"] == scheduler])])


def test_with_the_fixed_c_wait_rule_its_live_gain_on_ispras_s2_is_within_the_ci():
    """``tests/data/headroom_live_waitrule_20261130.json``: ispras_s2 under BBRv1 again, after the C
    wait rule stopped sending a second path without an RTT sample the packet (2026-11-30 14:00
    UTC; docs/transfer.md, "dqn_modes"). The searched best, ``wait_rule(k=1.25)``, measured +4.0%
    [1.0, 7.1] live with the old C rule (``headroom_live.json``); with the fixed rule, four batches
    (15:09-15:51 UTC), it is +0.12 +- 0.71 Mbit/s over 80 pairs and the rule at k = 1
    (``dqn_modes``' mode) +0.66 +- 0.75 over 40: both within the paired CI (the third batch alone
    read k = 1 at +3.8% beyond it, the fourth -0.1%)."""
    from envs.metrics import mean_ci
    records = json.loads((LIVE.parent / "headroom_live_waitrule_20261130.json").read_text())["cells"]
    assert len(records) == 4 and all(r["date"] > "2026-11-30T15" for r in records)
    for rec in records:
        assert (rec["scenario"], rec["cc"]) == ("ispras_s2", "bbr") and "passed" in rec["verification"]
        assert rec["command"].startswith("python benchmarks/headroom_live.py")

    searched, k1 = paired_gain(records, "wait_rule(k=1.25)"), paired_gain(records, "wait_rule")
    assert len(searched) == 80 and len(k1) == 40
    for d in (searched, k1):
        m, h = mean_ci(d)
        assert 0 < m < h < 1.0  # above minRTT by the point estimate, within the paired CI


def test_on_the_evening_machine_the_wait_rule_alone_is_level_with_minrtt_on_ispras_s2():
    """``tests/data/headroom_live_waitrule_evening_20261130.json``: the rule at k = 1 (``dqn_modes``'
    mode) against minRTT on ispras_s2 under BBRv1, 20 alternating pairs on the machine (kernel
    ``-fc-v657``) where the preset's four seeds gained +3.5% pooled and the network that runs the
    rule at 85% of its decisions +0.5%: the rule alone -0.1%, within the paired CI, as on the
    afternoon's machine (docs/transfer.md, "Seeds 1-3 on ispras_s2 under BBRv1")."""
    from envs.metrics import mean_ci
    (rec,) = json.loads((LIVE.parent / "headroom_live_waitrule_evening_20261130.json").read_text())["cells"]
    assert (rec["scenario"], rec["cc"], rec["kernel"]) == ("ispras_s2", "bbr", "6.18.44-fc-v657")
    assert "passed" in rec["verification"]
    runs = {s: np.array([r["goodput_mbps"] for r in rec["runs"] if r["scheduler"] == s]) for s in ("minrtt", "wait_rule")}
    assert len(runs["minrtt"]) == len(runs["wait_rule"]) == 20
    assert all(r["outcome"] == "finished" for r in rec["runs"])
    m, h = mean_ci(runs["wait_rule"] - runs["minrtt"])
    assert -0.1 < m < 0 < h < 2.0  # -0.04 +- 1.88 Mbit/s


def test_the_wait_rule_searched_since_the_rate_samples_changed_is_level_with_minrtt_live():
    """``tests/data/headroom_live_s1_waitrule_20261201.json``: since BBR's delivery-rate samples span
    the data they divide (2026-12-01) the headroom search finds ``wait_rule(k=0.75)`` best on
    ispras_s1 and ispras_s2 under BBRv1 (+2.1% and +3.3% over minRTT in the simulator,
    docs/cc_robustness.md). Live, 20 alternating pairs a cell (kernel ``-fc-v657``): -0.04 +- 0.48
    Mbit/s on ispras_s1 and -0.38 +- 1.52 on ispras_s2, both within the paired CI: the simulated
    headroom of both cells is not live's."""
    from envs.metrics import mean_ci
    records = json.loads((LIVE.parent / "headroom_live_s1_waitrule_20261201.json").read_text())["cells"]
    assert [(r["scenario"], r["cc"]) for r in records] == [("ispras_s1", "bbr"), ("ispras_s2", "bbr")]
    for rec in records:
        assert rec["kernel"] == "6.18.44-fc-v657" and "passed" in rec["verification"]
        assert rec["command"].startswith("python benchmarks/headroom_live.py")
        assert all(r["outcome"] == "finished" for r in rec["runs"])
        counts = [sum(r["scheduler"] == s for r in rec["runs"]) for s in ("minrtt", "wait_rule(k=0.75)")]
        assert counts == [20, 20]
        m, h = mean_ci(paired_gain([rec], "wait_rule(k=0.75)"))
        assert m < 0 < h and abs(m) < h  # below minRTT by the point estimate, within the paired CI


def test_live_modes_record_beats_minrtt_beyond_its_ci():
    """``tests/data/modes_live_20261130.json`` (``python -m benchmarks.modes_live``): agent=dqn_modes,
    trained in the simulator (seed 0, ispras_s1-s3 under BBRv1), picking XQUIC's scheduler every
    50 ms live on ispras_s2 under BBRv1, against minRTT alone on the same testbed, 40 alternating
    pairs: every run finished, the policy ran both modes, and it is above minRTT beyond the paired
    95% CI (README "Learners over heuristics": +2.49 +- 0.87 Mbit/s, +6.9%)."""
    import json

    from envs.metrics import mean_ci
    rec = json.loads((LIVE.parent / "modes_live_20261130.json").read_text())
    assert {"xquic_commit", "kernel", "date", "command", "load_avg"} <= set(rec["provenance"])
    assert rec["checkpoint"]["agent"] == "dqn_modes" and rec["modes"] == ["minrtt", "wait_rule"]
    runs = rec["runs"]
    assert all(not r["error"] for r in runs) and len(runs) == 80
    pol = [r["goodput_mbps"] for r in runs if r["who"] == "policy"]
    alone = [r["goodput_mbps"] for r in runs if r["who"] == "alone"]
    diff, half = mean_ci(np.asarray(pol) - np.asarray(alone))
    assert diff - half > 0 and round(diff, 2) == 2.49 and round(half, 2) == 0.87
    shares = np.array([r["mode_share"] for r in runs if r["who"] == "policy"])
    assert 0.2 < shares[:, 1].mean() < 0.6 and np.all(np.array([r["mode_share"][0] for r in runs if r["who"] == "alone"]) == 1)


def test_diagnostics_md_gives_each_warning_once(tmp_path):
    """diagnostics.md: each flagged cell's warnings in its own row and nowhere else (results.md
    lists them): a warning's text appears once per cell that has it."""
    from collections import Counter

    from studies.report import write
    res = results()
    text = write(small_study(), res, tmp_path)["diagnostics.md"].read_text()
    cells = Counter(w for r in res.values() for w in r["diagnostics"].warnings)
    assert sum(cells.values()) >= 4  # the dqn (fast_only) and bandit (minRTT) clones under both CCs
    for w, n in cells.items():
        assert text.count(w) == n, (w, text.count(w), n)


@pytest.mark.parametrize("argv, message", [
    (["--metric", "goodput"], "unknown --metric 'goodput'; valid: aggregation_benefit, avg_bitrate_mbps, completion_s"),
    (["--runs", "0"], "--runs must be an integer >= 1, got 0"),
    (["--search-runs", "0"], "--search-runs must be an integer >= 1, got 0"),
    (["--samples", "-1"], "--samples must be an integer >= 0, got -1"),
    (["--scenario", "ispras_s9"], "--scenario: unknown scenario 'ispras_s9'; valid: "),
    (["--cc", "bbr3"], "--cc: unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
])
def test_headroom_command_line_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    """``python -m studies.headroom``: a bad flag ends, before the search, in one line naming it and
    the valid values (the metrics: ``envs.metrics.ALL_METRICS``, as evaluate.py's ``metrics=``)."""
    assert message in refused("studies.headroom", ["--scenario", "ispras_s1", "--cc", "bbr", *argv],
                              monkeypatch, capsys)


def test_headroom_search_refuses_an_unknown_metric():
    with pytest.raises(ConfigError, match="unknown metric 'goodput'; valid: .*goodput_mbps"):
        search(resolve_scenarios("ispras_s1")[0], "bbr", metric="goodput")


def test_verdict_judges_a_learner_that_keeps_one_interval_mode():
    """A learner over modes (``dqn_modes``) that keeps the wait rule's mode in a cell is a clone of
    ``wait_rule(k=1)``, read at its search-seed score against the search's best; one that keeps
    minRTT's mode where minRTT is 21% below the best fails, as a per-packet clone of minRTT does."""
    study, res = small_study(), results()
    modes = ("0:minrtt", "1:wait_rule")
    keeps = {"dqn": summarise(modes, np.array([0, 40]), {"minrtt": 0, "wait_rule(k=1)": 40}),
             "bandit": summarise(modes, np.array([40, 0]), {"minrtt": 40, "wait_rule(k=1)": 0})}
    for name, d in keeps.items():
        res[(name, "hetero_small_file", "bbr")]["diagnostics"] = d
    h = found("bbr")
    h.search.append(("wait_rule(k=1)", 18.7))
    from studies.report import cube
    means, cis = cube(study, res, "goodput_mbps")
    text = learning_verdict(study, res, [found("cubic"), h], means, cis)
    assert "dqn / hetero_small_file / bbr: clone of wait_rule(k=1) (wait_rule(k=1) +1.6% below the best): ok" in text
    assert "bandit / hetero_small_file / bbr: clone of minrtt (minrtt +21.1% below the best): FAILS" in text


BLOCKED_LIVE = {name: Path(__file__).parent / "data" / f"blocked_ispras_s2_bbr_{name}_20261201.npz"
                for name in ("wait_rule", "minrtt")}


def _blocked_in_simulator(scheduler: str) -> tuple[np.ndarray, np.ndarray, float, tuple[str, ...]]:
    """Features and answers at every blocked decision of 20 simulated ispras_s2 / BBRv1 transfers
    (XQUIC profile) with ``scheduler`` (the wait rule at its default k 1, or minRTT), and the slow
    path's share of the goodput."""
    from envs.multipath_env import build_process
    from studies.headroom import blocked_answers
    p = build_process(20, scenario="ispras_s2", cc="bbr", seed=10_000, decision="blocked",
                      observation="ispras_backlog")
    answers = blocked_answers(p, Candidate("wait_rule", (("k", 1.0),))) if scheduler == "wait_rule" else None
    p.reset()
    s = p.sim
    feats, acts = [], []
    while not s.done.all():
        live = ~s.done
        a = np.maximum(answers.answer(live), 0) if answers is not None else np.ones(len(live), np.int64)
        feats.append(p.observe()[live])
        acts.append(a[live])
        p.step(a)
    share = s.results()["per_path_goodput_mbps"]
    return (np.concatenate(feats), np.concatenate(acts), float((share[:, 1] / share.sum(1)).mean()),
            tuple(f.name for f in p.features))


def test_the_live_blocked_decisions_of_the_wait_rule_have_provenance():
    """And, on every sender-observable field of minRTT's decisions, live's slow path paced at
    Startup's level (above twice its 20 Mbit/s link) from 0.9 to 1.2 s into the transfer, its queue
    full (srtt above 150 ms of its 80) from 1.2 to 1.5 s, as docs/fidelity.md says."""
    from envs.live.dataset import BlockedDecisions
    full = BlockedDecisions.load(Path(__file__).parent / "data" / "blocked_ispras_s2_bbr_minrtt_full_20261201.npz")
    names = list(full.feature_names)
    elapsed = 10 * full.features[:, names.index("elapsed")]  # s (features.SCALES)

    def median(name: str, lo: float, hi: float) -> float:
        return float(np.median(full.features[(elapsed >= lo) & (elapsed < hi), names.index(name)]))
    assert 100 * median("pacing_rate_2", 0.9, 1.2) > 2.0 * 20.0  # Mbit/s
    assert 100 * median("srtt_2", 1.2, 1.5) > 150.0  # ms
    assert full.provenance["observation"] == "full" and len(full.provenance["runs"]) == 6
    for name, path in BLOCKED_LIVE.items():
        d = BlockedDecisions.load(path)
        prov = d.provenance
        assert prov["scheduler"] == name and prov["scenario"] == "ispras_s2" and prov["cc"] == "bbr"
        assert prov["xquic_commit"] and prov["kernel"] and prov["command"].startswith("python -m envs.live.dataset")
        assert len(prov["runs"]) == 6 and all(r["outcome"] == "finished" for r in prov["runs"])
        assert len(d) > 6000 and d.feature_names[-1] == "backlog"
        assert (d.waits > 0) == (name == "wait_rule")


@pytest.mark.xfail(strict=True, reason=(
    "ispras_s2 under BBRv1 (tests/data/blocked_ispras_s2_bbr_*_20261201.npz, 6 live runs each, every "
    "4th decision, against 20 simulated): under minRTT live XQUIC's slow path reads a median srtt of "
    "154 ms at the blocked decisions (its 80 ms path with a full 1-BDP queue), the simulator's 93 ms "
    "(95 before a declaration fell its detection delay after a point within its packet's step, 2026-12-02); the fast "
    "path's window is near (median 170 KB against live 160, +6%; 168 before the declaration step) and the rule's "
    "waits agree (k 1: 15.5% of its blocked decisions simulated, 13.3% live; 15.2% before the declaration step), "
    "but the rule moves bytes onto the slow path live (its "
    "share 31.8-33.2% -> 34.3-35.2%, tests/data/headroom_live_waitrule_20261130.json) where the "
    "simulator moves them off (31.9% -> 30.7%; 32.5% -> 31.3% before the declaration step): the simulator's +3.3% "
    "for the rule there (200 paired runs, ± 0.2%; +3.2% before the declaration step) is not yet live's "
    "+0.3-1.8%. By time into the transfer live's slow path paces at Startup's "
    "level to 1.2 s and keeps its queue full to 1.35 s, about one of its round trips longer than the "
    "model's (Startup left at 1.03 s, median of 20, its queue drained from 1.2 s); the model's fast "
    "path's bandwidth estimate at minRTT's blocked decisions is 3-7% under live's from 0.6 to 1.05 s and 5-15% "
    "over it from 1.35 s on (10-15% under it from 0.75 s on when first measured, 2026-12-01); the mechanism is not "
    "established (docs/fidelity.md)"))
def test_the_wait_rule_meets_the_same_blocked_decisions_live_as_in_the_simulator():
    from envs.live.dataset import BlockedDecisions
    live = {name: BlockedDecisions.load(path) for name, path in BLOCKED_LIVE.items()}
    sim = {name: _blocked_in_simulator(name) for name in BLOCKED_LIVE}
    names = sim["minrtt"][3]
    assert tuple(live["minrtt"].feature_names) == names
    col = {n: names.index(n) for n in ("srtt_2", "cwnd_1")}
    for n, j in col.items():
        here, there = np.median(sim["minrtt"][0][:, j]), np.median(live["minrtt"].features[:, j])
        assert abs(here / there - 1.0) <= 0.15, (n, here, there)
    waits_sim = float(np.mean(sim["wait_rule"][1] == 0))
    waits_live = live["wait_rule"].waits / len(live["wait_rule"])
    assert abs(waits_sim / waits_live - 1.0) <= 0.25, (waits_sim, waits_live)
    assert sim["wait_rule"][2] > sim["minrtt"][2]  # the rule moves bytes onto the slow path, as live
