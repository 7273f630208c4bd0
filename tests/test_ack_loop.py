"""The whole loop of spurious declarations, packet by packet (envs/sim/ack_loop.py): the
integral it reduces to, the reordering tables the core reads (its own), and the live record it
is measured with."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from envs.sim.ack_loop import (RECEIVERS, RULES, SendPattern, acknowledged_indirectly, bursts, declaration_leads,
                               declarations,
                               detection_row, first_acks, hidden_row, indirect_row, largest_acked_samples,
                               RATE_WARMUP, one_block_seen, rate_sample_row, rate_samples, rtt_sample_row, stream)
from envs.sim.reordering import (COMP_GRID, GRID, RTT_GRID, TRAIN_GRID, W_GRID, hidden_table, indirect_table,
                                 lead_table, lead_train_table, rack_row, rate_sample_table, rfc9002_row, rtt_sample_table,
                                 spurious_table, train_table)


@pytest.mark.parametrize("r", [0.05, 0.2, 0.6])
def test_the_loop_is_the_integral_when_the_sender_sees_each_arrival(r: float) -> None:
    """With an ACK per packet and no jitter on the way back, the sender sees the arrivals as they
    happen, which is what ``reordering.rfc9002_row`` and ``rack_row`` integrate (their jitter
    standing for the round trip's): the loop under the integral's reading of the packet threshold,
    and under RACK, gives their probabilities and mean leads."""
    g = int(np.searchsorted(GRID, r))
    for rule, integral, receiver in (("three_later", rfc9002_row, "xquic"), ("rack", rack_row, "linux")):
        loop = declarations(rule, stream(float(GRID[g])), receiver, ack_every=1, reverse_jitter=False)
        prob, lead = integral(float(GRID[g]))
        assert np.abs(loop[0] - prob).max() < 0.015
        some = prob > 0.01
        assert np.abs(loop[1] - lead)[some].max() < 0.04


def test_the_shipped_tables_are_the_loops() -> None:
    """envs/sim/{spurious,lead,train,lead_train}_<rule>.npy and indirect_rfc9002.npy are the
    loop's (``python -m envs.sim.ack_loop``) at the stacks' own receivers: sampled rows of the
    evenly spaced stream and of a train, for both rules."""
    for rule in ("rfc9002", "rack"):
        for g in (40, 90, 120, 150):
            r = float(GRID[g])
            prob, lead = detection_row(rule, r)
            assert np.allclose(spurious_table(rule)[:, g], prob) and np.allclose(lead_table(rule)[:, g], lead)
            prob, lead = detection_row(rule, r, float(TRAIN_GRID[6]))
            assert np.allclose(train_table(rule)[6, :, g], prob, atol=1e-6)
            assert np.allclose(lead_train_table(rule)[6, :, g], lead, atol=1e-5)
            if rule == "rfc9002":
                assert indirect_table(rule)[0, g] == pytest.approx(indirect_row(r), abs=1e-6)
                assert indirect_table(rule)[7, g] == pytest.approx(indirect_row(r, float(TRAIN_GRID[6])), abs=1e-6)


def test_the_loop_declares_fewer_than_the_integral_at_xquics_receiver() -> None:
    """At BBRv1's spacing on the grid's path (about 0.16 round-trip jitters at 2 ms), the shipped
    table, XQUIC's receiver and rule with each ACK's jitter back, declares 0.44 of an evenly
    spaced stream's packets where the integral (each arrival seen as it happens, 3 later packets
    arrived first) gives 0.54, and at BBRv2's (about 1.4) 0.02 against 0.16: the way back hides
    reordering (docs/transport.md, "Reordering")."""
    for r, table, integral in ((0.16, 0.44, 0.54), (1.4, 0.02, 0.16)):
        g = int(np.argmin(np.abs(GRID - r)))
        assert spurious_table("rfc9002")[0, g] == pytest.approx(table, abs=0.01)
        assert rfc9002_row(float(GRID[g]))[0, 0] == pytest.approx(integral, abs=0.01)


def test_xquic_acknowledges_a_copy_indirectly_once_it_reaches_it() -> None:
    """XQUIC's loss detection reaches a copy once the packet sent just before it, or one sent
    after it, is acknowledged (first ACKs covering each packet, in sending order): a copy whose
    own ACK comes first counts, one that shares the ACK of its predecessor counts, one whose
    predecessor's ACK came before, or a later packet's, does not; the first packet has no
    predecessor."""
    seen = np.array([1.0, 2.0, 2.0, 4.0, 3.0, 6.0])
    assert list(acknowledged_indirectly(seen)) == [False, True, False, True, False, True]


def test_the_way_back_never_shows_an_order_the_receiver_did_not_see() -> None:
    """An ACK covers every packet received before it was sent, so the first ACK covering a packet
    comes no earlier than the first covering one that arrived before it: the sender learns of the
    arrivals in the receiver's order (ties where one ACK covers several)."""
    rng = np.random.default_rng(1)
    send = 0.2 * np.arange(5000)
    forward = rng.standard_normal(send.size)
    for receiver in RECEIVERS.values():
        for ack_every in (1, 2):
            seen = first_acks(send, forward, rng.standard_normal(send.size), receiver, ack_every)
            by_arrival = seen[np.argsort(send + forward)]
            finite = np.isfinite(by_arrival)
            assert finite[:-1].all()
            assert np.all(np.diff(by_arrival[finite]) >= 0.0)


