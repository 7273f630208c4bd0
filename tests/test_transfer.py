"""The transfer report (studies.transfer) on recorded live XQUIC measurements: CI runs it without
a live setup on the records in tests/data (provenance inside). Measured 2026-11-25:
transfer_dqn_bbr2.json, the main job's policy trained before the stack profiles;
transfer_dqn_bbr2_xquic.json, the same job trained under the XQUIC profile with randomisation
(stack profile included) and validated selection; transfer_linucb_bbr2.json, the shipped LinUCB
preset (``agent=linucb cc=bbr2``). Re-measured 2026-11-26 on the model with the stacks' path setup,
each policy trained by the report on that model: transfer_dqn_bbr2_20261126.json (the main job as
a user trains it), transfer_linucb_bbr2_20261126.json and transfer_dqn_backlog_20261126.json
(``agent=dqn_backlog`` as study=headroom trains it, with the hetero_file cells where a fixed split,
fast_only, shows more than 10% live headroom). Measured 2026-11-28: transfer_policy_search_20261128.json,
the policy search trained on the ISPRAS scenarios and hetero_file together (``agent=policy_search
scenario=[ispras_s1,ispras_s2,ispras_s3,hetero_file] cc=[cubic,bbr,bbr2]
agent.params.generations=40``), one policy for the ISPRAS cells and the hetero_file cells, and
the same preset with seed=1 and seed=2 (transfer_policy_search_seed{1,2}_20261128.json: the
simulator side, live only the BBRv1 cell where each forecasts a gain), and
transfer_policy_search_strat_20261128.json, the same seed-0 command at a9eb56d, whose search
runs each generation stratified by (scenario, CC) cell: another policy, every cell live.
Re-measured 2026-11-29: transfer_policy_search_strat_20261129.json, the same command at 1ebc035
(the same policy, its header to the byte) live with the bindings that challenge a path again after
a lost PATH_RESPONSE (README, "XQUIC"); and transfer_dqn_bbr2_20261129.json, the main job trained
by the report on the model of a5a588f, measured with those bindings. Measured 2026-11-29:
transfer_dqn_completion_20261129.json, the shipped ``agent=dqn_completion`` preset trained by the
report on the ISPRAS scenarios and hetero_file together (``scenario=[ispras_s1,ispras_s2,ispras_s3,
hetero_file] cc=[cubic,bbr,bbr2] train.steps=200000``), every cell live; and
transfer_peekaboo_20261129.json and transfer_qlearning_20261129.json, the shipped ``agent=peekaboo``
and ``agent=qlearning`` presets trained by the report the same way, every cell live; and so
transfer_dqn_ispras_20261129.json, transfer_ppo_20261129.json, transfer_a2c_20261129.json,
transfer_linucb_classic_20261129.json and transfer_falcon_20261129.json (``agent=dqn_ispras``,
``ppo``, ``a2c``, ``linucb_classic``, ``falcon``). Measured 2026-11-30: transfer_dqn_modes_20261130.json,
``agent=dqn_modes`` as study=ispras trains it (ispras_s1-s3 under BBRv1), an interval policy whose
exported header picks XQUIC's scheduler (minRTT or the wait rule) every 50 ms inside XQUIC, every
cell live; transfer_dqn_modes_20runs_20261130.json, the same policy with 20 runs of it and of
minRTT in the ISPRAS s1 and s2 cells under BBRv1 and BBRv2; transfer_dqn_modes_all20_20261130.json,
the same command trained on another machine (another network), 20 runs in every ISPRAS cell and on
hetero_file; transfer_dqn_modes_seed{1,2,3}_20261130.json, its seeds 1-3 on ispras_s2 under BBRv1."""

import json
import math

import numpy as np
import pytest

from envs.errors import ConfigError
from studies import transfer
from studies.transfer import POLICY, Measurement, Record, summarise, write_report
from conftest import ROOT

DATA = ROOT / "tests" / "data"
RECORDED = DATA / "transfer_dqn_bbr2.json"
RECORDS = {"before_profiles": RECORDED, "xquic_randomised": DATA / "transfer_dqn_bbr2_xquic.json",
           "linucb": DATA / "transfer_linucb_bbr2.json", "main": DATA / "transfer_dqn_bbr2_20261126.json",
           "linucb_now": DATA / "transfer_linucb_bbr2_20261126.json",
           "dqn_backlog": DATA / "transfer_dqn_backlog_20261126.json",
           "dqn_backlog_pace": DATA / "transfer_dqn_backlog_ispras_pace_20261126.json",
           "policy_search": DATA / "transfer_policy_search_20261128.json",
           "policy_search_strat": DATA / "transfer_policy_search_strat_20261128.json",
           "policy_search_strat_paths": DATA / "transfer_policy_search_strat_20261129.json",
           "main_paths": DATA / "transfer_dqn_bbr2_20261129.json",
           "dqn_completion": DATA / "transfer_dqn_completion_20261129.json",
           "peekaboo": DATA / "transfer_peekaboo_20261129.json",
           "qlearning": DATA / "transfer_qlearning_20261129.json",
           "dqn_ispras": DATA / "transfer_dqn_ispras_20261129.json", "ppo": DATA / "transfer_ppo_20261129.json",
           "a2c": DATA / "transfer_a2c_20261129.json",
           "linucb_classic": DATA / "transfer_linucb_classic_20261129.json",
           "falcon": DATA / "transfer_falcon_20261129.json",
           "dqn_modes": DATA / "transfer_dqn_modes_20261130.json"}
# the same preset with seed=1 and seed=2: the simulator side, and live only the BBRv1 cell where each forecasts a gain
SEED_RECORDS = {1: (DATA / "transfer_policy_search_seed1_20261128.json", "ispras_s1"),
                2: (DATA / "transfer_policy_search_seed2_20261128.json", "ispras_s2")}
AGENTS = {"before_profiles": "dqn", "xquic_randomised": "dqn", "linucb": "linucb", "main": "dqn",
          "linucb_now": "linucb", "dqn_backlog": "dqn_backlog", "dqn_backlog_pace": "dqn_backlog",
          "policy_search": "policy_search", "policy_search_strat": "policy_search",
          "policy_search_strat_paths": "policy_search", "main_paths": "dqn", "dqn_completion": "dqn_completion",
          "peekaboo": "peekaboo", "qlearning": "qlearning", "dqn_ispras": "dqn_ispras", "ppo": "ppo", "a2c": "a2c",
          "linucb_classic": "linucb_classic", "falcon": "falcon", "dqn_modes": "dqn_modes"}
TRAINING_CCS = {"dqn_backlog": ["reno", "cubic", "bbr", "bbr2"], "dqn_backlog_pace": ["reno", "cubic", "bbr", "bbr2"],
                "policy_search": ["cubic", "bbr", "bbr2"],  # cc=mix, cc=[cubic,bbr,bbr2]; the others bbr2
                "policy_search_strat": ["cubic", "bbr", "bbr2"], "policy_search_strat_paths": ["cubic", "bbr", "bbr2"],
                "dqn_completion": ["cubic", "bbr", "bbr2"], "peekaboo": ["cubic", "bbr", "bbr2"],
                "qlearning": ["cubic", "bbr", "bbr2"], "dqn_ispras": ["cubic", "bbr", "bbr2"],
                "ppo": ["cubic", "bbr", "bbr2"], "a2c": ["cubic", "bbr", "bbr2"],
                "linucb_classic": ["cubic", "bbr", "bbr2"], "falcon": ["cubic", "bbr", "bbr2"],
                "dqn_modes": ["bbr"]}
