"""Stack profiles (``stack=xquic|linux``, envs/sim/stacks.py): one choice that reaches every entry
point, refuses what the stack lacks, and changes the mechanisms it names (loss detection under
reordering, undo, timers, CC constants)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401 (registers the environments)
from envs import config
from envs.errors import ConfigError
from envs.plugins import cc_params
from envs.scenario import load_scenario, scenario_from_dict
from envs.sim import recovery, stacks
from envs.cc.base import CWND, RECOVERY_START, SSTHRESH
from envs.sim import kernel
from envs.sim.layout import (CN_T, FL_DSACK_AT, FL_OPEN_AT, FL_REO_STEPS, FL_SENT_PKTS, FL_SPUR_PENDING, N_FL, N_OBS,
                             OBS_AVAILABLE, OBS_INFLIGHT, OBS_LATEST_RTT, OBS_MIN_RTT, OBS_PACING_RATE, OBS_SENT, OBS_SRTT,
                             PAUSE_DECISION, PAUSE_NONE)
from envs.sim.reordering import GRID, W_GRID, indirect_table, rack_row, rfc9002_row, spurious_table
from envs.sim.simulator import SimConfig, Simulator
from tests.conftest import compose_config


def test_profiles_and_their_refusals() -> None:
    assert stacks.STACKS == ("xquic", "linux") and stacks.DEFAULT_STACK == "xquic"
    with pytest.raises(ConfigError, match="unknown stack 'quiche'; valid: linux, xquic"):
        SimConfig(stack="quiche")
    with pytest.raises(ConfigError, match="cc 'bbr2' is not in stack 'linux'; valid: reno, cubic, bbr"):
        stacks.check_ccs("linux", ["cubic", "bbr2"])
    stacks.check_ccs("xquic", ["reno", "cubic", "bbr", "bbr2"])
    stacks.check_ccs("xquic", ["fixed_window"])  # a plug-in of the user's own runs under either stack


def test_stack_reaches_the_config_and_the_environments() -> None:
    cfg = compose_config("evaluate", "stack=linux")
    assert cfg.env.stack == "linux" and config.sim_config(cfg.env).stack == "linux"
    assert compose_config("train").env.stack == "xquic"
    with pytest.raises(ConfigError, match="cc 'bbr2' is not in stack 'linux'"):
        config.ccs(compose_config("train", "stack=linux", "cc=bbr2"))
    with pytest.raises(ConfigError, match="cc 'bbr2' is not in stack 'linux'"):
        config.ccs(compose_config("evaluate", "stack=linux", "cc=mix"))
    env = gym.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="cubic", stack="linux")
    assert env.unwrapped.process.sim.stack.name == "linux"
    with pytest.raises(ConfigError, match="cc 'bbr2' is not in stack 'linux'"):
        gym.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr2", stack="linux")
    with pytest.raises(ConfigError, match="unknown stack 'tcp'; valid: linux, xquic"):
        gym.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr", stack="tcp")


def test_cc_constants_come_from_the_stack_under_the_users_overrides() -> None:
    scen = load_scenario("ispras_s1")
    from envs.cc import bbr
    for stack, gain in (("xquic", 2.5), ("linux", 2.0)):  # xqc_bbr.c xqc_bbr_cwnd_gain; tcp_bbr.c bbr_cwnd_gain
        sim = Simulator(scen, "bbr", config=SimConfig(stack=stack))
        assert sim._cc_params["bbr"][bbr.CWND_GAIN] == gain
    sim = Simulator(scen, "bbr", config=SimConfig(stack="xquic"), cc_overrides={"bbr": {"cwnd_gain": 3.0}})
    assert sim._cc_params["bbr"][bbr.CWND_GAIN] == 3.0
    assert cc_params("bbr")[bbr.CWND_GAIN] == 2.0  # the plug-in's own default: Linux's


def test_cubic_grows_as_each_stacks_source() -> None:
    """envs/cc/cubic.py under each stack's constants: XQUIC's xqc_cubic.c leaves slow start only on
    loss, grows a Reno estimate by one XQC_MSS per window acknowledged (the window never below it)
    and on persistent congestion drops to its minimum window keeping ssthresh, its windows in
    XQC_MSS, 1436 / 1200 of its packet, the unit the core hands its CCs as ``mss``; Linux's tcp_cubic.c
    (RFC 9438) exits slow start on a rising RTT (HyStart++ here), grows its Reno estimate by
    3 (1 - beta) / (1 + beta) segments per window and restarts from one packet after a timeout."""
    from envs.cc import cubic

    packet, rtt = 1200.0, 0.04
    rng = np.zeros((1, 4), dtype=np.uint64)
    assert stacks.profile("xquic").cc_mss_packets == pytest.approx(1436 / 1200)
    assert stacks.profile("linux").cc_mss_packets == 1.0
    for stack, init, reno_growth, min_win in (("xquic", 32, 1.0, 4), ("linux", 10, 0.3 * 3 / 1.7, 2)):
        mss = packet * stacks.profile(stack).cc_mss_packets  # what the core passes (kernel: STK_CC_MSS)
        P = cc_params("cubic", stacks.cc_overrides(stack, "cubic"))[None, :].copy()
        C = np.zeros((1, 50))
        cubic.init(C, P, 0, 0.0, mss)
        assert C[0, CWND] == pytest.approx(init * mss)
        # slow start, the RTT rising 10 ms a round (20 ACKs): past HyStart++'s 4-16 ms
        for i in range(400):
            sample = rtt + 0.0005 * i
            cubic.on_ack(C, P, 0, 1, 0.001 * i, packet, sample, sample, 0.0, 0.0, 0.0, i % 20 == 0, mss, rng, 0)
        assert (C[0, SSTHRESH] == np.inf) == (stack == "xquic"), stack
        before = C[0, CWND]
        cubic.on_loss(C, P, 0, 1, 1.0, 1.0, 0.99, 0.0, mss, rng, 0)
        start = C[0, CWND]
        assert start == pytest.approx(0.7 * before) and C[0, SSTHRESH] == start
        # congestion avoidance, two round trips later: one window of ACKs grows the Reno estimate
        for i in range(int(start / packet)):
            cubic.on_ack(C, P, 0, 1, 1.0 + 2 * rtt + 0.0001 * i, packet, rtt, rtt, 0.0, 0.0, 0.0, False, mss, rng, 0)
        grown = C[0, cubic.W_EST] - start / mss
        print(f"{stack}: slow start to {before / packet:.0f} packets; a window of ACKs: Reno estimate +{grown:.3f}, "
              f"window +{(C[0, CWND] - start) / mss:.3f} MSS")
        assert grown == pytest.approx(reno_growth, rel=0.05), stack
        assert C[0, CWND] >= C[0, cubic.W_EST] * mss - 1e-6
        ssthresh, cwnd = C[0, SSTHRESH], C[0, CWND]
        cubic.on_rto(C, P, 0, 2.0, 0.0, mss)
        if stack == "xquic":  # xqc_cubic_reset_cwnd: XQC_CUBIC_MIN_WIN, ssthresh as it was
            assert C[0, CWND] == pytest.approx(min_win * mss) and C[0, SSTHRESH] == ssthresh
        else:  # RFC 9438 sec. 4.8 (tcp_cubic.c bictcp_recalc_ssthresh, then tcp_enter_loss)
            assert C[0, CWND] == mss and C[0, SSTHRESH] == pytest.approx(0.7 * cwnd)


def test_ccs_count_in_each_stacks_mss() -> None:
    """The core hands each flow's CC its stack's unit (STK_CC_MSS): an XQUIC connection's CCs start
    at 32 XQC_MSS (1436 bytes of window per 1200-byte packet, of which 1179 are the file's), a Linux
    connection's at 10 segments; a competing kernel flow beside either counts in Linux's segments, of
    its own packet, and sends that packet."""
    scen = load_scenario("ispras_s1").model_dump()
    scen["paths"][0]["competing"] = {"flows": 1, "cc": "cubic"}
    scen = scenario_from_dict(scen)
    for stack, packet, init in (("xquic", stacks.XQC_PAYLOAD, 32 * 1436 / 1200), ("linux", stacks.LINUX_PAYLOAD, 10)):
        sim = Simulator(scen, "cubic", batch=1, seed=0, config=SimConfig(stack=stack))
        sim.reset()
        nsub = len(scen.paths)
        assert sim.cc[0, :nsub, CWND] == pytest.approx([init * packet] * nsub), stack
        assert sim.cc[0, nsub, CWND] == pytest.approx(10 * stacks.LINUX_PAYLOAD), stack  # kernel CUBIC
        sim.advance(300)
        sent, packets = sim.obs[0, nsub, OBS_SENT], sim.fl[0, nsub, FL_SENT_PKTS]
        assert packets > 10 and sent == pytest.approx(packets * stacks.LINUX_PAYLOAD), stack


def test_xquic_bbr_timeout_is_persistent_congestion() -> None:
    """XQUIC's persistent congestion (xqc_send_ctl.c) calls xqc_bbr_reset_cwnd: cwnd to the
    4-XQC_MSS floor, the loss episode cancelled, its saved window not restored; Linux's BBR after a
    timeout holds one packet (TCP_CA_Loss) and restores the saved window when it ends
    (tcp_bbr.c bbr_set_cwnd_to_recover_or_restore)."""
    from envs.cc import bbr
    mss, rng = 1436.0, np.ones(1, dtype=np.uint64)
    for stack in ("xquic", "linux"):
        P = cc_params("bbr", stacks.cc_overrides(stack, "bbr"))[None, :].copy()
        C = np.zeros((1, bbr.N_STATE))
        bbr.init(C, P, 0, 0.0, mss)
        C[0, bbr.FILLED], C[0, bbr.MODE] = 1.0, bbr.PROBE_BW  # past Startup, where XQUIC's episodes begin
        C[0, CWND] = 30 * mss
        bbr.on_loss(C, P, 0, 1, 0.5, mss, 0.49, 20 * mss, mss, rng, 0)
        assert C[0, bbr.IN_RECOVERY] == 1.0, stack  # a loss episode (Linux's takes the lost packet off first)
        bbr.on_rto(C, P, 0, 1.0, 0.0, mss)
        if stack == "xquic":
            assert C[0, CWND] == 4 * mss and C[0, bbr.IN_RECOVERY] == 0.0
        else:
            assert C[0, CWND] == mss and C[0, bbr.IN_RECOVERY] == 1.0 and C[0, bbr.PRIOR_CWND] == 29 * mss
            # TCP_CA_Loss ends with the ACK of data sent after it: the saved window is back
            bbr.on_ack(C, P, 0, 1, 1.05, mss, 0.04, 0.04, 1e6, mss, 0.0, False, mss, rng, 0)
            assert C[0, bbr.IN_RECOVERY] == 0.0 and C[0, CWND] >= 29 * mss


def test_bbr_probe_rtt_window_is_each_stacks() -> None:
    """ProbeRTT's window: XQUIC 0.75 x BDP (xqc_bbr.c xqc_bbr_probe_rtt_gain), Linux 4 packets
    (tcp_bbr.c bbr_cwnd_min_target, the plug-in's default gain 0)."""
    from envs.cc import bbr
    scen = load_scenario("ispras_s1")
    for stack, gain in (("xquic", 0.75), ("linux", 0.0)):
        assert Simulator(scen, "bbr", config=SimConfig(stack=stack))._cc_params["bbr"][bbr.PROBE_RTT_CWND_GAIN] == gain


def test_detection_tables() -> None:
    """RFC 9002 (XQUIC): the packet threshold alone for a wide window, the time threshold adds
    declarations as the window narrows; RACK (Linux): vanishing once the window is a few jitters."""
    rfc, rack = spurious_table("rfc9002"), spurious_table("rack")
    assert rfc.shape == rack.shape == (W_GRID.size, GRID.size)
    # wider window: fewer (the loop draws each column's jitters once, so exactly)
    assert np.all(np.diff(rfc, axis=0) <= 1e-12) and np.all(np.diff(rack, axis=0) <= 1e-12)
    # wider spacing: fewer, decade by decade (each column is its own Monte Carlo of the loop)
    decades = [int(np.searchsorted(GRID, r)) for r in (0.01, 0.1, 1.0, 10.0)]
    for table in (rfc, rack):
        assert np.all(np.diff(table[:, decades], axis=1) < 0.0) or np.all(table[:, decades[-1]] == 0.0)
        assert np.all(np.diff(table[0, decades]) < 0.0)
    r = np.searchsorted(GRID, 0.05)
    w = np.searchsorted(W_GRID, 10.0)
    assert rack[w, r] < 1e-6 < 0.1 < rfc[w, r]


def test_declaration_leads_agree_with_a_monte_carlo() -> None:
    """The mean lead of a declaration over its packet's ACK (envs/sim/reordering.py), integrated,
    against declarations drawn packet by packet: the packet's delay x and its later packets'
    arrivals j r + y_j, declared at D (RFC 9002: the third later arrival, or the first once the
    packet is w late; RACK: y_j + w for a later packet whose spacing is within w, else its arrival),
    and the shipped tables hold the integral."""
    rng = np.random.default_rng(0)
    for r, w in ((0.05, 3.25), (0.2, 3.25), (0.5, 1.75)):
        n, later = 20000, int(np.ceil(12.0 / r))
        x = rng.standard_normal(n)
        spacing = r * np.arange(1, later + 1)
        z = spacing + rng.standard_normal((n, later))
        first3 = np.sort(z, axis=1)[:, :3]
        d_rfc = np.minimum(first3[:, 2], np.maximum(first3[:, 0], w))
        d_rack = np.where(spacing < w, z - spacing + w, z).min(axis=1)
        i = int(np.searchsorted(W_GRID, w))
        for d, row in ((d_rfc, rfc9002_row(r)), (d_rack, rack_row(r))):
            declared = d < x
            assert row[0, i] == pytest.approx(declared.mean(), abs=0.01)
            assert row[1, i] == pytest.approx(np.mean(x[declared] - d[declared]), abs=0.03)


COPY_DRAWS = 20000


def _queued(nbytes: float, pacing: float = 0.0, flight: float = 0.0, cwnd: float = 1e6,
            pacer_delay: float = 0.0) -> np.ndarray:
    """Bytes of copies ``kernel._queue_copies`` queues for ``nbytes`` declared spuriously, their
    originals' ACKs 3 ms after the declaration on average (1 ms steps), srtt 100 ms, 1000-byte
    packets: one figure per random stream, ``COPY_DRAWS`` streams (the same for every call, so
    calls differing in ``nbytes`` draw the same numbers for their first copies)."""
    rng = np.arange(COPY_DRAWS, dtype=np.uint64) * np.uint64(7919) + np.uint64(12345)
    out = np.zeros(COPY_DRAWS)
    for b in range(COPY_DRAWS):
        o, fb, C = np.zeros((1, N_OBS)), np.zeros((1, N_FL)), np.zeros((1, 8))
        o[0, OBS_SRTT], o[0, OBS_PACING_RATE], o[0, OBS_INFLIGHT], C[0, CWND] = 0.1, pacing, flight, cwnd
        kernel._queue_copies(o, fb, C, 0, nbytes, 3.0, 0.001, 1000.0, pacer_delay, rng, b)
        out[b] = fb[0, FL_SPUR_PENDING]
    return out


def test_a_copy_is_cancelled_when_its_originals_ack_comes_before_it_leaves() -> None:
    """A spurious declaration's copy is queued whole or cancelled, with the chance that its
    original's ACK comes before it leaves: the ACK comes a half-normal lead after the declaration
    (the rule's mean lead, 3 ms here), the copy leaves once the window has room and the copies
    ahead of it have left, a paced flow's at its pacer's next release, uniform over max(pacer
    delay, a packet's time). Never a share of a packet: the queue sends whole packets."""
    scale = 0.003 * np.sqrt(np.pi)  # P(lead < x) = erf(x / scale)
    erf = np.vectorize(math.erf)
    assert np.all(_queued(1000.0) == 1000.0)  # unpaced, window room: it leaves at once
    wait = np.linspace(0.0, 0.001, 20001)  # XQUIC's pacer: at least 1 ms between releases
    paced = _queued(1000.0, pacing=2e6, pacer_delay=0.001)
    assert set(np.unique(paced)) == {0.0, 1000.0}
    kept = 1.0 - erf(wait / scale).mean()  # about nine in ten
    assert paced.mean() == pytest.approx(1000.0 * kept, abs=4000.0 * math.sqrt(kept * (1.0 - kept) / COPY_DRAWS))
    # Linux paces each packet to its own time: half a packet's time (0.25 ms at 2 MB/s) on average
    assert paced.mean() < _queued(1000.0, pacing=2e6).mean() < 1000.0
    # copies wait behind each other: each later one is cancelled more often
    shares = np.diff([0.0] + [_queued(1000.0 * k, pacing=2e6, pacer_delay=0.001).mean() for k in range(1, 11)])
    assert np.all(np.diff(shares) < 0.0) and shares[-1] < 0.5 * shares[0]
    # a window cut below what is in flight (50 kB over it, ACKs freeing 1.5 MB/s): 34 ms, all cancelled
    assert np.all(_queued(1000.0, flight=1.5e5, cwnd=1e5) == 0.0)


COPY_CELLS = [(jitter, cc) for jitter in (2.0, 5.0) for cc in ("bbr", "bbr2", "cubic", "reno")]
WINDOW_CUT_COPIES = (
    "the model still declares a packet after part of the ACKs of the train that holds it: a train's ACKs come in "
    "the steps its packets crossed the bottleneck in, so a declaration in a later step than its packet's finds "
    "the window refilled by that step's ACKs, and after the CC's cut what is in flight stays over the window "
    "until the next train's ACKs (CUBIC 0.7-0.8 packets at 2 ms, Reno 1.2-1.5 at 5 ms, back under it after "
    "34-38 ms) and most of those copies are cancelled; live XQUIC's jitter spreads its train's ACKs over "
    "milliseconds, the declaration amid them, and the rest free the room at once (in flight at or under the window "
    "after the cut): per reduction live CUBIC sends 0.72-0.89 copies within 2 ms of the cut at 2 ms of jitter, "
    "the model 0.28-0.33; live Reno 0.34-0.44 at 5 ms, the model 0.28-0.42 (benchmarks/xquic_cubic_live.py "
    "--episodes, 2026-12-02). Until the declaration fell its detection delay after a point within its "
    "packet's step (kernel._detect_steps, 2026-12-02) it came at least a step after its packet's ACK, every copy "
    "behind a refilled window (CUBIC 0.18 and 0.36, Reno 0.03 and 0.10 of the declarations; per reduction 0.01-0.04 "
    "and 0.00-0.03 in the cut's 2 ms); until earlier that day a queued share of a copy went out as a whole packet, "
    "which hid it (docs/transport.md, \"Copies a late ACK cancels\")")
COPY_GAPS = {
    (2.0, "cubic"): "CUBIC keeps copies of 0.33 of its declarations on the 2 ms path (0.29-0.36 per connection) where "
                    "live XQUIC keeps 0.71 (0.67-0.75): " + WINDOW_CUT_COPIES,
    (5.0, "cubic"): "CUBIC keeps copies of 0.47 of its declarations on the 5 ms path (0.43-0.53 per connection) where "
                    "live XQUIC keeps 0.71 (0.66-0.77): " + WINDOW_CUT_COPIES,
    (2.0, "reno"): "Reno keeps copies of 0.30 of its declarations on the 2 ms path (0.25-0.33 per connection) where "
                   "live XQUIC keeps 0.43 (0.41-0.45): " + WINDOW_CUT_COPIES,
    (5.0, "reno"): "Reno keeps copies of 0.32 of its declarations on the 5 ms path (0.27-0.36 per connection) where "
                   "live XQUIC keeps 0.42 (0.38-0.47), 0.10 apart: " + WINDOW_CUT_COPIES,
}
BBR2_COPIES = (
    "BBRv2 keeps copies of 0.65 of its declarations on the 2 ms path (0.54-0.71 per connection) and 0.62 on "
    "the 5 ms one (0.44-0.73) where live XQUIC keeps 0.92 and 0.94 (0.89-0.94, 0.89-0.98; 0.63 and 0.58 with the "
    "declaration a step later, before 2026-12-02's kernel._detect_steps): paced at 3-4 Mbit/s, it copied "
    "0.56-0.71 of what it declares beyond 40 ms into an episode, live 0.88-0.90 (benchmarks/xquic_cubic_live.py "
    "grid:0/2 --ccs bbr2 --episodes, 2026-12-02, before _detect_steps, as the measurements that follow). Mostly "
    "the pacer's wait: with it left out of a copy's chance the model kept 0.85 and 0.71, with the window's left out "
    "0.72 and 0.68, with both 0.94 and 0.87. Every paced copy waits a pacer's period in the model (max(1 ms, a "
    "packet's time at the pacing rate), 2-3 ms here); XQUIC's pacer sends at once while its budget lasts "
    "(xqc_pacing.c xqc_pacing_time_until_send; up to max(10 packets, 2 ms at the pacing rate), "
    "XQC_MAX_BURST_NUM, xqc_pacing_max_burst_size), but a copy leaving at once within the flow's pacing "
    "credit, with that budget as the credit's cap, kept 0.65 and 0.57 (XQUIC fidelity 55 of 57): the "
    "model's BBRv2 seldom has a packet of credit left when its copies are queued, and what lets live's copies "
    "leave is not established. Until then a queued share of a copy went out as a whole packet, which hid it "
    "(0.95 and 0.94)")
COPY_GAPS |= {(jitter, "bbr2"): BBR2_COPIES for jitter in (2.0, 5.0)}


@pytest.mark.parametrize("jitter, cc", [pytest.param(*cell, marks=pytest.mark.xfail(strict=True, reason=COPY_GAPS[cell]))
                                        if cell in COPY_GAPS else cell for cell in COPY_CELLS])
def test_copies_sent_per_declaration_as_live_xquics(jitter: float, cc: str) -> None:
    """On the grid's path (50 Mbit/s, 40 ms, 1 BDP; 2 and 5 ms of jitter) the model sends copies
    of as many of its spurious declarations as live XQUIC did (tests/data/declarations_xquic_live.json,
    ``retransmitted / declared_lost`` after the first second), within 0.1: BBRv1 loses about a
    tenth of its copies to the pacer's wait and the originals' ACKs (live 0.84-0.90; the model
    0.78 and 0.86); 8 connections, 5 s after the first. BBRv2, CUBIC and Reno are findings
    (``COPY_GAPS``)."""
    import json
    from benchmarks.reordering_declarations import RECORD, cells
    from envs.fidelity import grid_scenario
    from envs.sim.layout import OBS_LOSSES, OBS_RETRANS
    runs = cells(json.loads(RECORD.read_text()))[(jitter, cc)]
    live = np.mean([r["retransmitted"] / r["declared_lost"] for r in runs])
    sim = Simulator(grid_scenario(0.0, jitter, 6.0), cc, "minrtt", batch=8, seed=0, config=SimConfig(stack="xquic"))
    sim.reset()
    sim.advance(round(1000 / sim.cfg.dt_ms))
    before = sim.obs[:, 0, [OBS_LOSSES, OBS_RETRANS]].sum(axis=0)
    sim.advance(round(5000 / sim.cfg.dt_ms))
    declared, copies = sim.obs[:, 0, [OBS_LOSSES, OBS_RETRANS]].sum(axis=0) - before
    assert copies / declared == pytest.approx(live, abs=0.1)


def test_copies_of_spurious_declarations_count_as_retransmissions() -> None:
    """The path's ``retrans`` counts every copy sent, as XQUIC's ctl_lost_count and Linux's
    total_retrans do: on a jittery path what it sent (and holds in its schedule buffer) is the new
    data plus the copies, whether of real losses (queue drops) or of spurious declarations."""
    from envs.sim.layout import CN_SND_NXT, FL_SCHED, OBS_RETRANS
    scen = scenario_from_dict({"name": "jittery", "jitter_reorders": True, "workload": {"type": "bulk", "duration_s": 3},
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 2, "queue_bdp": 1}]})
    sim = Simulator(scen, "bbr", batch=2, seed=1, config=SimConfig(stack="xquic"))
    sim.reset()
    sim.run()
    copies = sim.obs[:, 0, OBS_RETRANS]
    assert np.all(copies > 0.2 * sim.obs[:, 0, OBS_SENT] / sim.mss)  # about half of what BBRv1 sends here
    committed = sim.obs[:, 0, OBS_SENT] + sim.fl[:, 0, FL_SCHED]
    assert committed == pytest.approx(sim.cn[:, CN_SND_NXT] + copies * sim.mss, rel=1e-4)



