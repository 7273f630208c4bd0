"""Heuristic schedulers: each decision rule on hand-built path states (the compiled ``pick``
called directly), the BURST contract, a short run of each in the batched simulator and through
the Gymnasium env, and refused parameters."""

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401 (registers mpsched/Multipath-v0)
from envs.errors import ConfigError
from envs.plugins import scheduler_id, scheduler_names, scheduler_params, scheduler_plugin
from envs.plugins.dispatch import burst, pick
from envs.scenario import load_scenario, scenario_from_dict
from envs.sim.layout import (COBS_BACKLOG, COBS_ELAPSED, COBS_REORDER, COBS_RWND, N_COBS, N_OBS, OBS_AVAILABLE,
                             OBS_CWND, OBS_INFLIGHT, OBS_LATEST_RTT, OBS_RTTVAR, OBS_SRTT)
from envs.sim.simulator import Simulator

MSS = 1000.0
NAMES = scheduler_names()


class Paths:
    """Hand-built sender state of one connection: ``paths`` rows of (srtt s, cwnd packets,
    inflight packets); availability follows window space unless given."""

    def __init__(self, name, paths, backlog=100, rwnd=1e9, reorder=0.0, params=None, available=None):
        self.sid = scheduler_id(name)
        self.prm = scheduler_params(name, params, len(paths))
        self.st = np.zeros(16)
        self.rng = np.array([12345], dtype=np.uint64)
        self.n = len(paths)
        self.obs = np.zeros((self.n, N_OBS))
        for i, (srtt, cwnd, infl) in enumerate(paths):
            self.obs[i, [OBS_SRTT, OBS_LATEST_RTT]] = srtt
            self.obs[i, OBS_CWND] = cwnd * MSS
            self.obs[i, OBS_INFLIGHT] = infl * MSS
        self.cobs = np.zeros(N_COBS)
        self.cobs[[COBS_BACKLOG, COBS_RWND, COBS_REORDER]] = backlog * MSS, rwnd * MSS, reorder * MSS
        self.fixed_avail = available
        self.refresh()

    def refresh(self):
        for i in range(self.n):
            room = self.obs[i, OBS_INFLIGHT] + MSS <= self.obs[i, OBS_CWND]
            self.obs[i, OBS_AVAILABLE] = float(room if self.fixed_avail is None else self.fixed_avail[i])

    def pick(self) -> int:
        return int(pick(self.sid, self.prm, self.st, self.obs, self.cobs, self.n, MSS, self.rng, 0))

    def path(self) -> int | None:
        """The single path picked (None: wait)."""
        m = self.pick()
        assert m & (m - 1) == 0, f"several paths: {m:b}"
        return None if m == 0 else m.bit_length() - 1

    def send(self, i):
        self.obs[i, OBS_INFLIGHT] += MSS
        self.cobs[COBS_BACKLOG] -= MSS
        self.cobs[COBS_RWND] -= MSS
        self.refresh()


# fast path F: 5 ms RTT, cwnd 3; slow path S: 50 ms, cwnd 2 (spec: leeyoo_example)
FAST, SLOW = (0.005, 3, 3), (0.050, 2, 0)


def leeyoo_completion(name: str, packets: int = 100) -> float:
    """The spec's LEEYOO example run with fixed windows: each packet is acknowledged one RTT after
    it is sent; returns when the last one is."""
    s = Paths(name, [(0.005, 3, 0), (0.050, 2, 0)], backlog=packets)
    acks: list[tuple[float, int]] = []
    left, end = packets, 0.0
    for step in range(1000):
        now = step * 1e-3
        for t, i in [a for a in acks if a[0] <= now + 1e-9]:
            acks.remove((t, i))
            s.obs[i, OBS_INFLIGHT] -= MSS
        s.refresh()
        s.cobs[COBS_ELAPSED] = now
        while left > 0 and (i := s.path()) is not None:
            s.send(i)
            left -= 1
            rtt = s.obs[i, OBS_SRTT]
            acks.append((now + rtt, i))
            end = max(end, now + rtt)
        if left == 0 and not acks:
            return end
    raise AssertionError("the transfer did not finish")