def test_the_way_back_hides_reordering_from_the_packet_threshold() -> None:
    """A later ACK covering a late packet too hides it: with XQUIC's receiver and the ACKs' own
    jitter, fewer packets are declared by the packet threshold (either reading) than when each
    arrival is seen as it happens; RACK without a window alike, while its window, a time, can
    fire more often (ACKs that come back late stretch the gaps it measures)."""
    for rule, receiver in (("xquic", "xquic"), ("three_later", "xquic"), ("rack", "linux")):
        loop = declarations(rule, stream(0.17), receiver)[0]
        at_arrival = declarations(rule, stream(0.17), receiver, ack_every=1, reverse_jitter=False)[0]
        if rule == "rack":
            assert loop[0] < 0.9 * at_arrival[0]
        else:
            assert np.all(loop < 0.9 * at_arrival)


def test_xquics_packet_threshold_declares_at_least_what_three_later_arrivals_do() -> None:
    """XQUIC declares once any packet 3 or more later is acknowledged
    (xqc_send_ctl_get_lost_sent_pn); three acknowledged later packets include one such, so on
    the same draws its declarations are a superset of the tables' reading."""
    for pattern in (stream(0.1), stream(1.0), bursts(4, 0.1, 1.0)):
        xquic = declarations("xquic", pattern)[0]
        three = declarations("three_later", pattern)[0]
        assert np.all(xquic >= three)
        assert xquic[0] > three[0]


def test_bursts_and_rules_refuse_what_they_cannot_model() -> None:
    with pytest.raises(ValueError, match="r_burst <= r_mean"):
        bursts(4, 1.0, 0.5)
    with pytest.raises(ValueError, match="rules: " + ", ".join(RULES)):
        declarations("cubic", stream(0.1))


def _record_rows() -> dict[tuple[float, str], dict[str, float]]:
    from benchmarks.reordering_declarations import RECORD, cells, row
    return {key: row(*key, runs) for key, runs in cells(json.loads(RECORD.read_text())).items()}