def test_a_copy_of_a_spurious_declaration_is_never_declared_lost() -> None:
    """A copy sent for a spurious declaration is never itself declared lost, whether reordered or
    dropped: its original arrives, and XQUIC drops from loss detection a packet whose original
    was acknowledged (xqc_send_ctl_indirectly_ack_or_drop_po), Linux a retransmitted segment
    already SACKed. So only the other packets can be declared: BBRv1 on a 2 ms jittery path
    declares about 43% of what it sends and copies as many; while its copies could be declared
    too, 70% and 65% (docs/transport.md, "Reordering")."""
    from envs.sim.layout import OBS_LOSSES, OBS_RETRANS
    scen = scenario_from_dict({"name": "jittery", "jitter_reorders": True, "workload": {"type": "bulk", "duration_s": 3},
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 2, "queue_bdp": 1}]})
    sim = Simulator(scen, "bbr", batch=2, seed=1, config=SimConfig(stack="xquic"))
    sim.reset()
    sim.run()
    sent = sim.obs[:, 0, OBS_SENT] / sim.mss
    copies, declared = sim.obs[:, 0, OBS_RETRANS], sim.obs[:, 0, OBS_LOSSES]
    assert np.all(copies > 0.2 * sent) and np.all(declared > 0.2 * sent), (sent, copies, declared)
    assert np.all(declared <= sent - copies), (sent, copies, declared)



