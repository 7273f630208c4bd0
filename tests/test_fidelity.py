"""Fidelity of the fluid simulator against the laws of docs/transport.md ("Laws a faithful model
reproduces"). Every test states its tolerance; paths have no jitter and order-preserving delay
(``jitter_reorders: false``); where randomness matters (random loss, BBR's random probing phase)
a batch of connections with independent random streams is averaged.

Throughput is measured from the sender's acknowledged bytes between two instants, after start-up
(``Simulator.advance`` to the first instant, then to the second): acknowledged bytes crossed the
bottleneck, so for the connection's own subflows this is the path's utilisation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import pytest

from envs import evaluation
from envs.scenario import Scenario, load_scenario, scenario_from_dict
from envs.sim.layout import BN_CAP, CN_T, COBS_ACKED, OBS_ACKED
from envs.sim.simulator import SimConfig, Simulator
from envs.sim.stacks import DEFAULT_STACK, STACKS, profile

CCS = ("reno", "cubic", "bbr", "bbr2")
BW_MBPS, DELAY_MS = 50.0, 20.0  # 40 ms RTT
RTT_S = 2 * DELAY_MS / 1000
CAPACITY = BW_MBPS * 125_000  # bytes/s
BDP = CAPACITY * RTT_S
LOSS_RATES = (0.001, 0.005, 0.01, 0.02)
UNBINDING_MBPS = 1000.0  # far above any loss-limited rate below


def one_path(duration_s: float, bandwidth_mbps: float = BW_MBPS, delay_ms: float = DELAY_MS,
             loss: float = 0.0, queue_bdp: float = 1.0, competing_cc: str | None = None) -> Scenario:
    """A single-path bulk scenario, optionally with one competing flow on the same bottleneck."""
    path = {"bandwidth_mbps": bandwidth_mbps, "delay_ms": delay_ms, "jitter_ms": 0.0,
            "loss_pct": 100.0 * loss, "queue_bdp": queue_bdp}
    if competing_cc is not None:
        path["competing"] = {"flows": 1, "cc": competing_cc}
    return scenario_from_dict({"name": "fidelity", "paths": [path], "jitter_reorders": False,
                               "workload": {"type": "bulk", "duration_s": duration_s}})


def started(scenario: Scenario, cc: str, batch: int, stack: str | None = None) -> Simulator:
    sim = Simulator(scenario, cc, batch=batch, seed=1, config=SimConfig(stack=stack) if stack else None)
    sim.reset()
    return sim


def steps(sim: Simulator, seconds: float) -> int:
    return round(seconds / sim.dt)


Counter = Callable[[Simulator], np.ndarray]


def rate(sim: Simulator, start_s: float, end_s: float, counter: Counter) -> np.ndarray:
    """Per-connection growth per second of ``counter(sim)`` from ``start_s`` to ``end_s`` (the
    simulation must stand at or before ``start_s``)."""
    sim.advance(steps(sim, start_s) - int(sim.cn[0, CN_T]))
    before = counter(sim).copy()
    sim.advance(steps(sim, end_s) - steps(sim, start_s))
    return (counter(sim) - before) / (end_s - start_s)


def subflow_acked(sim: Simulator) -> np.ndarray:
    """Bytes acknowledged on the connection's own subflows."""
    return sim.obs[:, : sim.P, OBS_ACKED].sum(axis=1)


def mean_rate(cc: str, scenario: Scenario, start_s: float, batch: int, stack: str | None = None) -> float:
    """Mean over the batch of the subflows' acknowledged rate (bytes/s) from start_s to 1 s
    before the end of the transfer (under ``stack``; None: the default)."""
    sim = started(scenario, cc, batch, stack)
    return float(rate(sim, start_s, scenario.workload.duration_s - 1.0, subflow_acked).mean())


# --------------------------------------------------------------------------- single path, no loss


@pytest.mark.parametrize("cc", CCS)
def test_single_path_full_utilisation(cc: str) -> None:
    """A buffer of 1 BDP and no random loss: every CC uses >= 90% of the path after start-up
    (5-29 s of a 30 s transfer; 50 Mbit/s, 40 ms RTT)."""
    utilisation = mean_rate(cc, one_path(30.0), 5.0, batch=2) / CAPACITY
    print(f"{cc}: utilisation {utilisation:.3f}")
    assert utilisation >= 0.90


# --------------------------------------------------------------------------- response functions


# the window's growth per round trip, in the stack's packets (NewReno's; CUBIC's Reno-friendly estimate:
# Linux's tcp_cubic.c is RFC 9438's, None: 3 (1 - beta) / (1 + beta)), and CUBIC's C per packet: each
# grows one MSS of its stack's CCs, XQUIC's XQC_MSS being 1436 / 1200 of its packet (envs/sim/stacks.py)
RENO_INCREASE = {stack: profile(stack).cc_mss_packets for stack in STACKS}
RENO_ALPHA = {"linux": None, "xquic": profile("xquic").cc_mss_packets}
CUBIC_C = {stack: 0.4 * profile(stack).cc_mss_packets for stack in STACKS}


