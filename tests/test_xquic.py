"""XQUIC bindings (bindings/, envs/live/xquic.py): the C scheduler rules, real multipath XQUIC
transfers in a Mininet testbed, telemetry and mode switching, and decision parity of an exported
policy inside XQUIC's get_path with the Python policy.

Needs the mpsched_xquic extension (python -m envs.live.setup --xquic; README, "XQUIC"); the live
tests also need what tests/test_live.py needs. Skipped with the reason otherwise."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest
from conftest import skip_if_inconclusive, verified_or_skip

from envs.live.setup import unavailable_reason

try:
    import mpsched_xquic
    EXT_REASON = None
except ImportError as err:
    mpsched_xquic = None
    EXT_REASON = f"mpsched_xquic is not built ({err}): python -m envs.live.setup --xquic"
from envs.live.xquic import outdated  # noqa: E402 (plain Python; no extension)

EXT_REASON = EXT_REASON or (mpsched_xquic is not None and outdated(mpsched_xquic)) or None
LIVE_REASON = EXT_REASON or unavailable_reason()
needs_ext = pytest.mark.skipif(EXT_REASON is not None, reason=EXT_REASON or "")
needs_live = pytest.mark.skipif(LIVE_REASON is not None, reason=f"live XQUIC tests: {LIVE_REASON}")
pytestmark = pytest.mark.xquic

from envs.live.xquic import XquicResult, parse_scheduler, rule_params  # noqa: E402 (plain Python; no extension)
from envs.scenario import resolve_scenarios  # noqa: E402
from envs.sim.layout import (COBS_ACKED, COBS_BACKLOG, COBS_ELAPSED, COBS_RWND, N_COBS, N_OBS, OBS_ACKED,  # noqa: E402
                             OBS_AVAILABLE, OBS_CWND, OBS_DELIVERY_RATE, OBS_INFLIGHT, OBS_LATEST_RTT, OBS_RTTVAR,
                             OBS_SRTT)

MB = 10**6
MSS = 1200


# ------------------------------------------------------------------ without XQUIC

def test_an_out_of_order_abort_is_an_outcome_and_a_metric_not_an_error():
    P = 2
    r = XquicResult("cubic", "file", 5e6, None, 3e6, np.nan, 2.0, 0.05, np.zeros(0), np.zeros((0, P, N_OBS)),
                    np.zeros((0, N_COBS)), np.zeros((0, P), bool), np.array([10.0, 10.0]), np.zeros(2),
                    wall_s=2.0, error=None, extra={"outcome": "ooo_abort", "path_recv": [2e6, 1e6]})
    m = r.metrics()
    assert m["ooo_exceeded"][0] == 1.0 and np.isnan(m["completion_s"][0])
    assert m["goodput_mbps"][0] == pytest.approx(3e6 * 8 / 2.0 / 1e6)
    assert m["per_path_goodput_mbps"][0].tolist() == pytest.approx([8.0, 4.0])


def test_a_failed_transfer_quotes_why_and_when_xquic_closed_the_connection():
    from envs.live.xquic import close_line
    report = ("[report] |xqc_conn_destroy|0x5|has_0rtt:0|0rtt_accept:0|token_ok:-1|handshake_time:31|"
              "first_send_delay:0|conn_persist:812|keyupdate_cnt:0|err:0xa|close_msg:remote close|"
              "10.0.1.1:40000-10.0.1.2:4433|hsk_recv:31|close_recv:800|close_send:0|last_recv:800|last_send:790|")
    assert close_line(report) == ("err=0xa close_msg=remote close close_recv=800 close_send=0 last_recv=800 "
                                  "last_send=790")
    assert close_line("") == ""


def test_unknown_scheduler_names_and_missing_policy_headers_are_refused_before_the_extension_loads(tmp_path):
    with pytest.raises(Exception, match="unknown XQUIC scheduler 'fastest'.*valid: .*minrtt"):
        parse_scheduler("fastest")
    with pytest.raises(Exception, match="does not exist"):
        parse_scheduler(f"policy={tmp_path / 'none.h'}")


@needs_ext
def test_a_scheduler_name_resolves_to_the_installed_extensions_mode():
    assert parse_scheduler("ecf") == ("ecf", None)


def test_a_known_scheduler_without_the_extension_says_how_to_build_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpsched_xquic", None)  # import fails as when it was never built
    with pytest.raises(Exception, match=r"needs the mpsched_xquic extension: build it with python -m envs.live.setup --xquic"):
        parse_scheduler("ecf")


def constant_interval_header(path, modes, interval_ms=50.0, answer=0):
    """An exported interval policy over ``modes`` that always answers ``answer``."""
    from envs.features import feature_set
    from export.bodies import Dense, MLPBody
    from export.generate import PolicySpec, header
    feats = feature_set("ispras_backlog", 2)
    body = MLPBody([Dense(np.zeros((len(modes), len(feats))), np.eye(len(modes))[answer])])
    path.write_text(header(PolicySpec("modes", feats, "ispras_backlog", "interval", len(modes), False, [],
                                      modes=list(modes), interval_ms=interval_ms), body))
    return path


@needs_ext
def test_an_interval_policys_modes_are_xquic_schedulers_with_one_set_of_parameters_each(tmp_path):
    from envs.live.system import LiveError
    from envs.live.xquic import XquicBackend, interval_policy
    from envs.plugins import parse_scheduler_label, scheduler_label
    assert scheduler_label("wait_rule", {"k": 1.25}) == "wait_rule(k=1.25)" and scheduler_label("minrtt") == "minrtt"
    assert parse_scheduler_label("wait_rule(k=1.25)") == ("wait_rule", {"k": 1.25})
    ok = interval_policy(constant_interval_header(tmp_path / "ok.h", ["minrtt", "wait_rule(k=1.25)"], 20.0))
    assert ok.modes == ("minrtt", "wait_rule") and ok.interval_ms == 20.0 and ok.rules["wait_k"] == 1.25
    assert interval_policy(constant_interval_header(tmp_path / "rr.h", ["minrtt", "rr"])).rules["wait_k"] == 1.0  # the default
    with pytest.raises(LiveError, match="'wait_rule' with two sets of parameters"):
        interval_policy(constant_interval_header(tmp_path / "two.h", ["wait_rule(k=1.25)", "wait_rule(k=2)"]))
    with pytest.raises(Exception, match="unknown XQUIC scheduler 'otias'"):
        XquicBackend.check_scheduler(f"policy={constant_interval_header(tmp_path / 'otias.h', ['minrtt', 'otias'])}")
    with pytest.raises(Exception, match="'wait_rule' has no parameter 'beta'"):
        interval_policy(constant_interval_header(tmp_path / "beta.h", ["minrtt", "wait_rule(beta=1)"]))



@needs_ext
def test_live_env_runs_each_xquic_mode_with_its_parameters():
    """mpsched/Live-v0 over XQUIC takes modes with parameters, as the simulator's configs write them
    or as labels, and hands them to the transfer's C rules; one rule twice with different
    parameters, or a parameter its rule lacks, is refused before any testbed is built (until
    2026-11-30 any parameter was refused, so a learner over ``wait_rule(k=1.25)`` could not run live)."""
    from envs.live.env import LiveEnv
    from envs.live.system import LiveError
    from envs.live.xquic import XquicTransfer
    specs = [("minrtt", {}), ("wait_rule", {"k": 1.25})]
    for modes in (["minrtt", {"scheduler": "wait_rule", "params": {"k": 1.25}}], ["minrtt", "wait_rule(k=1.25)"]):
        assert LiveEnv(S3, "cubic", backend="xquic", modes=modes)._mode_specs == specs
    tr = XquicTransfer(None, "cubic", small(S3, 1).workload, scheduler="minrtt", modes=specs)
    assert tr.rules["wait_k"] == 1.25 and tr.rules == {**rule_params("minrtt"), "wait_k": 1.25}
    with pytest.raises(LiveError, match="'wait_rule' with two sets of parameters"):
        LiveEnv(S3, "cubic", backend="xquic", modes=["wait_rule(k=1)", "wait_rule(k=2)"])
    with pytest.raises(LiveError, match="'wait_rule' has no parameter 'beta'"):
        LiveEnv(S3, "cubic", backend="xquic", modes=["minrtt", "wait_rule(beta=1)"])
    with pytest.raises(LiveError, match="not as scheduler_params"):
        XquicTransfer(None, "cubic", small(S3, 1).workload, scheduler="wait_rule", scheduler_params={"k": 2.0},
                      modes=specs)


# ------------------------------------------------------------------ the C rules (extension, no network)

def state(srtt_ms, cwnd_pkts, inflight_pkts, avail, rttvar_ms=(1, 1), sampled=(1, 1)):
    obs = np.zeros((len(srtt_ms), N_OBS), np.uint64)
    obs[:, OBS_SRTT] = np.array(srtt_ms) * 1000
    obs[:, OBS_LATEST_RTT] = obs[:, OBS_SRTT] * np.array(sampled, np.uint64)
    obs[:, OBS_RTTVAR] = np.array(rttvar_ms) * 1000
    obs[:, OBS_CWND] = np.array(cwnd_pkts) * MSS
    obs[:, OBS_INFLIGHT] = np.array(inflight_pkts) * MSS
    obs[:, OBS_AVAILABLE] = avail
    return obs


def conn(backlog_pkts, rwnd_bytes=10 * MB, elapsed_us=0):
    c = np.zeros(N_COBS, np.uint64)
    c[COBS_BACKLOG] = backlog_pkts * MSS
    c[COBS_RWND] = rwnd_bytes
    c[COBS_ELAPSED] = elapsed_us
    return c


@needs_ext
def test_minrtt_and_rr_rules():
    r = mpsched_xquic.Rules()
    s = state([30, 10], [10, 10], [0, 10], [1, 0])
    assert r.pick("minrtt", s, conn(100)) == 0  # the fast path is full: the available one
    assert r.pick("minrtt", state([30, 10], [10, 10], [0, 0], [1, 1]), conn(100)) == 1
    assert r.pick("minrtt", state([30, 10], [10, 10], [10, 10], [0, 0]), conn(100)) == -1
    both = state([30, 10], [10, 10], [0, 0], [1, 1])
    assert [r.pick("rr", both, conn(100)) for _ in range(4)] == [0, 1, 0, 1]


@needs_ext
def test_ecf_waits_for_the_fast_path_when_it_finishes_first_and_has_hysteresis():
    r = mpsched_xquic.Rules(ecf_beta=0.25)
    # F: 10 ms, 20 packets, full; S: 100 ms. 10 packets waiting: n = 1.5, 15 ms < 101 ms, and
    # (10 / 20) * 100 = 50 >= 2 * 10 + 1: wait for F
    s = state([10, 100], [20, 20], [20, 0], [0, 1])
    assert r.pick("ecf", s, conn(10)) == -1 and r.ecf_waiting
    # a long backlog: F cannot finish it first (n tau_F = 51 * 10 >> 101): send on S, waiting reset
    assert r.pick("ecf", s, conn(1000)) == 1 and not r.ecf_waiting
    # F has window: F
    assert r.pick("ecf", state([10, 100], [20, 20], [0, 0], [1, 1]), conn(10)) == 0
    # S has no RTT sample yet (its srtt is XQUIC's initial 250 ms guess): try it
    unsampled = state([10, 250], [20, 20], [20, 0], [0, 1], sampled=(1, 0))
    assert r.pick("ecf", unsampled, conn(10)) == 1 and r.pick("blest", unsampled, conn(10, MSS)) == 1
    # F blocked with nothing in flight: no ACK would reopen it, so waiting would stall: S
    idle = state([10, 100], [20, 20], [0, 0], [0, 1])
    assert r.pick("ecf", idle, conn(10)) == 1 and r.pick("blest", idle, conn(10, MSS)) == 1


@needs_ext
def test_wait_rule_sends_on_the_second_path_when_it_delivers_within_k_times_the_fast_one():
    # F: 10 ms, 20 packets, full; S: 100 ms. t_F = 5 ms + 10 ms x backlog / 20 packets, t_S = 50 ms
    s = state([10, 100], [20, 20], [20, 0], [0, 1])
    assert mpsched_xquic.Rules().pick("wait_rule", s, conn(10)) == -1  # t_F 10 ms: wait
    assert mpsched_xquic.Rules().pick("wait_rule", s, conn(1000)) == 1  # t_F 505 ms: send on S
    assert mpsched_xquic.Rules(wait_k=10.0).pick("wait_rule", s, conn(10)) == 1  # 50 <= 10 x 10 ms
    assert mpsched_xquic.Rules().pick("wait_rule", state([10, 100], [20, 20], [0, 0], [1, 1]), conn(10)) == 0


@needs_ext
def test_blest_waits_when_the_slow_path_would_block_the_window_and_lambda_adapts():
    r = mpsched_xquic.Rules(blest_lambda_step=0.1)
    s = state([10, 40], [20, 20], [20, 5], [0, 1])
    # X = mss (20 + 1.5) 4 = 86 mss; window 50 mss - 6 mss: wait
    assert r.pick("blest", s, conn(100, rwnd_bytes=50 * MSS)) == -1
    # a large window: send on S
    assert r.pick("blest", s, conn(100, rwnd_bytes=1000 * MSS)) == 1
    assert r.blest_lambda == pytest.approx(1.0)
    # receive-window limited (at most 2 MSS free): lambda grows once per srtt of F (10 ms), to 1.3
    for k in range(1, 6):
        r.pick("blest", s, conn(100, rwnd_bytes=MSS, elapsed_us=11_000 * k))
    assert r.blest_lambda == pytest.approx(1.3)


@needs_ext
@pytest.mark.parametrize("name", ["ecf", "blest", "wait_rule"])
def test_the_c_ecf_blest_and_wait_rule_decide_as_the_python_heuristics(name):
    """Random path states (2-3 paths), in sequences so that ECF's hysteresis and BLEST's lambda
    carry over, fed to the Python heuristic (simulator units) and the C rule (XQUIC's units); the
    wait rule at its default k = 1 (envs/schedulers/wait_rule.py).
    Paths are drawn with and without an RTT sample (ECF and BLEST send a second path without one
    the packet; the wait rule reads its srtt alike). States where the C rules' documented XQUIC
    difference applies (nothing in flight on the fast path) are not drawn."""
    from envs.plugins import scheduler_id, scheduler_params
    from envs.plugins.dispatch import pick
    sid, prm = scheduler_id(name), scheduler_params(name, None, 3)
    rng = np.random.default_rng(0)
    waits = on_s = 0
    for seq in range(20):
        n = int(rng.integers(2, 4))
        rules, st, t_us = mpsched_xquic.Rules(), np.zeros(16), 0
        for _ in range(150):
            srtt_ms = rng.integers(2, 200, n)
            cwnd = rng.integers(2, 80, n)
            infl = np.minimum(rng.integers(1, 90, n), cwnd + 5)
            avail = (infl + 1 <= cwnd) & (rng.random(n) < 0.7)
            sampled = (rng.random(n) < 0.8).astype(int)
            c_obs = state(srtt_ms, cwnd, infl, avail, rttvar_ms=rng.integers(0, 30, n), sampled=sampled)
            t_us += int(rng.integers(1, 40)) * 1000 + 7  # never exactly one srtt (whole ms) apart
            free = int(rng.choice([rng.integers(0, 3 * MSS), rng.integers(0, 400 * MSS)]))
            c_conn = conn(int(rng.integers(0, 2000)), free, t_us)
            py_obs = c_obs.astype(float)
            for i in (OBS_SRTT, OBS_LATEST_RTT, OBS_RTTVAR):
                py_obs[:, i] /= 1e6  # us -> s
            py_conn = c_conn.astype(float)
            py_conn[COBS_ELAPSED] /= 1e6
            mask = int(pick(sid, prm, st, py_obs, py_conn, n, float(MSS), np.array([1], np.uint64), 0))
            expect = mask.bit_length() - 1  # WAIT (0) -> -1
            got = rules.pick(name, c_obs, c_conn)
            assert got == expect, (name, seq, c_obs[:, [OBS_SRTT, OBS_CWND, OBS_INFLIGHT, OBS_AVAILABLE]], c_conn)
            if name == "blest":
                assert rules.blest_lambda == pytest.approx(1.0 + st[0])
            elif name == "ecf":
                assert rules.ecf_waiting == bool(st[0])
            if not avail[int(np.argmin(srtt_ms))]:  # F blocked: the rule itself decided
                waits += got == -1
                on_s += got >= 0
    assert waits > 50 and on_s > 50  # both of its answers were compared


@needs_ext
@pytest.mark.parametrize("name,alpha", [("hsr", None), ("lws", None), ("lts", None), ("kato", 0.0), ("kato", 1.0)])
def test_the_c_hsr_lws_lts_and_kato_decide_as_the_python_heuristics(name, alpha):
    """Random path states (2-4 paths) fed to the Python heuristic (simulator units) and the C rule
    (XQUIC's units); KATO in sequences (its running mean carries over, one sample per call: the
    calls are at least 1 ms apart) with alpha 0 (always the path above the mean) and 1 (always
    the one below), where its draw cannot differ."""
    from envs.live.xquic import extension
    from envs.plugins import scheduler_id, scheduler_params
    from envs.plugins.dispatch import pick
    mx = extension()  # a build older than these rules is refused here, naming the rebuild
    sid = scheduler_id(name)
    prm = scheduler_params(name, None if alpha is None else {"alpha": alpha}, 4)
    rng = np.random.default_rng(1)
    chosen = set()
    for seq in range(20):
        n = int(rng.integers(2, 5))
        rules = mx.Rules(kato_alpha=0.5 if alpha is None else alpha)
        st, t_us = np.zeros(16), 0
        for _ in range(100):
            srtt_ms = rng.integers(2, 200, n)
            cwnd = rng.integers(2, 80, n)
            infl = np.minimum(rng.integers(0, 90, n), cwnd + 5)
            avail = (infl + 1 <= cwnd) & (rng.random(n) < 0.8)
            sampled = (rng.random(n) < 0.9).astype(int)
            c_obs = state(srtt_ms, cwnd, infl, avail, rttvar_ms=np.ones(n, int), sampled=sampled)
            c_obs[:, OBS_LATEST_RTT] = np.where(sampled, rng.integers(2, 200, n) * 1000, 0)
            t_us += int(rng.integers(1, 40)) * 1000
            c_conn = conn(int(rng.integers(0, 2000)), 10 * MB, t_us)
            py_obs = c_obs.astype(float)
            for i in (OBS_SRTT, OBS_LATEST_RTT, OBS_RTTVAR):
                py_obs[:, i] /= 1e6
            py_conn = c_conn.astype(float)
            py_conn[COBS_ELAPSED] /= 1e6
            mask = int(pick(sid, prm, st, py_obs, py_conn, n, float(MSS), np.array([1], np.uint64), 0))
            expect = mask.bit_length() - 1
            got = rules.pick(name, c_obs, c_conn)
            assert got == expect, (name, seq, c_obs[:, [OBS_SRTT, OBS_LATEST_RTT, OBS_CWND, OBS_INFLIGHT,
                                                         OBS_AVAILABLE]])
            chosen.add(got)
    assert {-1, 0, 1} <= chosen  # waits and several paths were compared


@needs_ext
def test_the_c_lia_increase_is_rfc6356_as_the_simulator_computes_it():
    """RFC 6356 sec. 3 on random windows and RTTs (2-8 paths, some without an RTT sample): the C
    increase equals min(alpha acked mss / cwnd_total, acked mss / cwnd_i) with the simulator's
    alpha and window sum (envs/cc/lia.py, over the paths with an RTT estimate). Two equal paths
    grow by a quarter of Reno's increase each (the pair together by half a Reno: alpha = 1/2); one
    path alone, or a path without an RTT sample, grows as Reno."""
    from envs.cc import lia
    from envs.cc.base import CWND
    from envs.cc.coupled import SRTT, window_sum
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        cwnd = rng.uniform(2, 200, n) * MSS
        srtt_us = rng.uniform(2e3, 300e3, n) * (rng.random(n) < 0.85)
        i = int(rng.integers(0, n))
        srtt_us[i] = srtt_us[i] or 50e3
        C = np.zeros((n, SRTT + 1))
        C[:, CWND], C[:, SRTT] = cwnd, srtt_us / 1e6
        coupled = lia.alpha(C, 0, n) * MSS * MSS / window_sum(C, 0, n)
        expect = min(coupled, MSS * MSS / cwnd[i])
        assert mpsched_xquic.lia_increase(cwnd.tolist(), srtt_us.tolist(), i, MSS, MSS) == pytest.approx(expect,
                                                                                                     rel=1e-9)
    reno = MSS * MSS / (10 * MSS)
    assert mpsched_xquic.lia_increase([10 * MSS] * 2, [20e3] * 2, 0, MSS, MSS) == pytest.approx(reno / 4)
    assert mpsched_xquic.lia_increase([10 * MSS], [20e3], 0, MSS, MSS) == pytest.approx(reno)
    assert mpsched_xquic.lia_increase([10 * MSS, 10 * MSS], [0.0, 20e3], 0, MSS, MSS) == pytest.approx(reno)
    with pytest.raises(ValueError, match="path index"):
        mpsched_xquic.lia_increase([MSS], [1e3], 1, MSS)


def random_paths(rng: np.random.Generator) -> tuple[int, np.ndarray, np.ndarray, int]:
    """2-8 paths' windows (bytes) and smoothed RTTs (us; some without a sample), and a path i that has one."""
    n = int(rng.integers(2, 9))
    cwnd = rng.uniform(2, 200, n) * MSS
    srtt_us = rng.uniform(2e3, 300e3, n) * (rng.random(n) < 0.85)
    i = int(rng.integers(0, n))
    srtt_us[i] = srtt_us[i] or 50e3
    return n, cwnd, srtt_us, i


@needs_ext
def test_the_c_olia_and_balia_rules_are_the_simulators():
    """OLIA (Khalili et al. 2012) and BALIA (Peng et al. 2016) on random windows, RTTs and loss
    intervals (2-8 paths, some without an RTT sample, some windows tied for the largest): the C
    window change per acknowledged MSS equals the simulator's (envs/cc/olia.py epsilon and increase,
    envs/cc/balia.py alpha and increase), OLIA's epsilon included, which moves window from the
    largest-window paths to the best paths not among them. Two equal paths grow by a quarter of
    Reno's increase each under both; one path alone grows as Reno; BALIA's decrease factor is
    min(alpha, 1.5) / 2 of the window."""
    from envs.cc import balia, olia
    from envs.cc.base import CWND
    from envs.cc.coupled import SRTT, rate_sum
    rng = np.random.default_rng(5)
    signs = set()
    for k in range(400):
        n, cwnd, srtt_us, i = random_paths(rng)
        if k % 3 == 0:
            cwnd[(i + 1) % n] = cwnd.max()  # a tie for the largest window
        loss_bytes = rng.uniform(0, 5e6, n) * (rng.random(n) < 0.9)
        C = np.zeros((n, olia.L_CUR + 1))
        C[:, CWND], C[:, SRTT], C[:, olia.L_CUR] = cwnd, srtt_us / 1e6, loss_bytes
        eps = olia.epsilon(C, i, 0, n)
        signs.add(np.sign(eps))
        total = rate_sum(C, 0, n)
        w, rtt = cwnd[i], srtt_us[i] / 1e6
        expect = MSS * MSS * ((w / (rtt * rtt)) / (total * total) + eps / w)
        got = mpsched_xquic.olia_increase(cwnd.tolist(), srtt_us.tolist(), loss_bytes.tolist(), i, MSS, MSS)
        assert got == pytest.approx(expect, rel=1e-9, abs=1e-9)
        a = balia.alpha(C, i, 0, n)
        assert mpsched_xquic.balia_alpha(cwnd.tolist(), srtt_us.tolist(), i) == pytest.approx(a, rel=1e-9)
        expect = MSS * MSS * (w / rtt) / (rtt * total * total) * (1 + a) / 2 * (4 + a) / 5
        assert mpsched_xquic.balia_increase(cwnd.tolist(), srtt_us.tolist(), i, MSS, MSS) == pytest.approx(
            expect, rel=1e-9)
    assert signs == {-1.0, 0.0, 1.0}  # every case of epsilon was compared
    reno = MSS * MSS / (10 * MSS)
    assert mpsched_xquic.olia_increase([10 * MSS] * 2, [20e3] * 2, [1e6] * 2, 0, MSS, MSS) == pytest.approx(reno / 4)
    assert mpsched_xquic.balia_increase([10 * MSS] * 2, [20e3] * 2, 0, MSS, MSS) == pytest.approx(reno / 4)
    assert mpsched_xquic.olia_increase([10 * MSS], [20e3], [1e6], 0, MSS, MSS) == pytest.approx(reno)
    assert mpsched_xquic.balia_increase([10 * MSS], [20e3], 0, MSS, MSS) == pytest.approx(reno)
    assert mpsched_xquic.balia_alpha([10 * MSS, 40 * MSS], [20e3, 20e3], 0) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="one loss interval per path"):
        mpsched_xquic.olia_increase([MSS, MSS], [1e3, 1e3], [0.0], 0, MSS)


