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
