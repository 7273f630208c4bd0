"""The live reference tables (envs/live/reference.py): loading, validation, lookup; and every
recorded table in tests/data/live loads."""

import copy
import json

import pytest

from envs.errors import ConfigError
from envs.live.reference import (DATA_DIR, MIN_RUNS, TABLES, available_references, load_reference, table_from_dict)

FIXTURE = {
    "name": "tiny",
    "provenance": {"stack": "xquic", "stack_version": "d67938db705c", "kernel": "6.1.0", "recorded":
                   "2026-01-01T00:00:00+00:00", "command": "python benchmarks/record_reference.py ispras",
                   "harness": "Mininet, delayline, verification passed", "notes": ""},
    "cells": [
        {"key": {"scenario": "ispras_s1", "cc": "bbr", "scheduler": "minrtt"}, "metric": "goodput_mbps",
         "runs": [30.0, 40.0, 35.0], "load": [1.0, 1.2, 0.9], "outcomes": ["finished"] * 3},
        {"key": {"scenario": "ispras_s1", "cc": "cubic", "scheduler": "minrtt"}, "metric": "goodput_mbps",
         "runs": [3.0, 2.0, 4.0, 3.0], "load": [1.0, 1.0, 1.0, 1.0]},
    ],
    "incomplete": [{"key": {"scenario": "ispras_s2", "cc": "bbr", "scheduler": "minrtt"}, "metric": "goodput_mbps",
                    "runs": [20.0], "load": [2.0]}],
}


def write(tmp_path, raw, name="tiny"):
    (tmp_path / f"{name}.json").write_text(json.dumps(raw))
    return tmp_path


def test_load_and_lookup(tmp_path):
    table = load_reference("tiny", write(tmp_path, FIXTURE))
    assert table.provenance.stack_version == "d67938db705c"
    c = table.cell(scenario="ispras_s1", cc="bbr", scheduler="minrtt")
    assert c.runs == (30.0, 40.0, 35.0) and c.load == (1.0, 1.2, 0.9)
    assert (c.mean, c.low, c.high) == (35.0, 30.0, 40.0)
    assert table.cell(metric="goodput_mbps", scenario="ispras_s1", cc="cubic", scheduler="minrtt").mean == 3.0
    assert [c.key["scenario"] for c in table.incomplete] == ["ispras_s2"]
    assert available_references(tmp_path) == ["tiny"]
    # the JSON form round-trips
    assert table_from_dict(table.to_dict(), "tiny") == table


def test_unknown_cell_lists_the_cells(tmp_path):
    table = load_reference("tiny", write(tmp_path, FIXTURE))
    with pytest.raises(KeyError, match="cc=cubic, scheduler=minrtt"):
        table.cell(scenario="ispras_s1", cc="bbr2", scheduler="minrtt")
    with pytest.raises(KeyError, match="no cell"):  # incomplete cells are not served
        table.cell(scenario="ispras_s2", cc="bbr", scheduler="minrtt")


def test_unknown_table_lists_the_tables(tmp_path):
    with pytest.raises(ConfigError, match="recorded: tiny"):
        load_reference("nope", write(tmp_path, FIXTURE))


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["cells"][0].pop("load"), r"cell 0 \(scenario=ispras_s1, cc=bbr.*missing field\(s\) load"),
    (lambda r: r["cells"][1].update(runs=[1.0, 2.0], load=[1.0, 1.0]), r"cell 1 .*cc=cubic.*2 run\(s\), at least 3"),
    (lambda r: r["cells"][0].update(load=[1.0]), r"1 load values for 3 runs"),
    (lambda r: r["provenance"].pop("command"), r"provenance lacks command"),
    (lambda r: r["provenance"].update(stack="quiche"), r"stack 'quiche'"),
    (lambda r: r["cells"].append(copy.deepcopy(r["cells"][0])), r"appears twice"),
])
def test_validation_names_table_and_cell(tmp_path, edit, message):
    raw = copy.deepcopy(FIXTURE)
    edit(raw)
    with pytest.raises(ConfigError, match="'tiny'.*" + message):
        load_reference("tiny", write(tmp_path, raw))


