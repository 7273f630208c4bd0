"""Semi-MDP discounting (agents/time_discount.py; Bradtke & Duff, NIPS 7, 1995): the replay
buffer's discounts are ``gamma ** (dt / tau)`` of each step's ``dt_s`` info, the environment's
``dt_s`` is the time between two decisions, an SB3 DQN trains, saves and loads with the buffer,
and a bad setting is refused naming its field."""


import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN

from agents.sb3 import SB3Agent, check_hyperparams
from agents.time_discount import TimeDiscountReplayBuffer, time_discount
from envs.errors import ConfigError
from envs.vector_env import SB3VecEnv
from conftest import refused

TD = {"replay_buffer_class": "TimeDiscountReplayBuffer", "replay_buffer_kwargs": {"time_constant_ms": 20}}


class Monitor:
    def on_step(self, n, rewards, infos):
        return True


def test_discounts_are_gamma_to_the_interval_over_the_time_constant():
    buf = TimeDiscountReplayBuffer(8, spaces.Box(0.0, 1.0, (2,)), spaces.Discrete(2), device="cpu", n_envs=2,
                                   gamma=0.9, time_constant_ms=20.0)
    obs, act = np.zeros((2, 2), np.float32), np.zeros(2, np.int64)
    for dt in ((0.001, 0.020), (0.040, 0.0)):
        buf.add(obs, obs, act, np.zeros(2), np.zeros(2), [{"dt_s": dt[0]}, {"dt_s": dt[1]}])
    # 0.9 ** (1/20), 0.9 ** 1, 0.9 ** 2, 0.9 ** 0 (by hand)
    assert np.allclose(buf.discounts[:2], [[0.9947458, 0.9], [0.81, 1.0]], atol=1e-6)
    assert np.allclose(time_discount(np.array([0.001, 0.020, 0.040]), 0.9, 20.0), [0.9947458, 0.9, 0.81])
    np.random.seed(0)
    batch = buf._get_samples(np.array([0, 0, 1, 1, 1]))
    assert batch.discounts is not None and batch.discounts.shape == (5, 1)
    by_row = {0: {0.9947458, 0.9}, 1: {0.81, 1.0}}
    assert all(min(abs(float(d) - v) for v in by_row[i]) < 1e-6 for i, d in zip([0, 0, 1, 1, 1], batch.discounts))


def test_env_reports_each_decisions_interval():
    env = SB3VecEnv(2, scenario="ispras_s2", cc="bbr", seed=0, observation="ispras_dqn", reward="ispras")
    env.reset()
    _, _, _, infos = env.step(np.array([0, 1]))
    before = [i["elapsed_s"] for i in infos]
    _, _, done, infos = env.step(np.array([0, 1]))
    assert not done.any()
    for b in range(2):
        assert infos[b]["dt_s"] > 0 and infos[b]["dt_s"] == pytest.approx(infos[b]["elapsed_s"] - before[b])


def test_dqn_trains_saves_and_loads_with_the_buffer(tmp_path):
    env = SB3VecEnv(2, scenario="ispras_s1", cc="bbr", seed=0, observation="ispras_dqn", reward="ispras")
    agent = SB3Agent({"algorithm": "DQN", "hyperparams": {"learning_starts": 50, "train_freq": 2, "gamma": 0.8,
                                                          **TD}}, 6, 2, 0)
    agent.learn(env, 200, Monitor())
    assert isinstance(agent.model, DQN)
    buf = agent.model.replay_buffer
    assert isinstance(buf, TimeDiscountReplayBuffer) and (buf.gamma, buf.time_constant_ms) == (0.8, 20.0)
    assert 0.0 < buf.discounts[:buf.pos].min() and buf.discounts[:buf.pos].max() < 1.0
    agent.save(tmp_path)
    loaded = SB3Agent({"algorithm": "DQN", "hyperparams": {}}, 6, 2, 0)
    loaded.load_state(tmp_path)
    obs = np.random.default_rng(0).uniform(0.0, 1.0, (64, 6)).astype(np.float32)
    assert np.array_equal(agent.act(obs), loaded.act(obs))
    loaded.learn(env, 100, Monitor())  # resumes training with a buffer of the same class and settings
    assert isinstance(loaded.model, DQN)
    again = loaded.model.replay_buffer
    assert isinstance(again, TimeDiscountReplayBuffer) and (again.gamma, again.time_constant_ms) == (0.8, 20.0)