def test_registry_dispatches_every_module_by_its_id():
    for name in NAMES:
        plugin = scheduler_plugin(name)
        a = Paths(name, [(0.01, 4, 4), (0.03, 10, 2), (0.02, 8, 1)], backlog=5)
        b = Paths(name, [(0.01, 4, 4), (0.03, 10, 2), (0.02, 8, 1)], backlog=5)
        direct = plugin.pick(b.prm, b.st, b.obs, b.cobs, b.n, MSS, b.rng, 0)
        assert a.pick() == direct, name
        assert bool(burst(scheduler_id(name))) == plugin.burst


@pytest.mark.parametrize("name", [n for n in NAMES if scheduler_plugin(n).burst])
def test_burst_schedulers_keep_their_path_until_it_is_blocked(name):
    """The contract of envs.schedulers.base: a single path stays the answer while it has room."""
    gen = np.random.default_rng(0)
    for _ in range(200):
        paths = [(gen.uniform(0.005, 0.2), gen.integers(1, 20), gen.integers(0, 20)) for _ in range(3)]
        s = Paths(name, paths, backlog=int(gen.integers(1, 50)))
        first = s.pick()
        if first == 0 or first & (first - 1):
            continue
        i = first.bit_length() - 1
        while s.obs[i, OBS_AVAILABLE] > 0 and s.cobs[COBS_BACKLOG] > 0:
            assert s.pick() == first
            s.send(i)


def test_minrtt_takes_the_available_path_of_lowest_srtt():
    assert Paths("minrtt", [FAST, SLOW]).path() == 1
    assert Paths("minrtt", [(0.005, 3, 1), SLOW]).path() == 0


def test_fast_only_waits_for_the_fast_path():
    assert Paths("fast_only", [FAST, SLOW]).path() is None
    assert Paths("fast_only", [(0.005, 3, 2), SLOW]).path() == 0


def test_ecf_waits_for_the_fast_path_in_the_leeyoo_example():
    # 100 packets to go: n tau_F = (1 + 100/3) 5 ms > tau_S = 50 ms, so S is worth using
    assert Paths("ecf", [FAST, SLOW], backlog=100).path() == 1
    # 4 packets to go: F finishes them in (1 + 4/3) 5 ms < 50 ms, and S would need (4/2) 50 ms
    # >= 2 tau_F: wait for F (minRTT would send on S)
    s = Paths("ecf", [FAST, SLOW], backlog=4)
    assert s.path() is None and s.st[0] == 1.0
    assert Paths("minrtt", [FAST, SLOW], backlog=4).path() == 1
    # the whole example: ECF finishes sooner than minRTT (the spec's figure is 35 ms)
    ecf, minrtt = leeyoo_completion("ecf"), leeyoo_completion("minrtt")
    assert minrtt - ecf >= 0.030, (ecf, minrtt)


def test_ecf_hysteresis_keeps_waiting_a_little_longer():
    # n tau_F = (1 + 27/3) 5 = 50 ms: not below tau_S = 50 ms, unless already waiting (x 1.25)
    s = Paths("ecf", [FAST, SLOW], backlog=27)
    assert s.path() == 1
    s.st[0] = 1.0
    assert s.path() is None
    s = Paths("ecf", [FAST, SLOW], backlog=27, params={"beta": 0.0})
    s.st[0] = 1.0
    assert s.path() == 1 and s.st[0] == 0.0
    # rttvar widens the margin: delta = 6 ms, 50 < 56
    s = Paths("ecf", [FAST, SLOW], backlog=27)
    s.obs[1, OBS_RTTVAR] = 0.006
    assert s.path() is None