def test_the_indirect_table_reads_as_xquics_loss_detection() -> None:
    """XQUIC's loss detection reaches a copy, and drops it uncounted, once the packet sent just
    before it or any after it is acknowledged (ack_loop.acknowledged_indirectly): without
    reordering (wide spacing) the copy that leads an ACK's pair is reached through its predecessor,
    half of them; the closer the packets, the more a later packet's ACK comes first. Under Linux
    every copy is (its original's SACK counted)."""
    ind = indirect_table("rfc9002")[0]
    close = [int(np.searchsorted(GRID, r)) for r in (0.01, 0.05, 0.15, 0.3)]
    assert np.all(np.diff(ind[close]) < 0.0) and ind[close[1]] > 0.7
    wide = GRID >= 0.3
    assert np.all(np.abs(ind[wide] - 0.5) < 0.03) and ind[-1] == pytest.approx(0.5, abs=0.005)
    assert np.all(indirect_table("rack") == 1.0)


def test_a_copy_counts_as_delivered_only_when_acknowledged_directly() -> None:
    """XQUIC counts a copy of a spurious declaration as delivered (its rate sample, its CC's
    acknowledged bytes) only when its own ACK comes before that of the packet sent just before it
    or of any later one; the others leave the flight uncounted. On a 5 ms jittery path most of
    BBRv1's copies are (0.75 uncounted, as live XQUIC's on the grid's 2 ms path), not all; under
    Linux none counts (the original's SACK did; 81 copies here; a resend of a packet a Startup
    lost at the queue counts, and is left out)."""
    from envs.sim.layout import FL_LOST_PKTS, OBS_ACKED, OBS_INFLIGHT, OBS_RETRANS
    scen = scenario_from_dict({"name": "jittery", "jitter_reorders": True, "workload": {"type": "bulk", "duration_s": 3},
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 5, "queue_bdp": 1}]})
    share = {}
    for stack in ("xquic", "linux"):
        sim = Simulator(scen, "bbr", batch=4, seed=1, config=SimConfig(stack=stack))
        sim.reset()
        sim.run()
        o = sim.obs[:, 0]
        lost = sim.fl[:, 0, FL_LOST_PKTS]  # each resent once, and counted
        uncounted = (o[:, OBS_SENT] - o[:, OBS_ACKED] - o[:, OBS_INFLIGHT]) / sim.mss - lost
        copies = o[:, OBS_RETRANS] - lost
        assert copies.sum() > 20, (stack, copies)  # RACK declares few, in Startup
        share[stack] = uncounted.sum() / copies.sum()
    # a copy still in flight when the run ends is in neither count's numerator (one of 81 here)
    assert 0.5 < share["xquic"] < 0.97 and share["linux"] > 0.95, share


