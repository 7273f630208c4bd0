"""Plug-ins (``envs.plugins``): a congestion control and a heuristic scheduler defined here, in a
test module, with no other file touched, registered and run through the simulator; the registry's
refusals (oversized state or parameters, a plain Python function, a late registration, an
unknown name) and the generated dispatch's hard error on an unknown id.

The toy plug-ins are registered in a fresh process (``register_toys`` before the simulator is
imported): the compiled core has the dispatch compiled in, so a process whose core is loaded has
a closed registry, as the pytest process usually has.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import envs  # noqa: F401 (numba's cache directory)
from envs.cc.base import CWND, FIRST_PRIVATE, PACING, init_common
from envs.errors import ConfigError
from envs.plugins import (PluginError, cc_id, cc_names, register_cc, register_scheduler, scheduler_id,
                          scheduler_names, scheduler_plugin)
from envs.sim.layout import N_CC, N_CCP, N_OBS, OBS_AVAILABLE
from envs.sim.stacks import DEFAULT_STACK, profile

ROOT = Path(__file__).resolve().parents[1]

# --- a toy congestion control: a fixed window of ``packets`` packets, whatever happens ----------
WINDOW = 0  # parameter slot: window in packets
FIXED_DEFAULTS = {"packets": 10.0}


@njit(cache=True, _nrt=False)
def fixed_init(C, P, f, now, mss):
    init_common(C, f, mss, P[f, WINDOW])
    C[f, PACING] = 0.0


@njit(cache=True, _nrt=False)
def fixed_on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, delivered, inflight, round_start, mss, rng, b):
    C[f, CWND] = P[f, WINDOW] * mss


@njit(cache=True, _nrt=False)
def fixed_on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    C[f, CWND] = P[f, WINDOW] * mss


@njit(cache=True, _nrt=False)
def fixed_on_rto(C, P, f, now, inflight, mss):
    C[f, CWND] = P[f, WINDOW] * mss


# --- a toy scheduler: always path 1, waiting while it has no room -------------------------------
@njit(cache=True, _nrt=False)
def second_path_pick(prm, st, obs, cobs, nsub, mss, rng, b):
    return 2 if nsub > 1 and obs[1, OBS_AVAILABLE] > 0.0 else 0


def register_toys() -> None:
    register_cc("fixed_window", init=fixed_init, on_ack=fixed_on_ack, on_loss=fixed_on_loss, on_rto=fixed_on_rto,
                defaults=FIXED_DEFAULTS, state_slots=FIRST_PRIVATE)
    register_scheduler("second_path", pick=second_path_pick, params={}, state_slots=0, burst=True)


# What the fresh process runs: the toys through the simulator, against built-ins on the same seeds.
RUN = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    import test_plugins
    test_plugins.register_toys()
    from envs.plugins import PluginError, cc_names, register_scheduler, scheduler_names
    from envs.scenario import load_scenario, scenario_from_dict
    from envs.cc.base import CWND
    from envs.sim.simulator import Simulator

    out = {{"ccs": list(cc_names()), "schedulers": list(scheduler_names())}}
    one_path = scenario_from_dict({{"name": "one_path", "paths": [
        {{"bandwidth_mbps": 100, "delay_ms": 20, "queue_bdp": 1.0}}], "workload": {{"type": "bulk", "duration_s": 5}}}})
    for packets in (10, 20):
        sim = Simulator(one_path, "fixed_window", batch=2, seed=1,
                        cc_overrides={{"fixed_window": {{"packets": packets}}}})
        sim.reset()
        sim.run()
        out[f"fixed_{{packets}}"] = {{"goodput": sim.results()["goodput_mbps"].tolist(),
                                     "cwnd": sim.cc[:, 0, CWND].tolist()}}
    s1 = load_scenario("ispras_s1").model_dump()
    s1["workload"] = {{"type": "file", "file_mb": 2.0}}
    s1 = scenario_from_dict(s1)
    for sched in ("second_path", "minrtt"):
        sim = Simulator(s1, "cubic", scheduler=sched, batch=2, seed=1)
        sim.reset()
        sim.run()
        out[sched] = sim.results()["per_path_goodput_mbps"].tolist()
    try:
        register_scheduler("late", pick=test_plugins.second_path_pick, params={{}})
    except PluginError as err:
        out["late"] = str(err)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def toy_run() -> dict:
    res = subprocess.run([sys.executable, "-c", RUN.format(tests=str(ROOT / "tests"))], cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_toy_plugins_are_registered_after_the_builtins(toy_run):
    assert toy_run["ccs"] == [*cc_names(), "fixed_window"]
    assert toy_run["schedulers"] == [*scheduler_names(), "second_path"]


def test_toy_cc_holds_its_window_and_goodput_follows_it(toy_run):
    """A fixed window of w MSS on a lossless 100 Mbit/s path of 40 ms RTT (far below its BDP): the
    MSS a CC counts in is its stack's (the default stack's XQC_MSS, 1436 / 1200 of its packet), and
    the sender fills the window with whole packets, so goodput is at most that many packets per RTT
    and follows the window (envs/cc/base.py)."""
    prof = profile(DEFAULT_STACK)
    packet, unit = float(prof.packet_bytes), prof.packet_bytes * prof.cc_mss_packets
    sent = {}
    for window in (10, 20):
        run = toy_run[f"fixed_{window}"]
        assert run["cwnd"] == pytest.approx([window * unit] * 2)
        sent[window] = math.floor(window * unit / packet + 1e-9)  # whole packets per round trip
        bound = sent[window] * packet * 8 / 0.040 / 1e6  # Mbit/s
        for goodput in run["goodput"]:
            assert 0.85 * bound < goodput <= bound * 1.001, (window, goodput, bound)
    ratio = np.array(toy_run["fixed_20"]["goodput"]) / np.array(toy_run["fixed_10"]["goodput"])
    assert np.all(np.abs(ratio - sent[20] / sent[10]) < 0.05), (ratio, sent)


def test_toy_scheduler_sends_on_path_1_only(toy_run):
    second = np.array(toy_run["second_path"])  # [B, P] per-path goodput
    minrtt = np.array(toy_run["minrtt"])
    assert np.all(second[:, 0] == 0.0) and np.all(second[:, 1] > 0.0)
    assert np.all(minrtt[:, 0] > 0.0)  # the same cells with a built-in use path 0 too


def test_registering_after_the_core_is_built_is_refused(toy_run):
    assert "cannot register scheduler 'late'" in toy_run["late"]
    assert "MPSCHED_PLUGINS" in toy_run["late"]


def test_oversized_or_malformed_plugins_are_refused():
    with pytest.raises(PluginError, match=rf"state_slots must be an integer in \[0, {N_CC}\]"):
        register_cc("too_big", init=fixed_init, on_ack=fixed_on_ack, on_loss=fixed_on_loss, on_rto=fixed_on_rto,
                    defaults=FIXED_DEFAULTS, state_slots=N_CC + 1)
    with pytest.raises(PluginError, match=rf"at most {N_CCP} \(N_CCP\)"):
        register_cc("too_many", init=fixed_init, on_ack=fixed_on_ack, on_loss=fixed_on_loss, on_rto=fixed_on_rto,
                    defaults={f"p{i}": 0.0 for i in range(N_CCP + 1)}, state_slots=FIRST_PRIVATE)
    with pytest.raises(PluginError, match=r"state_slots must be an integer in \[0, 16\]"):
        register_scheduler("too_big", pick=second_path_pick, params={}, state_slots=17)
    with pytest.raises(PluginError, match=r"at most 16 \(N_PARAMS\)"):
        register_scheduler("too_many", pick=second_path_pick, params={f"p{i}": 0.0 for i in range(17)})
    with pytest.raises(PluginError, match="numba-compiled function"):
        register_scheduler("plain", pick=lambda *a: 0, params={})
    with pytest.raises(PluginError, match="lower-case letters"):
        register_scheduler("Bad Name", pick=second_path_pick, params={})
    with pytest.raises(PluginError, match="already registered"):
        register_scheduler("minrtt", pick=second_path_pick, params={})
    assert "too_big" not in cc_names() and "too_big" not in scheduler_names()


def test_a_plugin_module_that_cannot_be_imported_is_named():
    res = subprocess.run([sys.executable, "-c", "from envs.plugins import cc_names; cc_names()"], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "MPSCHED_PLUGINS": "no_such_plugin_module"})
    assert res.returncode != 0
    assert "$MPSCHED_PLUGINS: cannot import plug-in module 'no_such_plugin_module'" in res.stderr


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown cc 'bbr3'; valid: .*bbr2"):
        cc_id("bbr3")
    with pytest.raises(ConfigError, match=r"unknown scheduler 'fastest'; valid: .*minrtt"):
        scheduler_id("fastest")


def test_generated_dispatch_raises_on_an_id_no_plugin_has():
    from envs.plugins.dispatch import GENERATED_FILE, cc_init, pick
    obs = np.zeros((2, N_OBS))
    obs[:, OBS_AVAILABLE] = 1.0
    args = (np.zeros(16), np.zeros(16), obs, np.zeros(16), 2, 1448.0, np.zeros(1, np.uint64), 0)
    assert pick(scheduler_id("minrtt"), *args) in (1, 2)
    with pytest.raises(ValueError, match="no scheduler has this id"):
        pick(len(scheduler_names()), *args)
    with pytest.raises(ValueError, match="no congestion control has this id"):
        cc_init(len(cc_names()), np.zeros((1, N_CC)), np.zeros((1, N_CCP)), 0, 0.0, 1448.0)
    assert "if sid == " in Path(GENERATED_FILE).read_text()


def test_each_c_form_names_a_function_of_its_file():
    from envs.live.xquic import SCHEDULERS as XQUIC_SCHEDULERS
    with_c = [scheduler_plugin(n) for n in scheduler_names() if scheduler_plugin(n).c_source]
    assert {p.name for p in with_c} >= {"rr", "ecf", "blest"}
    assert {p.name for p in with_c} <= set(XQUIC_SCHEDULERS)  # the XQUIC backend offers each
    for plugin in with_c:
        path, function = plugin.c_source.split(":")
        assert f"\n{function}(" in (ROOT / path).read_text(), plugin.c_source
