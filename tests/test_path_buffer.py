"""XQUIC's path schedule buffer in the simulator (docs/transport.md, "The blocked decision, in the
simulator and in XQUIC"; ``envs/sim/stacks.py`` ``path_buffer``): under the XQUIC profile a paced
path with window room is not blocked, and what the scheduler gives it waits on the path until its
pacer lets it out; under the Linux profile a paced path without pacing credit stays blocked."""

import math

import numpy as np
import pytest

from envs.scenario import load_scenario, scenario_from_dict
from envs.sim.layout import (CN_DONE_STEP, CN_RCV_NXT, CN_SND_LIMIT, FL_ACTIVE, FL_BUFFERED, FL_PACE_CREDIT, FL_SCHED,
                             FL_SQ, FL_SQ_HEAD, FL_SQ_N, OBS_AVAILABLE, OBS_CWND, OBS_INFLIGHT, OBS_PACING_RATE, SQ_BYTES,
                             SQ_COPY, SQ_FILL, SQ_K, SQ_SEQ, SQ_W)
from envs.sim.simulator import SimConfig, Simulator


def ring(fl: np.ndarray, f: int) -> list[tuple[float, float, float]]:
    """Flow f's schedule buffer, oldest range first: (seq, bytes, fill)."""
    out = []
    for j in range(int(fl[f, FL_SQ_N])):
        col = FL_SQ + ((int(fl[f, FL_SQ_HEAD]) + j) % SQ_K) * SQ_W
        out.append((fl[f, col + SQ_SEQ], fl[f, col + SQ_BYTES], fl[f, col + SQ_FILL]))
    return out


def stepped(scen, cc: str, stack: str, scheduler: str = "minrtt", seed: int = 0, max_steps: int = 20000):
    """The simulator after every step of one connection, to its end."""
    sim = Simulator(scen, cc, scheduler=scheduler, batch=1, seed=seed, config=SimConfig(stack=stack))
    sim.reset()
    for _ in range(max_steps):
        if sim.done.all():
            return
        sim.advance(1)
        yield sim
    raise AssertionError("the transfer did not finish")


def paced_with_room(sim) -> list[int]:
    """The subflows that pace, have no pacing credit, and have window room for one more packet."""
    o, fl, mss = sim.obs[0], sim.fl[0], sim.mss
    return [f for f in range(sim.n_paths) if o[f, OBS_PACING_RATE] > 0.0 and fl[f, FL_PACE_CREDIT] < mss - 1e-6
            and o[f, OBS_INFLIGHT] + mss <= o[f, OBS_CWND] + 1e-6 and fl[f, FL_ACTIVE] > 0.0]


@pytest.mark.parametrize("cc", ["bbr", "bbr2"])
def test_a_paced_path_with_window_room_is_available_under_xquic_only(cc):
    scen = load_scenario("hetero_file")
    for stack, available in (("xquic", 1.0), ("linux", 0.0)):
        if stack == "linux" and cc == "bbr2":
            continue  # no BBRv2 in the kernel
        seen = 0
        for sim in stepped(scen, cc, stack):
            for f in paced_with_room(sim):
                assert sim.obs[0, f, OBS_AVAILABLE] == available, (stack, f, int(sim.cn[0, 0]))
                seen += 1
            if stack == "linux":
                assert (sim.fl[0, :, FL_SCHED] == 0.0).all() and (sim.fl[0, :, FL_BUFFERED] == 0.0).all()
        assert seen > 0, f"{stack}: no paced path without credit and with window room met"


@pytest.mark.parametrize("scenario,cc,scheduler", [("hetero_file", "bbr", "minrtt"), ("ispras_s1", "bbr2", "minrtt"),
                                                   ("ispras_s2", "bbr", "rr"), ("ispras_s1", "bbr", "ecf")])
def test_scheduled_bytes_fit_the_window_and_leave_in_order(scenario, cc, scheduler):
    """Bytes are scheduled on a path only within its window (what is in flight and scheduled, plus
    the one packet a pick always gives), the ring holds them all, the receiver's in-order point
    never passes a scheduled byte, and a finished transfer leaves every buffer empty."""
    scen = load_scenario(scenario).with_workload(file_mb=2.0)
    prev = np.zeros(2)
    held = 0
    for sim in stepped(scen, cc, "xquic", scheduler):
        o, fl, mss = sim.obs[0], sim.fl[0], sim.mss
        for f in range(sim.n_paths):
            r = ring(fl, f)
            assert len(r) <= SQ_K
            assert math.isclose(sum(x[1] for x in r), fl[f, FL_SCHED], rel_tol=1e-9, abs_tol=1e-3)
            assert fl[f, FL_SCHED] <= o[f, OBS_INFLIGHT] + 1e-3, "scheduled bytes are part of the committed ones"
            if fl[f, FL_SCHED] > prev[f] + 1e-6:
                assert o[f, OBS_INFLIGHT] <= o[f, OBS_CWND] + mss + 1e-3, \
                    f"path {f}: {o[f, OBS_INFLIGHT]} committed over a {o[f, OBS_CWND]} window"
            new = [x[0] for x in r if x[2] < 0 and x[1] > 0]
            if new:
                assert sim.cn[0, CN_RCV_NXT] <= min(new) + 1e-3
            held += fl[f, FL_SCHED] > 0
            prev[f] = fl[f, FL_SCHED]
    assert held > 0, "the pacer never held a scheduled packet"
    assert sim.cn[0, CN_DONE_STEP] >= 0
    assert math.isclose(sim.cn[0, CN_RCV_NXT], sim.cn[0, CN_SND_LIMIT], abs_tol=1e-3)
    assert (sim.fl[0, :sim.n_paths, FL_SCHED] == 0.0).all() and (sim.fl[0, :sim.n_paths, FL_SQ_N] == 0.0).all()