def reordering(stack: str, cc: str = "cubic", batch: int = 3) -> dict[str, np.ndarray]:
    """One jittery, loss-free path (5 ms jitter, reordering), 5 s bulk."""
    scen = scenario_from_dict({"name": "jittery", "jitter_reorders": True, "workload": {"type": "bulk", "duration_s": 5},
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 5, "queue_bdp": 1}]})
    sim = Simulator(scen, cc, batch=batch, seed=2, config=SimConfig(stack=stack))
    sim.reset()
    sim.run()
    return sim.results()


def test_rack_tells_reordering_from_loss_where_rfc9002_thresholds_do_not() -> None:
    """Without random loss, XQUIC's thresholds declare reordered packets lost and CUBIC backs
    off (about 1 Mbit/s); Linux's RACK window (min_rtt / 4 = 10 ms, two jitters of a round trip)
    fires far less, and DSACK undoes what it does declare: over 64 connections its CUBIC runs at
    the link's rate in 17 (over 40 Mbit/s in 5 s with slow start; 17-19 for seeds 2-4) and at
    12-38 Mbit/s in the others, where RACK fired before DSACKs widened its window."""
    xquic, linux = reordering("xquic", batch=64), reordering("linux", batch=64)
    print(f"goodput xquic {xquic['goodput_mbps'].mean():.1f}, linux {linux['goodput_mbps'].mean():.1f} Mbit/s")
    assert linux["goodput_mbps"].mean() > 10.0 * xquic["goodput_mbps"].mean()
    assert np.count_nonzero(linux["goodput_mbps"] > 0.8 * 50.0) >= 12