@pytest.mark.parametrize("hyperparams, field", [
    ({"replay_buffer_class": "TimeDiscount"}, "agent.hyperparams.replay_buffer_class"),
    ({**TD, "replay_buffer_kwargs": {"time_constant": 20}}, "agent.hyperparams.replay_buffer_kwargs key"),
    ({**TD, "replay_buffer_kwargs": {"time_constant_ms": 0}}, "agent.hyperparams.replay_buffer_kwargs.time_constant_ms"),
    ({**TD, "replay_buffer_kwargs": {"time_constant_ms": float("nan")}},
     "agent.hyperparams.replay_buffer_kwargs.time_constant_ms"),
    ({**TD, "replay_buffer_kwargs": {}}, "needs time_constant_ms"),
    ({"replay_buffer_kwargs": {"time_constant_ms": 20}}, "key for ReplayBuffer 'time_constant_ms'"),
])
def test_a_bad_buffer_setting_names_its_field(hyperparams, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        check_hyperparams(DQN, hyperparams)


def test_returns_and_the_benchmarks_paired_table(capsys):
    from benchmarks.time_discount_returns import main, returns

    # G_2 = 3, G_1 = 2 + 0.5 * 3, G_0 = 1 + 0.5 * 3.5 (by hand)
    assert np.allclose(returns(np.array([1.0, 2.0, 3.0]), np.full(3, 0.5)), [2.75, 3.5, 3.0])
    main(["--preset", "dqn_completion", "--scenario", "ispras_s1", "--members", "minrtt", "fast_only",
          "--tau", "40", "--runs", "2"])
    paired = capsys.readouterr().out.split("less minrtt's")[1]
    row = next(line for line in paired.splitlines() if line.startswith("| fast_only"))
    assert len(row.split("|")) == 2 + 4  # undiscounted, per decision, per 40 ms


@pytest.mark.parametrize("argv, message", [
    (["--preset", "dqnn"], "--preset: unknown agent 'dqnn'; valid: a2c, dqn"),
    (["--preset", "linucb"], "--preset linucb has no gamma; give --gamma"),
    (["--members", "bogus"], "--members bogus: unknown scheduler 'bogus'; valid: atlb, blest"),
    (["--members", "wait_rule"], "--members wait_rule: give a heuristic's name, or the wait rule as wait_rule:<k>"),
    (["--members", "wait_rule:-1"], "--members wait_rule:-1: scheduler 'wait_rule': k must be >= 0"),
    (["--tau", "-5"], "--tau must be > 0 (ms), got -5.0"),
    (["--gamma", "1.5"], "--gamma must be in [0, 1], got 1.5"),
    (["--runs", "0"], "--runs must be an integer >= 1, got 0"),
    (["--set", "alpah=1"], "--set alpah=1: unknown reward setting 'alpah'; valid: alpha"),
    (["--set", "beta"], "--set takes KEY=VALUE items"),
    (["--scenario", "ispras_s9"], "--scenario: unknown scenario 'ispras_s9'; valid: "),
    (["--cc", "bbr3"], "--cc: unknown cc 'bbr3'; valid: "),
])
def test_time_discount_returns_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    """``python -m benchmarks.time_discount_returns``: a bad flag ends, before any simulation, in one
    line naming it and what it takes."""
    assert message in refused("benchmarks.time_discount_returns", argv, monkeypatch, capsys)