def test_blest_blocks_the_slow_path_when_its_inequality_says_so():
    # F: 10 ms, cwnd 10 (full); S: 100 ms. rtts = 10, X = mss (10 + 4.5) 10 = 145 packets
    fast, slow = (0.010, 10, 10), (0.100, 10, 3)
    # free window 100 packets: 145 > 100 - 4, sending on S would leave F blocked: wait
    assert Paths("blest", [fast, slow], rwnd=100).path() is None
    assert Paths("minrtt", [fast, slow], rwnd=100).path() == 1
    # free window 150 packets: 145 <= 150 - 4: S is used
    assert Paths("blest", [fast, slow], rwnd=150).path() == 1
    # lambda 1.3 scales X to 188.5 > 146: wait again
    assert Paths("blest", [fast, slow], rwnd=150, params={"lambda": 1.3}).path() is None
    # F available: always F
    assert Paths("blest", [(0.010, 10, 9), slow], rwnd=1).path() == 0


def test_blest_lambda_grows_under_window_limitation_and_shrinks_back():
    s = Paths("blest", [(0.010, 10, 10), (0.100, 10, 3)], rwnd=2)  # window nearly exhausted
    for k in range(1, 6):
        s.cobs[COBS_ELAPSED] = 0.011 * k
        s.pick()
    assert s.st[0] == pytest.approx(0.3)  # 1 -> 1.3 (lambda_max), in steps of 0.1
    s.cobs[COBS_RWND] = 1e9
    for k in range(6, 12):
        s.cobs[COBS_ELAPSED] = 0.011 * k
        s.pick()
    assert s.st[0] == pytest.approx(0.0)


def test_lts_picks_lowest_time_per_space_and_falls_back_to_lowest_rtt():
    # A: 10 ms / 2 packets of space = 5 ms; B: 40 ms / 20 packets = 2 ms -> B (minRTT: A)
    a, b = (0.010, 10, 8), (0.040, 30, 10)
    assert Paths("lts", [a, b]).path() == 1
    assert Paths("minrtt", [a, b]).path() == 0
    # no path has window space (cwnd <= inflight) though the sender may send: lowest srtt
    full = [(0.040, 5, 5), (0.010, 5, 6), (0.020, 5, 7)]
    assert Paths("lts", full, available=[1, 1, 1]).path() == 1
    assert Paths("lts", full, available=[1, 0, 1]).path() == 2
    assert Paths("lts", full).path() is None  # nothing available at all: wait, as LL does


def test_lws_picks_the_largest_window_space():
    assert Paths("lws", [(0.010, 10, 8), (0.040, 30, 10), (0.02, 10, 0)]).path() == 1
    assert Paths("lws", [(0.040, 5, 5), (0.010, 5, 6)], available=[1, 1]).path() == 1


def test_hsr_picks_the_highest_rate_by_latest_rtt():
    s = Paths("hsr", [(0.010, 10, 0), (0.040, 60, 0)])  # 1000 vs 1500 packets/s
    assert s.path() == 1
    s.obs[1, OBS_LATEST_RTT] = 0.080  # latest sample, not srtt: 750 packets/s
    assert s.path() == 0


def test_sod_never_overfills_a_paths_outgoing_queue():
    # cwnd 10/6/4, in flight 7/0/4; reorder buffer beyond the 64 KB ingoing queue: windows of
    # delta = 2 packets, so path 0 (7 in flight) gets nothing, path 1 gets 2, path 2 is full
    for params, expect in [({}, [7, 2, 4]), ({"flow_control": 0}, [10, 6, 4])]:
        s = Paths("sod", [(0.28, 10, 7), (0.04, 6, 0), (0.16, 4, 4)], reorder=100, params=params)
        sent = []
        while (i := s.path()) is not None:
            sent.append(i)
            s.send(i)
            window = min(s.obs[i, OBS_CWND], 2 * MSS if not params else np.inf)
            assert s.obs[i, OBS_INFLIGHT] <= window  # sw_s - flight_s never goes negative
            assert len(sent) < 100
        assert list(s.obs[:, OBS_INFLIGHT] / MSS) == expect
        assert sent == sorted(sent)  # on demand, path by path in index order
    # an empty reorder buffer leaves the 64 KB queue open: the congestion window limits
    s = Paths("sod", [(0.28, 10, 7)], reorder=0)
    while (i := s.path()) is not None:
        s.send(i)
    assert s.obs[0, OBS_INFLIGHT] == 10 * MSS