@pytest.mark.parametrize("cc", ["bbr", "bbr2"])
def test_redundant_copies_wait_for_the_pacer(cc):
    """A scheduler that gives one packet to several paths (redundant) runs up no pacing debt: under
    XQUIC's profile the copy a paced path cannot send now waits in its schedule buffer, as XQUIC's
    copies for other paths do (xqc_conn_try_reinject_packet appends them to the path's buffer);
    before, the copies went out at once and a path's credit fell to -74 packets on ispras_s1
    (BBRv1, 20 MiB, 4 connections). A paced path's credit never falls below one packet's debt
    (a short last packet can overdraw it by less than one), on either stack."""
    scen = load_scenario("ispras_s1").with_workload(file_mb=2.0)
    for stack in ("xquic", "linux"):
        if stack == "linux" and cc == "bbr2":
            continue  # no BBRv2 in the kernel
        copies = 0
        low = math.inf
        for sim in stepped(scen, cc, stack, "redundant"):
            o, fl = sim.obs[0], sim.fl[0]
            for f in range(sim.n_paths):
                if o[f, OBS_PACING_RATE] > 0.0:
                    low = min(low, fl[f, FL_PACE_CREDIT])
                r = ring(fl, f)
                assert math.isclose(sum(x[1] for x in r), fl[f, FL_SCHED], rel_tol=1e-9, abs_tol=1e-3)
                copies += sum(x[1] for x in r if x[2] == SQ_COPY)
        assert low >= -sim.mss, f"{stack}: pacing credit fell to {low / sim.mss:.1f} packets"
        assert (copies > 0) == (stack == "xquic"), f"{stack}: copies held in a schedule buffer: {copies}"
        assert sim.cn[0, CN_DONE_STEP] >= 0
        assert (sim.fl[0, :sim.n_paths, FL_SCHED] == 0.0).all() and (sim.fl[0, :sim.n_paths, FL_SQ_N] == 0.0).all()


def test_a_failed_paths_schedule_buffer_returns_to_the_connection():
    """Path 0 fails while BBR's pacer holds packets on it: at its timeout they return to the
    connection's queue with its data in flight, and path 1 carries the file to the end."""
    scen = scenario_from_dict({
        "name": "outage", "workload": {"type": "file", "file_mb": 5},
        "paths": [{"bandwidth_mbps": 20, "delay_ms": 10, "outages": [[0.4, 30.0]]},
                  {"bandwidth_mbps": 20, "delay_ms": 20}]})
    held_at_failure = 0.0
    for sim in stepped(scen, "bbr", "xquic", max_steps=40000):
        if int(sim.cn[0, 0]) == 400:
            held_at_failure = sim.fl[0, 0, FL_SCHED] + sim.fl[0, 1, FL_SCHED]
    assert held_at_failure > 0.0
    res = sim.results()
    assert res["completion_s"][0] < 10.0
    assert math.isclose(sim.cn[0, CN_RCV_NXT], sim.cn[0, CN_SND_LIMIT], abs_tol=1e-3)


def test_with_the_path_buffer_the_simulator_forecasts_the_live_win():
    """The dqn_backlog preset retrained with XQUIC's path buffer (docs/transfer.md;
    tests/data/transfer_dqn_backlog_hetero_pace_20261126.json): on hetero_file it
    waits at every blocked decision on both sides, and the simulator's sign of (policy - minRTT)
    is live's in both cells (before: `-` in the simulator, `+` live, under BBRv1)."""
    from conftest import ROOT
    from studies.transfer import POLICY, Record, summarise

    r = Record.load(ROOT / "tests" / "data" / "transfer_dqn_backlog_hetero_pace_20261126.json")
    cells = {(c.scenario, c.cc): c for c in summarise(r)}
    for cc in ("bbr", "bbr2"):
        c = cells[("hetero_file", cc)]
        assert c.sign_sim == c.sign_live == "+", (cc, c.sign_sim, c.sign_live)
        for side in ("sim", "live"):
            m = r.get(side, "hetero_file", cc, POLICY)
            assert m is not None and m.blocked > 0 and m.waits == m.blocked, (cc, side)