@pytest.mark.parametrize("delay", [0.0, 0.6, 1.5, 10.25])
def test_a_declaration_falls_its_delay_after_a_point_within_the_arrival_step(delay: float) -> None:
    """A step's arrivals crossed the bottleneck anywhere within it, so a declaration ``delay``
    steps after one is processed floor(delay) or one more steps after that arrival's step, the
    latter for a share frac(delay) of a flow's declarations, carried over from one to the next
    without a random draw (kernel._detect_steps); 1 + floor(delay) before 2026-12-02, half a step
    late on average and never in the arrival's own step."""
    from envs.sim import kernel
    from envs.sim.layout import FL_DETECT_PHASE
    fb = np.zeros((1, N_FL))
    steps = np.array([kernel._detect_steps(delay, fb, 0) for _ in range(1000)])
    assert set(np.unique(steps)) <= {math.floor(delay), math.floor(delay) + 1}
    # what is carried over is what the steps so far fall short of their delays
    assert steps.sum() + fb[0, FL_DETECT_PHASE] == pytest.approx(1000 * delay)
    assert -1e-9 < fb[0, FL_DETECT_PHASE] < 1.0


def test_dsack_widens_rack_window_and_undoes_a_spurious_reduction() -> None:
    """Linux: a declaration that proves spurious (one RTT later) restores cwnd and ssthresh, and
    where its copy was sent, the copy's DSACK widens the window by min_rtt / 4; a copy its
    original's ACK cancelled makes no DSACK, so the window stays (the undo still comes:
    tcp_packet_delayed with nothing retransmitted); a real loss in the episode forbids the undo.
    XQUIC: neither."""
    def flow(stack: str):
        o, fb, C = np.zeros((1, N_OBS)), np.zeros((1, N_FL)), np.zeros((1, 8))
        o[0, OBS_SRTT], o[0, OBS_LATEST_RTT], o[0, OBS_MIN_RTT] = 0.1, 0.1, 0.08
        C[0, CWND], C[0, SSTHRESH] = 100e3, np.inf
        return o, fb, C, stacks.stack_vector(stacks.profile(stack))

    o, fb, C, stk = flow("linux")
    assert recovery.reorder_window(o, fb, 0, stk, 0.1) == pytest.approx(0.02)
    recovery.before_loss(1000, o, fb, C, 0, 0.0, 2.0, 0.001, stk)  # spurious only
    C[0, CWND] = 70e3  # the CC's reduction
    assert fb[0, FL_DSACK_AT] == 1100.0  # one RTT later
    recovery.dsack_due(1100, fb, C, 0, stk)  # every copy cancelled: no DSACK
    assert C[0, CWND] == 100e3 and fb[0, FL_REO_STEPS] == 0.0
    recovery.before_loss(1200, o, fb, C, 0, 0.0, 2.0, 0.001, stk)
    recovery.copy_sent(fb, 0)  # a copy left: its DSACK
    C[0, CWND] = 70e3
    recovery.dsack_due(1300, fb, C, 0, stk)
    assert C[0, CWND] == 100e3 and fb[0, FL_REO_STEPS] == 1.0
    assert recovery.reorder_window(o, fb, 0, stk, 0.1) == pytest.approx(0.04)
    o, fb, C, stk = flow("linux")
    recovery.before_loss(1000, o, fb, C, 0, 0.0, 2.0, 0.001, stk)
    recovery.before_loss(1001, o, fb, C, 0, 1448.0, 0.0, 0.001, stk)  # a real loss joins the episode
    C[0, CWND] = 70e3
    recovery.dsack_due(1100, fb, C, 0, stk)
    assert C[0, CWND] == 70e3
    o, fb, C, stk = flow("xquic")
    assert recovery.reorder_window(o, fb, 0, stk, 0.1) == pytest.approx(0.1 / 8)  # RFC 9002 time threshold
    recovery.before_loss(1000, o, fb, C, 0, 0.0, 2.0, 0.001, stk)
    assert fb[0, FL_DSACK_AT] == 0.0
    assert recovery.timeout(o, 0, stk) == pytest.approx(3 * (0.1 + 0.001 + 0.025))  # 3 PTOs
    assert recovery.timeout(o, 0, stacks.stack_vector(stacks.LINUX)) == pytest.approx(0.1 + 0.2)
    # from the send: 9/8 of the larger of srtt and the latest sample, less the expected round trip
    o[0, OBS_LATEST_RTT] = 0.12
    assert recovery.reorder_window(o, fb, 0, stk, 0.1) == pytest.approx(0.12 * 9 / 8 - 0.1)
    o[0, OBS_SRTT], o[0, OBS_LATEST_RTT] = 0.085, 0.085  # early samples (reordering)
    assert recovery.reorder_window(o, fb, 0, stk, 0.1) == 0.0


