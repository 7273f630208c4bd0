"""The compiled core's private bookkeeping stays in step with the state it summarises.

The kernel keeps lists over the hole table (holes in use in sequence order, holes pending
retransmission, holes with a loss detection scheduled), a lower bound of the next detection, a
free-slot hint (so that it never scans the whole table), and each flow's departure rate
and of each flow's segments the first that may carry new data (envs/sim/layout.py). These tests
rebuild each of them from the table itself after
every few steps of lossy, jittery, multipath and competing-flow scenarios, and check the sizing
of the segment FIFO and of the feedback ring.
"""

import numpy as np
import pytest

from envs.scenario import load_scenario, scenario_from_dict
from envs.sim.layout import (BN_CAP, BN_DELIVERED, CN_FREE_HINT, CN_HOLES_HI, CN_LIVE_HEAD,
                             CN_LIVE_TAIL, CN_N_DET, CN_N_PEND, CN_NEXT_DETECT, HOLE_DETECT_AT,
                             HOLE_DLIST, HOLE_DPOS, HOLE_LINKED, HOLE_NEXT, HOLE_PENDING, HOLE_PLIST,
                             HOLE_PPOS, HOLE_PREV, HOLE_REM, HOLE_SEQ, SEG_NEW, SI_HEAD, SI_SCAN, SI_TAIL,
                             FL_DEP_RATE)
from envs.sim.simulator import SimConfig, Simulator

EPS = 1e-6


def _check_holes(sim: Simulator) -> None:
    for b in range(sim.B):
        ho, c = sim.hole[b], sim.cn[b]
        in_use = set(np.flatnonzero(ho[:, HOLE_REM] > 0.0))
        # list of holes in use: doubly linked, in sequence order, exactly the slots in use
        order, k, prev = [], int(c[CN_LIVE_HEAD]), -1
        while k >= 0:
            assert int(ho[k, HOLE_PREV]) == prev and ho[k, HOLE_LINKED] == 1.0
            order.append(k)
            prev, k = k, int(ho[k, HOLE_NEXT])
            assert len(order) <= ho.shape[0], "cycle in the list of holes in use"
        assert prev == int(c[CN_LIVE_TAIL])
        assert set(order) == in_use
        seqs = ho[order, HOLE_SEQ]
        assert np.all(np.diff(seqs) >= 0.0), "holes in use out of sequence order"
        assert set(np.flatnonzero(ho[:, HOLE_LINKED] > 0.0)) == in_use
        # pending and detection lists
        for n_col, pos_col, list_col, members in (
                (CN_N_PEND, HOLE_PPOS, HOLE_PLIST, set(np.flatnonzero(ho[:, HOLE_PENDING] > EPS))),
                (CN_N_DET, HOLE_DPOS, HOLE_DLIST, set(np.flatnonzero(ho[:, HOLE_DETECT_AT] >= 0.0)))):
            n = int(c[n_col])
            listed = [int(x) for x in ho[:n, list_col]]
            assert set(listed) == members and len(listed) == len(members)
            for i, k in enumerate(listed):
                assert int(ho[k, pos_col]) == i
            others = np.setdiff1d(np.arange(ho.shape[0]), listed)
            assert np.all(ho[others, pos_col] == -1.0)
        scheduled = ho[ho[:, HOLE_DETECT_AT] >= 0.0, HOLE_DETECT_AT]
        if scheduled.size:
            assert c[CN_NEXT_DETECT] <= scheduled.min()
        hint, hi = int(c[CN_FREE_HINT]), int(c[CN_HOLES_HI])
        assert np.all(ho[:hint, HOLE_REM] > 0.0), "a free slot below the free-slot hint"
        assert np.all(ho[hi:, HOLE_REM] <= 0.0)


def _check_scan(sim: Simulator) -> None:
    """The receiver's in-order point skips segments from the head up to SI_SCAN: none of them
    carries new data, and the cursor never passes the tail."""
    Qm = sim.Q - 1
    for b in range(sim.B):
        for f in range(sim.P):
            head, scan, tail = (int(sim.segi[b, f, k]) for k in (SI_HEAD, SI_SCAN, SI_TAIL))
            assert scan <= tail
            skipped = [i & Qm for i in range(head, scan)]
            assert np.all(sim.seg[b, f, skipped, SEG_NEW] == 0.0)