def test_a_known_table_has_its_keys(tmp_path):
    raw = copy.deepcopy(FIXTURE)
    raw["name"] = "ispras_xquic"
    write(tmp_path, raw, "ispras_xquic")
    assert load_reference("ispras_xquic", tmp_path).cells
    raw["cells"][0]["key"].pop("scheduler")
    write(tmp_path, raw, "ispras_xquic")
    with pytest.raises(ConfigError, match="'ispras_xquic', cell scenario=ispras_s1, cc=bbr .*scenario, cc, scheduler"):
        load_reference("ispras_xquic", tmp_path)


@pytest.mark.parametrize("name", available_references())
def test_recorded_tables_load(name):
    assert name in TABLES
    table = load_reference(name)
    assert table.cells and all(len(c.runs) >= MIN_RUNS and len(c.load) == len(c.runs) for c in table.cells)
    stacks = table.provenance.stack.split("+")
    assert all(c.key.get("stack", stacks[0]) in stacks for c in table.cells)


@pytest.mark.parametrize("name", available_references(DATA_DIR / "pfifo"))
def test_earlier_records_load_and_say_so(name):
    """A table replaced by its re-recording on the byte buffer stays a valid record of the packet
    buffer, its provenance saying both."""
    table = load_reference(name, DATA_DIR / "pfifo")
    assert name in TABLES and table.cells
    assert "pfifo" in table.provenance.harness and "EARLIER RECORD" in table.provenance.notes


def test_the_recorder_writes_the_provenance_every_live_tool_keeps(tmp_path, monkeypatch):
    """benchmarks/record_reference.py's tables carry envs.live.provenance's record (kernel, command,
    date, Python, mpsched's commit) in the table schema, and what it writes loads."""
    import platform
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import record_reference

    monkeypatch.setattr(sys, "argv", ["record_reference.py", "ispras", "--stack", "xquic", "--runs", "3"])
    rec = record_reference.Recorder("ispras_xquic", "xquic", "d67938db705c", tmp_path, "A note.")
    key = {"scenario": "ispras_s1", "cc": "bbr", "scheduler": "minrtt"}
    for value in (30.0, 31.0, 32.0):
        rec.add(key, "goodput_mbps", value, "finished", 1.0)
    table = load_reference("ispras_xquic", tmp_path)
    p = table.provenance
    assert p.kernel == platform.release() and p.python == platform.python_version()
    assert p.command == "python benchmarks/record_reference.py ispras --stack xquic --runs 3"
    assert p.recorded.endswith("Z") and p.mpsched_commit == record_reference.provenance("x", [])["mpsched_commit"]
    assert table.cell(**key).runs == (30.0, 31.0, 32.0)


def test_an_extended_cell_says_so_in_the_notes(tmp_path, monkeypatch):
    """A cell continued with more runs keeps its earlier runs and the notes say when it was
    extended, from how many to how many runs, at what load, on which kernel, by which command."""
    import platform
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import record_reference

    monkeypatch.setattr(sys, "argv", ["record_reference.py", "ispras", "--stack", "linux", "--runs", "3"])
    key = {"scenario": "ispras_s1", "cc": "cubic", "scheduler": "kernel"}
    rec = record_reference.Recorder("ispras_linux", "linux", "k", tmp_path, "A note.")
    values = iter((8.0, 9.0, 10.0, 11.0, 12.0))
    record_reference.record_runs(rec, key, ("goodput_mbps",), 3, lambda: ((next(values),), "finished"))
    assert "extended" not in rec.prov["notes"]  # recorded afresh
    monkeypatch.setattr(sys, "argv", ["record_reference.py", "ispras", "--stack", "linux", "--runs", "5"])
    rec = record_reference.Recorder("ispras_linux", "linux", "k", tmp_path, "A note.")
    record_reference.record_runs(rec, key, ("goodput_mbps",), 5, lambda: ((next(values),), "finished"))
    table = load_reference("ispras_linux", tmp_path)
    assert table.cell(**key).runs == (8.0, 9.0, 10.0, 11.0, 12.0)
    notes = table.provenance.notes
    assert "scenario=ispras_s1, cc=cubic, scheduler=kernel extended from 3 to 5 runs" in notes
    assert f"kernel {platform.release()}" in notes and "--runs 5" in notes


