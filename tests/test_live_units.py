"""Live runs without a network: emulation plans, command construction, tolerances, telemetry
layout, metrics, the command-line glue and the refusals that come before anything is created.
(The tests that build networks are in test_live.py and need root.)"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.errors import ConfigError
from envs.features import CLIP, compute, feature_set
from envs.live import cli, system
from envs.live.backends import get_backend
from envs.live.emulation import (MTU_WIRE, Direction, htb_rate_mbps, netem_args, nft_loss_script, nfqueue_rule, plan,
                                  queue_args)
from envs.live.evaluation import LiveOptions, compare_rows, evaluate_live, relative_error
from envs.live.system import LiveError, LiveUnavailable
from envs.live.telemetry import MptcpInfo, TcpInfo, to_obs
from envs.live.verification import binomial_interval, clipped_normal_mean, clipped_normal_var
from envs.metrics import transfer_metrics
from envs.scenario import load_scenario, scenario_from_dict
from envs.sim.layout import (N_COBS, N_OBS, OBS_AVAILABLE, OBS_CWND, OBS_INFLIGHT, OBS_PACING_RATE, OBS_SRTT,
                             OBS_SWND)
from conftest import compose_config, run_script



def two_paths(**over) -> dict:
    spec = {"name": "t", "paths": [{"bandwidth_mbps": 40, "delay_ms": 10, "jitter_ms": 1, "loss_pct": 0.5},
                                   {"bandwidth_mbps": 20, "delay_ms": 20, "reverse_delay_ms": 5,
                                    "queue_packets": 50}],
            "workload": {"type": "file", "file_mb": 2}}
    spec.update(over)
    return spec


# ------------------------------------------------------------------ emulation plan

def test_plan_has_both_directions_of_every_path_with_scenario_values():
    dirs = plan(scenario_from_dict(two_paths()))
    assert [(d.path, d.direction) for d in dirs] == [(0, "forward"), (0, "reverse"), (1, "forward"), (1, "reverse")]
    fwd0, rev0, fwd1, rev1 = dirs
    assert (fwd0.rate_mbps, fwd0.delay_ms, fwd0.jitter_ms, fwd0.loss_pct) == (40, 10, 1, 0.5)
    assert rev0.delay_ms == 10 and rev1.delay_ms == 5 and fwd1.delay_ms == 20
    # queue_bdp 1.0 (default) = 40 Mbit/s x 20 ms = 100 KB = 70 packets of 1448 bytes, as the simulator sizes it
    assert fwd0.queue_packets == math.ceil(40e6 / 8 * 0.02 / 1448) and fwd1.queue_packets == 50
    assert all(d.reorder for d in dirs)  # jitter_reorders defaults to true (netem semantics)


def test_the_bottleneck_buffer_counts_bytes_as_the_simulator_does():
    """The drop-tail buffer is a bfifo of queue_packets full-size frames: a stack with smaller
    packets (XQUIC's 1244-byte IP packets) gets the scenario's bytes, not fewer, and beside TCP's
    1500-byte packets it does not take most of the drops (a pfifo in packets gave one XQUIC path
    0.24-0.36 of a kernel Reno flow's rate on rfc6356_one_path, a bfifo 0.88-0.96;
    benchmarks/buffer_share_live.py)."""
    fwd = plan(scenario_from_dict(two_paths()))[2]
    assert queue_args(fwd) == ["bfifo", "limit", str(50 * MTU_WIRE)] and fwd.queue_bytes == 50 * 1514
    # 1 BDP of 10 Mbit/s x 40 ms is 35 frames of 1514 bytes, 42 of XQUIC's 1258 (about the 50 kB the simulator holds)
    one_bdp = plan(scenario_from_dict({"name": "t", "paths": [{"bandwidth_mbps": 10, "delay_ms": 20}],
                                       "workload": {"type": "file", "file_mb": 2}}))[0]
    assert one_bdp.queue_packets == 35 and one_bdp.queue_bytes // (1244 + 14) == 42


def test_ispras_scenarios_plan_without_complaint():
    for name in ("ispras_s1", "ispras_s2", "ispras_s3"):
        assert len(plan(load_scenario(name))) == 4


@pytest.mark.parametrize("change, words", [
    ({"bandwidth_trace": [[0, 10], [1, 20]]}, "bandwidth_trace"),
    ({"outages": [[1, 2]]}, "outages"),
    ({"competing": {"flows": 2}}, "competing"),
    ({"bandwidth_mbps": 2000}, "above 1000"),
    ({"bandwidth_mbps": {"uniform": [10, 20]}}, "distribution"),
])
def test_features_the_testbed_cannot_emulate_are_refused_by_name(change, words):
    spec = two_paths()
    spec["paths"][0].update(change)
    with pytest.raises(LiveError, match="cannot run live") as err:
        plan(scenario_from_dict(spec))
    assert words in str(err.value)


@pytest.mark.parametrize("setting", [{"receive_buffer_bytes": 65536},
                                     {"receive_buffer_bytes": 65536, "receive_buffer_max_bytes": 1 << 20}])
def test_a_receive_window_of_the_scenarios_own_is_refused_by_both_testbeds(setting):
    """The live receivers keep their own windows (XQUIC's 16 MiB, the kernel's tcp_rmem tuning), so a
    scenario that sets one would run a different window live than in the simulator."""
    from envs.live.network_testbed import unsupported as network_unsupported
    scenario = scenario_from_dict(two_paths(**setting))
    with pytest.raises(LiveError, match="cannot run live") as err:
        plan(scenario)
    assert "receive_buffer_bytes" in str(err.value) and "16 MiB" in str(err.value)
    assert any("receive_buffer_bytes" in p for p in network_unsupported(scenario))
    assert not any("receive_buffer" in p for p in network_unsupported(scenario_from_dict(two_paths())))


def test_commands_are_argument_lists_of_generated_tokens():
    d = Direction(0, "forward", 70.0, 484, 40.0, 2.236068, 0.5, True)
    args = netem_args(d)
    assert args[:2] == ["netem", "limit"] and "distribution" in args and "normal" in args
    assert "40.000ms" in args and "2.236ms" in args and "0.500000%" in args
    # netem's limit counts the delayed packets too: queue + at least the pipe
    assert d.netem_limit() > 484 + 70e6 / 8 * 0.04 / 1514
    assert nfqueue_rule("mps1c0", 3, "mps1") == ["-i", "mps1c0", "-m", "comment", "--comment", "mps1", "-j",
                                                  "NFQUEUE", "--queue-num", "3"]
    script = nft_loss_script("mps1_loss", [("mps1s0", d.loss_threshold())])
    assert 'iifname "mps1s0" numgen random mod 1000000 < 5000 counter drop' in script
    assert "priority -400" in script


def test_no_scenario_text_reaches_a_command():
    """Scenario strings (name, description) never appear in what the testbed runs: names are
    generated from the process id, numbers are validated floats formatted here."""
    from envs.live.testbed import Testbed
    evil = "x'; touch /tmp/pwned; echo '"
    scen = scenario_from_dict(two_paths(name=evil, description=evil))
    tb = Testbed(scen, verify=False)  # constructing runs nothing
    names = [tb.client_name, tb.server_name] + [n for p in tb.paths for n in p.interfaces()]
    assert all(n.startswith("mps") and n.isalnum() and len(n) <= 15 for n in names)
    for d in tb.directions:
        for arg in netem_args(d) + nfqueue_rule(tb.paths[d.path].server_if, d.path, tb.prefix):
            assert evil not in arg and "'" not in arg and ";" not in arg


def test_htb_rate_parser():
    assert htb_rate_mbps("class htb 5:1 root leaf 10: prio 0 rate 70Mbit ceil 70Mbit burst 15Kb") == 70.0
    assert htb_rate_mbps("class htb 5:1 root leaf 10: prio 0 rate 500Kbit ceil 500Kbit") == 0.5
    assert htb_rate_mbps("class htb 5:1 root prio 0 rate 1Gbit ceil 1Gbit") == 1000.0
    assert htb_rate_mbps("") is None


# ------------------------------------------------------------------ verification math

def test_clipped_normal_moments_match_sampling():
    rng = np.random.default_rng(1)
    for mu, sigma in ((10.0, 2.0), (1.0, 2.0), (0.0, 1.0), (5.0, 0.0)):
        x = np.maximum(mu + sigma * rng.standard_normal(400_000), 0.0)
        assert clipped_normal_mean(mu, sigma) == pytest.approx(x.mean(), abs=0.01)
        assert clipped_normal_var(mu, sigma) == pytest.approx(x.var(), abs=0.02)


def test_binomial_interval_accepts_the_truth_and_rejects_a_missing_loss():
    lo, hi = binomial_interval(4000, 0.005, 1e-4)
    assert lo <= 20 <= hi and lo > 0  # 0.5 % of 4000: 20 expected; losing none is refused
    assert binomial_interval(1000, 0.0, 1e-4) == (0, 0)
    rng = np.random.default_rng(0)
    inside = np.mean([lo <= x <= hi for x in rng.binomial(4000, 0.005, 20000)])
    assert inside > 0.999


# ------------------------------------------------------------------ telemetry

def test_tcp_info_layout_matches_the_kernel_header(tmp_path):
    """Offsets of our ctypes struct tcp_info and struct mptcp_info against linux/tcp.h and
    linux/mptcp.h (for the fields the installed headers have)."""
    if shutil.which("gcc") is None or not Path("/usr/include/linux/tcp.h").exists():
        pytest.skip("needs gcc and the kernel headers")
    tcp_fields = [n for n, _ in TcpInfo._fields_ if n not in ("wscale", "flags")]
    header = Path("/usr/include/linux/tcp.h").read_text()
    tcp_fields = [n for n in tcp_fields if f"tcpi_{n};" in header or f"tcpi_{n} " in header]
    mptcp_header = Path("/usr/include/linux/mptcp.h").read_text()
    mptcp_fields = [n for n, _ in MptcpInfo._fields_ if f"mptcpi_{n};" in mptcp_header]
    src = tmp_path / "off.c"
    src.write_text("#include <stdio.h>\n#include <stddef.h>\n#include <linux/tcp.h>\n#include <linux/mptcp.h>\n"
                   "int main(void){\n"
                   + "".join(f'printf("t {n} %zu\\n", offsetof(struct tcp_info, tcpi_{n}));\n' for n in tcp_fields)
                   + "".join(f'printf("m {n} %zu\\n", offsetof(struct mptcp_info, mptcpi_{n}));\n'
                             for n in mptcp_fields)
                   + "return 0;}\n")
    subprocess.run(["gcc", "-o", str(tmp_path / "off"), str(src)], check=True)
    out = subprocess.run([str(tmp_path / "off")], capture_output=True, text=True, check=True).stdout
    assert len(tcp_fields) > 40 and len(mptcp_fields) >= 10
    for line in out.splitlines():
        kind, name, off = line.split()
        ours = (TcpInfo if kind == "t" else MptcpInfo)
        assert getattr(ours, name).offset == int(off), f"{kind} {name}"


def test_tcp_info_becomes_the_simulator_observation_row():
    info = TcpInfo(state=1, snd_mss=1448, snd_cwnd=20, unacked=15, sacked=2, lost=1, retrans=1, rtt=40_000,
                   rttvar=5_000, min_rtt=30_000, total_retrans=7, pacing_rate=1_000_000, delivery_rate=900_000,
                   bytes_acked=123_456, bytes_sent=200_000, snd_wnd=10 * 1448)
    row = to_obs(info, ctypes.sizeof(TcpInfo), paces=False)
    assert row.shape == (N_OBS,)
    assert row[OBS_CWND] == 20 * 1448 and row[OBS_SWND] == 10 * 1448
    assert row[OBS_SRTT] == pytest.approx(0.04) and row[OBS_INFLIGHT] == (15 - 2 - 1 + 1) * 1448
    assert row[OBS_AVAILABLE] == 1.0 and row[OBS_PACING_RATE] == 0.0
    assert to_obs(info, ctypes.sizeof(TcpInfo), paces=True)[OBS_PACING_RATE] == 1_000_000
    # the project's feature sets read it unchanged
    obs = np.stack([row, row])[None]
    feats = compute(feature_set("peekaboo", 2), obs, np.zeros((1, N_COBS)), np.array([2.0]))
    assert feats.shape == (1, 6) and np.all((feats >= 0) & (feats <= CLIP))


def test_transfer_metrics_follow_the_simulator_definitions():
    m = transfer_metrics(10e6, 2.0, 2.0, np.array([6e6, 4e6]), rtt_sum_s=3.0, rtt_count=60, sent_pkts=7000,
                         lost_pkts=70)
    assert m["goodput_mbps"][0] == pytest.approx(40.0)
    assert m["per_path_goodput_mbps"].shape == (1, 2) and m["per_path_goodput_mbps"][0, 0] == pytest.approx(24.0)
    assert m["mean_rtt_ms"][0] == pytest.approx(50.0) and m["loss_rate"][0] == pytest.approx(0.01)
    assert math.isnan(m["reorder_max_bytes"][0])
    from envs.metrics import METRICS
    assert set(METRICS) <= set(m)


def test_relative_errors_and_comparison_rows():
    assert relative_error(110.0, 100.0) == pytest.approx(0.1)
    assert math.isnan(relative_error(1.0, 0.0))
    stat = {"mean": 10.0, "ci95": 1.0, "per_run": [10.0]}
    sim = {k: stat for k in ("goodput_mbps", "completion_s", "mean_rtt_ms", "loss_rate")}
    sim["per_path_goodput_mbps"] = {"mean": [6.0, 4.0], "ci95": [0.0, 0.0]}
    live = dict(sim, per_path_goodput_mbps={"mean": [5.0, 5.0], "ci95": [0.0, 0.0]})
    rows = {r[0]: r for r in compare_rows(sim, live)}
    assert rows["path 1 share %"][1] == pytest.approx(60.0) and rows["path 1 share %"][3] == pytest.approx(50.0)
    assert rows["path 1 goodput Mbit/s"][5] == pytest.approx(0.2)


# ------------------------------------------------------------------ refusals before anything exists

def test_backends_by_name_and_an_unknown_one_lists_them():
    assert get_backend("mptcp").name == "mptcp" and not get_backend("mptcp").controls_scheduler
    assert get_backend("xquic").name == "xquic" and get_backend("xquic").controls_scheduler
    with pytest.raises(ConfigError, match="unknown live backend 'tcp'.*mptcp, xquic"):
        get_backend("tcp")


def test_xquic_rule_parameters_are_the_simulators():
    """The C rules take the simulator's scheduler parameters with the simulator's defaults; a
    scheduler's own are overridden, a parameter it lacks or a value out of range is refused."""
    from envs.live.xquic import RULE_PARAMS, rule_params
    from envs.plugins import scheduler_values
    defaults = rule_params("minrtt")
    for name, kws in RULE_PARAMS.items():
        assert set(kws) == set(scheduler_values(name))  # every parameter of the simulator's rule reaches C
        assert all(defaults[kw] == scheduler_values(name)[p] for p, kw in kws.items())
    assert rule_params("kato", {"alpha": 0.25}) == {**defaults, "kato_alpha": 0.25}
    assert rule_params("ecf", {"beta": 0.5})["ecf_beta"] == 0.5
    with pytest.raises(LiveError, match="XQUIC scheduler 'kato' has no parameter 'beta'; valid: alpha"):
        rule_params("kato", {"beta": 0.5})
    with pytest.raises(LiveError, match="XQUIC scheduler 'minrtt' has no parameter 'alpha'; valid: none"):
        rule_params("minrtt", {"alpha": 0.5})
    with pytest.raises(ConfigError, match=r"alpha must be in \[0, 1\], got 2"):
        rule_params("kato", {"alpha": 2})


def test_scheduler_params_reach_the_live_transfer(monkeypatch):
    """evaluate_live (evaluate.py backend=live) hands scheduler_params to the backend's transfer;
    the kernel's own scheduler (mptcp) refuses them before anything is built."""
    from envs.live import evaluation as live_eval
    seen: list[dict] = []

    class Result:
        error, wall_s, extra = None, 1.0, {"outcome": "finished"}

        def metrics(self):
            return {"goodput_mbps": np.array([1.0]), "per_path_goodput_mbps": np.array([[0.5, 0.5]])}

    class Transfer:
        def start(self):
            pass

        def wait(self):
            pass

        def result(self):
            return Result()

    class Backend:
        controls_scheduler = True

        @staticmethod
        def check(cc):
            return cc

        @staticmethod
        def check_scheduler(scheduler, params=None):
            seen.append({"checked": dict(params or {})})
            return scheduler

        @staticmethod
        def transfer(testbed, cc, workload, telemetry_ms, **kw):
            seen.append(kw)
            return Transfer()

    class Testbed:
        emulation_mode, verification, timings = "delayline", None, {}

        def start(self):
            return self

        def describe(self):
            return "fake"

        def close(self):
            return []

    monkeypatch.setattr(live_eval, "get_backend", lambda name: Backend)
    monkeypatch.setattr(live_eval, "make_testbed", lambda *a, **k: Testbed())
    evaluate_live(load_scenario("kato_4"), "reno", 2, scheduler="kato", scheduler_params={"alpha": 0.25})
    assert seen == [{"checked": {"alpha": 0.25}}] + [{"scheduler": "kato", "scheduler_params": {"alpha": 0.25}}] * 2
    Backend.controls_scheduler = False
    with pytest.raises(LiveError, match="kernel's own scheduler, whose parameters cannot be set"):
        evaluate_live(load_scenario("kato_4"), "reno", 1, scheduler="kato", scheduler_params={"alpha": 0.25})


def test_the_xquic_transfer_passes_kato_alpha_to_the_extension():
    mx = pytest.importorskip("mpsched_xquic")
    from envs.live.xquic import XquicTransfer, outdated
    if outdated(mx):
        pytest.skip(outdated(mx))
    from envs.scenario import WorkloadSpec
    t = XquicTransfer(object(), "reno", WorkloadSpec(type="file", file_mb=1.0), scheduler="kato",
                      scheduler_params={"alpha": 0.25}, seed=3)
    assert t._rule_kwargs()["kato_alpha"] == 0.25 and t._rule_kwargs()["seed"] == 3


def test_a_congestion_control_the_kernel_lacks_is_refused_with_the_list(tmp_path, monkeypatch):
    cc_list = tmp_path / "cc"
    cc_list.write_text("reno cubic bbr\n")
    monkeypatch.setattr(system, "CC_LIST", cc_list)
    with pytest.raises(LiveError, match=r"'vegas' is not available in this kernel; available: reno, cubic, bbr"):
        evaluate_live(load_scenario("ispras_s3"), "vegas", 1)


def test_not_root_is_refused_before_anything_is_created(monkeypatch):
    from envs.live import testbed as tbmod
    monkeypatch.setattr(system.os, "geteuid", lambda: 1000)
    built = []
    monkeypatch.setattr(tbmod.Testbed, "_build", lambda self: built.append(self))
    tb = tbmod.Testbed(load_scenario("ispras_s3"), verify=False)
    with pytest.raises(LiveUnavailable, match="need root.*python -m envs.live.setup"):
        tb.start()
    assert not built and not tb.record.host_pids


def test_missing_mininet_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "mininet", raising=False)
    monkeypatch.setattr(system, "MININET_FALLBACK", tmp_path / "nowhere")
    real_import = system.importlib.import_module

    def no_mininet(name, *a, **k):
        if name == "mininet":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(system.importlib, "import_module", no_mininet)
    with pytest.raises(LiveUnavailable, match="Mininet is not installed"):
        system.load_mininet()