def test_the_live_declarations_record_keeps_every_run_and_its_provenance() -> None:
    """tests/data/declarations_xquic_live.json (benchmarks/xquic_cubic_live.py --record): every
    cell of jitter x CC with at least 3 runs, 2 of them with their departures captured
    (``--pattern``), each recording with its provenance; at BBRv1's spacing the table is the whole
    loop's under XQUIC's rule, which declares more than the integral's reading of the packet
    threshold, and more than live XQUIC, whose copies are never declared."""
    from benchmarks.reordering_declarations import PATTERNS, RECORD, cells
    record = json.loads(RECORD.read_text())
    for rec in record["recordings"]:
        assert {"xquic_commit", "kernel", "date", "command", "load_avg", "mpsched_commit"} <= set(rec["provenance"])
    by_cell = cells(record)
    assert {cc for _, cc in by_cell} == {"bbr", "bbr2", "cubic", "reno"} and {j for j, _ in by_cell} == {2.0, 5.0}
    for runs in by_cell.values():
        assert len(runs) >= 3
        captured = [r["pattern"] for r in runs if r.get("pattern")]
        assert len(captured) >= 2 and all((PATTERNS / name).is_file() for name in captured)
        assert all(0 < r["declared_lost"] <= r["sent_pkts"] and r["span_s"] > 0 for r in runs)
    rows = _record_rows()
    for jitter in (2.0, 5.0):
        v = rows[(jitter, "bbr")]
        assert v["live"] < v["table"] and abs(v["table"] - v["loop xquic"]) < 0.02
        assert v["loop three_later"] < v["loop xquic"]


@pytest.mark.xfail(strict=True, reason=(
    "the reordering tables, an evenly spaced stream, miss live XQUIC's declarations (docs/transport.md, "
    "'Reordering'): at BBRv1's evenly paced spacing they give 0.52 and 0.57 where live declares 0.34 and 0.39 of "
    "what it sends (XQUIC never declares its copies, 28-35% of what it sent: the loop on its own departures with "
    "the copies exempt gives 0.36 and 0.38); for BBRv2, CUBIC and Reno, whose packets leave in bursts, 0.013, "
    "0.001 and 0.000 at 2 ms of jitter where live declares 0.091, 0.054 and 0.056 (0.046, 0.033, 0.008 against "
    "0.153, 0.130, 0.099 at 5 ms). Before 2026-11-30 the tables integrated each arrival as seen at once (0.57-0.62 "
    "for BBRv1, 0.009-0.042 for the bursty CCs at 2 ms)"))
def test_the_tables_declare_what_live_xquic_declares() -> None:
    for (jitter, cc), v in _record_rows().items():
        assert v["live_min"] <= v["table"] <= v["live_max"] or abs(v["table"] / v["live"] - 1) <= 0.25, (jitter, cc, v)


LOOP_GAPS = {
    "reno": "the loop on Reno's own departures, copies exempt, declares 0.039 and 0.084 where those transfers "
            "declared 0.057 and 0.095 (x0.68, x0.88; 0.066, x0.69, at 5 ms with the srtt / 8 window before "
            "2026-11-30); CUBIC's x0.83 and x1.03 are within the mark; not identified",
}


@pytest.mark.parametrize("cc", [pytest.param(cc, marks=pytest.mark.xfail(strict=True, reason=LOOP_GAPS[cc]))
                                if cc in LOOP_GAPS else cc for cc in ("bbr", "bbr2", "cubic", "reno")])
def test_the_loop_on_a_transfers_own_departures_declares_what_it_declared(cc: str) -> None:
    """The whole loop (XQUIC's receiver and rule, each ACK's jitter back) on the departures of the
    very transfers recorded with their captures (tests/data/declarations_patterns), with the
    copies XQUIC sent of its declared packets never declared (a copy whose original was
    acknowledged leaves XQUIC's loss detection, xqc_send_ctl_indirectly_ack_or_drop_po): within
    25% of the share those transfers declared, at 2 and 5 ms of jitter, under XQUIC's time window
    (9/8 of the srtt each cell's transfers reported, less the round trip: none for BBRv1, whose
    early RTT samples put srtt 5 and 14 ms below it). BBRv1 there: 0.361 and 0.377 against 0.332
    and 0.387 live; counting the copies as packets the rule can declare, 0.503 and 0.577 (x1.52,
    x1.49). BBRv2: 0.095 and 0.156 against 0.098 and 0.165 (an even stream 0.016 and 0.045: the
    send pattern is what the tables' evenly spaced stream misses). With srtt / 8 as the window
    (before 2026-11-30) BBRv1 0.320 and 0.360, BBRv2 0.084 and 0.142, Reno at 5 ms x0.69."""
    rows = _record_rows()
    for jitter in (2.0, 5.0):
        v = rows[(jitter, cc)]
        assert abs(v["own departures xquic, copies exempt"] / v["live, captured runs"] - 1) <= 0.25, (jitter, cc, v)