# ------------------------------------------------------------------ live transfers# ------------------------------------------------------------------ live transfers

S3 = "ispras_s3"


def small(name: str, file_mb: float):
    return resolve_scenarios(name)[0].with_workload(file_mb=file_mb)


@pytest.fixture(scope="module")
def testbed():
    from envs.live.testbed import Testbed
    tb = verified_or_skip(lambda: Testbed(small(S3, 2), verify=True))
    try:
        yield tb
    finally:
        problems = tb.close()
        assert not problems, problems
        assert not tb.leftovers()


def transfer(tb, cc, sched, **kw):
    from envs.live.xquic import XquicBackend
    tr = XquicBackend.transfer(tb, cc, tb.scenario.workload, kw.pop("telemetry_ms", 10.0), sched, **kw)
    r = tr.run(60)
    assert tr.done.is_set()  # finished within the 60 s
    return tr, r


@needs_live
@pytest.mark.live
@pytest.mark.parametrize("cc, sched", [("cubic", "minrtt"), ("bbr2", "ecf"), ("reno", "rr"), ("bbr", "blest"),
                                       ("olia", "lts"), ("balia", "hsr")])
def test_a_real_multipath_transfer_completes_over_both_paths(testbed, cc, sched):
    tr, r = transfer(testbed, cc, sched, decision_every=50)
    assert r.error is None and r.extra["outcome"] == "finished", r.extra
    m = r.metrics()
    assert r.extra["paths_created"] == 2
    assert sum(r.extra["path_recv"]) == 2 * MB and min(r.extra["path_recv"]) > 0  # both paths carried data
    assert 5 < m["goodput_mbps"][0] < 140 and m["completion_s"][0] > 0
    # the loop's socket reads (client, server): each passes one or more datagrams to XQUIC, the
    # server's at least the 2 MB file's packets
    reads, grams = r.extra["recv_reads"], r.extra["recv_datagrams"]
    assert all(0 < n <= g for n, g in zip(reads, grams)) and grams[1] >= 2 * MB // 1500, r.extra
    d = tr.decisions()
    assert len(d["t"]) > 10 and set(np.unique(d["chosen"])) <= {-1, 0, 1}
    assert (d["mode"] == mpsched_xquic.MODES.index(sched)).all()
    assert len(r.times) > 3 and (np.diff(r.times) > 0).all()  # interval records every 10 ms
    srtt = r.obs[:, :, OBS_SRTT][r.has_subflow]
    assert 0.025 < np.median(srtt) < 0.2  # base RTT 30 ms (seconds, simulator units)