@pytest.mark.parametrize("p", [0.25, 0.75])
def test_split_draws_path_one_with_its_probability_and_waits_when_the_draw_is_full(p):
    s = Paths("split", [(0.01, 10**6, 0), (0.05, 10**6, 0)], params={"p_first": p})
    picks = np.array([s.pick() for _ in range(4000)])
    assert set(picks.tolist()) <= {1, 2}
    assert abs((picks == 1).mean() - p) < 0.03  # binomial sd ~0.007
    full = Paths("split", [(0.01, 2, 2), (0.05, 10**6, 0)], params={"p_first": p})
    waits = np.array([full.pick() for _ in range(4000)])
    assert set(waits.tolist()) <= {0, 2}  # never the full path, and no fallback to the other
    assert abs((waits == 0).mean() - p) < 0.03


def test_wrr_follows_its_weights_and_rr_alternates():
    s = Paths("wrr", [(0.01, 100, 0), (0.05, 100, 0)], params={"weights": [3, 1]})
    picks = [s.pick() for _ in range(8)]
    assert picks.count(1) == 6 and picks.count(2) == 2
    assert picks[:4].count(2) == 1  # interleaved: one slow packet in every 4
    equal = Paths("wrr", [(0.01, 100, 0), (0.05, 100, 0)])
    assert [equal.pick() for _ in range(4)] == [1, 2, 1, 2]
    by_rate = Paths("wrr", [(0.01, 10, 0), (0.05, 10, 0)], params={"by_rate": 1})  # rates 5:1
    assert [by_rate.pick() for _ in range(12)].count(2) == 2
    rr = Paths("rr", [(0.01, 100, 0), (0.05, 100, 0), (0.02, 1, 1)])
    assert [rr.pick() for _ in range(4)] == [2, 1, 2, 1]


def test_redundant_sends_on_every_available_path():
    assert Paths("redundant", [(0.01, 5, 0), (0.05, 5, 5), (0.02, 5, 0)]).pick() == 0b101
    assert Paths("redundant", [(0.01, 5, 5)]).pick() == 0


def test_atlb_and_otias_wait_for_a_full_path_only_when_it_delivers_sooner():
    for name in ("atlb", "otias"):
        # 2 packets waiting behind F's full window: 2.5 ms + 5 ms * 2/3 (ATLB) or 5 ms * 1
        # (OTIAS) beats S's 25 ms one way
        assert Paths(name, [FAST, SLOW], backlog=2).path() is None, name
        # 100 packets waiting behind F's window: S delivers sooner
        assert Paths(name, [FAST, SLOW], backlog=100).path() == 1, name
    # rate vs rounds: 4 packets ahead on F (cwnd 3): ATLB 2.5 + 5 * 4/3 = 9.2 ms; OTIAS
    # 2.5 + 5 * ceil(4/3) = 12.5 ms; S: 10 ms one way
    fast, slow = (0.005, 3, 3), (0.020, 2, 0)
    assert Paths("atlb", [fast, slow], backlog=4).path() is None
    assert Paths("otias", [fast, slow], backlog=4).path() == 1


def test_kato_chooses_around_the_running_mean_with_probability_alpha():
    # rates cwnd / srtt: 100, 300, 500 packets/s; the mean of the first sample is 300 (High: path 1)
    paths = [(0.010, 1, 0), (0.010, 3, 0), (0.010, 5, 0)]
    assert Paths("kato", paths, params={"alpha": 0.0}).path() == 1
    assert Paths("kato", paths, params={"alpha": 1.0}).path() == 0  # Low: the closest below
    s = Paths("kato", paths, params={"alpha": 0.25})
    picks = [s.path() for _ in range(2000)]
    assert set(picks) == {0, 1} and 0.2 < picks.count(0) / 2000 < 0.3
    # only a path below the mean is available: it is chosen whatever alpha
    assert Paths("kato", paths, params={"alpha": 0.0}, available=[1, 0, 0]).path() == 0
    # the mean runs over time: one sample per elapsed step
    s = Paths("kato", paths, params={"alpha": 0.0})
    s.pick()
    s.obs[:, OBS_CWND] = [10 * MSS, 30 * MSS, 50 * MSS]
    s.pick()  # same step: mean still 300
    assert s.st[1] == 3
    s.cobs[COBS_ELAPSED] = 0.001
    assert s.path() == 1  # mean (900 + 9000) / 6 = 1650: High is 3000 packets/s
    assert s.st[1] == 6