def test_dispersion_tells_paced_departures_from_bursts() -> None:
    """``dispersion`` is 0 for evenly spaced departures and about 1 for random ones; live, BBRv1
    at 2 ms leaves paced (below 1) and BBRv2, CUBIC and Reno in bursts (above 1) at both jitters."""
    from benchmarks.reordering_declarations import dispersion

    even = np.arange(0.125, 2000.0, 0.25)
    assert dispersion(SendPattern(even, np.ones_like(even, dtype=bool))) == pytest.approx(0.0, abs=1e-9)
    random = np.sort(np.random.default_rng(0).uniform(0.0, 2000.0, 8000))
    assert dispersion(SendPattern(random, np.ones_like(random, dtype=bool))) == pytest.approx(1.0, abs=0.1)
    rows = _record_rows()
    assert rows[(2.0, "bbr")]["dispersion"] < 1.0
    for jitter in (2.0, 5.0):
        for cc in ("bbr2", "cubic", "reno"):
            assert rows[(jitter, cc)]["dispersion"] > 1.5, (jitter, cc)


def test_the_delay_line_probe_counts_overtaken_packets_as_defined() -> None:
    """benchmarks/delayline_reordering.py's shares against a direct count on a random arrival order
    (independent normal delays at a spacing of 0.25): packets at least 3 later-sent ones arrive
    before, and packets some packet sent 3 or more later arrives before; none in sending order."""
    from benchmarks.delayline_reordering import EDGE, overtaken
    n = 2 * EDGE + 500
    assert overtaken(np.arange(n)) == (0.0, 0.0)
    order = np.argsort(0.25 * np.arange(n) + np.random.default_rng(3).standard_normal(n), kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    idx = range(EDGE, n - EDGE)
    three = np.mean([np.sum(rank[i + 1:] < rank[i]) >= 3 for i in idx])
    any3 = np.mean([np.any(rank[i + 3:] < rank[i]) for i in idx])
    assert overtaken(order) == pytest.approx((three, any3))


def test_xquic_times_only_a_newly_acknowledged_largest_packet() -> None:
    """RFC 9002 sec. 5.1 (xqc_send_ctl_on_ack_received): packet 1 overtaken by 2 and 3 is
    acknowledged below the largest already acknowledged, so its ACK gives no sample; the others'
    samples are their own round trips (no jitter on the way back); and an ACK that a later one
    overtakes on the way back gives none either."""
    send = np.arange(4.0)
    forward = np.array([0.0, 2.5, 0.0, 0.0])
    samples, timed = largest_acked_samples(send, forward, np.zeros(4), 1)
    assert list(timed) == [0, 2, 3] and np.allclose(samples, 0.0)
    # packet 2's ACK comes back 1.5 late, after packet 3's: only 0 and 3 are timed
    samples, timed = largest_acked_samples(send, np.zeros(4), np.array([0.0, 0.0, 1.5, 0.0]), 1)
    assert list(timed) == [0, 1, 3] and np.allclose(samples, 0.0)


def test_the_shipped_rtt_sample_table_is_the_loops() -> None:
    """envs/sim/rtt_sample_rfc9002.npy is ``ack_loop.build_rtt_sample_table`` (single precision),
    and reads as the rule says: without reordering (wide spacing, a lone packet per train) the
    samples are the round trip's own (mean 0, spread 1), and the closer the packets the earlier
    the packets that give them."""
    table = rtt_sample_table("rfc9002")
    for g in (0, 80, 120, 160):
        for i, train in ((0, -1.0), (9, float(TRAIN_GRID[8]))):
            assert np.allclose(table[:, i, g], rtt_sample_row(float(GRID[g]), train).astype(np.float32))
    even = table[:, 0]
    assert abs(even[0, -1]) < 0.02 and abs(even[1, -1] - 1.0) < 0.02 and np.allclose(table[0, 1], even[0, -1], atol=0.02)
    coarse = even[0, [int(np.searchsorted(GRID, r)) for r in (0.001, 0.01, 0.1, 0.3, 1.0, 3.0)]]
    assert np.all(np.diff(coarse) > 0.0) and coarse[2] < -1.5


def test_one_sack_block_leaves_a_late_packet_below_a_hole_unnamed() -> None:
    """Kernel MPTCP's receiver behind a hole (packets 0 and 5 lost): 1, 2, 3 are ACKed at once;
    6 opens a block and a compressed ACK is held; 4 joins the block of 1-3, which becomes first
    (it was second: no flush), then 7 makes 6's first again; the held ACK names 6-7. No ACK named
    the block holding 4 while it was first, and 5's hole keeps it from joining 6-7: 4 is never
    named. With ACKs at once (a compression far below the arrivals' spacing) every block is
    named in turn."""
    send = np.arange(8.0)
    arrive = np.array([np.inf, 0.0, 1.0, 2.0, 4.0, np.inf, 3.0, 5.0])  # arrival order 1, 2, 3, 6, 4, 7
    held = one_block_seen(send, arrive - send, np.zeros(8), 100.0)
    assert np.isinf(held[[0, 4, 5]]).all() and np.isfinite(held[[1, 2, 3, 6, 7]]).all()
    assert held[6] == held[7] == 103.0  # the held ACK, sent by its timer 100 after 6 arrived
    at_once = one_block_seen(send, arrive - send, np.zeros(8), 0.01)
    assert np.isinf(at_once[[0, 5]]).all() and at_once[4] == pytest.approx(4.01)


def test_the_shipped_hidden_table_is_the_loops() -> None:
    """envs/sim/hidden_rack.npy is ``ack_loop.build_hidden_table`` (single precision): sampled rows;
    and it reads as the mechanism says: packets close enough to overtake each other are hidden
    more the longer the receiver holds its ACKs, and hardly at all once it ACKs each arrival, or
    when they are too far apart to overtake."""
    table = hidden_table()
    for i, g in ((2, 60), (4, 110), (6, 130)):
        assert np.allclose(table[i, :, g], hidden_row(float(GRID[g]), float(COMP_GRID[i])).astype(np.float32))
    g, w = int(np.searchsorted(GRID, 0.1)), int(np.searchsorted(W_GRID, 3.5))  # the grid's 2 ms path under BBR
    by_comp = table[:, w, g]
    assert by_comp[0] < by_comp[4] / 10 and by_comp[4] > 0.05  # 0.01 jitters against 1
    assert table[:, :, int(np.searchsorted(GRID, 3.0))].max() < 1e-3


def _paced_record() -> list[dict]:
    """The recorded transfers of the CCs XQUIC paces."""
    from benchmarks.reordering_declarations import PACED, RECORD, cells
    return [r for (_, cc), runs in cells(json.loads(RECORD.read_text())).items() if cc in PACED for r in runs]


def test_xquics_rtt_samples_give_live_xquics_srtt() -> None:
    """Every paced transfer of tests/data/declarations_xquic_live.json (BBRv1, BBRv2 on the grid's
    40 ms path at 2 and 5 ms of jitter): the loop's samples at the transfer's mean spacing (its
    packets over its span) put srtt within 0.3 of the round trip's jitter (sqrt(2) x 2 or 5 ms)
    of the srtt XQUIC reported, where the path's mean round trip misses BBRv1's by more than 1.5
    (live 34.8-35.1 ms at 2 ms, 26.1-26.8 at 5 ms)."""
    table = rtt_sample_table("rfc9002")[0, 0]
    runs = _paced_record()
    assert len(runs) >= 16
    for r in runs:
        jitter = r["jitter_ms"] * np.sqrt(2.0)
        spacing = r["span_s"] * 1e3 / r["sent_pkts"] / jitter
        predicted = 40.0 + jitter * np.interp(np.log(spacing), np.log(GRID), table)
        assert abs(predicted - r["srtt_ms"]) < 0.3 * jitter, (r["cell"], r["cc"], r["run"], predicted, r["srtt_ms"])
        if r["cc"] == "bbr":
            assert 40.0 - r["srtt_ms"] > 1.5 * jitter


@pytest.mark.parametrize("jitter", [2.0, 5.0])
def test_the_models_xquic_srtt_is_live_xquics(jitter: float) -> None:
    """The simulator under stack=xquic on the grid's path without loss (3 connections, 10 s, srtt
    every 100 ms after the first second, as benchmarks/xquic_cubic_live.py samples both sides):
    its median srtt within half the round trip's jitter of the recorded live transfers' mean,
    for BBRv1 and BBRv2. Median over the 3 connections 34.8 and 38.3 ms at 2 ms against live
    34.8-35.1 and 38.6-39.2; at 5 ms 27.6 and 37.0 against 26.1-26.8 and 36.2-38.3 (35.5, 38.8, 29.6
    and 37.9 with the reordering tables before 2026-11-30, under which the model's BBRv1 sent at
    about two thirds of live's rate); the segments' own samples gave 40.2, 39.8-39.9, 41.8-42.1 and
    39.7-40.0."""
    from envs.fidelity import grid_scenario
    from envs.sim.layout import OBS_SRTT
    from envs.sim.simulator import SimConfig, Simulator
    live = _paced_record()
    for cc in ("bbr", "bbr2"):
        sim = Simulator(grid_scenario(0.0, jitter, 10.0), cc, "minrtt", batch=3, seed=0, config=SimConfig(stack="xquic"))
        sim.reset()
        step = round(100 / sim.cfg.dt_ms)
        srtt = []
        for i in range(100):
            sim.advance(step)
            if i >= 10:
                srtt.append(sim.obs[:, 0, OBS_SRTT] * 1e3)
        model = float(np.median(srtt))
        recorded = np.mean([r["srtt_ms"] for r in live if r["cc"] == cc and r["jitter_ms"] == jitter])
        print(f"{cc} at {jitter} ms: model srtt {model:.1f} ms, live {recorded:.1f}")
        assert abs(model - recorded) < 0.5 * jitter * np.sqrt(2.0)


def test_without_jitter_every_delivery_rate_sample_is_the_streams_rate() -> None:
    """``rate_samples`` on a stream 0.5 apart over a round trip of 10, no jitter either way, ACKs
    every second packet: each sample divides the packets delivered between two ACKs a round trip
    apart by the time between them, the stream's rate exactly, once the packets that left before
    the first sample (their send interval reaching back to the stream's start) are acknowledged:
    ``rate_sample_row`` leaves out the first ``RATE_WARMUP`` round trips."""
    send = np.arange(400) * 0.5
    for receiver in RECEIVERS.values():
        rates, when = rate_samples(send, np.zeros(400), np.zeros(400), receiver, 2, 10.0, receiver == RECEIVERS["xquic"])
        steady = when > RATE_WARMUP * 10.0
        assert steady.sum() > 150 and np.allclose(rates[steady], 2.0)
        assert rates[~steady].min() < 1.5  # the first sample's send interval spans the stream from its start


def test_under_jitter_the_samples_scatter_about_as_one_over_the_round_trip() -> None:
    """Under reordering jitter a sample's two ends fall on single packets and ACKs: the samples of a
    steady stream fall short of its rate on average and scatter about it, both about as 1 / the
    round trip (over the round trip's jitter): the shortfall and spread times the round trip stay
    within a factor 1.5 from 8 to 64 round-trip jitters, at spacings from 0.03 to 1 jitter."""
    for r in (0.03, 0.1, 0.3, 1.0):
        scaled = np.array([rate_sample_row("rfc9002", r, w) for w in (8.0, 16.0, 32.0, 64.0)])
        assert (scaled > 0.2).all() and (scaled.max(axis=0) / scaled.min(axis=0) < 1.5).all(), (r, scaled)


def test_the_shipped_rate_sample_tables_are_the_loops() -> None:
    """envs/sim/rate_sample_<rule>.npy is ``ack_loop.build_rate_sample_table`` (single precision):
    sampled cells of both stacks' tables, every cell finite."""
    for rule in ("rfc9002", "rack"):
        table = rate_sample_table(rule)
        assert table.shape == (2, RTT_GRID.size, GRID.size) and np.isfinite(table).all()
        for t, g in ((0, 40), (4, 100), (10, 150)):
            assert np.allclose(table[:, t, g], rate_sample_row(rule, float(GRID[g]), float(RTT_GRID[t])).astype(np.float32))


LATE_PHASE_RECORDS = sorted(Path(__file__).with_name("data").glob("bbr_late_phase_*.json"))


def _late_phase(path: Path) -> tuple[dict, list[dict]]:
    """A live record of BBRv1's late phase (benchmarks/bbr_estimate_live.py --record) and the model's
    late phases of the same path, 6 transfers."""
    from benchmarks.bbr_estimate_live import late_phase, path_scenario, sim_series
    rec = json.loads(path.read_text())
    p = rec["path"]
    scenario = path_scenario(p["mbps"], p["delay_ms"], p["loss_pct"], p["jitter_ms"], p["file_mb"])
    return rec, [late_phase(x, tuple(rec["late_s"])) for x in sim_series(scenario, 6)]


def test_the_late_phase_records_keep_every_run_and_their_provenance() -> None:
    """tests/data/bbr_late_phase_*.json: the grid's 50 Mbit/s, 40 ms path at 2 and 5 ms of jitter, at
    least 3 live XQUIC BBRv1 transfers each, with the provenance of the recording."""
    assert {json.loads(p.read_text())["path"]["jitter_ms"] for p in LATE_PHASE_RECORDS} == {2.0, 5.0}
    for path in LATE_PHASE_RECORDS:
        rec = json.loads(path.read_text())
        assert {"xquic_commit", "kernel", "date", "command", "load_avg", "mpsched_commit"} <= set(rec["provenance"])
        assert len(rec["runs"]) >= 3 and rec["cc"] == "bbr"
        for run in rec["runs"]:
            assert 0 < run["acked_mbps"] < run["estimate_mbps"] and len(run["sample_over_estimate"]) == 4


SCATTER_GAPS = {
    "bbr_late_phase_j5_20261201": (
        "at 5 ms of jitter the model's 10th percentile is 0.571 of its estimate against live's 0.512, 0.058 apart "
        "(the 50th and 90th 0.716 and 0.866 against 0.684 and 0.851; 0.565, 0.053 apart, 0.709 and 0.857 before a "
        "declaration fell its detection delay after a point within its packet's step, 2026-12-02): 0.04-0.05 apart "
        "until a copy of a spurious declaration was queued whole or cancelled (2026-12-02), which raised the model's "
        "late estimate from 8.5-9.9 to 9.7-10.8 Mbit/s (8.7-11.9 since the declaration step; live 10.9-11.2) and its "
        "lowest samples with it; what keeps them above live's is not established"),
}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=SCATTER_GAPS[p.stem]))
                                  if p.stem in SCATTER_GAPS else p for p in LATE_PHASE_RECORDS],
                         ids=lambda p: p.stem)