@needs_live
@pytest.mark.live
@pytest.mark.parametrize("cc", ["cubic", "bbr"])
def test_the_delivery_rate_is_the_latest_sample_under_every_cc_not_bbrs_estimate(testbed, cc):
    """``delivery_rate`` means what it means in the simulator and under Linux, the latest
    delivery-rate sample (bindings/src/mps_xquic.c ``rate_sample``), under every CC: XQUIC computes
    samples for BBR only, and the extension used to report BBR's bandwidth estimate, 0 under CUBIC.
    BBR's estimate, the windowed maximum of those samples, is the records' ``cc_bw``
    (docs/architecture.md, "From the simulator to a real transport")."""
    tr, r = transfer(testbed, cc, "minrtt")
    assert r.extra["outcome"] == "finished", r.extra
    obs, bw = r.obs, np.asarray(tr.intervals()["cc_bw"], float)  # the records r.obs was read from
    rate = obs[:, :, OBS_DELIVERY_RATE]
    delivering = r.has_subflow & (obs[:, :, OBS_ACKED] > 0)
    for k, path in enumerate(testbed.scenario.paths):
        got = rate[delivering[:, k], k]
        assert len(got) > 10 and np.mean(got > 0) > 0.9, (k, np.mean(got > 0))
        assert 0 < np.median(got) <= 1.2 * path.bandwidth_mbps * 1e6 / 8, (k, np.median(got))
    if cc == "bbr":  # each sample enters BBR's maximum filter: never above it
        both = delivering & (bw > 0)
        assert both.sum() > 10 and np.all(rate[both] <= bw[both] + 1.0)
    else:
        assert not bw.any()  # CUBIC has no bandwidth estimate