def test_path_setup_from_each_stacks_source() -> None:
    """A further path carries data only once the stack has set it up (envs/sim/stacks.py
    path_open_steps): XQUIC two round trips of path 0 (HANDSHAKE_DONE, then the acknowledgement
    of the client's connection IDs) and one of its own (PATH_CHALLENGE / PATH_RESPONSE), one path
    after another; Linux one round trip of path 0 (fully established) and two of the subflow's own
    (MP_JOIN's SYN and fourth ACK), every subflow at once."""
    assert stacks.XQUIC.path_setup == "xquic" and stacks.LINUX.path_setup == "mp_join"
    np.testing.assert_array_equal(stacks.path_open_steps("xquic", [20, 200]), [0, 240])
    np.testing.assert_array_equal(stacks.path_open_steps("mp_join", [20, 200]), [0, 420])
    # path 2's connection IDs: acknowledged 80 steps (path 0's round trip) after path 1 was created
    # at 160; the server's arrive (20 + 80) / 2 after it; so created at 240, open at 240 + 40
    np.testing.assert_array_equal(stacks.path_open_steps("xquic", [80, 20, 40]), [0, 180, 280])
    np.testing.assert_array_equal(stacks.path_open_steps("mp_join", [80, 20, 40]), [0, 120, 160])
    with pytest.raises(ConfigError, match="unknown path setup 'instant'; valid: mp_join, xquic"):
        stacks.path_open_steps("instant", [10, 10])