CELLS = [(s, c) for s in ("ispras_s1", "ispras_s2", "ispras_s3") for c in ("cubic", "bbr", "bbr2")]
HETERO = [("hetero_file", "bbr"), ("hetero_file", "bbr2")]
HEADROOM_CELLS = {"dqn_backlog": HETERO, "policy_search": HETERO, "policy_search_strat": HETERO,  # beside the ISPRAS ones
                  "policy_search_strat_paths": HETERO, "dqn_completion": HETERO,
                  "peekaboo": HETERO, "qlearning": HETERO, "dqn_ispras": HETERO, "ppo": HETERO, "a2c": HETERO,
                  "linucb_classic": HETERO, "falcon": HETERO, "dqn_modes": HETERO}
RUNS = 5  # runs of the policy and minRTT in every cell measured, on either side, in every record
# cells measured live against minRTT alone, and cells not measured live (the live budget of 2026-11-26,
# on a testbed shared with other jobs' batches; a CUBIC run on s1/s2 takes 26-42 s)
SLOW = [("ispras_s1", "cubic"), ("ispras_s2", "cubic")]
MINRTT_ONLY_LIVE = {"main": SLOW, "main_paths": SLOW, "linucb_now": SLOW, "dqn_backlog": CELLS, "dqn_backlog_pace": CELLS}
NOT_LIVE = {"dqn_backlog": SLOW, "dqn_backlog_pace": [(s, "cubic") for s in ("ispras_s1", "ispras_s2", "ispras_s3")]}


def recorded(name: str = "before_profiles") -> Record:
    path = RECORDS[name]
    if not path.is_file():
        pytest.fail(f"{path} is missing (python -m studies.transfer --policy ... --out DIR; copy DIR/record.json)")
    return Record.load(path)


@pytest.mark.parametrize("name", RECORDS)
def test_recorded_measurements_are_complete_with_provenance(name):
    r = recorded(name)
    prov = r.provenance
    for key in ("xquic_commit", "kernel", "date", "commands", "mpsched_commit", "file_mb"):
        assert prov.get(key), key
    assert r.policy["agent"] == AGENTS[name] and r.policy["header_sha256"]
    assert r.policy["ccs"] == TRAINING_CCS.get(name, ["bbr2"])
    cells = CELLS + HEADROOM_CELLS.get(name, [])
    assert set(r.cells()) == set(cells)
    live_cells = [(scen, cc) for scen, cc in cells if r.get("live", scen, cc, POLICY) is not None]
    assert live_cells == [c for c in cells if c not in NOT_LIVE.get(name, [])]  # every cell measured live
    for scen, cc in cells:
        for side in ("sim", "live") if (scen, cc) in live_cells else ("sim",):
            for s in (POLICY, "minrtt"):
                m = r.get(side, scen, cc, s)
                assert m is not None and len(m.goodput_mbps) >= RUNS, (side, scen, cc, s)
            if side == "live" and (scen, cc) in MINRTT_ONLY_LIVE.get(name, []):
                continue
            for s in ("ecf", "blest"):
                assert len(r.get(side, scen, cc, s).goodput_mbps) >= 3
        assert r.get("sim", scen, cc, POLICY).feature_count > 0
    for scen, cc in live_cells:
        live = r.get("live", scen, cc, POLICY)
        assert len(live.load_avg) == len(live.goodput_mbps) == len(live.outcomes)  # every run's load average
        assert live.date and live.feature_count > 0 and set(live.feature_quantiles) == set(r.features)
    for scen, cc in HEADROOM_CELLS.get(name, []):  # the fixed split that shows the headroom, both sides
        for side in ("sim", "live"):
            assert len(r.get(side, scen, cc, "fast_only").goodput_mbps) >= 3, (side, scen, cc)


def test_the_randomised_xquic_policy_record_says_how_it_was_trained():
    r = recorded("xquic_randomised")
    tr = r.policy["training"]
    assert tr["stack"] == "xquic" and tr["select"] == "validation"
    assert tr["randomise"]["enabled"] and tr["randomise"]["stack_factor"][0] < 1 < tr["randomise"]["stack_factor"][1]
    assert r.policy["selected_step"] and r.policy["validation_score"] > 0
    sim = r.get("sim", "ispras_s1", "bbr2", "minrtt")  # its simulator side ran the XQUIC profile (bbr2: 27.1 without)
    assert np.mean(sim.goodput_mbps) < 22


