"""Workloads of the compiled core (envs/sim/workload.py) and the metrics built on them
(envs/metrics.py): each workload runs batched and ends, moves the bytes it should, follows its
client's rules, is reproducible, and refuses bad input by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import compose_config

from envs import config
from envs.errors import ConfigError
from envs.metrics import aggregation_benefit, metric_names, reorder_histogram, window_throughput
from envs.scenario import ScenarioError, load_scenario, scenario_from_dict
from envs.sim.layout import (CN_RCV_NXT, CN_SND_NXT, CN_T, ITEM_ARRIVE, ITEM_DONE, ITEM_END, ITEM_RATE, ITEM_REQ,
                             REC_DELIVERED, WL_REBUF)
from envs.sim.simulator import SimConfig, Simulator



def scenario(work: dict, paths: list[tuple[float, float, float]] | None = None):
    """Paths as (Mbit/s, one-way ms, loss %); default: a clean fast path and a lossy slow one."""
    paths = paths or [(20.0, 5.0, 0.0), (10.0, 30.0, 1.0)]
    return scenario_from_dict({"name": "t", "workload": work,
                               "paths": [{"bandwidth_mbps": bw, "delay_ms": d, "loss_pct": loss, "queue_bdp": 1.0}
                                         for bw, d, loss in paths]})


def run(work: dict, paths=None, batch: int = 3, seed: int = 0, cc: str = "cubic", stack: str | None = None) -> Simulator:
    sim = Simulator(scenario(work, paths), cc, batch=batch, seed=seed,
                    config=SimConfig(stack=stack) if stack else None)
    sim.reset()
    sim.run()
    return sim


WORKLOADS = {
    "bulk": {"type": "bulk", "duration_s": 1.0},
    "messages": {"type": "bulk", "messages": 4, "message_mb": 0.25, "duration_s": 20.0},
    "file": {"type": "file", "file_mb": 0.5},
    "dash": {"type": "dash", "chunks": 5},
    "web": {"type": "web", "objects": 30, "object_kb": 10, "parallel": 4},
}


@pytest.mark.parametrize("name", WORKLOADS)
def test_each_workload_runs_batched_and_ends(name: str) -> None:
    work = WORKLOADS[name]
    sim = run(work)
    assert sim.done.all()
    m = sim.results()
    items = scenario(work).workload.items()
    if name == "bulk":  # ends on its duration, never "completes"
        assert np.isnan(m["completion_s"]).all()
        assert np.allclose(sim.cn[:, 0] * sim.dt, 1.0)
    else:
        assert np.isfinite(m["completion_s"]).all() and (m["completion_s"] < 20.0).all()
        assert (m["items_done"] == items).all()
        assert (sim.item[:, :items, ITEM_DONE] >= 0).all()
    assert (m["goodput_mbps"] > 0).all() and (m["goodput_mbps"] < 30.0).all()


def test_file_delivers_exactly_s_bytes() -> None:
    sim = run({"type": "file", "file_mb": 0.123457})
    assert (sim.cn[:, CN_RCV_NXT] == 123457).all() and (sim.cn[:, CN_SND_NXT] == 123457).all()
    m = sim.results()
    assert np.allclose(m["goodput_mbps"], 123457 * 8 / m["completion_s"] / 1e6)


def test_messages_are_delivered_one_after_another() -> None:
    sim = run(WORKLOADS["messages"], batch=1)
    done = sim.item[0, :4, ITEM_DONE]
    assert (np.diff(done) > 0).all()
    assert sim.cn[0, CN_RCV_NXT] == 4 * 250_000
    m = sim.results()  # back to back: each message's time runs from the previous one's delivery
    assert m["download_time_s"][0] == pytest.approx(done[-1] * sim.dt / 4)


def dash(chunks: int, mbps: float, **extra) -> Simulator:
    """DASH over TCP (Linux's profile): XQUIC's 32-packet initial window overflows this one-path,
    1-BDP buffer at the start and slows the first chunks below the rule's premises."""
    return run({"type": "dash", "chunks": chunks, **extra}, paths=[(mbps, 10.0, 0.0)], batch=2, stack="linux")


def test_dash_picks_the_top_bitrate_when_capacity_is_ample() -> None:
    sim = dash(8, 50.0)
    rates = sim.item[0, :8, ITEM_RATE] * 8 / sim.dt / 1e6
    assert rates[0] == pytest.approx(1.0)  # no estimate yet: the lowest rung
    assert np.allclose(rates[1:], 10.0)
    m = sim.results()
    assert m["rebuffer_s"][0] == 0.0 and m["items_done"][0] == 8
    assert m["avg_bitrate_mbps"][0] == pytest.approx((1 + 7 * 10) / 8)
    # each chunk is a request/response: the request takes the path's reverse delay to the server
    assert np.allclose(sim.item[0, :8, ITEM_ARRIVE] - sim.item[0, :8, ITEM_REQ], round(10.0 / (sim.dt * 1e3)))
    assert m["download_time_s"][0] == pytest.approx(
        ((sim.item[0, :8, ITEM_DONE] - sim.item[0, :8, ITEM_REQ]) * sim.dt).mean())


def test_dash_between_rungs_follows_the_throughput_rule() -> None:
    """Each choice is the highest rung <= 0.9 x the harmonic mean of the last 5 chunks'
    throughputs (bytes over request-to-delivery time); at 7 Mbit/s that settles on 5 Mbit/s."""
    sim = dash(8, 7.0)
    it = sim.item[0, :8]
    rates = it[:, ITEM_RATE] * 8 / sim.dt / 1e6
    sizes = np.diff(it[:, ITEM_END], prepend=0.0)
    thr = sizes * 8 / ((it[:, ITEM_DONE] - it[:, ITEM_REQ]) * sim.dt) / 1e6
    for k in range(1, 8):
        last = thr[max(k - 5, 0):k]
        estimate = 0.9 * len(last) / np.sum(1 / last)
        assert rates[k] == max([r for r in (1, 5, 10) if r <= estimate] or [1])
    assert np.allclose(rates[2:], 5.0) and thr.max() < 7.0
    assert sim.wl[0, WL_REBUF] == 0.0


def test_dash_below_the_lowest_rung_rebuffers() -> None:
    sim = dash(4, 0.8)
    rates = sim.item[0, :4, ITEM_RATE] * 8 / sim.dt / 1e6
    assert np.allclose(rates, 1.0)
    m = sim.results()
    # each 1 s chunk takes over 1.25 s to arrive: at least 3 x 0.25 s of stalls after the first
    assert m["rebuffer_s"][0] > 0.75
    assert m["items_done"][0] == 4


def test_dash_buffer_limits_requests_and_duration_caps_the_episode() -> None:
    sim = run({"type": "dash", "chunks": 100, "buffer_s": 3.0, "duration_s": 8.0}, paths=[(50.0, 10.0, 0.0)],
              batch=1)
    m = sim.results()
    assert np.isnan(m["completion_s"][0])  # capped before the 100 chunks
    # a full 3 s buffer lets only about one chunk per second through after the start
    assert 8 <= m["items_done"][0] <= 12
    req = sim.item[0, :int(m["items_done"][0]), ITEM_REQ]
    assert (np.diff(req[4:]) >= 0.9 / sim.dt).all()


def test_web_delivers_every_object_with_bounded_parallelism() -> None:
    sim = run({"type": "web", "objects": 40, "object_kb": 15, "parallel": 4})
    assert (sim.cn[:, CN_RCV_NXT] == 40 * 15_000).all()
    it = sim.item[0, :40]
    assert (it[4:, ITEM_REQ] >= it[:-4, ITEM_DONE]).all()  # never more than 4 outstanding
    assert (np.diff(it[:, ITEM_DONE]) >= 0).all()


def test_aggregation_benefit_on_hand_made_numbers() -> None:
    caps = np.array([[10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [30.0, 10.0], [10.0, np.nan]])
    ben = aggregation_benefit(np.array([15.0, 5.0, 20.0, 35.0, 10.0]), caps)
    assert ben[:4] == pytest.approx([0.5, -0.5, 1.0, 0.5])
    assert math.isnan(ben[4])  # one path: nothing to aggregate


def test_window_throughput_mean_and_variance() -> None:
    cum = np.array([0, 25_000, 50_000, 50_000, 50_000, 100_000, 100_000])  # bytes, 0.1 s bins
    w = window_throughput(cum, 0.1, 0.2)  # the trailing half window is left out
    assert w == pytest.approx([1.0, 1.0, 2.0])
    assert w.mean() == pytest.approx(4 / 3) and w.var() == pytest.approx(2 / 9)
    with pytest.raises(ConfigError, match="window_s"):
        window_throughput(cum, 0.1, 0.25)


def test_core_records_match_the_connection_state() -> None:
    sim = run({"type": "bulk", "duration_s": 2.0}, batch=2)
    m = sim.results(window_s=0.5)
    # the episode's last step (t = 2000, the receive at 2.0 s) opens a partial bin of its own
    last = int(sim.cn[0, CN_T]) // sim.bin_steps
    assert last == 2.0 / sim.dt // sim.bin_steps
    assert sim.rec[0, last, REC_DELIVERED] == sim.cn[0, CN_RCV_NXT]
    # the 0.5 s windows cover the whole bins before it: 2 s of delivery
    assert m["throughput_mean_mbps"][0] == pytest.approx(sim.rec[0, last - 1, REC_DELIVERED] * 8 / 2.0 / 1e6)
    assert m["reorder_p50_bytes"][0] <= m["reorder_p99_bytes"][0] <= m["reorder_max_bytes"][0]
    hist = reorder_histogram(sim, np.array([0.0, 1e4, 1e5, 1e9]))
    assert hist.sum(axis=1) == pytest.approx([1.0, 1.0])


def test_workloads_are_deterministic_with_a_seed() -> None:
    work, paths = {"type": "dash", "chunks": 6}, [(12.0, 5.0, 2.0), (8.0, 40.0, 1.0)]
    a, b = run(work, paths, seed=7), run(work, paths, seed=7)
    assert np.array_equal(a.item, b.item) and np.array_equal(a.rec, b.rec)
    c = run(work, paths, seed=8)
    assert not np.array_equal(a.rec, c.rec)
    single = run(work, paths, seed=7, batch=1)  # a connection's run does not depend on the batch
    assert np.array_equal(single.item[0], a.item[0])


@pytest.mark.parametrize("work, expected", [
    ({"type": "video"}, "unknown workload 'video'; valid: bulk, file, dash, web"),
    ({"type": "file", "file_mb": -1}, "workload.file_mb: must be > 0, got -1"),
    ({"type": "web", "objects": 10, "object_kb": -5}, "workload.object_kb: must be > 0"),
    ({"type": "bulk", "messages": 5, "message_mb": -3}, "workload.message_mb: must be > 0"),
    ({"type": "bulk", "messages": 5}, "needs messages and message_mb together"),
    ({"type": "dash", "chunks": 0}, "workload.chunks: must be >= 1"),
    ({"type": "dash", "bitrates_mbps": [5, 1]}, "workload.bitrates_mbps: must increase"),
    ({"type": "dash", "buffer_s": 0.5}, "buffer_s must be >= chunk_s"),
    ({"type": "file", "file_mb": 1, "chunks": 3}, "type 'file' does not use chunks"),
])
def test_bad_workloads_are_refused_by_name(work: dict, expected: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario(work)
    assert expected in str(err.value)


def composed(*overrides: str):
    return compose_config("evaluate", *overrides)


def test_workload_group_and_shortcuts_from_the_command_line() -> None:
    (scen,) = config.scenarios(composed("scenario=leeyoo_static", "workload=dash", "workload.chunks=3"))
    assert scen.workload.type == "dash" and scen.workload.chunks == 3 and scen.workload.bitrates_mbps == [1, 5, 10]
    (scen,) = config.scenarios(composed("workload=web", "duration_s=5"))
    assert scen.workload.type == "web" and scen.workload.duration_s == 5
    (scen,) = config.scenarios(composed("file_mb=2"))  # the old shortcuts still work
    assert scen.workload.type == "file" and scen.workload.file_mb == 2
    (scen,) = config.scenarios(composed("duration_s=3"))
    assert scen.workload.type == "bulk" and scen.workload.duration_s == 3
    (scen,) = config.scenarios(composed("scenario=mptcp_tut_e2"))
    assert scen.workload.messages == 500 and scen.workload.message_mb == 3
    with pytest.raises(ConfigError, match="workload.chunks"):
        config.scenarios(composed("workload=dash", "workload.chunks=-1"))


def test_metric_request_checks_names() -> None:
    scen = load_scenario("leeyoo_abr")
    assert config.metric_request(composed("metrics=[goodput_mbps,rebuffer_s]"), scen) == ("goodput_mbps",
                                                                                       "rebuffer_s")
    assert "rebuffer_s" in config.metric_request(composed(), scen)
    assert "rebuffer_s" not in metric_names(load_scenario("ispras_s1").workload)
    with pytest.raises(ConfigError, match="unknown metric 'speed'; valid: aggregation_benefit"):
        config.metric_request(composed("metrics=[speed]"), scen)
    with pytest.raises(ConfigError, match="window_s must be > 0"):
        config.metric_request(composed("window_s=0"), scen)


def test_leeyoo_scenarios_stream_dash() -> None:
    for name in ("leeyoo_abr", "leeyoo_static_dash", "leeyoo_loss_dash"):
        work = load_scenario(name).workload
        assert (work.type, work.chunks, work.chunk_s, work.bitrates_mbps) == ("dash", 300, 1.0, [1, 5, 10])
    assert load_scenario("leeyoo_static_dash").paths == load_scenario("leeyoo_static").paths