def test_the_models_delivery_rate_samples_scatter_as_live_xquics(path: Path) -> None:
    """From 4 to 15 s into a 40 MB BBRv1 transfer, the model's delivery-rate samples over its
    estimate (10th, 50th and 90th percentiles of the 10 ms records, mean over 6 transfers) within
    0.05 of live XQUIC's (mean over the record's). Live at 5 ms 0.51/0.68/0.85, at 2 ms
    0.62/0.77/0.88; the model with every step's sample the fluid's own (before 2026-12-01, evening)
    0.71/0.84/0.94 and 0.67/0.82/0.92: its max filter kept samples hardly above their median."""
    rec, sim = _late_phase(path)
    live = np.mean([r["sample_over_estimate"][:3] for r in rec["runs"]], axis=0)
    model = np.mean([r["sample_over_estimate"][:3] for r in sim], axis=0)
    assert np.abs(model - live).max() <= 0.05, (live, model)


@pytest.mark.parametrize("path", LATE_PHASE_RECORDS, ids=lambda p: p.stem)
def test_the_models_late_phase_estimate_holds_near_live_xquics(path: Path) -> None:
    """BBRv1's estimate from 4 to 15 s into the transfer (mean of the medians) within 15% of live
    XQUIC's, half the grid table's goodput mark: at 5 ms live 10.9-11.2 Mbit/s, the model 8.7-11.9,
    x0.89 (9.7-10.8, x0.92, before a declaration fell its detection delay after a point within its
    packet's step, 2026-12-02; 8.5-9.9 before a copy of a spurious declaration was queued whole or
    cancelled, x0.85; 6.4-7.1 before its samples scattered as each ACK's do, x0.61); at 2 ms live
    25.1-28.1, the model 26.3-29.3, x1.03 (26.3-29.9 and x1.02 before the declaration step; 22.3-25.6
    and x0.88 before whole copies; docs/fidelity.md, 2026-12-02)."""
    rec, sim = _late_phase(path)
    live = np.mean([r["estimate_mbps"] for r in rec["runs"]])
    model = np.mean([r["estimate_mbps"] for r in sim])
    assert abs(model / live - 1.0) <= 0.15, (live, model)


