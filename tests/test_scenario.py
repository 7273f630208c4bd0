"""Tests of the scenario schema (envs/scenario.py) and the shipped configs/scenario files."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from envs.scenario import (
    SCENARIO_DIR,
    Choice,
    ScenarioError,
    Uniform,
    list_scenarios,
    load_scenario,
    scenario_from_dict,
)

EXPECTED = (
    [f"ispras_s{i}" for i in (1, 2, 3)]
    + [f"sod_{i}" for i in range(1, 7)]
    + [f"mptcp_tut_e{i}" for i in range(8)]
    + [f"kato_{i}" for i in range(1, 7)]
    + ["leeyoo_static", "leeyoo_loss", "leeyoo_abr", "leeyoo_example", "leeyoo_static_dash", "leeyoo_loss_dash"]
    + ["m_peekaboo_5g", "mpquic_space", "dynamic"]
    # the same studies on networks (envs/network.py): shared bottlenecks, churn, flow control
    + [f"mptcp_tut_mesh_e{i}" for i in range(8)] + ["kato_churn_3", "kato_churn_6", "leeyoo_flow_dash"] + ["rfc6356_shared", "rfc6356_one_path"]
    # the workbench's scheduling-matters cells (study=headroom, docs/cc_robustness.md)
    + ["hetero_file", "hetero_small_file", "lossy_slow"]
)


def minimal() -> dict[str, Any]:
    return {
        "name": "t",
        "paths": [{"bandwidth_mbps": 10, "delay_ms": 5}],
        "workload": {"type": "bulk", "duration_s": 10},
    }


# --------------------------------------------------------------------------- shipped files


def test_every_spec_row_has_a_file() -> None:
    assert sorted(EXPECTED) == list_scenarios()
    assert SCENARIO_DIR.is_dir()


@pytest.mark.parametrize("name", list_scenarios())
def test_every_file_loads_and_validates(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.source or name == "dynamic"
    assert scenario.notes, "every file records the choices made where the study is silent"
    concrete = scenario.sample(np.random.default_rng(0))
    assert not concrete.is_distribution
    assert concrete.receive_buffer(1500) >= 64 * 1024
    net = concrete.network()  # the short form: link k is path k (queue_bytes and base RTT the path's own)
    for route in net.routes:
        assert net.queue_bytes(route.bottleneck, 1500) >= 3000
        assert route.base_rtt_ms >= 0
    if concrete.links is None:
        for path in concrete.paths:
            assert path.queue_bytes(1500) >= 3000
            assert path.base_rtt_ms() >= 0
    assert scenario.max_one_way_ms() >= max(max(r.forward_ms, r.reverse_ms) for r in net.routes)
    # A dump validates back to the same scenario (what a Hydra round trip relies on).
    assert scenario_from_dict(scenario.model_dump()) == scenario


@pytest.mark.parametrize("name", list_scenarios())
def test_file_is_a_hydra_group_option(name: str) -> None:
    hydra = pytest.importorskip("hydra")
    from omegaconf import OmegaConf

    with hydra.initialize_config_dir(config_dir=str(SCENARIO_DIR.parent), version_base=None):
        cfg = hydra.compose(config_name=None, overrides=[f"+scenario={name}"])
    plain = OmegaConf.to_container(cfg.scenario[name], resolve=True)
    assert scenario_from_dict(plain) == load_scenario(name)


ISPRAS = {  # docs/scenarios.md: bandwidth, delay (one-way), loss %, delay variance ms^2
    "ispras_s1": ((70, 20), (40, 10), (0.5, 1), (5, 5)),
    "ispras_s2": ((70, 20), (10, 40), (0.5, 1), (5, 5)),
    "ispras_s3": ((70, 70), (15, 15), (0, 0), (0, 0)),
}


@pytest.mark.parametrize("name", sorted(ISPRAS))
def test_ispras_matches_spec_table(name: str) -> None:
    scenario = load_scenario(name)
    bandwidth, delay, loss, variance = ISPRAS[name]
    assert not scenario.is_distribution
    assert [p.bandwidth_mbps for p in scenario.paths] == list(bandwidth)
    assert [p.delay_ms for p in scenario.paths] == list(delay)
    assert [p.reverse_delay_ms for p in scenario.paths] == [None, None]
    assert [p.base_rtt_ms() for p in scenario.paths] == [2 * d for d in delay]
    assert [p.loss_pct for p in scenario.paths] == list(loss)
    for path, var in zip(scenario.paths, variance):
        assert path.jitter_ms**2 == pytest.approx(var, abs=1e-5)  # std from the variance
        assert path.queue_bdp == 1.0
    assert scenario.workload.type == "file" and scenario.workload.file_mb == 10
    assert scenario.jitter_reorders


MPTCP_TUT_LOSS = ([0] * 5, [0, 1, 2, 6, 12])
MPTCP_TUT_CAP = ([10] * 5, [10, 25, 50, 75, 100])
MPTCP_TUT_DELAY = ([5] * 5, [5, 10, 20, 40, 80])


@pytest.mark.parametrize("e", range(8))
def test_mptcp_tut_matches_spec_table(e: int) -> None:
    scenario = load_scenario(f"mptcp_tut_e{e}")
    assert [p.loss_pct for p in scenario.paths] == MPTCP_TUT_LOSS[e // 4]
    assert [p.bandwidth_mbps for p in scenario.paths] == MPTCP_TUT_CAP[(e // 2) % 2]
    assert [p.delay_ms for p in scenario.paths] == MPTCP_TUT_DELAY[e % 2]
    assert scenario.workload.type == "bulk" and scenario.workload.duration_s == 60
    assert (scenario.workload.messages, scenario.workload.message_mb) == (500, 3)


@pytest.mark.parametrize(
    ("name", "rtts"),
    [("sod_1", [280, 40]), ("sod_2", [280, 40, 280]), ("sod_3", [280, 40, 160]),
     ("sod_4", [280, 40, 40]), ("sod_5", [280, 40, 320]), ("sod_6", [280, 40, 320, 20])],
)
def test_sod_min_rtts_and_background(name: str, rtts: list[int]) -> None:
    scenario = load_scenario(name)
    assert [p.base_rtt_ms() for p in scenario.paths] == rtts
    assert all(p.competing.udp_mbps == 0.8 for p in scenario.paths)
    poor = name == "sod_5"
    assert [p.bandwidth_mbps for p in scenario.paths] == ([2, 2, 1.5] if poor else [2] * len(rtts))
    assert [p.loss_pct for p in scenario.paths] == ([0.1, 0.1, 1] if poor else [0.1] * len(rtts))


def test_kato_competing_flows() -> None:
    assert [p.competing.flows for p in load_scenario("kato_1").paths] == [10, 10]
    assert [p.competing.flows for p in load_scenario("kato_5").paths] == [20, 20]
    for name in ("kato_3", "kato_6"):
        for path in load_scenario(name).paths:
            active = [n for _, n in path.competing.flows_schedule]
            assert min(active) == 10 and max(active) == 20
            assert path.competing.cc == "cubic"


def test_m_peekaboo_conversions() -> None:
    scenario = load_scenario("m_peekaboo_5g")
    path = scenario.paths[0]
    assert path.base_rtt_ms() == pytest.approx(27.4)
    assert path.jitter_ms * math.sqrt(2) == pytest.approx(6.4, abs=1e-3)
    assert scenario.max_one_way_ms() == pytest.approx(13.7 + 4 * 4.525)
    assert scenario.max_bandwidth_mbps() == 1100


def test_dynamic_has_trace_and_outage() -> None:
    scenario = load_scenario("dynamic")
    assert scenario.paths[0].bandwidth_trace[0] == (0, 40)
    assert scenario.paths[0].outages == [(30, 40)]


# --------------------------------------------------------------------------- distributions


def test_mpquic_space_sampling_is_deterministic_and_in_range() -> None:
    space = load_scenario("mpquic_space")
    assert space.is_distribution
    assert space.max_bandwidth_mbps() == 100
    assert space.max_one_way_ms() == 25
    a = space.sample(np.random.default_rng(7))
    b = space.sample(np.random.default_rng(7))
    c = space.sample(np.random.default_rng(8))
    assert a == b
    assert a != c
    assert not a.is_distribution and a.n_paths is None and len(a.paths) == 2
    assert a.paths[0] != a.paths[1], "each path is drawn independently from the template"
    for seed in range(50):
        for path in space.sample(np.random.default_rng(seed)).paths:
            assert 0.1 <= path.bandwidth_mbps <= 100
            assert 0 <= path.delay_ms <= 25
            assert 0 <= path.loss_pct <= 2.5
            assert 0.1 <= path.queue_bdp <= 2.0
            # extra queueing delay of a full buffer stays within the space's 0-100 ms
            queue_delay_ms = path.queue_bytes(1500) / (path.bandwidth_mbps * 125)
            assert queue_delay_ms <= 100 + 2 * 1500 / (path.bandwidth_mbps * 125)
    assert space.sample(np.random.default_rng(0)).receive_buffer(1500) >= 64 * 1024


def test_n_paths_choice_and_distribution_kinds() -> None:
    d = minimal()
    d["n_paths"] = {"choice": [2, 3]}
    d["paths"] = [
        {
            "bandwidth_mbps": {"loguniform": [1, 1000]},
            "delay_ms": {"choice": [5, 50]},
            "jitter_ms": {"uniform": [0, 3]},
            "competing": {"udp_mbps": {"uniform": [0, 1]}},
        }
    ]
    space = scenario_from_dict(d)
    assert isinstance(space.n_paths, Choice)
    assert isinstance(space.paths[0].jitter_ms, Uniform)
    assert space.max_one_way_ms() == 50 + 4 * 3
    assert space.max_bandwidth_mbps() == 1000
    counts = set()
    for seed in range(40):
        s = space.sample(np.random.default_rng(seed))
        counts.add(len(s.paths))
        for p in s.paths:
            assert 1 <= p.bandwidth_mbps <= 1000 and p.delay_ms in (5, 50)
            assert 0 <= p.competing.udp_mbps <= 1
    assert counts == {2, 3}


def test_concrete_sample_is_an_equal_copy() -> None:
    scenario = load_scenario("ispras_s1")
    assert scenario.sample(np.random.default_rng(0)) == scenario


def test_methods_on_a_distribution_refuse_clearly() -> None:
    space = load_scenario("mpquic_space")
    with pytest.raises(ScenarioError, match="sample"):
        space.receive_buffer(1500)
    with pytest.raises(ScenarioError, match="bandwidth_mbps is a distribution"):
        space.paths[0].queue_bytes(1500)


# --------------------------------------------------------------------------- path methods


def test_queue_and_receive_buffer_rules() -> None:
    d = minimal()
    d["paths"] = [
        {"bandwidth_mbps": 80, "delay_ms": 10, "reverse_delay_ms": 30},  # default 1 BDP
        {"bandwidth_mbps": 8, "delay_ms": 5, "queue_packets": 50},
        {"bandwidth_mbps": 1, "delay_ms": 0, "queue_bdp": 1.0},  # BDP 0: floor of 2 MSS
    ]
    s = scenario_from_dict(d)
    p0, p1, p2 = s.paths
    assert p0.queue_bdp == 1.0 and p0.base_rtt_ms() == 40
    assert p0.queue_bytes(1500) == pytest.approx(80e6 / 8 * 0.040)
    assert p1.queue_bytes(1500) == 50 * 1500
    assert p2.queue_bytes(1500) == 3000
    # RFC 6182: 2 * max RTT (base + full queue) * sum of capacities
    max_rtt_s = max(0.040 + 0.040, 0.010 + 50 * 1500 / 1e6, 0.0 + 3000 * 8 / 1e6)
    assert s.receive_buffer(1500) == pytest.approx(2 * max_rtt_s * (80 + 8 + 1) * 1e6 / 8)
    d["receive_buffer_bytes"] = 12345
    assert scenario_from_dict(d).receive_buffer(1500) == 12345
    tiny = minimal()
    tiny["paths"] = [{"bandwidth_mbps": 0.1, "delay_ms": 1}]
    assert scenario_from_dict(tiny).receive_buffer(1500) == 64 * 1024


def test_competing_cc_is_lower_cased() -> None:
    d = minimal()
    d["paths"][0]["competing"] = {"flows": 2, "cc": "CUBIC"}
    assert scenario_from_dict(d).paths[0].competing.cc == "cubic"


# --------------------------------------------------------------------------- errors


def _error(d: Any) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(d)
    message = str(info.value)
    assert "pydantic" not in message and "validation error for" not in message
    return message


def _with_path(**fields: Any) -> dict[str, Any]:
    d = minimal()
    d["paths"][0].update(fields)
    return d


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_with_path(bandwidth_mbps=-5), ["paths[0].bandwidth_mbps: must be > 0 and <= 100000, got -5"]),
        (_with_path(bandwidth_mbps={"uniform": [-1, 5]}), ["paths[0].bandwidth_mbps", "> 0 and <= 100000", "got -1"]),
        (_with_path(loss_pct=100), ["paths[0].loss_pct: must be >= 0 and < 100, got 100"]),
        (_with_path(jitter_ms=2000), ["paths[0].jitter_ms", "<= 1000", "2000"]),
        (_with_path(delay_ms={"uniform": [9, 1]}), ["paths[0].delay_ms", "lo <= hi"]),
        (_with_path(delay_ms={"unifrom": [1, 9]}), ["paths[0].delay_ms", "uniform: [lo, hi]"]),
        (_with_path(queue_packets=10, queue_bdp=1), ["paths[0]", "queue_packets", "queue_bdp"]),
        (_with_path(bandwith_mbps=3), ["paths[0].bandwith_mbps: unknown field", "did you mean 'bandwidth_mbps'"]),
        (_with_path(outages=[[5, 3]]), ["paths[0].outages[0]", "start_s < end_s"]),
        (_with_path(bandwidth_trace=[[1, 5]]), ["paths[0].bandwidth_trace", "time 0"]),
        (
            _with_path(competing={"flows": 5, "flows_schedule": [[0, 6]]}),
            ["paths[0].competing.flows_schedule", "<= flows (5)", "got 6"],
        ),
        (_with_path(competing={"flows": 65}), ["paths[0].competing.flows", "<= 64", "65"]),
        ({**minimal(), "paths": []}, ["paths: must list 1..8 paths, got 0"]),
        ({**minimal(), "paths": minimal()["paths"] * 9}, ["paths: must list 1..8 paths, got 9"]),
        ({**minimal(), "n_paths": 2, "paths": minimal()["paths"] * 2}, ["n_paths", "exactly one template path"]),
        ({**minimal(), "n_paths": {"uniform": [1, 3]}}, ["n_paths", "integer"]),
        ({**minimal(), "workoad": {}}, ["workoad: unknown field", "did you mean 'workload'"]),
        ({**minimal(), "workload": {"type": "file"}}, ["workload", "file_mb"]),
        ({**minimal(), "workload": {"type": "bulk"}}, ["workload", "duration_s"]),
        ({**minimal(), "workload": {"type": "video", "duration_s": 1}},
         ["workload.type", "unknown workload 'video'; valid: bulk, file, dash, web"]),
        ({k: v for k, v in minimal().items() if k != "name"}, ["name: required field is missing"]),
        (_with_path(bandwidth_mbps=float("nan")), ["paths[0].bandwidth_mbps", "finite"]),
    ],
)
def test_bad_input_names_field_and_rule(data: dict[str, Any], expected: list[str]) -> None:
    message = _error(copy.deepcopy(data))
    for part in expected:
        assert part in message


def test_every_problem_is_reported() -> None:
    message = _error(_with_path(bandwidth_mbps=-5, loss_pct=100))
    assert "bandwidth_mbps" in message and "loss_pct" in message


def test_not_a_mapping() -> None:
    assert "mapping" in _error([1, 2])


# --------------------------------------------------------------------------- loading


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("ispras_s9")
    message = str(info.value)
    assert "ispras_s9" in message
    for name in list_scenarios():
        assert name in message


def test_user_yaml_path_loads(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(minimal()))
    assert load_scenario(str(path)).name == "t"
    yml = tmp_path / "sub" / "other.yml"
    yml.parent.mkdir()
    yml.write_text((SCENARIO_DIR / "kato_3.yaml").read_text())
    assert load_scenario(str(yml)) == load_scenario("kato_3")


def test_bad_user_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not found"):
        load_scenario(str(tmp_path / "missing.yaml"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("paths: [\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(str(broken))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_with_path(bandwidth_mbps=-5)))
    with pytest.raises(ScenarioError, match=r"bad\.yaml[\s\S]*paths\[0\]\.bandwidth_mbps"):
        load_scenario(str(bad))
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ScenarioError, match="mapping"):
        load_scenario(str(empty))


@pytest.mark.parametrize("e", range(8))
def test_mptcp_tut_mesh_shares_every_bottleneck(e: int) -> None:
    """The full mesh: 6 subflows, each over one client-side (b0, b1) and one server-side (b2-b4)
    bottleneck, with the table's values per bottleneck as mptcp_tut_e<e> has them per path."""
    mesh, flat = load_scenario(f"mptcp_tut_mesh_e{e}"), load_scenario(f"mptcp_tut_e{e}")
    net = mesh.network()
    assert [r.links for r in net.routes] == [(c, s) for c in (0, 1) for s in (2, 3, 4)]
    assert [link.bandwidth_mbps for link in net.links] == [p.bandwidth_mbps for p in flat.paths]
    assert [link.loss_pct for link in net.links] == [p.loss_pct for p in flat.paths]
    for k in range(5):
        assert sum(k in r.links for r in net.routes) in (2, 3)