@pytest.mark.parametrize("stack", ["xquic", "linux"])
def test_unopened_path_is_unavailable_and_nobody_is_asked(stack: str) -> None:
    """Until its path is set up a subflow is unavailable and sends nothing, and the blocked decision
    mode asks nothing: the sender runs minRTT over the open paths, as bindings/ runs XQUIC (a policy
    needs all its paths). The faster path here opens at 2 x 80 + 20 (XQUIC) or 80 + 2 x 20 (Linux)."""
    paths = [{"bandwidth_mbps": 20, "delay_ms": 40}, {"bandwidth_mbps": 20, "delay_ms": 10}]
    scen = scenario_from_dict({"name": "setup", "workload": {"type": "file", "file_mb": 2}, "paths": paths})
    sim = Simulator(scen, "cubic", batch=1, seed=0, config=SimConfig(stack=stack))
    sim.blocked = True
    sim.reset()
    opens = sim.fl[0, 1, FL_OPEN_AT]
    assert opens == (180 if stack == "xquic" else 120)
    while sim.cn[0, CN_T] < opens:
        assert sim.advance(1)[0] != PAUSE_DECISION
        assert sim.obs[0, 1, OBS_SENT] == 0 and sim.obs[0, 1, OBS_AVAILABLE] == 0
    assert sim.obs[0, 0, OBS_SENT] > 0
    pause = PAUSE_NONE
    while pause != PAUSE_DECISION and not sim.done[0]:
        pause = sim.advance(1)[0]
    assert pause == PAUSE_DECISION  # once both paths are open, the agent decides the blocked case