def mathis_rate(p: float, rtt_s: float, stack: str = DEFAULT_STACK) -> float:
    """Reno under random loss p (Mathis et al., CCR 1997), bytes/s: packet/RTT * sqrt(3/(2p)) for one
    packet per round trip, sqrt(a * 3/(2p)) for the stack's growth a (AIMD(a, 1/2))."""
    return profile(stack).packet_bytes / rtt_s * math.sqrt(RENO_INCREASE[stack] * 3.0 / (2.0 * p))


def cubic_rate(p: float, rtt_s: float, stack: str, beta: float = 0.7) -> float:
    """RFC 9438 section 5.1 response function, bytes/s: the average window in the CUBIC region,
    ``(C (3 + beta) / (4 (1 - beta)))^(1/4) * RTT^(3/4) / p^(3/4)`` (= 1.054 ... for C = 0.4,
    beta = 0.7), or the Reno-friendly AIMD(alpha, beta) average
    ``sqrt(alpha (1 + beta) / (2 (1 - beta) p))`` where that is larger, with the stack's C
    (``CUBIC_C``) and alpha (``RENO_ALPHA``; None: RFC 9438's 3 (1 - beta) / (1 + beta), the average
    then sqrt(3/(2p))), in the stack's packets."""
    cubic = (CUBIC_C[stack] * (3.0 + beta) / (4.0 * (1.0 - beta))) ** 0.25 * (rtt_s / p) ** 0.75
    alpha = RENO_ALPHA[stack]
    if alpha is None:
        alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
    aimd = math.sqrt(alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * p))
    return max(cubic, aimd) * profile(stack).packet_bytes / rtt_s


@pytest.mark.parametrize("p", LOSS_RATES)
def test_reno_follows_mathis(p: float) -> None:
    """Reno at random loss p on a path whose capacity never binds: throughput within +-30% of
    Mathis (40 ms RTT; 10-59 s of 60 s; mean of 8 connections)."""
    measured = mean_rate("reno", one_path(60.0, UNBINDING_MBPS, loss=p), 10.0, batch=8)
    ratio = measured / mathis_rate(p, RTT_S)
    print(f"reno p={p}: throughput / Mathis = {ratio:.3f}")
    assert abs(ratio - 1.0) <= 0.30


@pytest.mark.parametrize(("stack", "p", "rtt_s", "duration_s"),
                         [(stack, p, RTT_S, 60.0) for stack in STACKS for p in LOSS_RATES]
                         + [(stack, 0.001, 0.2, 120.0) for stack in STACKS])
def test_cubic_follows_rfc9438(stack: str, p: float, rtt_s: float, duration_s: float) -> None:
    """CUBIC at random loss p, capacity never binding: throughput within +-35% of the RFC 9438
    response function (``cubic_rate``) with the stack's Reno-friendly growth (``RENO_ALPHA``).
    At 40 ms the Reno-friendly term is the larger one for every p here; 200 ms with p = 0.1%
    exercises the CUBIC region (10 s to the end; mean of 8)."""
    scenario = one_path(duration_s, UNBINDING_MBPS, delay_ms=500.0 * rtt_s, loss=p)
    ratio = mean_rate("cubic", scenario, 10.0, batch=8, stack=stack) / cubic_rate(p, rtt_s, stack)
    print(f"cubic {stack} p={p} rtt={rtt_s}: throughput / RFC 9438 = {ratio:.3f}")
    assert abs(ratio - 1.0) <= 0.35


# --------------------------------------------------------------------------- BBR under random loss


@pytest.mark.parametrize("p", (0.01, 0.05))
def test_bbr_ignores_random_loss(p: float) -> None:
    """BBRv1 keeps >= 80% utilisation at 1% and 5% random loss (1 BDP buffer; 5-29 s; mean of 4)."""
    utilisation = mean_rate("bbr", one_path(30.0, loss=p), 5.0, batch=4) / CAPACITY
    print(f"bbr p={p}: utilisation {utilisation:.3f}")
    assert utilisation >= 0.80


def test_bbr2_backs_off_under_random_loss() -> None:
    """At 5% random loss, above BBRv2's 2% loss threshold, BBRv2 gets at most half of BBRv1's
    throughput (1 BDP buffer; 5-29 s; mean of 4)."""
    scenario = one_path(30.0, loss=0.05)
    v1, v2 = (mean_rate(cc, scenario, 5.0, batch=4) for cc in ("bbr", "bbr2"))
    print(f"5% loss: bbr {v1 / CAPACITY:.3f}, bbr2 {v2 / CAPACITY:.3f} of capacity, ratio {v2 / v1:.3f}")
    assert v2 / v1 <= 0.5


# --------------------------------------------------------------------------- shared bottleneck queue


# XQUIC's BBRv1 differs from its BBRv2 in constants as well (cwnd gain 2.5 against 2, twice the
# ACK aggregation term, capped at 0.2 s against 0.1 s: envs/sim/stacks.py); the 1 BDP law is about
# BBRv2's loss bound, so its two BBRv1 flows run with BBRv2's constants there
BBR2_CONSTANTS = (("cwnd_gain", 2.0), ("extra_acked_gain", 1.0), ("extra_acked_max_s", 0.1))