def test_every_scheduler_delivers_data_in_the_batched_simulator():
    base = load_scenario("configs/scenario/ispras_s1.yaml")
    scen = scenario_from_dict({**base.model_dump(exclude_none=True), "workload": {"type": "bulk", "duration_s": 2}})
    for name in NAMES:
        sim = Simulator(scen, "cubic", scheduler=name, batch=2, seed=3)
        sim.reset()
        sim.run()
        res = sim.results()
        assert np.all(res["goodput_mbps"] > 0.05), name
        assert np.all(np.isfinite(res["goodput_mbps"])), name
    # the schedulers that use both paths do use both
    for name in ("rr", "wrr", "redundant", "lws", "lts", "hsr", "kato"):
        sim = Simulator(scen, "cubic", scheduler=name, batch=2, seed=3)
        sim.reset()
        sim.run()
        assert np.all(sim.results()["per_path_goodput_mbps"] > 0), name


def test_new_heuristics_work_as_interval_modes_of_the_env():
    small = {"name": "small", "paths": [{"bandwidth_mbps": 10, "delay_ms": 5}, {"bandwidth_mbps": 20, "delay_ms": 20}],
             "workload": {"type": "file", "file_mb": 0.5}}
    modes = [n for n in NAMES if n not in ("minrtt", "rr", "fixed")]
    modes = [{"scheduler": "kato", "params": {"alpha": 0.75}}, {"scheduler": "wrr", "params": {"weights": [1, 2]}},
             *modes]
    env = gym.make("mpsched/Multipath-v0", scenario=small, cc="reno", decision="interval", interval_ms=10, modes=modes)
    env.reset(seed=0)
    assert env.action_space.n == len(modes)
    done, k = False, 0
    while not done:
        *_, term, trunc, info = env.step(k % len(modes))
        done, k = term or trunc, k + 1
    assert term and info["episode_metrics"]["goodput_mbps"] > 0 and k >= len(modes)
    with pytest.raises(ConfigError, match="weights: give one weight per path"):
        gym.make("mpsched/Multipath-v0", scenario=small, cc="reno", decision="interval",
                 modes=[{"scheduler": "wrr", "params": {"weights": [1, 2, 3]}}])


@pytest.mark.parametrize("name, params, message", [
    ("kato", {"alpha": 1.5}, "scheduler 'kato': alpha must be in [0, 1], got 1.5"),
    ("kato", {"alpha": -0.1}, "alpha must be in [0, 1]"),
    ("sod", {"delta": -1}, "scheduler 'sod': delta must be in [0, 10000] (packets), got -1.0"),
    ("wrr", {"weights": [1, 2, 3]}, "weights: give one weight per path (2), got 3"),
    ("wrr", {"weights": [0, 0]}, "weights must be >= 0 with at least one > 0"),
    ("wrr", {"weights": 3}, "weights must be a list of numbers"),
    ("ecf", {"beta": "high"}, "beta must be a number"),
    ("blest", {"lambda_max": 0.5}, "lambda_max must be in [lambda = 1.0, 100]"),
    ("kato", {"alfa": 0.5}, "has no parameter 'alfa'; valid: alpha"),
])
def test_bad_parameters_are_refused_naming_the_field(name, params, message):
    scen = load_scenario("configs/scenario/ispras_s1.yaml")
    with pytest.raises(ConfigError) as err:
        Simulator(scen, "cubic", scheduler=name, scheduler_overrides=params)
    assert message in str(err.value)


def test_weights_need_a_fixed_path_count():
    with pytest.raises(ConfigError, match="different numbers of paths"):
        scheduler_params("wrr", {"weights": [1, 1]}, None)
    assert list(scheduler_params("wrr", {"weights": [2, 1]}, 2)[:3]) == [0.0, 2.0, 1.0]