@pytest.mark.parametrize("name", RECORDS)
def test_report_on_recorded_data(tmp_path, name):
    r = recorded(name)
    files = write_report(r, tmp_path)
    text = files["report.md"].read_text()
    cells = summarise(r)
    matches = [c.sign_match for c in cells if c.sign_match is not None]
    assert f"Sign right in {sum(matches)} of {len(matches)} cells." in text
    measured = [c for c in cells if c.accepted is not None]
    assert f"Cells at >= 0.95: {sum(bool(c.accepted) for c in measured)} of {len(measured)} measured live" in text
    assert files["transfer.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = files["cells.csv"].read_text().strip().splitlines()
    assert len(rows) == 1 + len(r.measurements)  # one row per scheduler, side and cell
    for c in measured:  # the numbers in the report are the recorded runs' statistics
        live = r.get("live", c.scenario, c.cc, POLICY).goodput_mbps
        assert c.goodput["live", POLICY][0] == pytest.approx(np.nanmean(live))
        base = np.nanmean(r.get("live", c.scenario, c.cc, "minrtt").goodput_mbps)
        assert c.ratio_live == pytest.approx(np.nanmean(live) / base)
        assert f"| {c.scenario} | {c.cc} | {c.ratio_live:.3f} |" in text


def m(side, scheduler, goodput, scenario="s", cc="cubic", **kw) -> Measurement:
    return Measurement(side, scenario, cc, scheduler, list(goodput), [[g * 0.7, g * 0.3] for g in goodput], **kw)


def test_sign_counts_only_differences_beyond_their_ci():
    r = Record({"label": "t"}, ["f"])
    r.put(m("sim", POLICY, [11, 11.2, 10.8, 11.1, 10.9]))
    r.put(m("sim", "minrtt", [10, 10.2, 9.8, 10.1, 9.9]))
    r.put(m("live", POLICY, [5, 9, 7, 6, 8]))  # within the noise of minRTT's
    r.put(m("live", "minrtt", [6, 8, 7, 7.5, 6.5]))
    r.put(m("live", "ecf", [9, 9.5, 8.5]))
    (c,) = summarise(r)
    assert (c.sign_sim, c.sign_live, c.sign_match) == ("+", "0", False)
    assert c.ratio_live == pytest.approx(1.0) and c.accepted
    assert c.headroom_by == "ecf" and c.headroom_live == pytest.approx(9 / 7 - 1)
    d, h = transfer.welch([1, 2, 3], [1, 2, 3])
    assert d == 0 and h > 0 and transfer.sign(d, h) == "0"
    assert transfer.sign(math.nan, 1.0) == "?"


def test_a_fixed_split_with_headroom_is_a_cell_to_win(tmp_path):
    """fast_only (a fixed split) counts as live headroom like a heuristic, and a policy above minRTT
    beyond the CI there is listed as the acceptance's win, with its numbers."""
    r = Record({"label": "t"}, ["f"])
    for side in ("sim", "live"):
        r.put(m(side, POLICY, [42.6, 42.7, 42.8], scenario="hetero_file", cc="bbr"))
        r.put(m(side, "minrtt", [38.4, 38.5, 38.4], scenario="hetero_file", cc="bbr"))
        r.put(m(side, "fast_only", [42.7, 42.7, 42.6], scenario="hetero_file", cc="bbr"))
        r.put(m(side, "ecf", [38.9, 39.0, 38.8], scenario="hetero_file", cc="bbr"))
    assert r.schedulers() == [POLICY, "minrtt", "ecf", "fast_only"]
    (c,) = summarise(r)
    assert c.headroom_by == "fast_only" and c.headroom_live > transfer.HEADROOM and c.sign_live == "+"
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "cells with > 10% live headroom: 1, won beyond the CI there: 1 (hetero_file bbr: policy +11.1%" in text
    assert "fast_only +11.0%)." in text


def test_each_scenario_keeps_its_own_file_unless_one_size_is_given():
    from envs.scenario import resolve_scenarios

    s1, het = resolve_scenarios(["ispras_s1", "hetero_file"])
    assert transfer.file_workload(het, None).workload.file_mb == 2.0
    assert transfer.file_workload(het, 10.0).workload.file_mb == 10.0
    assert transfer.file_sizes(None, [], [s1]) == 10.0  # one size for all: a number
    assert transfer.file_sizes(10.0, ["ispras_s2"], [s1]) == 10.0
    sizes = transfer.file_sizes(10.0, ["ispras_s1"], [het])  # the earlier batches' scenarios had 10 MB
    assert sizes == {"ispras_s1": 10.0, "hetero_file": 2.0}
    assert transfer.file_sizes(sizes, ["ispras_s1", "hetero_file"], [transfer.file_workload(het, 2.0)]) == sizes
    # a record resumed at another --file-mb: its earlier cells of that scenario are at 10 MB, refused
    with pytest.raises(ConfigError, match=r"'ispras_s1' is in the record with a 10 MB file, this run asks for 1 MB"):
        transfer.file_sizes(sizes, ["ispras_s1", "hetero_file"], [transfer.file_workload(s1, 1.0)])
    with pytest.raises(ConfigError, match="with a 10 MB file, this run asks for 2 MB"):
        transfer.file_sizes(10.0, ["ispras_s1"], [transfer.file_workload(s1, 2.0)])
    # a size held for a scenario without cells (a batch stopped before its first cell) binds nothing
    assert transfer.file_sizes(sizes, ["hetero_file"], [transfer.file_workload(s1, 1.0)]) == \
        {"ispras_s1": 1.0, "hetero_file": 2.0}
    bulk = s1.with_workload(type="bulk", duration_s=5.0, file_mb=None)
    with pytest.raises(ConfigError, match="give --file-mb"):
        transfer.file_workload(bulk, None)


def test_fast_only_exports_as_a_policy_that_always_waits(tmp_path):
    """The fixed split XQUIC runs for fast_only: the exported header answers "wait" (action 0)
    at every input."""
    from export import fast_only_header
    from export.runtime import ExportedPolicy

    pol = ExportedPolicy(fast_only_header(tmp_path / "fast_only.h"))
    obs = np.random.default_rng(0).uniform(0, 1, size=(256, pol.n_features)).astype(np.float32)
    assert (pol.act(obs, deterministic=True) == 0).all()


def test_decision_mix_and_features_in_the_report(tmp_path):
    r = Record({"label": "t"}, ["cwnd_1"])
    for side in ("sim", "live"):
        r.put(m(side, POLICY, [10, 11], blocked=200, waits=50, feature_count=200,
                feature_quantiles={"cwnd_1": [0.1, 0.2, 0.3, 0.4, 0.5] if side == "sim" else [1, 2, 3, 4, 5]}))
        r.put(m(side, "minrtt", [10, 11]))
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "| s | cubic | policy | 70.0% | 70.0% | 25.0% of 200 | 25.0% of 200 |" in text
    assert "| s | cubic | cwnd_1 | 0.1 / 0.2 / 0.3 / 0.4 / 0.5 | 1 / 2 / 3 / 4 / 5 |" in text


def test_an_interval_policys_modes_in_the_report(tmp_path):
    """An interval policy (a mode every interval): the share of its decisions per mode on both
    sides; its features are read at those decisions; the simulator has no per-packet waits."""
    r = Record({"label": "t", "decision": "interval", "modes": ["minrtt", "wait_rule"], "interval_ms": 50.0},
               ["backlog"])
    r.put(m("sim", POLICY, [10, 11], feature_count=40, mode_share=[0.6, 0.4],
            feature_quantiles={"backlog": [0.1, 0.2, 0.3, 0.4, 0.5]}))
    r.put(m("live", POLICY, [10, 11], blocked=300, waits=30, feature_count=40, mode_share=[0.75, 0.25],
            feature_quantiles={"backlog": [1, 2, 3, 4, 5]}))
    for side in ("sim", "live"):
        r.put(m(side, "minrtt", [10, 11]))
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "| s | cubic | 60.0% | 75.0% | 40.0% | 25.0% |" in text
    assert "| scenario | cc | minrtt sim | minrtt live | wait_rule sim | wait_rule live |" in text
    assert "## Input features at the policy's decisions" in text and "at every interval decision" in text
    assert "| s | cubic | policy | 70.0% | 70.0% | n/a | 10.0% of 300 |" in text
    r.save(tmp_path / "r.json")
    assert Record.load(tmp_path / "r.json").get("live", "s", "cubic", POLICY).mode_share == [0.75, 0.25]


def test_a_live_run_without_every_path_created_is_counted_in_the_report(tmp_path):
    """XQUIC once carried a whole file on path 1 (the stratified policy search's record, s2 under
    BBRv2) and the record could not say why: live runs now keep how many paths XQUIC created, and
    the decision mix counts the runs left without one; records without the count load as before."""
    r = Record({"label": "t"}, [])
    r.put(m("live", POLICY, [2.1, 8.7, 9.0], outcomes=["finished"] * 3, paths_created=[1, 2, 2]))
    r.put(m("live", "minrtt", [8.0, 8.5, 9.0], outcomes=["finished"] * 3, paths_created=[2, 2, 2]))
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "| finished; 1 of 3 runs without every path created |" in text
    assert "| s | cubic | minrtt | n/a | 70.0% | n/a | n/a | finished |" in text
    r.save(tmp_path / "r.json")
    assert Record.load(tmp_path / "r.json").get("live", "s", "cubic", POLICY).paths_created == [1, 2, 2]
    old = Record.load(ROOT / "tests" / "data" / "transfer_policy_search_strat_20261128.json")
    assert all(x.paths_created == [] for x in old.measurements)


def test_a_live_run_with_a_path_created_and_never_validated_is_counted_in_the_report(tmp_path):
    """A created path whose PATH_RESPONSE was lost stayed validating in XQUIC and carried nothing
    (README, "XQUIC"): live runs keep how many paths the client found validated, from the
    extension's path_validated_s."""
    from studies.transfer import paths_validated
    assert paths_validated({"paths_created": 2, "path_validated_s": [0.0, math.nan]}) == 1
    assert paths_validated({"paths_created": 2, "path_validated_s": [0.0, 0.12]}) == 2
    assert paths_validated({"paths_created": 2}) == 2  # an extension without the field
    r = Record({"label": "t"}, [])
    r.put(m("live", POLICY, [2.1, 8.7, 9.0], outcomes=["finished"] * 3, paths_created=[2, 2, 2],
            paths_validated=[1, 2, 2]))
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "| finished; 1 of 3 runs with a path created and never validated |" in text
    r.save(tmp_path / "r.json")
    assert Record.load(tmp_path / "r.json").get("live", "s", "cubic", POLICY).paths_validated == [1, 2, 2]


def test_mlflow_run_has_the_report_as_artifacts(tmp_path):
    import mlflow

    r = recorded()
    files = write_report(r, tmp_path / "out")
    r.save(tmp_path / "out" / "record.json")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run_id = transfer.log_mlflow(r, files, tmp_path / "out" / "record.json", uri)
    client = mlflow.tracking.MlflowClient(uri)
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"report.md", "cells.csv", "transfer.png", "record.json"} <= names
    metrics = client.get_run(run_id).data.metrics
    cells = summarise(r)
    assert metrics["sign_cells"] == sum(c.sign_match is not None for c in cells) >= 1
    assert metrics["sign_matches"] == sum(bool(c.sign_match) for c in cells)


