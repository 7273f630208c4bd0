"""LEEYOO's interval DQN: its scheduling modes, the sender's view of the current chunk, the chunk
reward, the exploration rule and the `dqn_leeyoo` preset end to end (docs/schedulers.md)."""


import numpy as np
import pytest

from agents import checkpoint
from agents.leeyoo import LeeyooDQN
from agents.training import run
from envs.errors import ConfigError
from envs.plugins import scheduler_id, scheduler_params
from envs.evaluation import evaluate_heuristic
from envs.scenario import load_scenario
from envs.sim.layout import COBS_ITEM_ACKED, COBS_ITEM_RATE, COBS_ITEMS_ACKED
from envs.sim.simulator import Simulator
from conftest import compose_config



def dash(chunks: int = 6):
    return load_scenario("leeyoo_static_dash").with_workload(chunks=chunks)


def test_minrtt_fast_is_minrtt_then_fast_only_within_its_period():
    full = evaluate_heuristic(load_scenario("leeyoo_static"), "cubic", "minrtt_fast", runs=2, seed=0,
                              scheduler_params={"minrtt_ms": 50, "period_ms": 50})
    minrtt = evaluate_heuristic(load_scenario("leeyoo_static"), "cubic", "minrtt", runs=2, seed=0)
    never = evaluate_heuristic(load_scenario("leeyoo_static"), "cubic", "minrtt_fast", runs=2, seed=0,
                               scheduler_params={"minrtt_ms": 0, "period_ms": 50})
    fast = evaluate_heuristic(load_scenario("leeyoo_static"), "cubic", "fast_only", runs=2, seed=0)
    np.testing.assert_allclose(full["goodput_mbps"], minrtt["goodput_mbps"])
    np.testing.assert_allclose(never["goodput_mbps"], fast["goodput_mbps"])


@pytest.mark.parametrize("name, params, field", [("split", {"p_first": 1.5}, "p_first"),
                                                 ("minrtt_fast", {"minrtt_ms": 60}, "minrtt_ms"),
                                                 ("minrtt_fast", {"period_ms": 0}, "period_ms")])
def test_mode_parameters_out_of_range_are_refused(name, params, field):
    with pytest.raises(ConfigError, match=field):
        scheduler_params(name, params, 2)


def test_the_sender_sees_each_chunk_start_and_complete():
    sim = Simulator([dash(4)], ["cubic"], "minrtt", batch=1, seed=0)
    sim.reset()
    seen_partial, rates = False, []
    while not sim.done[0]:
        sim.advance(20)
        if 0 < sim.cobs[0, COBS_ITEM_ACKED]:
            seen_partial = True
        rates.append(sim.cobs[0, COBS_ITEM_RATE])
    assert seen_partial
    # the session ends when the last chunk reaches the client, before its ACK reaches the server
    assert sim.cobs[0, COBS_ITEMS_ACKED] == 3
    # the first chunk goes at the lowest rung (1 Mbit/s = 125 kB) over a 20 Mbit/s, 10 ms path:
    # its rate as the server sees it is well above the bitrate and below the two paths' sum
    assert 125_000 < max(rates) < 35e6 / 8


def test_chunk_reward_adds_the_chunk_end_term():
    import envs  # noqa: F401 (registers the env)
    import gymnasium as gym
    env = gym.make("mpsched/Multipath-v0", scenario=dash(3), cc="cubic", decision="interval",
                   observation="leeyoo", reward="chunk", reward_params={"beta": 5.0},
                   modes=[{"scheduler": "minrtt"}])
    env.reset(seed=0)
    base = gym.make("mpsched/Multipath-v0", scenario=dash(3), cc="cubic", decision="interval",
                    observation="leeyoo", reward="throughput", modes=[{"scheduler": "minrtt"}])
    base.reset(seed=0)
    extra, buffers, done = [], [], False
    while not done:
        _, r, term, trunc, info = env.step(0)
        _, r0, *_ = base.step(0)
        extra.append(r - r0)
        buffers.append(info["buffer_s"])
        done = term or trunc
    bonuses = [x for x in extra if x > 1e-6]
    assert len(bonuses) == 2  # one per chunk the server saw acknowledged (the last ends the episode first)
    assert max(buffers) > 0


def test_exploration_decays_per_action_and_waits_for_a_comfortable_buffer():
    import gymnasium as gym
    env = gym.make("CartPole-v1")
    model = LeeyooDQN("MlpPolicy", env, epsilon_decay=0.5, explore_buffer_s=10.0, exploration_final_eps=0.0,
                      learning_starts=0, seed=0, device="cpu")
    model._setup_learn(100)  # what learn() sets up first: logger, info buffers
    model.num_timesteps = 3
    model._on_step()
    assert model.exploration_rate == pytest.approx(0.125)
    model.exploration_rate = 1.0
    obs = np.zeros((64, 4), np.float32)
    greedy, _ = model.predict(obs, deterministic=True)
    model._update_info_buffer([{"buffer_s": 2.0}] * 64)
    low, _ = model.predict(obs)
    np.testing.assert_array_equal(low, greedy)  # buffer too low: no exploration
    model._update_info_buffer([{"buffer_s": 20.0}] * 64)
    high, _ = model.predict(obs)
    assert (high != greedy).any()


def test_dqn_leeyoo_preset_trains_on_dash_and_reports_chunk_metrics(tmp_path):
    cfg = compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "agent=dqn_leeyoo", "cc=cubic",
                         "train.steps=600", "train.n_envs=2", "train.eval_every=0", "train.eval_runs=2",
                         "train.checkpoint_every=300", "scenario.leeyoo_static_dash.workload.chunks=8")
    assert list(cfg.scenario) == ["leeyoo_static_dash"] and len(cfg.env.modes) == 7
    result = run(cfg, tmp_path / "run")
    assert "rebuffer s" in result["table"] and "bitrate Mbit/s" in result["table"]
    loaded, meta = checkpoint.load(result["checkpoint"])
    assert meta["n_features"] == 10
    actions = loaded.act(np.zeros((5, 10), np.float32))
    assert set(actions.tolist()) <= set(range(7))
    assert scheduler_id("minrtt_fast") >= 0