@needs_live
@pytest.mark.live
def test_the_mode_set_from_python_takes_effect_in_the_next_interval(testbed):
    import time
    from envs.live.xquic import XquicBackend
    tr = XquicBackend.transfer(testbed, "cubic", testbed.scenario.workload, 5.0, "minrtt", decision_every=1)
    try:
        tr.start()
        time.sleep(0.05)
        tr.set_mode("rr")
        assert tr.wait(60)
        r = tr.result()
    finally:
        tr.stop()
    assert r.extra["outcome"] == "finished"
    iv = tr.intervals()
    assert iv["mode"][0] == 0 and iv["mode"][-1] == mpsched_xquic.MODES.index("rr")
    d = tr.decisions()
    rr = d["mode"] == mpsched_xquic.MODES.index("rr")
    assert rr.any() and (~rr).any()
    chosen = d["chosen"][rr & (d["chosen"] >= 0)]
    assert set(np.unique(chosen)) == {0, 1}


@needs_live
@pytest.mark.live
def test_a_transfer_stopped_by_its_caller_says_so(testbed):
    import time
    from envs.live.xquic import XquicBackend
    big = testbed.scenario.with_workload(file_mb=200).workload
    tr = XquicBackend.transfer(testbed, "cubic", big, 10.0, "minrtt")
    try:
        tr.start()
        time.sleep(0.3)
        r = tr.result()
    finally:
        tr.stop()
    assert r.extra["outcome"] == "stopped"
    assert r.error.startswith("stopped by the caller after ") and f"of {200 * MB} bytes delivered" in r.error
    assert 0 < r.extra["delivered"] < 200 * MB