def test_per_path_fields_load_and_old_cells_lack_them(tmp_path):
    """A run may keep the bytes each path delivered and the paths XQUIC created and validated
    (null for a run recorded without them); a cell recorded before them has none and still loads."""
    raw = copy.deepcopy(FIXTURE)
    raw["cells"][0].update(path_bytes=[[2e7, 1e6], None, [1.5e7, 6e6]], paths_created=[2, None, 2],
                           paths_validated=[2, None, 1])
    table = load_reference("tiny", write(tmp_path, raw))
    c = table.cell(scenario="ispras_s1", cc="bbr", scheduler="minrtt")
    assert c.path_bytes == ((2e7, 1e6), None, (1.5e7, 6e6)) and c.paths_validated == (2, None, 1)
    assert c.path_share() == pytest.approx((3.5e7 / 4.2e7, 7e6 / 4.2e7))
    old = table.cell(scenario="ispras_s1", cc="cubic", scheduler="minrtt")
    assert old.path_bytes == () and old.path_share() == ()
    assert "path_bytes" not in table.to_dict()["cells"][1]  # an old cell is written back as it was
    assert table_from_dict(table.to_dict(), "tiny") == table
    for bad, message in (({"path_bytes": [[1.0, 2.0]]}, "one entry per run"),
                         ({"paths_validated": [2, 2, "yes"]}, "counts")):
        broken = copy.deepcopy(FIXTURE)
        broken["cells"][0].update(bad)
        with pytest.raises(ConfigError, match=message):
            load_reference("tiny", write(tmp_path, broken))


def test_the_recorder_keeps_per_path_bytes_and_replaces_unsplit_runs(tmp_path, monkeypatch):
    """record_runs keeps a measure's per-path fields beside its value (earlier runs without them
    null); replace_unsplit moves the runs without them to the cell's failed, so the cell is
    recorded afresh, and leaves the split runs of an interrupted re-recording in place."""
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import record_reference

    monkeypatch.setattr(sys, "argv", ["record_reference.py", "ispras", "--stack", "xquic", "--runs", "3"])
    key = {"scenario": "ispras_s1", "cc": "bbr", "scheduler": "minrtt"}
    rec = record_reference.Recorder("ispras_xquic", "xquic", "d67938db705c", tmp_path, "A note.")
    for value in (40.0, 41.0, 42.0):
        rec.add(key, "goodput_mbps", value, "finished", 4.0)  # an old run: no per-path fields
    assert record_reference.Recorder("ispras_xquic", "xquic", "x", tmp_path, "").replace_unsplit(
        key, "goodput_mbps", "test") == 3
    rec = record_reference.Recorder("ispras_xquic", "xquic", "x", tmp_path, "")
    split = {"path_bytes": [19000000, 1971520], "paths_created": 2, "paths_validated": 2}
    record_reference.record_runs(rec, key, ("goodput_mbps",), 3, lambda: ((47.0,), "finished", split))
    c = load_reference("ispras_xquic", tmp_path).cell(**key)
    assert c.runs == (47.0,) * 3 and c.path_bytes == ((19000000.0, 1971520.0),) * 3 and c.paths_validated == (2,) * 3
    assert len(c.failed) == 3 and "goodput_mbps 40.0 (outcome finished)" in c.failed[0]
    assert rec.replace_unsplit(key, "goodput_mbps", "test") == 0  # a resumed re-recording keeps its runs
    rec.add(key, "goodput_mbps", 46.0, "finished", 1.0)  # a run without them: null beside the others
    assert load_reference("ispras_xquic", tmp_path).cell(**key).path_bytes[-1] is None