def _scenario(name: str, **path_overrides) -> object:
    d = load_scenario(name).model_dump(exclude_none=True)
    for p in d["paths"]:
        p.update(path_overrides)
    d["workload"] = {"type": "bulk", "duration_s": 3.0}
    return scenario_from_dict(d)


@pytest.mark.parametrize("name,cc,scheduler", [
    ("ispras_s1", "bbr", "minrtt"), ("ispras_s1", "reno", "rr"), ("mptcp_tut_e7", "bbr", "minrtt"),
    ("mptcp_tut_e7", "cubic", "rr"), ("kato_3", "cubic", "minrtt"), ("sod_5", "bbr2", "minrtt"),
    ("dynamic", "bbr", "rr")])
def test_hole_lists_and_scan_cursor_match_the_state(name, cc, scheduler):
    sim = Simulator(_scenario(name), cc, scheduler=scheduler, batch=3, seed=5)
    sim.reset()
    while not sim.done.all():
        sim.advance(7)
        _check_holes(sim)
        _check_scan(sim)


def test_hole_lists_with_a_full_table():
    # 8 lossy paths and a small hole table: allocation fails, the newest hole absorbs losses
    sim = Simulator(_scenario("mptcp_tut_e7", loss_pct=20.0), "bbr", batch=2, seed=1)
    sim.hole = sim.hole[:, :16].copy()
    sim.H = 16
    sim.reset()
    full = False
    while not sim.done.all():
        sim.advance(5)
        _check_holes(sim)
        full |= bool((sim.cn[:, CN_HOLES_HI] >= 16).any())
    assert full


def test_departure_rate_tracks_the_flows_share_of_the_link():
    """FL_DEP_RATE (the spacing of the spurious-loss model) is the flow's departure rate: a
    receive-window-limited flow on a fast link is credited with its own rate, not the link's."""
    d = load_scenario("ispras_s3").model_dump(exclude_none=True)
    for p in d["paths"]:
        p["jitter_ms"] = 2.0
    d["jitter_reorders"] = True
    d["receive_buffer_bytes"] = 50_000.0
    d["workload"] = {"type": "bulk", "duration_s": 3.0}
    sim = Simulator(scenario_from_dict(d), "cubic", batch=1, seed=0)
    sim.reset()
    sim.advance(1000)
    start = sim.bn[0, :, BN_DELIVERED].copy()
    rates = []
    for _ in range(2000):  # every step: sampled every 10 the 10 ms average aliased with the flow's bursts (x0.88-1.09)
        sim.advance(1)
        rates.append(sim.fl[0, :sim.P, FL_DEP_RATE].copy())
    mean_rate = np.mean(rates, axis=0)  # bytes per step
    measured = (sim.bn[0, :, BN_DELIVERED] - start) / 2000
    assert mean_rate == pytest.approx(measured, rel=0.05)
    assert (mean_rate < 0.5 * sim.bn[0, :, BN_CAP]).all()


def test_fifo_and_ring_sizes_are_powers_of_two():
    for name in ("ispras_s1", "sod_5", "mptcp_tut_e7", "m_peekaboo_5g"):
        sim = Simulator(load_scenario(name), "bbr", batch=1)
        assert sim.Q & (sim.Q - 1) == 0 and sim.L & (sim.L - 1) == 0


def test_segment_fifo_holds_a_slow_start_overshoot_into_a_deep_buffer():
    # reno into a 20 BDP buffer: slow start opens two segments per step while the queue holds
    # 600 ms; the FIFO sized for the old 1.5 x (RTT + queue delay) filled up here
    sim = Simulator(_scenario("ispras_s3", queue_bdp=20.0), "reno", batch=2, seed=1,
                    config=SimConfig(max_duration_s=3.0))
    sim.reset()
    peak = 0
    while not sim.done.all():
        sim.advance(1)
        peak = max(peak, int((sim.segi[:, :, SI_TAIL] - sim.segi[:, :, SI_HEAD]).max()))
    assert 1009 < peak < sim.Q  # 1009: the old FIFO length for this scenario