def test_a_competing_flow_resends_its_spurious_declarations() -> None:
    """A kernel flow beside the connection on a reordering path resends what it declares lost
    spuriously, as the connection's subflows do (ahead of its new data), each copy a packet on the
    link; copies that could not leave before their originals' ACKs are dropped, never sent."""
    from envs.sim.layout import FL_LOST_PKTS, OBS_LOSSES, OBS_RETRANS
    scen = scenario_from_dict({"name": "jittery", "jitter_reorders": True,
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 2.0, "queue_bdp": 1.0,
                                          "competing": {"flows": 1, "cc": "cubic"}}],
                               "workload": {"type": "bulk", "duration_s": 5}})
    sim = Simulator(scen, "cubic", batch=2, seed=0, config=SimConfig(stack="xquic"))
    sim.reset()
    sim.run()
    spurious = sim.obs[:, 1, OBS_LOSSES] - sim.fl[:, 1, FL_LOST_PKTS]
    resent = sim.obs[:, 1, OBS_RETRANS]
    assert (resent > 0).all() and (resent <= spurious).all(), (resent, spurious)
    assert (sim.fl[:, 1, FL_SPUR_PENDING] < stacks.LINUX_PAYLOAD).all()


@pytest.mark.parametrize("cc", ["reno", "lia", "olia", "balia"])
def test_newreno_timeout_is_each_stacks(cc: str) -> None:
    """XQUIC's persistent congestion resets NewReno and the coupled CCs (xqc_reno_reset_cwnd,
    bindings/src/mps_coupled.c coupled_reset_cwnd) to the 2-XQC_MSS floor, ssthresh kept, the
    recovery epoch cleared; Linux's timeout (tcp_enter_loss, tcp_reno_ssthresh) leaves one packet,
    ssthresh half the window (not RFC 5681's half the flight), a new recovery epoch."""
    from envs.plugins import cc_plugin

    plugin, mss = cc_plugin(cc), 1436.0
    for stack in ("xquic", "linux"):
        P = cc_params(cc, stacks.cc_overrides(stack, cc))[None, :].copy()
        C = np.zeros((1, plugin.state_slots))
        plugin.init(C, P, 0, 0.0, mss)
        C[0, CWND], C[0, SSTHRESH] = 40 * mss, 30 * mss
        plugin.on_rto(C, P, 0, 1.0, 36 * mss, mss)
        if stack == "xquic":
            assert (C[0, CWND], C[0, SSTHRESH], C[0, RECOVERY_START]) == (2 * mss, 30 * mss, -1.0), cc
        else:
            assert (C[0, CWND], C[0, SSTHRESH], C[0, RECOVERY_START]) == (mss, 20 * mss, 1.0), cc


def _declared_share(monkeypatch: pytest.MonkeyPatch, one_sack_block: bool, loss_pct: float,
                    queue_bdp: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Per connection, the share of the packets its Linux MPTCP subflow sent that it declared lost,
    and the packets the network lost, BBR on the grid's 50 Mbit/s, 40 ms path with 2 ms of jitter,
    with or without the one SACK block."""
    from dataclasses import replace

    from envs.sim.layout import FL_LOST_PKTS, OBS_LOSSES
    monkeypatch.setitem(stacks.PROFILES, "linux", replace(stacks.LINUX, one_sack_block=one_sack_block))
    scen = scenario_from_dict({"name": "grid", "jitter_reorders": True, "workload": {"type": "bulk", "duration_s": 4},
                               "paths": [{"bandwidth_mbps": 50, "delay_ms": 20, "jitter_ms": 2, "loss_pct": loss_pct,
                                          "queue_bdp": queue_bdp}]})
    sim = Simulator(scen, "bbr", batch=3, seed=1, config=SimConfig(stack="linux"))
    sim.reset()
    sim.run()
    return sim.obs[:, 0, OBS_LOSSES] / sim.fl[:, 0, FL_SENT_PKTS], sim.fl[:, 0, FL_LOST_PKTS]


def test_one_sack_block_declares_what_no_ack_names_while_a_hole_persists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel MPTCP's subflow names one SACK block per ACK (``StackProfile.one_sack_block``): while a
    real loss's hole holds its cumulative ACK, RACK also declares the late packets no ACK names
    (``reordering.hidden_table``, 7% of them at this spacing). At 2% loss the model's BBR declares
    about 7.5% of what it sends against 2.5% with every block named (2% of it real); where nothing
    is lost (no random loss, a buffer BBR's startup does not overflow) no hole opens and nothing
    changes (docs/transport.md, "One SACK block per ACK")."""
    (one, _), (every, _) = _declared_share(monkeypatch, True, 2.0), _declared_share(monkeypatch, False, 2.0)
    assert np.all(one > every + 0.03), (one, every)
    (one, lost), (every, _) = _declared_share(monkeypatch, True, 0.0, 8.0), _declared_share(monkeypatch, False, 0.0, 8.0)
    assert np.all(lost == 0.0) and np.all(one > 0.0) and np.array_equal(one, every), (one, every, lost)


def test_the_linux_bbr_probe_prints_the_models_side(capsys: pytest.CaptureFixture[str]) -> None:
    """``benchmarks/bbr_jitter_live.py --sim-only`` (the figures docs/transport.md, "One SACK block per
    ACK", quotes): per connection its goodput, what it declared and what the network lost as shares of
    what it sent, and how long a hole held its cumulative ACK, which 2% random loss keeps nearly always."""
    import re

    from benchmarks.bbr_jitter_live import simulated
    from envs.fidelity import grid_scenario
    simulated(grid_scenario(2.0, 2.0, 2.0), 2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        m = re.fullmatch(r"sim grid_loss2_jitter2 connection \d: ([\d.]+) Mbit/s; per path, declared lost ([\d.]+)% of the "
                         r"packets sent, lost in the network ([\d.]+)%, a hole held (\d+)% of the time", line)
        assert m, line
        assert float(m[2]) > float(m[3]) > 1.0 and int(m[4]) > 80