@needs_live
@pytest.mark.live
def test_a_sender_xquic_leaves_stuck_with_window_room_is_resumed_not_left_to_its_idle_timeout():
    """Reno at its 2-packet window under 5 ms of jitter: XQUIC drops the copies of packets declared
    lost spuriously at send time after they filled the window and schedules nothing again (README,
    "XQUIC"); without the event loop's resume most 10 s transfers here stopped sending for good."""
    from benchmarks.record_reference import grid_scenario
    from envs.live.testbed import Testbed
    from envs.live.xquic import XquicBackend
    from envs.scenario import WorkloadSpec
    tb = verified_or_skip(lambda: Testbed(grid_scenario(0.5, 5.0, 6.0), verify=True))
    try:
        for _ in range(2):
            tr = XquicBackend.transfer(tb, "reno", WorkloadSpec(type="file", file_mb=100.0, duration_s=6.0))
            r = tr.run(40)
            assert r.extra["outcome"] == "timeout" and "sends_resumed" in r.extra, r.extra
            acked = tr.intervals()["cobs"][:, COBS_ACKED].astype(float)
            t = r.times
            moved = t[1:][np.diff(acked) > 0]
            assert len(moved) and t[-1] - moved[-1] < 1.0 and np.diff(moved).max() < 1.0  # never stopped
            assert r.metrics()["goodput_mbps"][0] > 0.5  # 2-4 packets a round trip; stopped runs 0.08-0.6
    finally:
        problems = tb.close()
        assert not problems, problems


@needs_live
@pytest.mark.live
def test_a_path_whose_path_response_was_lost_is_challenged_again_not_left_validating(testbed):
    """XQUIC sends one PATH_CHALLENGE on a new path and never resends a PATH_RESPONSE: when the
    response is lost (1% loss on ispras_s1/s2's second path), the client's path stays validating
    for the whole connection and the file goes over path 1 alone (README, "XQUIC"). The server
    here drops its first two datagrams on path 2 (its own PATH_CHALLENGE, repaired by XQUIC, and
    its PATH_RESPONSE); the event loop challenges the path again after a PTO (revalidate_paths)."""
    from envs.live.xquic import XquicBackend
    big = testbed.scenario.with_workload(file_mb=30).workload
    runs = {}
    for revalidate in (False, True):
        tr = XquicBackend.transfer(testbed, "cubic", big, 10.0, "minrtt")
        kwargs = tr._rule_kwargs()
        tr._rule_kwargs = lambda kw=kwargs, r=revalidate: {**kw, "revalidate_paths": r, "drop_new_path_datagrams": 2}
        r = tr.run(60)
        assert r.extra["outcome"] == "finished", r.extra
        runs[revalidate] = r.extra
    stuck, fixed = runs[False], runs[True]
    # XQUIC alone: path 2 created, the server's end validated, the client's still validating (1)
    assert stuck["paths_created"] == 2 and [tuple(s) for s in stuck["path_state"]] == [(2, 2), (1, 2)], stuck
    assert np.isnan(stuck["path_validated_s"][1]) and stuck["path_recv"][1] == 0 and stuck["challenges_resent"] == 0
    # challenged again: validated within a second (XQUIC's initial PTO is 775 ms) and used
    assert [tuple(s) for s in fixed["path_state"]] == [(2, 2), (2, 2)] and fixed["challenges_resent"] >= 1, fixed
    assert 0 < fixed["path_validated_s"][1] < 2.0 and fixed["path_recv"][1] > 0