def test_command_line_report_from_a_record(tmp_path, capsys):
    transfer.main(["--side", "none", "--record", str(RECORDED), "--out", str(tmp_path), "--no-mlflow"])
    out = capsys.readouterr().out
    assert "# Transfer report" in out and (tmp_path / "record.json").is_file()


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no measurements"):
        transfer.main(["--side", "none", "--record", str(tmp_path / "none.json"), "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="--policy is required"):
        transfer.main(["--side", "sim", "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="unknown --heuristics entry 'fifo'.*fast_only"):
        transfer.main(["--heuristics", "fifo", "--side", "none", "--out", str(tmp_path)])
    (tmp_path / "bad.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(ConfigError, match="transfer record format 99"):
        Record.load(tmp_path / "bad.json")
    with pytest.raises(SystemExit):
        transfer.main(["--runs", "0", "--side", "none"])


def test_simulator_side_of_a_checkpoint_and_a_sim_override(tmp_path):
    """The simulator side end to end for a fresh checkpoint (its own training environment), and a
    ``--sim-override`` reaching that environment (here the step length, validated by the schema)."""
    from agents.training import run

    from conftest import compose_config

    cfg = compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "train.eval_every=0",
                         "train.eval_runs=2", "train.steps=400", "cc=bbr2", "file_mb=1")
    ckpt = run(cfg, tmp_path / "train")["checkpoint"]
    args = ["--policy", str(ckpt), "--side", "sim", "--scenarios", "ispras_s3", "--ccs", "bbr", "--runs", "2",
            "--heuristic-runs", "2", "--file-mb", "1", "--out", str(tmp_path / "out"), "--no-mlflow"]
    transfer.main(args)
    r = Record.load(tmp_path / "out" / "record.json")
    assert {m.scheduler for m in r.measurements} == {POLICY, "minrtt", "ecf", "blest"}
    pol = r.get("sim", "ispras_s3", "bbr", POLICY)
    assert len(pol.goodput_mbps) == 2 and pol.blocked > 0 and set(pol.feature_quantiles) == set(r.features)
    assert r.provenance["file_mb"] == 1.0 and r.provenance["commands"][-1].endswith("--no-mlflow")
    bigger = list(args)
    bigger[bigger.index("--file-mb") + 1] = "2"
    with pytest.raises(ConfigError, match="'ispras_s3' is in the record with a 1 MB file, this run asks for 2 MB"):
        transfer.main(bigger)  # resuming the record at another size: refused, the record untouched
    assert Record.load(tmp_path / "out" / "record.json").provenance == r.provenance
    with pytest.raises(ConfigError, match="dt_ms must be"):
        transfer.main(args[:-3] + ["--out", str(tmp_path / "bad"), "--sim-override", "env.dt_ms=-1"])


def test_a_preset_trained_for_a_report_without_mlflow_keeps_its_run_in_the_reports_store(tmp_path, monkeypatch):
    """``--no-mlflow`` logs no run of the report, and the preset's training run (train.py always
    tracks one) goes to ``<out>/agents/mlflow.db``, not to the working directory's store."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    out = tmp_path / "out"
    transfer.main(["--policy", "agent=dqn cc=bbr2 train.steps=300 train.eval_every=0 train.eval_runs=2 file_mb=1",
                   "--side", "sim", "--scenarios", "ispras_s3", "--ccs", "bbr", "--runs", "2", "--heuristic-runs", "2",
                   "--file-mb", "1", "--out", str(out), "--no-mlflow"])
    assert (out / "agents" / "mlflow.db").is_file() and not list(here.iterdir())


def test_the_record_says_how_the_policy_was_trained(tmp_path):
    from conftest import compose_config

    cfg = compose_config("train", "train.randomise.enabled=true", "train.select=validation",
                         "train.randomise.stack_factor=[0.9,1.1]")
    tr = transfer.trained_with(cfg)
    assert tr["stack"] == "xquic" and tr["select"] == "validation"
    assert tr["randomise"]["stack_factor"] == [0.9, 1.1] and tr["randomise"]["delay_factor"] == [0.8, 1.25]
    assert transfer.trained_with(compose_config("train", "stack=linux", "cc=cubic")) == \
        {"stack": "linux", "randomise": False, "select": "last"}
    r = Record({"label": "t", "training": tr, "selected_step": 40000, "validation_score": 1.01}, ["f"])
    r.put(m("sim", POLICY, [10, 11]))
    r.put(m("sim", "minrtt", [10, 11]))
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "Training: simulator stack xquic; randomisation: " in text and "stack_factor [0.9, 1.1]" in text
    assert "checkpoint selection: validation (step 40000, score 1.010)." in text
    # the libraries the policy was trained with, where its checkpoint names them (meta.json's software)
    r.policy["software"] = {"torch": "2.15.0", "torch_cpu_capability": "AVX512"}
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert "score 1.010); software: torch 2.15.0, torch_cpu_capability AVX512." in text


def test_live_provenance_is_one_record_for_every_live_tool():
    """The report, the datasets, the online traces and the live headroom benchmark keep the same
    provenance (envs.live.provenance)."""
    from envs.live.provenance import provenance

    prov = provenance("python -m studies.transfer", ["--policy", "agent=dqn cc=bbr2", "--side", "live"])
    for key in ("xquic_commit", "kernel", "python", "mpsched_commit", "date", "cpus"):
        assert prov[key], key
    assert prov["command"] == "python -m studies.transfer --policy 'agent=dqn cc=bbr2' --side live"
    assert len(prov["load_avg"]) == 3 and prov["date"].endswith("Z")
    assert transfer.provenance(["--side", "none"])["command"] == "python -m studies.transfer --side none"


def test_a_measurement_of_uncommitted_code_says_so(tmp_path, monkeypatch):
    """``mpsched_commit`` is the checkout's commit, with ``+uncommitted`` while tracked files
    differ from it (a record of code no commit holds would otherwise name the commit before)."""
    import subprocess

    from envs.live import provenance

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.py").write_text("a = 1\n")
    git("add", "f.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    commit = provenance.mpsched_commit()
    assert commit and "+" not in commit
    (tmp_path / "f.py").write_text("a = 2\n")
    assert provenance.mpsched_commit() == f"{commit}+uncommitted"


def test_the_backlog_preset_wins_live_where_a_fixed_split_shows_headroom(tmp_path):
    """The acceptance's second clause on the recorded dqn_backlog report: on hetero_file under
    BBRv1 fast_only is more than 10% above XQUIC's minRTT live and the policy beats minRTT beyond
    the CI there; the report names the cell."""
    r = recorded("dqn_backlog")
    cell = {(c.scenario, c.cc): c for c in summarise(r)}["hetero_file", "bbr"]
    assert cell.headroom_by == "fast_only" and cell.headroom_live > transfer.HEADROOM
    assert cell.sign_live == "+" and cell.diff["live"][0] - cell.diff["live"][1] > 0
    text = write_report(r, tmp_path)["report.md"].read_text()
    assert f"hetero_file bbr: policy {100 * (cell.ratio_live - 1):+.1f}%" in text


@pytest.mark.parametrize("name", ["main", "linucb_now"])
def test_the_remeasured_presets_are_minrtt_clones_whose_sign_the_simulator_gets(name):
    """Re-trained with path setup, the main job and LinUCB take minRTT's decision at every simulated
    and sampled live blocked decision, and the simulator's sign of (policy - minRTT) matches live in
    every ISPRAS cell (the acceptance asks for 8 of 9)."""
    r = recorded(name)
    assert all(m.waits == 0 and m.blocked > 0 for m in r.measurements if m.scheduler == POLICY)
    matches = [c.sign_match for c in summarise(r)]
    assert len(matches) == len(CELLS) and all(matches)


def test_the_mixed_policy_search_waits_on_hetero_file_alone_and_wins_there_live():
    """The policy search trained on ispras_s1-s3 and hetero_file together (2026-11-28): on
    hetero_file it waits at every simulated and sampled live blocked decision (fast_only's answer)
    and beats minRTT beyond the CI in the cell where fast_only shows more than 10% live headroom
    (BBRv2); on the ISPRAS cells under CUBIC and BBRv2 it waits at none of its simulated blocked
    decisions. The simulator's sign of (policy - minRTT) matches live in every cell; the two cells
    below 0.95x live minRTT (the first clause does not hold) are ispras_s2 under CUBIC, where one
    policy run carried the whole file on one path, and ispras_s3 under BBRv1 (docs/transfer.md, "One policy for the ISPRAS cells
    and `hetero_file`: the policy search")."""
    r = recorded("policy_search")
    for scen, cc in HETERO:
        for side in ("sim", "live"):
            pol = r.get(side, scen, cc, POLICY)
            assert pol.blocked > 0 and pol.waits == pol.blocked, (side, scen, cc)
    for scen, cc in CELLS:
        if cc != "bbr":
            pol = r.get("sim", scen, cc, POLICY)
            assert pol.blocked > 0 and pol.waits == 0, (scen, cc)
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    win = cells["hetero_file", "bbr2"]
    assert win.headroom_by == "fast_only" and win.headroom_live > transfer.HEADROOM and win.sign_live == "+"
    matches = [c.sign_match for c in cells.values() if c.sign_match is not None]
    assert len(matches) == len(CELLS) + len(HETERO) and all(matches)
    assert [k for k, c in cells.items() if c.accepted is False] == [("ispras_s2", "cubic"), ("ispras_s3", "bbr")]
    one_path = [b for b in r.get("live", "ispras_s2", "cubic", POLICY).path_bytes if min(b) == 0]
    assert len(one_path) == 1


def test_the_stratified_policy_with_paths_challenged_again_wins_where_headroom_is_and_uses_both_paths():
    """The stratified search's policy of 2026-11-28 (the same command gives it: its simulator side
    to the digit), measured live again with the bindings that challenge a path again after a lost
    PATH_RESPONSE: in every one of its live runs (182, every scheduler) XQUIC created and validated
    both paths (the record it replaces had a run on s2 under BBRv2 that carried the file on one path).
    On hetero_file, where fast_only shows more than 10% live headroom under both CCs, the policy
    waits at every blocked decision and beats minRTT beyond the CI (the acceptance's win); the sign
    of (policy - minRTT) is right in 8 of the 9 ISPRAS cells (the miss, s1 under BBRv1, as
    before); 8 of 9 ISPRAS cells at 0.95x live minRTT: s1 under BBRv2 at 0.948, where the policy
    sends at every sampled blocked decision, minRTT's answer (docs/transfer.md)."""
    r, before = recorded("policy_search_strat_paths"), recorded("policy_search_strat")
    for sim in (m for m in r.measurements if m.side == "sim"):
        assert sim.goodput_mbps == before.get("sim", sim.scenario, sim.cc, sim.scheduler).goodput_mbps
    live = [m for m in r.measurements if m.side == "live"]
    assert sum(len(m.goodput_mbps) for m in live) == 182
    for m in live:
        assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps), (m.scenario, m.cc, m.scheduler)
        assert set(m.outcomes) == {"finished"}
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    for cell in HETERO:
        c, pol = cells[cell], r.get("live", *cell, POLICY)
        assert c.headroom_by == "fast_only" and c.headroom_live > transfer.HEADROOM and c.sign_live == "+", cell
        assert pol.blocked > 0 and pol.waits == pol.blocked
    assert [k for k in CELLS if not cells[k].sign_match] == [("ispras_s1", "bbr")]
    assert [k for k in CELLS if not cells[k].accepted] == [("ispras_s1", "bbr2")]
    assert 0.94 < cells["ispras_s1", "bbr2"].ratio_live < 0.95
    assert r.get("live", "ispras_s1", "bbr2", POLICY).waits == 0


def test_the_main_job_with_paths_challenged_again_is_a_minrtt_clone_on_both_sides():
    """The main job as the report trains it on the model of 2026-11-29, measured live with the
    bindings that challenge a path again: both paths validated in every live run; it takes minRTT's
    decision at every simulated and sampled live blocked decision, its sign is right in 9 of 9, and
    8 of 9 cells reach 0.95x live minRTT: s1 under BBRv2 (0.89, 0.88 in the record it follows) is
    the run-to-run spread of a cell where it decides as minRTT does (docs/transfer.md)."""
    r = recorded("main_paths")
    for m in r.measurements:
        if m.scheduler == POLICY:
            assert m.blocked > 0 and m.waits == 0, (m.side, m.scenario, m.cc)
        if m.side == "live":
            assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps)
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    assert all(cells[k].sign_match for k in CELLS)
    assert [k for k in CELLS if not cells[k].accepted] == [("ispras_s1", "bbr2")]
    # the miss is not told from 0.95 by five runs: its CI spans 0.73-1.10 and about 40 runs of each
    # would tell a ratio of 0.89 at that spread; s2 under BBRv2 (0.99) is undecided too
    verdicts = {k: cells[k].ratio_ci_live.verdict(transfer.ACCEPT_RATIO) for k in CELLS}
    assert [k for k in CELLS if verdicts[k] != "at least"] == [("ispras_s1", "bbr2"), ("ispras_s2", "bbr2")]
    assert set(verdicts.values()) == {"at least", "undecided"}
    miss = cells["ispras_s1", "bbr2"].ratio_ci_live
    assert miss.lo < transfer.ACCEPT_RATIO < miss.hi and 30 <= miss.runs_to_tell <= 50


def test_the_ratio_ci_is_the_delta_method_on_the_log_ratio():
    """``ratio_ci``: a policy whose runs are minRTT's times 0.9 has a ratio of 0.9 whose CI is
    symmetric in log around it, of the width the two samples' coefficients of variation give; the
    runs to tell it from 0.95 fall as the gap widens; too few runs or a CI on one side give n/a or
    a verdict."""
    base = np.array([10.0, 12.0, 8.0, 11.0, 9.0])
    r = transfer.ratio_ci(0.9 * base, base)
    assert r.ratio == pytest.approx(0.9) and math.log(r.hi / r.ratio) == pytest.approx(math.log(r.ratio / r.lo))
    cv2 = base.var(ddof=1) / base.mean() ** 2
    from scipy import stats
    half = stats.t.ppf(0.975, 8) * math.sqrt(2 * cv2 / 5)  # equal variances: Welch's dof is n1 + n2 - 2
    assert math.log(r.hi / r.ratio) == pytest.approx(half)
    assert r.verdict(0.95) == "undecided"
    assert transfer.ratio_ci(0.7 * base, base).runs_to_tell < r.runs_to_tell
    assert transfer.ratio_ci(0.5 * base, base).verdict(0.95) == "below"
    assert transfer.ratio_ci(base, base).verdict(0.95) == "undecided"  # equal means, too spread for five runs
    steady = np.array([10.0, 10.1, 9.9, 10.05, 9.95])
    assert transfer.ratio_ci(steady, steady).verdict(0.95) == "at least"
    assert transfer.ratio_ci([10.0], base).verdict(0.95) == "n/a"


@pytest.mark.parametrize("seed", SEED_RECORDS)
def test_other_seeds_of_the_mixed_policy_search_forecast_a_bbr_gain_live_does_not_show(seed):
    """Seeds 1 and 2 of the same preset give the same two answers in the simulator (fast_only's on
    hetero_file, minRTT's at every blocked decision under CUBIC and BBRv2 on ispras_s1-s3) and each
    forecasts a gain beyond the CI in one BBRv1 cell by waiting late in the file; live, where XQUIC
    asks the question all through the file, it waits far less and the difference is within the CI:
    a sign the simulator gets wrong (docs/transfer.md)."""
    path, scen = SEED_RECORDS[seed]
    r = Record.load(path)
    assert r.policy["seed"] == seed and r.policy["ccs"] == TRAINING_CCS["policy_search"]
    assert set(r.cells()) == set(CELLS + HETERO)
    for cc in ("bbr", "bbr2"):
        pol = r.get("sim", "hetero_file", cc, POLICY)
        assert pol.blocked > 0 and pol.waits == pol.blocked
    for s, cc in CELLS:
        if cc != "bbr":
            assert r.get("sim", s, cc, POLICY).waits == 0, (s, cc)
    live_cells = [c for c in CELLS + HETERO if r.get("live", *c, POLICY) is not None]
    assert live_cells == [(scen, "bbr")]
    for side in ("sim", "live"):
        assert len(r.get(side, scen, "bbr", POLICY).goodput_mbps) == len(r.get(side, scen, "bbr", "minrtt").goodput_mbps) == RUNS
    cell = {(c.scenario, c.cc): c for c in summarise(r)}[scen, "bbr"]
    assert (cell.sign_sim, cell.sign_live, cell.sign_match) == ("+", "0", False) and cell.accepted
    sim, live = r.get("sim", scen, "bbr", POLICY), r.get("live", scen, "bbr", POLICY)
    assert live.waits / live.blocked < 0.5 * sim.waits / sim.blocked


def test_the_completion_dqn_waits_everywhere_wins_hetero_file_and_loses_every_ispras_cell():
    """``agent=dqn_completion`` as the report trains it (2026-11-29, 200,000 steps on ispras_s1-s3
    and hetero_file under CUBIC, BBRv1 and BBRv2): it waits at every simulated and every sampled
    live blocked decision in all eleven cells, fast_only's answer, with both paths created and
    validated in every live run. On hetero_file that is the headroom: above live minRTT beyond the
    CI under both CCs, where fast_only shows +11.9% (BBRv2, the acceptance's win) and +9.6% (BBRv1);
    on the ISPRAS cells it is far below minRTT (0.21-0.72x live), so the first clause fails in all
    nine, and in the one ISPRAS cell where a live heuristic shows more than 10% headroom (ECF on s1
    under BBRv2, three runs) the policy is below minRTT. The simulator's sign is right in every
    cell: `-` on the nine ISPRAS cells, `+` on hetero_file (docs/transfer.md)."""
    r = recorded("dqn_completion")
    assert r.policy["header_sha256"] == "17290b01dbd59936" and r.policy["steps_done"] == 200000
    for m in r.measurements:
        if m.scheduler == POLICY:
            assert m.blocked > 0 and m.waits == m.blocked, (m.side, m.scenario, m.cc)
        if m.side == "live":
            assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps), (m.scenario, m.cc, m.scheduler)
            assert set(m.outcomes) == {"finished"}
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    assert all(cells[k].sign_match for k in CELLS + HETERO)
    assert all(cells[k].sign_sim == cells[k].sign_live == "-" for k in CELLS)
    assert [k for k in CELLS if cells[k].accepted] == []  # the first clause fails in every ISPRAS cell
    assert max(cells[k].ratio_live for k in CELLS) < 0.75
    assert 0.25 < cells["ispras_s1", "bbr"].ratio_live < 0.3  # s1 under BBRv1: where sending pays, it waits
    for cell in HETERO:
        c = cells[cell]
        assert c.accepted and c.sign_live == "+" and c.headroom_by == "fast_only", cell
    assert cells["hetero_file", "bbr2"].headroom_live > transfer.HEADROOM  # the acceptance's win
    assert cells["hetero_file", "bbr"].headroom_live < transfer.HEADROOM
    assert [k for k in CELLS if cells[k].headroom_live > transfer.HEADROOM] == [("ispras_s1", "bbr2")]
    assert cells["ispras_s1", "bbr2"].headroom_by == "ecf" and cells["ispras_s1", "bbr2"].sign_live == "-"


def test_peekaboo_copies_minrtt_where_it_sends_and_loses_live_where_it_waits_under_bbrv2():
    """``agent=peekaboo`` as the report trains it (2026-11-29, 200,000 steps of online LinUCB on
    ispras_s1-s3 and hetero_file under CUBIC, BBRv1 and BBRv2; measured with its exploiting rule,
    ``argmax theta_a x``, on both sides): minRTT's answer at every simulated blocked decision under
    CUBIC, on s2 under BBRv1 and on hetero_file, and a mix elsewhere (waits at 90% of them on s1
    under BBRv1, 67-69% on s1 and s2 under BBRv2, 12-15% on s3). Live, with both paths created and
    validated in every run: at least 0.95x minRTT beyond the CI in 7 of 11 cells, undecided in 2
    (s2 and s3 under BBRv1), below in the two BBRv2 cells of s1 and s2 where it waits at 45-47% of
    the sampled blocked decisions (0.81 and 0.66), which the simulator forecast as no loss (`0`).
    The one cell with more than 10% live headroom is hetero_file under BBRv1 (fast_only +11.1%),
    where the policy never waits: not won. The simulator's sign is right in 3 of 9 ISPRAS cells,
    5 of 11 (docs/transfer.md)."""
    r = recorded("peekaboo")
    assert r.policy["header_sha256"] == "e3b13063ede8389a" and r.policy["steps_done"] == 200000
    assert r.policy["kind"] == "peekaboo" and r.policy["decision"] == "blocked" and r.policy["observation"] == "peekaboo"
    for m in r.measurements:
        if m.side == "live":
            assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps), (m.scenario, m.cc, m.scheduler)
            assert set(m.outcomes) == {"finished"}
    sim = {c: r.get("sim", *c, POLICY) for c in CELLS + HETERO}
    live = {c: r.get("live", *c, POLICY) for c in CELLS + HETERO}
    minrtt_clone = [c for c in CELLS + HETERO if sim[c].waits == 0]  # in the simulator: minRTT's answer throughout
    assert minrtt_clone == [("ispras_s1", "cubic"), ("ispras_s2", "cubic"), ("ispras_s2", "bbr"), *HETERO]
    assert all(live[c].waits <= 0.01 * live[c].blocked for c in minrtt_clone)  # live: 31 of 3,696 on s2 CUBIC
    assert sim["ispras_s1", "bbr"].wait_share > 0.85 and live["ispras_s1", "bbr"].wait_share < 0.4
    for c in [("ispras_s1", "bbr2"), ("ispras_s2", "bbr2")]:
        assert 0.6 < sim[c].wait_share < 0.75 and 0.4 < live[c].wait_share < 0.5, c
    for cc in ("cubic", "bbr", "bbr2"):
        assert 0.05 < sim["ispras_s3", cc].wait_share < 0.2 and 0.05 < live["ispras_s3", cc].wait_share < 0.2, cc
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    verdicts = {k: cells[k].ratio_ci_live.verdict(transfer.ACCEPT_RATIO) for k in CELLS + HETERO}
    below, undecided = [("ispras_s1", "bbr2"), ("ispras_s2", "bbr2")], [("ispras_s2", "bbr"), ("ispras_s3", "bbr")]
    assert [k for k, v in verdicts.items() if v == "below"] == below
    assert [k for k, v in verdicts.items() if v == "undecided"] == undecided
    assert all(v == "at least" for k, v in verdicts.items() if k not in below + undecided)
    assert [k for k in CELLS + HETERO if not cells[k].accepted] == below  # point estimates: 9 of 11 at >= 0.95
    assert 0.78 < cells["ispras_s1", "bbr2"].ratio_live < 0.83 and 0.63 < cells["ispras_s2", "bbr2"].ratio_live < 0.68
    for k in below:  # the loss the simulator did not see: within its CI there, beyond it live
        assert (cells[k].sign_sim, cells[k].sign_live) == ("0", "-"), k
    assert [k for k in CELLS + HETERO if cells[k].headroom_live > transfer.HEADROOM] == [("hetero_file", "bbr")]
    assert cells["hetero_file", "bbr"].headroom_by == "fast_only" and cells["hetero_file", "bbr"].sign_live == "0"
    matches = [k for k in CELLS + HETERO if cells[k].sign_match]
    assert matches == [("ispras_s1", "cubic"), ("ispras_s2", "cubic"), ("ispras_s2", "bbr"), *HETERO]
    assert all(cells[k].sign_live == "0" for k in CELLS + HETERO if k not in below)


def test_qlearning_is_a_minrtt_clone_on_both_sides_and_wins_no_headroom():
    """``agent=qlearning`` as the report trains it (2026-11-29, 200,000 steps on ispras_s1-s3 and
    hetero_file under CUBIC, BBRv1 and BBRv2): minRTT's answer at every simulated blocked decision
    in all eleven cells and at every sampled live one but 15 of 5,373 (s3 under BBRv2), with both
    paths created and validated in every live run. Live it is at least 0.95x minRTT beyond the CI
    in 6 of 11 cells and undecided in the other 5 (point estimates 0.951-1.030); the four cells with
    more than 10% live headroom (ECF on s1 and BLEST on s2 under BBRv2, three runs each; fast_only
    on hetero_file under both CCs) are not won; the simulator's sign, `0` everywhere, is right in
    all eleven (docs/transfer.md)."""
    r = recorded("qlearning")
    assert r.policy["header_sha256"] == "dec657dc736997fb" and r.policy["steps_done"] == 200000
    assert r.policy["kind"] == "qlearning" and r.policy["observation"] == "ispras_q_roles"
    for m in r.measurements:
        if m.side == "live":
            assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps), (m.scenario, m.cc, m.scheduler)
            assert set(m.outcomes) == {"finished"}
        if m.scheduler == POLICY:
            assert m.blocked > 0 and m.waits <= 0.003 * m.blocked, (m.side, m.scenario, m.cc)
            assert m.waits == 0 or (m.side, m.scenario, m.cc) == ("live", "ispras_s3", "bbr2")
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    verdicts = {k: cells[k].ratio_ci_live.verdict(transfer.ACCEPT_RATIO) for k in CELLS + HETERO}
    undecided = [("ispras_s1", "bbr2"), ("ispras_s2", "bbr"), ("ispras_s2", "bbr2"), ("ispras_s3", "cubic"),
                 ("ispras_s3", "bbr")]
    assert [k for k, v in verdicts.items() if v == "undecided"] == undecided
    assert all(v == "at least" for k, v in verdicts.items() if k not in undecided)
    assert all(cells[k].accepted for k in CELLS + HETERO)  # point estimates 0.951-1.030
    headroom = [k for k in CELLS + HETERO if cells[k].headroom_live > transfer.HEADROOM]
    assert headroom == [("ispras_s1", "bbr2"), ("ispras_s2", "bbr2"), *HETERO]
    assert [cells[k].headroom_by for k in headroom] == ["ecf", "blest", "fast_only", "fast_only"]
    assert all(cells[k].sign_sim == cells[k].sign_live == "0" for k in CELLS + HETERO)  # no win; every sign right


@pytest.mark.parametrize(("name", "expected"), [
    # (ISPRAS cells live, >= 0.95 by the point estimate, beyond the CI, below it, headroom cells, wins,
    #  sign known, sign right), as each record's section in docs/transfer.md reads them
    ("falcon", (9, 2, 2, 7, 2, 2, 9, 9)),
    ("linucb_classic", (9, 7, 5, 0, 3, 0, 9, 9)),
    ("a2c", (9, 7, 6, 0, 3, 0, 9, 9)),
])
def test_acceptance_of_a_record(name, expected):
    """The acceptance summary of a record: counts per clause, and the clauses' verdicts."""
    a = transfer.acceptance(Record.load(RECORDS[name]))
    assert (a.ispras, a.at_least, a.at_least_ci, a.below_ci, a.chances, a.wins, a.signs, a.signs_right) == expected
    assert not a.ratio_holds and a.sign_holds


def test_acceptance_needs_a_win_where_there_is_headroom():
    """Clause 1 asks for a win beyond the CI in a cell with more than 10% live headroom: a record
    with every ISPRAS cell at 0.95 but no such cell shows none; one with a (chance) win holds by the
    point estimates (docs/transfer.md: LinUCB took minRTT's decision at every sampled decision there)."""
    none = transfer.acceptance(Record.load(RECORDS["linucb_now"]))
    assert none.at_least == 9 and none.chances == 0 and not none.ratio_holds
    chance = transfer.acceptance(Record.load(RECORDS["linucb"]))
    assert chance.at_least == 9 and chance.wins == 1 and chance.ratio_holds


def test_summary_prints_one_row_per_record(capsys):
    transfer.main(["--summary", str(RECORDS["falcon"]), str(RECORDS["ppo"])])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| transfer_")]
    assert [r.split(" | ")[1] for r in rows] == ["falcon", "ppo"]
    assert rows[0].endswith("| no | yes |")


def test_the_modes_dqn_inside_xquic_wins_where_the_headroom_is_as_the_simulator_forecasts():
    """``agent=dqn_modes`` as study=ispras trains it (2026-11-30: ispras_s1-s3 under BBRv1, 200,000
    interval decisions), its exported header picking XQUIC's scheduler every 50 ms inside XQUIC
    (minRTT or the wait rule). On ``hetero_file`` it runs the wait rule at every decision on both
    sides and wins the fixed split's headroom live beyond the CI (+11.2% and +11.9% over minRTT;
    fast_only +11.2%, +12.0%), as the simulator forecasts to within 0.4%; on ispras_s2 under BBRv1
    it is above minRTT live beyond the CI (+6.8%). Live it is at least 0.95x minRTT in 8 of the 9
    ISPRAS cells by the point estimate (s1 under BBRv2 0.887, undecided by 5 runs); the simulator's
    sign, ``0`` in every ISPRAS cell at 5 runs, is right in 7 (live ``+`` on s2 and s3 under BBRv1)
    (docs/transfer.md)."""
    r = recorded("dqn_modes")
    assert r.policy["decision"] == "interval" and r.policy["modes"] == ["minrtt", "wait_rule"]
    assert r.policy["interval_ms"] == 50.0 and r.policy["header_sha256"] == "3aa6ba7bbc74eb8b"
    for m in r.measurements:
        if m.side == "live":
            assert m.paths_created == m.paths_validated == [2] * len(m.goodput_mbps), (m.scenario, m.cc, m.scheduler)
            assert set(m.outcomes) == {"finished"}
        if m.scheduler == POLICY:  # every decision counted on both sides
            assert len(m.mode_share) == 2 and math.isclose(sum(m.mode_share), 1.0) and m.feature_count > 0
            assert (m.side == "live") == (m.blocked > 0)  # per-packet waits: the live modes' own
    for cc in ("bbr", "bbr2"):
        for side in ("sim", "live"):
            pol = r.get(side, "hetero_file", cc, POLICY)
            assert pol.mode_share == [0.0, 1.0] and pol.path_share[0] == 1.0  # the rule, never the slow path
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    assert [k for k in CELLS + HETERO if cells[k].won] == HETERO
    assert [k for k in CELLS if not cells[k].accepted] == [("ispras_s1", "bbr2")]
    assert cells[("ispras_s1", "bbr2")].ratio_ci_live.verdict(transfer.ACCEPT_RATIO) == "undecided"
    assert [k for k in CELLS if cells[k].sign_live == "+"] == [("ispras_s2", "bbr"), ("ispras_s3", "bbr")]
    assert all(cells[k].sign_sim == "0" for k in CELLS)
    for k in HETERO:  # the forecast: within 0.5% of live, for the policy and minRTT
        for s in (POLICY, "minrtt"):
            sim, live = (np.mean(r.get(side, *k, s).goodput_mbps) for side in ("sim", "live"))
            assert abs(sim - live) / live < 0.005, (k, s, sim, live)
    a = transfer.acceptance(r)
    assert (a.ispras, a.at_least, a.wins, a.signs_right) == (9, 8, 2, 7) and not a.ratio_holds and not a.sign_holds


def test_the_modes_dqn_at_twenty_runs_in_every_cell_meets_clause_1_and_misses_the_sign_in_three():
    """The same preset command trained on another machine in the evening (the same simulated
    goodput, run for run, where both records measured it; another network: it runs the wait rule
    at 85-100% of its live decisions in the BBR cells of s1 and s2, where the afternoon's ran it
    at 35-84%), 20 runs of it and minRTT in all nine ISPRAS cells and on hetero_file, every cell
    live: at least 0.95 x minRTT in all nine (7 beyond the CI, none below it), above minRTT beyond
    the CI in both hetero_file cells (+11.3%, +12.4%; fast_only +11.1%, +12.4%): clause 1 holds.
    The simulator's sign is right in 6 of 9 ISPRAS cells: its +1.4% on s1 and +4.3% on s2 under
    BBRv1 and its -0.1% on s3 under BBRv1 are all within live's spread (on s2 +0.5%, against the
    afternoon network's +5.6%) (docs/transfer.md, "dqn_modes at 20 runs in every cell")."""
    r = Record.load(DATA / "transfer_dqn_modes_all20_20261130.json")
    assert r.policy["agent"] == "dqn_modes" and r.policy["modes"] == ["minrtt", "wait_rule"]
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    assert set(cells) == set(CELLS + HETERO)
    for m in r.measurements:
        assert len(m.goodput_mbps) == (3 if m.scheduler == "fast_only" else 20)
        if m.side == "live":
            assert set(m.outcomes) == {"finished"} and m.paths_validated == [2] * len(m.goodput_mbps)
    # the afternoon's record simulated the same goodput run for run in the four cells both measured
    before = Record.load(DATA / "transfer_dqn_modes_20runs_20261130.json")
    for s in ("ispras_s1", "ispras_s2"):
        for cc in ("bbr", "bbr2"):
            for who in (POLICY, "minrtt"):
                assert r.get("sim", s, cc, who).goodput_mbps == before.get("sim", s, cc, who).goodput_mbps
            assert r.get("sim", s, cc, POLICY).mode_share != before.get("sim", s, cc, POLICY).mode_share
    assert r.get("live", "ispras_s2", "bbr", POLICY).mode_share[1] == pytest.approx(0.848, abs=5e-4)
    a = transfer.acceptance(r)
    assert (a.ispras, a.at_least, a.wins, a.signs_right) == (9, 9, 2, 6) and a.ratio_holds and not a.sign_holds
    assert [k for k in CELLS if cells[k].sign_match is False] == [(s, "bbr") for s in ("ispras_s1", "ispras_s2",
                                                                                      "ispras_s3")]
    assert all(cells[k].sign_live == "0" for k in CELLS) and all(cells[k].sign_live == "+" for k in HETERO)
    assert cells[("ispras_s2", "bbr")].ratio_live == pytest.approx(1.005, abs=5e-4)


def test_four_seeds_of_the_modes_dqn_gain_on_ispras_s2_live_as_forecast_where_one_network_does_not_tell():
    """Seeds 0-3 of the same command on this machine, 20 interleaved runs of each and minRTT on
    ispras_s2 under BBRv1: the simulator forecasts +3.8-4.6% for every one; live one of the four
    is above minRTT beyond its CI (seed 2, +6.2%), and pooled over the 80 pairs the gain is +1.29
    Mbit/s (+3.5%), beyond the CI (docs/transfer.md, "Seeds 1-3 on ispras_s2 under BBRv1")."""
    from scipy import stats

    paths = [DATA / "transfer_dqn_modes_all20_20261130.json",
             *(DATA / f"transfer_dqn_modes_seed{s}_20261130.json" for s in (1, 2, 3))]
    diffs, signs = [], []
    for seed, path in enumerate(paths):
        r = Record.load(path)
        assert r.policy["seed"] == seed and r.policy["agent"] == "dqn_modes"
        cell = {(c.scenario, c.cc): c for c in summarise(r)}[("ispras_s2", "bbr")]
        signs.append((cell.sign_sim, cell.sign_live))
        pol, mrt = (np.asarray(r.get("live", "ispras_s2", "bbr", who).goodput_mbps) for who in (POLICY, "minrtt"))
        assert len(pol) == len(mrt) == 20
        diffs.append(pol - mrt)  # the runs alternate: pair i is policy run i and minRTT run i
        sim = [np.mean(r.get("sim", "ispras_s2", "bbr", who).goodput_mbps) for who in (POLICY, "minrtt")]
        assert 0.037 < sim[0] / sim[1] - 1 < 0.047
    assert signs == [("+", "0"), ("+", "0"), ("+", "+"), ("+", "0")]
    d = np.concatenate(diffs)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert d.mean() == pytest.approx(1.289, abs=1e-3) and d.mean() - half > 0


def test_twenty_runs_tell_the_modes_dqns_bbrv2_cells_from_a_loss():
    """The same command's policy (its header's code the same to the byte; another training config
    hash, for another output directory), 20 runs of it and minRTT on ispras_s1/s2 under BBRv1 and
    BBRv2: s1 under BBRv2, 0.887 at 5 runs, is 1.034 [0.949, 1.126]; s2 under BBRv1 +5.6% beyond the
    CI, the simulator's sign ``+`` there too; under BBRv1 on s1 the simulator's +1.4% (beyond its
    CI at 20 runs) is within live's spread (docs/transfer.md, "dqn_modes")."""
    r = Record.load(DATA / "transfer_dqn_modes_20runs_20261130.json")
    assert r.policy["agent"] == "dqn_modes" and r.policy["decision"] == "interval"
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    assert set(cells) == {(s, c) for s in ("ispras_s1", "ispras_s2") for c in ("bbr", "bbr2")}
    for m in r.measurements:
        assert len(m.goodput_mbps) == 20 and m.scheduler in (POLICY, "minrtt")
        if m.side == "live":
            assert set(m.outcomes) == {"finished"} and m.paths_validated == [2] * 20
    assert all(cells[k].accepted for k in cells)
    assert cells[("ispras_s1", "bbr2")].ratio_live == pytest.approx(1.034, abs=5e-4)
    assert [k for k, c in cells.items() if c.sign_live == "+"] == [("ispras_s2", "bbr")]
    assert [k for k, c in cells.items() if c.sign_match is False] == [("ispras_s1", "bbr")]


QLEARNING_RATE = DATA / "transfer_qlearning_rate_20261201.json"


def test_the_qlearning_presets_delivery_rate_is_a_sample_live_under_cubic_as_in_the_simulator():
    """The Q-learning preset reads each path's delivery rate (``ispras_q_roles``). Live XQUIC gave
    it 0.0 at every CUBIC decision of transfer_qlearning_20261129.json: the extension read BBR's
    bandwidth estimate, which CUBIC does not have. Since 2026-12-01 it computes the delivery-rate
    sample for every CC (bindings/src/mps_xquic.c ``rate_sample``; docs/fidelity.md, that day):
    transfer_qlearning_rate_20261201.json, the same preset re-measured on ispras_s1 and s2 under
    CUBIC and BBRv1 (5 runs of it and of minRTT each side). The live medians are the simulator's
    on the fast path (x1.01, x0.91) and above them on the slow one (x1.72, x1.77)."""
    before, now = recorded("qlearning"), Record.load(QLEARNING_RATE)
    assert now.policy["agent"] == "qlearning" and now.provenance["xquic_commit"] and now.provenance["kernel"]
    mid = transfer.QUANTILES.index(0.5)
    for scen in ("ispras_s1", "ispras_s2"):
        old = before.get("live", scen, "cubic", POLICY)
        live, sim = now.get("live", scen, "cubic", POLICY), now.get("sim", scen, "cubic", POLICY)
        assert old is not None and live is not None and sim is not None
        for name, (lo, hi) in {"delivery_rate_fast": (0.8, 1.25), "delivery_rate_second": (1.5, 2.0)}.items():
            assert not any(old.feature_quantiles[name])  # BBR's estimate: none under CUBIC
            ratio = live.feature_quantiles[name][mid] / sim.feature_quantiles[name][mid]
            assert lo < ratio < hi, (scen, name, ratio)