def test_live_options_refuse_unknown_keys():
    assert LiveOptions.from_mapping({"emulation": "delayline"}).emulation == "delayline"
    with pytest.raises(LiveError, match="unknown live option"):
        LiveOptions.from_mapping({"emulatoin": "x"})
    with pytest.raises(LiveError, match="live.emulation must be one of"):
        from envs.live.testbed import Testbed
        Testbed(load_scenario("ispras_s3"), emulation="magic")


@pytest.mark.parametrize("kwargs, message", [
    ({"obsevation": "leeyoo"}, "unknown mpsched/Live-v0 setting 'obsevation'; valid: backend, cc, decision"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
    ({"modes": []}, "modes: interval mode needs at least one mode"),
])
def test_live_env_refuses_bad_settings_before_any_testbed(kwargs, message):
    """gym.make passes its keywords on to LiveEnv: a typo, a negative seed (numpy's SeedSequence
    said "expected non-negative integer") or an empty mode list is refused naming it."""
    import gymnasium as gym
    with pytest.raises(ConfigError) as err:
        gym.make("mpsched/Live-v0", scenario="ispras_s1", cc="cubic", backend="mptcp", **kwargs)
    assert message in str(err.value)


# ------------------------------------------------------------------ command line

def test_evaluate_config_declares_the_live_keys():
    """backend, compare, transport and live.* are keys of evaluate.yaml with their defaults, so
    they are plain overrides (no "+", no rewriting of the command line)."""
    default = compose_config("evaluate")
    cfg = compose_config("evaluate", "backend=live", "transport=xquic", "compare=[sim,live]", "live.emulation=delayline")
    assert (default.backend, default.compare, default.transport) == ("sim", None, None)
    assert dict(default.live) == dataclasses.asdict(LiveOptions())
    assert (cfg.backend, list(cfg.compare), cfg.transport, cfg.live.emulation) == (
        "live", ["sim", "live"], "xquic", "delayline")
    assert cli.wants_live(cfg) and not cli.wants_live(default)


def run_evaluate(*args: str) -> subprocess.CompletedProcess:
    return run_script("evaluate.py", *args, timeout=300)


@pytest.mark.parametrize("args, message", [
    (["backend=live", "live.backend=xquic", "scheduler=fastest"], "unknown XQUIC scheduler 'fastest'"),
    (["backend=live", "live.backend=xquic", "scheduler=policy"], "scheduler=policy needs live.policy"),
    (["backend=fast"], "unknown backend 'fast'; valid: live, sim"),
    (["compare=[sim,fast]"], "compare takes sim,live"),
    (["backend=live", "live.emulation=magic"], "unknown live.emulation 'magic'; valid: auto, delayline, netem"),
    (["backend=live", "live.telemetry_ms=0"], "live.telemetry_ms must be > 0, got 0"),
    (["backend=live", "transport=quic"], "unknown transport 'quic'; valid: mptcp, xquic"),
    (["backend=live", "live.telemetry=5"], "Could not override 'live.telemetry'"),
    (["backend=live", "+cc.cubic.params.beta=0.5"], "parameters cannot be set per run"),
    (["backend=live", "live.backend=mptcp", "scheduler=kato", "+scheduler_params.alpha=0.25"],
     "live.backend=mptcp runs the kernel's own scheduler, whose parameters cannot be set"),
])
def test_evaluate_live_bad_input_is_one_clear_line(args, message):
    out = run_evaluate("scenario=ispras_s3", "cc=cubic", *args)
    assert out.returncode != 0
    assert message in out.stderr + out.stdout
    assert "Traceback" not in out.stderr


def test_evaluate_live_refuses_a_cc_the_kernel_lacks():
    if "bbr2" in system.available_ccs():
        pytest.skip("this kernel has bbr2")
    out = run_evaluate("backend=live", "scenario=ispras_s3", "cc=bbr2", "runs=1")
    assert out.returncode != 0 and "'bbr2' is not available in this kernel; available:" in out.stderr


def test_a_testbed_failing_verification_is_retried_then_the_last_failure_raised(monkeypatch):
    """envs.live.verification.start_verified: the one retry rule of benchmarks/claims_live.py and
    benchmarks/record_reference.py (each failure reported, a fresh testbed each attempt)."""
    from envs.live import verification
    from envs.live.verification import VerificationError, start_verified

    monkeypatch.setattr(verification.time, "sleep", lambda s: None)
    made, seen = [], []

    class Bed:
        def __init__(self, ok: bool) -> None:
            self.ok = ok
            made.append(self)

        def start(self):
            if not self.ok:
                raise VerificationError(f"path 1 rtt ms: attempt {len(made)}\nthe table")
            return self

    outcomes = iter([False, False, True])
    tb = start_verified(lambda: Bed(next(outcomes)), 3, 1.0, lambda a, e: seen.append((a, str(e).splitlines()[0])))
    assert tb is made[-1] and len(made) == 3
    assert seen == [(1, "path 1 rtt ms: attempt 1"), (2, "path 1 rtt ms: attempt 2")]
    with pytest.raises(VerificationError, match="attempt 5"):
        start_verified(lambda: Bed(False), 2)
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        start_verified(lambda: Bed(True), 0)


def test_a_miss_while_the_delay_lines_ran_late_is_inconclusive_and_any_other_miss_refuses():
    """envs.live.verification.refusal: a failed check is put on the machine (inconclusive, retried,
    a test skips) only when the delay lines' own lateness over the verification could explain it:
    the 99th percentile beyond the spread's absolute tolerance, or one stall beyond half the rate
    probe's tolerance (15 ms of 0.3 s at 10 %), and only for misses lateness makes (RTT or spread
    too large, rate too small); on time, or for any other miss, the run is refused."""
    from envs.live.verification import Check, Report, VerificationError, VerificationInconclusive, refusal

    def report(p99_us: float, max_us: float, realtime: int = 1) -> Report:
        late = {"window_packets": 3000, "window_late_us_p99": p99_us, "window_late_us_max": max_us,
                "realtime": realtime}
        return Report([Check(0, "rate Mbit/s for", 70.0, 60.85, 63.0, 77.0)], 2.4, [late, dict(late, realtime=1)])

    on_time = refusal(report(190.0, 700.0), "s3")
    assert type(on_time) is VerificationError and "does not match scenario 's3', refusing to run" in str(on_time)
    assert "released late by 0.19 ms (99th percentile), 0.70 ms at most; real-time class: yes" in str(on_time)
    stalled = refusal(report(300.0, 44_000.0, realtime=0), "s3")
    assert isinstance(stalled, VerificationInconclusive)
    assert "up to 44.0 ms late" in str(stalled) and "could not enter the real-time class" in str(stalled)
    assert "path 1 rate Mbit/s for: expected 70.000, measured 60.850" in str(stalled)
    assert isinstance(refusal(report(900.0, 5_000.0), "s3"), VerificationInconclusive)  # late at the 99th percentile
    assert type(refusal(Report([Check(0, "rtt ms", 40.0, 20.0, 35.0, 45.0)]), "s3")) is VerificationError  # netem
    late = report(900.0, 44_000.0).delay_lines
    for miss in (Check(0, "rtt ms", 40.0, 20.0, 35.0, 45.0), Check(0, "loss % for", 0.0, 2.0, 0.0, 0.0),
                 Check(0, "rate Mbit/s rev", 70.0, 80.0, 63.0, 77.0)):  # what lateness cannot make
        assert type(refusal(Report([miss], 2.4, late), "s3")) is VerificationError, miss
    assert isinstance(refusal(Report([Check(0, "rtt spread ms", 0.0, 3.1, 0.0, 0.6)], 2.4, late), "s3"),
                      VerificationInconclusive)


def test_a_verified_testbed_is_closed_when_its_block_fails_and_says_what_it_left(capsys):
    """envs.live.verification.verified_testbed: the live diagnostics' testbed is torn down at the
    end of its ``with`` block, an error inside it included, and what could not be removed is
    printed (never silently left on the machine)."""
    from envs.live.verification import verified_testbed

    closed = []

    class Bed:
        def start(self):
            return self

        def close(self) -> list[str]:
            closed.append(self)
            return ["namespace mps1-h1"]

    with pytest.raises(RuntimeError, match="transfer failed"), verified_testbed(Bed) as tb:
        assert closed == []
        raise RuntimeError("transfer failed")
    assert closed == [tb]
    assert "teardown left: namespace mps1-h1" in capsys.readouterr().err


def test_the_flows_send_and_count_bytes_until_done_or_stopped():
    """envs.live.bottleneck.send_zeros / receive_counting, the loops of BulkFlows and the competing
    traffic (envs.live.competition): a sized send ends with True and the reader counts every byte
    up to the close; an unsized one runs until stopped (False)."""
    import socket
    import threading

    from envs.live.bottleneck import receive_counting, send_zeros

    a, b = socket.socketpair()
    for s in (a, b):
        s.settimeout(0.05)
    stop, got = threading.Event(), []
    reader = threading.Thread(target=receive_counting, args=(b, stop, got.append))
    reader.start()
    assert send_zeros(a, stop, 200_000) is True
    a.close()
    reader.join(5)
    assert not reader.is_alive() and sum(got) == 200_000
    b.close()
    c, d = socket.socketpair()
    c.settimeout(0.05)
    stop.set()
    assert send_zeros(c, stop) is False  # stopped: nothing more sent
    c.close()
    d.close()


def test_the_live_env_verifies_its_testbed_with_the_retry_rule(monkeypatch):
    """mpsched/Live-v0 builds its testbed through start_verified, with ``verify_attempts``
    attempts (1 without verification); a bad count is refused before anything is built."""
    from envs.errors import ConfigError
    from envs.live import env as live_env

    with pytest.raises(ConfigError, match="verify_attempts must be an integer >= 1, got 0"):
        live_env.LiveEnv("ispras_s3", "cubic", verify_attempts=0)
    asked = []

    class Built(Exception):
        pass

    def fake_start_verified(make, attempts):
        asked.append((make.func.__name__, make.keywords["verify"], attempts))
        raise Built

    monkeypatch.setattr(live_env, "start_verified", fake_start_verified)
    for verify in (True, False):
        with pytest.raises(Built):
            live_env.LiveEnv("ispras_s3", "cubic", verify=verify, verify_attempts=4).reset(seed=0)
    assert asked == [("Testbed", True, 4), ("Testbed", False, 1)]


def test_the_live_tools_testbed_is_built_again_after_a_failed_verification(monkeypatch):
    """``envs.live.testbed.verified``, the testbed of the transfer report, the live datasets and the
    live benchmarks: a verification that fails is said in one line and the testbed built again, up
    to ``live.verify_attempts`` builds; the last failure is raised (benchmarks/headroom_live.py
    used to build one testbed and end in a traceback when a busy machine read the RTT spread 0.3%
    over its mark)."""
    from envs.live import testbed, verification
    from envs.schema import LiveOptions

    built, said = [], []

    class FakeTestbed:
        def __init__(self, scenario, verify):
            built.append((scenario, verify))

        def start(self):
            if len(built) < 2:
                raise verification.VerificationError("path 1 rtt spread ms: expected 3.162, measured 4.726\nmore")

        def close(self):
            return []

    monkeypatch.setattr(testbed, "Testbed", FakeTestbed)
    monkeypatch.setattr(verification.time, "sleep", lambda s: None)
    with testbed.verified("s", say=said.append) as tb:
        assert isinstance(tb, FakeTestbed)
    assert built == [("s", True)] * 2
    assert said == [f"verification attempt 1 of {LiveOptions.verify_attempts} failed: path 1 rtt spread ms: "
                    "expected 3.162, measured 4.726"]
    built.clear()
    monkeypatch.setattr(FakeTestbed, "start", lambda self: (_ for _ in ()).throw(
        verification.VerificationError("never")))
    with pytest.raises(verification.VerificationError, match="never"):
        with testbed.verified("s", say=said.append):
            pass
    assert len(built) == LiveOptions.verify_attempts


def test_the_live_reward_counts_the_transports_packet():
    """mpsched/Live-v0's reward turns declared losses into bytes of the path's ``sent`` counter with
    the bytes a full packet adds to it: the kernel's tcpi_bytes_sent counts the payload (the
    testbed's MSS), XQUIC's ctl_bytes_send each packet encrypted (1200 + a 16-byte AEAD tag)."""
    from envs.live import env as live_env

    assert get_backend("mptcp").sent_per_packet(1400) == 1400
    assert get_backend("xquic").sent_per_packet(1448) == 1216
    assert live_env.LiveEnv("ispras_s3", "cubic", mss=1400)._mss.tolist() == [1400.0]
    try:
        import mpsched_xquic  # noqa: F401
    except ImportError:
        pytest.skip("the mpsched_xquic extension is not built (python -m envs.live.setup --xquic)")
    assert live_env.LiveEnv("ispras_s3", "cubic", backend="xquic")._mss.tolist() == [1216.0]