@pytest.fixture(scope="module")
def dqn_header(tmp_path_factory):
    """An ISPRAS DQN (configs/agent/dqn.yaml) after a few simulated steps (its initial network),
    exported."""
    import torch
    from omegaconf import OmegaConf

    from agents.registry import make_agent
    from envs.vector_env import SB3VecEnv
    from export import export_agent
    cfg = OmegaConf.to_container(OmegaConf.load("configs/agent/dqn.yaml"))
    spec, env = cfg["agent"], cfg["env"]
    torch.manual_seed(0)
    agent = make_agent(spec, 6, 2, seed=0)
    venv = SB3VecEnv(2, scenario=small(S3, 0.2), cc="cubic", seed=1, decision=env["decision"],
                     observation=env["observation"], reward=env["reward"]["name"])
    agent.learn(venv, 64, Always())
    meta = {"agent": "dqn", "kind": "sb3", "observation": env["observation"], "n_features": 6, "n_actions": 2,
            "n_paths": 2, "decision": env["decision"], "spec": spec, "seed": 0, "steps_done": 0, "finished": True,
            "config_hash": "test", "scenarios": [S3], "ccs": ["cubic"]}
    path = tmp_path_factory.mktemp("xquic") / "dqn.h"
    export_agent(agent, meta, path, prefix="dqn_xquic")
    return agent, meta, path


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


@needs_live
@pytest.mark.live
def test_the_exported_policy_inside_xquic_picks_what_the_python_policy_picks(testbed, dqn_header):
    from export.runtime import ExportedPolicy
    agent, meta, header = dqn_header
    tr, r = transfer(testbed, "cubic", f"policy={header}", decision_every=1)
    assert r.extra["outcome"] == "finished" and r.extra["policy_errors"] == 0, r.extra
    assert 0 < r.extra["policy_ns"] < 1e6
    d = tr.decisions()
    both = d["active"].all(axis=1)  # the policy decides once both paths exist (minRTT before)
    pr, cr, chosen = d["obs"][both], d["cobs"][both], d["chosen"][both]
    assert len(chosen) > 500
    from export.runtime import blocked_decision
    py = blocked_decision(lambda x: agent.act(x, deterministic=True), meta["observation"], pr, cr, np.full(len(pr), 2))
    c = ExportedPolicy(header).decide(pr, cr, np.full(len(pr), 2, np.int32))
    assert (c == py).all()  # recorded XQUIC states: the header in C and the Python policy agree
    assert (chosen == py).all()  # ... and what XQUIC's get_path chose is that decision
    blocked = (pr[np.arange(len(pr)), np.argmin(pr[..., OBS_SRTT], axis=1), OBS_AVAILABLE] == 0)
    assert blocked.any()  # the policy (not only the fast-path rule) was asked


@pytest.fixture(scope="module")
def interval_header(tmp_path_factory):
    """An exported interval policy over minRTT and RR every 20 ms: minRTT while more than half of
    the 2 MB file is left to acknowledge, RR after (feature ``remaining`` is bytes / 10 MB)."""
    from envs.features import feature_set
    from export.bodies import Dense, MLPBody
    from export.generate import PolicySpec, header
    feats = feature_set("full", 2)
    w = np.zeros((2, len(feats)))
    w[0, [f.name for f in feats].index("remaining")] = 10.0
    body = MLPBody([Dense(w, np.array([0.0, 1.0]))])
    path = tmp_path_factory.mktemp("xquic") / "modes.h"
    path.write_text(header(PolicySpec("modes_xquic", feats, "full", "interval", 2, False, [("agent", "test")],
                                      modes=["minrtt", "rr"], interval_ms=20.0), body))
    return path


@needs_live
@pytest.mark.live
def test_an_exported_interval_policy_inside_xquic_runs_the_mode_it_picks(testbed, interval_header):
    from export.runtime import ExportedPolicy
    tr, r = transfer(testbed, "cubic", f"policy={interval_header}", decision_every=1)
    assert r.extra["outcome"] == "finished" and r.extra["policy_errors"] == 0, r.extra
    pd = tr.policy_decisions()
    n = len(pd["t"])
    # one decision every 20 ms, from the first with both paths (minRTT before) to the end of the transfer
    assert 0 < pd["t"][0] < 0.5 and pd["active"].all()
    assert abs(n - 1 - (r.metrics()["completion_s"][0] - pd["t"][0]) / 0.02) <= 2, (n, pd["t"], r.extra)
    # on a 20 ms grid from the first (mps_xquic.c): a late one is followed by the next on time, so
    # two can be under 15 ms apart on a loaded machine, but never two in one interval of the grid
    # (its origin up to 2 ms before the first, which may come a loop's millisecond late)
    assert sum(r.extra["policy_intervals"]) == n
    assert (np.diff(np.floor((pd["t"] - pd["t"][0]) / 0.02 + 0.1)) >= 1).all(), pd["t"]
    assert list(np.unique(pd["chosen"])) == [0, 1]  # minRTT first, then RR
    assert (np.diff(pd["chosen"]) >= 0).all()
    modes = [mpsched_xquic.MODES.index(m) for m in ("minrtt", "rr")]
    assert (pd["mode"] == np.array(modes)[pd["chosen"]]).all()
    # what the header decides on the states XQUIC recorded is what XQUIC ran
    c = ExportedPolicy(interval_header).decide(pd["obs"], pd["cobs"], np.full(n, 2, np.int32))
    assert (c == pd["chosen"]).all()
    # and every packet decision in between ran the mode in force
    d = tr.decisions()
    switch = pd["t"][np.argmax(pd["chosen"])]
    assert (d["mode"][d["t"] < pd["t"][0]] == modes[0]).all()
    assert (d["mode"][d["t"] > switch] == modes[1]).all() and (d["mode"][d["t"] < switch] == modes[0]).all()
    rr = d["chosen"][(d["t"] > switch) & (d["chosen"] >= 0)]
    assert set(np.unique(rr)) == {0, 1}  # RR alternates
    # the telemetry stays the 10 ms records only: none of the policy's decisions among them. The
    # records keep a 10 ms grid (mps_xquic.c: a late one is followed by the next on time, so two
    # can be under 5 ms apart on a loaded machine; the first is where the transfer started, off
    # the grid), so there are at most span / 10 ms + 2 (a policy decision among them every 20 ms
    # would add half as many again)
    iv = tr.intervals()
    assert (iv["chosen"] == -2).all()
    assert len(iv["t"]) <= (iv["t"][-1] - iv["t"][0]) / 0.01 + 2, np.diff(iv["t"])