@pytest.mark.parametrize("rule", ["rfc9002", "rack"])
def test_declaration_leads_spread_as_a_half_normal_of_their_mean(rule: str) -> None:
    """Each declaration's lead over its packet's ACK (``declaration_leads``), whose mean the tables
    hold (``detection_row``): at spacings from 0.05 to 0.5 jitters and short to long windows they
    spread as a half-normal of that mean (P(lead < x) = erf(x / (mean sqrt(pi)))) within 0.08 at
    the 10th to 90th percentiles, the spread ``kernel._queue_copies`` reads to tell how many
    copies the originals' ACKs cancel before they leave. The worst is the densest stream (0.05
    jitters) under RFC 9002, with more short leads than the half-normal (0.16 of them below its
    10th percentile), so there the model cancels a few copies too few."""
    for r in (0.05, 0.16, 0.5):
        for w in (0.5, 1.25, 2.5):
            i = int(np.searchsorted(W_GRID, w))
            leads = declaration_leads(rule, r, float(W_GRID[i]))
            assert leads.mean() == pytest.approx(detection_row(rule, r)[1, i], rel=1e-9)
            if leads.size < 200:
                continue  # too few declared to read a spread (RFC 9002 at 0.5 jitters, long windows)
            levels = np.array([10, 25, 50, 75, 90])
            cdf = np.array([math.erf(q / (leads.mean() * math.sqrt(math.pi))) for q in np.percentile(leads, levels)])
            assert np.abs(cdf - levels / 100).max() < 0.08, (rule, r, w, cdf.round(3))