@functools.cache
def standing_queue_bdp(cc: str, queue_bdp: float = 5.0, stack: str = "xquic",
                       params: tuple[tuple[str, float], ...] = ()) -> float:
    """Time-averaged bottleneck queue (in BDPs, sampled every 10 ms over 20-40 s) of one subflow
    plus one competing flow of the same CC, drop-tail buffer of ``queue_bdp``, under ``stack``
    with the CC's parameters ``params``; mean of 4 connections
    (``envs.evaluation.standing_queue_bdp``, cached for the tests below)."""
    return evaluation.standing_queue_bdp(cc, queue_bdp, bandwidth_mbps=BW_MBPS, delay_ms=DELAY_MS,
                                         config=SimConfig(stack=stack), cc_params=dict(params))


def test_second_flow_starts_as_the_live_harness_starts_it() -> None:
    """Every stack has the live harness's start of the second flow; the competing flow runs from it."""
    assert set(evaluation.SECOND_FLOW_START_S) == set(STACKS)
    path = evaluation.shared_bottleneck(5.0, "bbr2", competing_start_s=0.1).paths[0]
    assert path.competing.flows_schedule == [(0.0, 0), (0.1, 1)]
    assert evaluation.shared_bottleneck(5.0, "bbr2").paths[0].competing.flows_schedule is None


def test_two_bbr_flows_hold_one_bdp_queue() -> None:
    """Two BBRv1 flows, cwnd-limited at 2 x their (over-)estimated BDP, hold a standing queue of
    about one BDP (Scherrer et al., IMC 2022, on Linux's tcp_bbr.c, whose constants the linux
    stack has): 1 BDP +-40%."""
    queue = standing_queue_bdp("bbr", stack="linux")
    print(f"two bbr flows (stack linux): standing queue {queue:.2f} BDP")
    assert 0.6 <= queue <= 1.4


def test_two_bbr2_flows_hold_about_bbr_queue_in_a_deep_buffer() -> None:
    """docs/transport.md: BBRv2 bounds inflight by inflight_hi only after loss (or ECN); a 5 BDP
    buffer seldom overflows, so two BBRv2 flows hold about the queue two BBRv1 flows hold, as
    measured on XQUIC, each CC with its own constants (4.36 BDP against its BBRv1's 4.22,
    tests/data/live/queue.json): within 0.5 BDP of each other (the acceptance mark of a two-flow
    queue against live). Over 20-40 s the model gives bbr 4.77 and bbr2 4.28 BDP, 0.49 apart, on
    the mark's edge, since a declaration falls its detection delay after a point within its
    packet's step (2026-12-02); 4.76 and 4.21 (0.55, a strict xfail) before, 4.64 and 4.21 with RFC
    6182's 3 MB receive window before XQUIC's own 16 MiB (2026-11-30). Over the live table's
    10-30 s the model's BBRv1 queue is still growing (benchmarks.fidelity: 4.00 and 4.29 before)."""
    v1, v2 = standing_queue_bdp("bbr"), standing_queue_bdp("bbr2")
    print(f"two-flow standing queue, 5 BDP buffer: bbr {v1:.2f} BDP, bbr2 {v2:.2f} BDP")
    assert abs(v2 - v1) <= 0.5


def test_bbr2_loss_bound_holds_a_smaller_queue_in_a_shallow_buffer() -> None:
    """Where the buffer overflows (1 BDP), loss sets BBRv2's inflight_hi and cruise keeps 15%
    headroom below it, so two BBRv2 flows queue less than two BBRv1 flows; at most 90% of
    BBRv1's queue."""
    v1, v2 = standing_queue_bdp("bbr", 1.0, params=BBR2_CONSTANTS), standing_queue_bdp("bbr2", 1.0)
    print(f"two-flow standing queue, 1 BDP buffer: bbr {v1:.2f} BDP, bbr2 {v2:.2f} BDP")
    assert v2 <= 0.9 * v1


# --------------------------------------------------------------------------- two paths


def ispras_s3_bulk(duration_s: float) -> Scenario:
    """ISPRAS S3 (two identical lossless 70 Mbit/s, 30 ms RTT paths) as a bulk transfer."""
    base = load_scenario("ispras_s3").model_dump()
    return scenario_from_dict({**base, "jitter_reorders": False,
                               "workload": {"type": "bulk", "duration_s": duration_s}})


@pytest.mark.parametrize("cc", CCS)
def test_two_identical_paths_aggregate(cc: str) -> None:
    """minRTT (the default scheduler) over ISPRAS S3: the connection delivers >= 85% of the sum
    of the capacities (in-order bytes acknowledged, 5-25 s of 26 s; mean of 2)."""
    sim = started(ispras_s3_bulk(26.0), cc, batch=2)
    capacity = sim.bn[0, :, BN_CAP].sum() / sim.dt
    share = rate(sim, 5.0, 25.0, lambda s: s.cobs[:, COBS_ACKED]).mean() / capacity
    print(f"{cc}: aggregate {share:.3f} of the two paths' capacity")
    assert share >= 0.85