@needs_live
@pytest.mark.live
def test_the_wait_rule_leaves_a_slow_path_without_an_rtt_sample_as_the_simulators_rule_does(tmp_path):
    """hetero_file (50 Mbit/s 20 ms beside 5 Mbit/s 200 ms, 2 MB): the second path opens when the
    fast one's queue drains sooner than the slow path's one-way delay, so the simulator's wait rule
    never uses it (42.78 Mbit/s, all on path 1). Until 2026-11-30 the C rule sent a path without
    an RTT sample the packet, its whole first window (36 packets, 38.6-38.9 Mbit/s live); and an
    interval policy choosing the rule decided only in the event loop, after minRTT (its mode until
    then) had sent that window in the call that found the new path."""
    from envs.evaluation import evaluate_heuristic
    from envs.live.testbed import Testbed
    from envs.sim.simulator import SimConfig
    scen = resolve_scenarios("hetero_file")[0]
    sim = evaluate_heuristic(scen, "bbr", "wait_rule", 2, 0, SimConfig(stack="xquic"), {})
    assert (np.asarray(sim["per_path_goodput_mbps"])[:, 1] == 0).all()
    tb = verified_or_skip(lambda: Testbed(scen, verify=True))
    policy = constant_interval_header(tmp_path / "rule.h", ["minrtt", "wait_rule"], answer=1)
    try:
        runs = [transfer(tb, "bbr", sched, decision_every=1) for sched in ("wait_rule", f"policy={policy}")]
    finally:
        problems = tb.close()
        assert not problems, problems
    for tr, r in runs:
        assert r.extra["outcome"] == "finished" and r.extra["path_recv"][1] == 0, r.extra["path_recv"]
        d = tr.decisions()
        assert (d["chosen"] != 1).all() and (d["chosen"] == -1).any()  # it waited, and never sent on S
    assert (runs[1][0].policy_decisions()["chosen"] == 1).all()


@needs_live
@pytest.mark.live
def test_live_env_with_xquic_applies_each_action_for_the_next_interval():
    import gymnasium as gym
    import envs  # noqa: F401 (registers the environments)
    env = gym.make("mpsched/Live-v0", scenario=small(S3, 3), cc="cubic", backend="xquic",
                   modes=["minrtt", "rr"], interval_ms=50, observation="leeyoo", verify=False)
    try:
        obs, info = env.reset(seed=0)
        assert info["backend"] == "xquic" and obs.shape == env.observation_space.shape
        tr = env.unwrapped.transfer
        actions, done, steps = [1, 0, 1, 0, 1, 0, 1, 0], False, 0
        while not done and steps < 200:
            obs, reward, term, trunc, info = env.step(actions[steps % len(actions)])
            done, steps = term or trunc, steps + 1
            assert info["action_applied"] is True and np.isfinite(obs).all()
        assert done and info["episode_metrics"]["goodput_mbps"] > 5
        iv = tr.intervals()  # XQUIC's own record of the scheduler in force every 50 ms
        assert set(np.unique(iv["mode"])) == {mpsched_xquic.MODES.index("minrtt"), mpsched_xquic.MODES.index("rr")}
    finally:
        env.close()


@needs_live
@pytest.mark.live
def test_live_env_with_xquic_runs_a_mode_with_its_parameters():
    """On hetero_file the wait rule at its default k 1 never uses the slow path (the test above);
    at k 100 it sends there when the fast path is blocked, as minRTT does. Asked for
    ``wait_rule(k=100)`` at every decision (the slow path opens 0.24 s in, after the first ones),
    mpsched/Live-v0 runs XQUIC's rule with that k."""
    import gymnasium as gym
    import envs  # noqa: F401 (registers the environments)
    env = gym.make("mpsched/Live-v0", scenario=resolve_scenarios("hetero_file")[0], cc="bbr", backend="xquic",
                   modes=["minrtt", "wait_rule(k=100)"], interval_ms=50, observation="ispras_backlog", verify=False)
    try:
        env.reset(seed=0)
        tr = env.unwrapped.transfer
        assert tr.rules["wait_k"] == 100.0
        done, steps = False, 0
        while not done and steps < 400:
            _, _, term, trunc, info = env.step(1)
            done, steps = term or trunc, steps + 1
        assert done and info["episode_metrics"]["completion_s"] < 10
        assert info["episode_metrics"]["per_path_goodput_mbps"][1] > 0  # nothing at k 1
        iv = tr.intervals()
        assert (iv["mode"][iv["t"] > 0.15] == mpsched_xquic.MODES.index("wait_rule")).all()
    finally:
        env.close()

@needs_live
@pytest.mark.live
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_evaluate_py_with_xquic_prints_every_format(tmp_path, fmt):
    """``evaluate.py backend=live live.backend=xquic ... format=json`` used to run every transfer
    and then die on numpy bools in the verification report; each run's numbers are also kept."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    spec = {"name": "xquic_cli", "paths": [{"bandwidth_mbps": 40, "delay_ms": 10}, {"bandwidth_mbps": 20, "delay_ms": 20}],
            "workload": {"type": "file", "file_mb": 1}}
    path = tmp_path / "xquic_cli.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = subprocess.run([sys.executable, "evaluate.py", "backend=live", "live.backend=xquic", f"scenario_file={path}",
                          "cc=cubic", "runs=2", f"format={fmt}", f"hydra.run.dir={tmp_path}/out"],
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300)
    skip_if_inconclusive(out)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    if fmt == "json":
        data = json.loads(out.stdout)
        assert data["goodput_mbps"]["mean"] > 1 and all(c["ok"] in (True, False) for c in data["verification"][0])
    else:
        assert "backend=live/xquic" in out.stdout and "mean ± 95% CI" in out.stdout
    assert len((tmp_path / "out" / "runs.jsonl").read_text().splitlines()) == 2


def lia_network(shared: bool, duration_s: float):
    """Two paths of 10 Mbit/s, 20 ms one way and a 40-packet buffer, with one long-lived kernel
    Reno flow on each bottleneck: ``shared``, both paths over their own 100 Mbit/s access links
    into one such core (the simulator's RFC 6356 check, tests/test_network.py); otherwise each
    path its own bottleneck. The file is one the XQUIC connection cannot finish in ``duration_s``."""
    from envs.scenario import scenario_from_dict
    link = {"bandwidth_mbps": 10, "delay_ms": 20, "queue_packets": 40, "competing": {"flows": 1, "cc": "reno"}}
    work = {"type": "file", "file_mb": 2 * 10 * duration_s / 8}
    if not shared:
        return scenario_from_dict({"name": "lia_two_bottlenecks", "paths": [link, link], "workload": work})
    return scenario_from_dict({
        "name": "lia_shared_core", "workload": work,
        "links": {"a0": {"bandwidth_mbps": 100}, "a1": {"bandwidth_mbps": 100, "delay_ms": 2}, "core": link},
        "paths": [{"links": ["a0", "core"]}, {"links": ["a1", "core"]}]})


def pair_against_tcp(tb, cc: str, warmup_s: float, measure_s: float) -> tuple[float, float, list[float]]:
    """One two-path XQUIC connection under ``cc`` beside the competing kernel flows: its rate and
    the competing flows' mean rate per bottleneck (Mbit/s) from ``warmup_s`` to ``warmup_s +
    measure_s`` after its handshake, and the share of its bytes each path carried."""
    from envs.live.xquic import XquicTransfer
    from envs.sim.layout import COBS_ACKED

    def competing() -> float:
        return float(np.mean([v["received_bytes"] for v in tb.competition.stats().values()]))

    tr = XquicTransfer(tb, cc, tb.scenario.workload, telemetry_ms=50.0, max_duration_s=warmup_s + measure_s + 5)
    try:
        tr.start()
        time.sleep(warmup_s)
        a0, c0, t0 = tr.sample_now().cobs[COBS_ACKED], competing(), time.monotonic()
        time.sleep(measure_s)
        a1, c1, t1 = tr.sample_now().cobs[COBS_ACKED], competing(), time.monotonic()
    finally:
        r = tr.result()
        tr.stop()
    tb.competition.check()
    recv = np.asarray(r.extra["path_recv"], float)
    return 8e-6 * (a1 - a0) / (t1 - t0), 8e-6 * (c1 - c0) / (t1 - t0), (recv / recv.sum()).tolist()


def against_tcp(shared: bool, ccs: tuple[str, ...], measure_s: float) -> dict[str, float]:
    """cc -> the pair's rate over the competing flow's (per bottleneck), on a fresh testbed."""
    from envs.live.network_testbed import NetworkTestbed
    tb = verified_or_skip(lambda: NetworkTestbed(lia_network(shared, 10.0 + measure_s + 5), seed=0))
    ratios = {}
    try:
        time.sleep(3.0)  # the competing flows leave slow start
        for cc in ccs:
            ours, tcp, shares = pair_against_tcp(tb, cc, 10.0, measure_s)
            ratios[cc] = ours / tcp
            print(f"{'shared core' if shared else 'two bottlenecks'}, {cc}: pair {ours:.2f} Mbit/s, kernel Reno "
                  f"{tcp:.2f} Mbit/s per bottleneck, ratio {ratios[cc]:.2f}, path shares {np.round(shares, 2)}")
            assert min(shares) > 0.05  # both paths carried data
    finally:
        problems = tb.close()
    assert problems == [] and tb.leftovers() == []
    return ratios


@needs_live
@pytest.mark.live
@pytest.mark.xfail(strict=False, reason=(
    "on this network the coupled pairs take more than one Reno flow, live and in the simulator: on the "
    "testbed's byte buffer LIA 1.37-1.77 (6 samples), OLIA 1.62 (2), BALIA 1.59-2.04 (2) of the kernel flow's rate; the "
    "simulator under XQUIC's profile 1.56, 1.42, 1.55 (its access delays 0 and 2 ms, 10-40 s of one draw, the kernel "
    "Reno flow with Linux's constants; 1.55, 1.67, 1.36 before a declaration fell its detection delay after a point "
    "within its packet's step, 2026-12-02; 1.51, 0.97, 0.95 with XQUIC's, 1.06, 0.97, 1.05 before; "
    "benchmarks/coupled_cc.py --phases, docs/transport.md: LIA 0.64-2.96 over one access delay of 0-5 ms, 0.74-3.26 "
    "before). The bound held live (0.73-1.34) only while the buffer counted "
    "packets and XQUIC's 1244-byte packets drew the drops. Not strict: one draw in a CI run of 2026-11-29 "
    "had all three within 1.35 (live spread, one 30 s draw each)"))
def test_two_coupled_paths_through_one_bottleneck_take_no_more_than_one_reno_flow():
    """RFC 6356 sec. 2 (goals 1-2), live, XQUIC with each coupled CC (bindings/src/mps_coupled.c):
    both paths through one 10 Mbit/s core with one kernel Reno flow, the pair takes no more than
    that flow (rate ratio <= 1.35, the simulator check's upper bound, tests/test_network.py). The
    uncoupled Reno pair took 2.20 of it (the simulator 3.20, 2026-12-02; 2.63 when first measured). Rates over 30 s after a 10 s warm-up,
    both paths carrying data. RFC 6356's own network (rfc6356_shared: equal access delays, 1 BDP)
    is checked from the recorded runs in tests/test_live_network.py (LIA 1.10, 0.90-1.59 per run)."""
    shared = against_tcp(True, ("lia", "olia", "balia"), 30.0)
    assert all(ratio <= 1.35 for ratio in shared.values()), shared


@needs_live
@pytest.mark.live
def test_coupled_paths_through_two_bottlenecks_take_less_than_uncoupled_reno():
    """RFC 6356 sec. 2 (goal 2), live: each path its own bottleneck with its own kernel Reno flow,
    the coupled pair takes less than XQUIC's uncoupled Reno on each path, LIA clearly less (<= 0.85
    of it; RFC 6356's ideal 0.5). Measured per bottleneck against the kernel flow on the testbed's
    byte buffer, 2 batches: LIA 0.90-1.12, OLIA 0.95-1.09, BALIA 0.80-0.90, uncoupled Reno 2.02-2.31
    (under the earlier buffer
    counted in packets, 4 batches: LIA 0.32-0.48, OLIA 0.31-0.42, BALIA 0.37-0.45, the uncoupled
    Reno reference 0.51-0.78; BALIA's 0.45 once exceeded 0.85 of the reference at its lowest,
    0.51, so OLIA and BALIA are held to the reference itself, not to LIA's margin). Rates over 30 s
    after a 10 s warm-up, both paths carrying data."""
    coupled = ("lia", "olia", "balia")
    apart = against_tcp(False, (*coupled, "reno"), 30.0)
    for cc in coupled:
        assert apart[cc] < apart["reno"], cc
    assert apart["lia"] <= 0.85 * apart["reno"]
