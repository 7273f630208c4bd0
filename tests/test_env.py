"""The Gymnasium environments: API conformance, decision modes, feature sets, rewards, SB3."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3 import DQN
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import envs  # noqa: F401 (registers mpsched/Multipath-v0)
from envs.errors import ConfigError
from envs.features import CLIP, FEATURE_SETS, feature_set
from envs.rewards import REWARDS
from envs.vector_env import SB3VecEnv

# path 1 is the fast one (lowest RTT); path 2 has more capacity but 4x the RTT
SMALL = {"name": "small", "paths": [{"bandwidth_mbps": 10, "delay_ms": 5, "loss_pct": 0.5},
                                    {"bandwidth_mbps": 20, "delay_ms": 20, "loss_pct": 0.5}],
         "workload": {"type": "file", "file_mb": 0.5}}


@pytest.mark.parametrize("decision", ["blocked", "interval", "packet"])
def test_env_passes_gymnasium_and_sb3_checkers(decision):
    env = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic", decision=decision)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=False)


@pytest.mark.parametrize("decision", ["blocked", "interval", "packet"])
def test_episode_runs_to_the_end_and_reports_metrics(decision):
    env = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="reno", decision=decision, interval_ms=20)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    steps, done = 0, False
    while not done:
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert np.isfinite(r) and env.observation_space.contains(obs)
        steps, done = steps + 1, term or trunc
    metrics = info["episode_metrics"]
    assert term and metrics["completion_s"] > 0
    # a 0.5 MB file cannot finish faster than both paths' capacity allows
    assert metrics["goodput_mbps"] <= 30.0


def test_blocked_mode_asks_only_when_the_fast_path_is_blocked():
    env = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic", decision="blocked",
                   observation="full").unwrapped
    env.reset(seed=2)
    sim = env.process.sim
    from envs.sim.layout import OBS_AVAILABLE, OBS_SRTT
    for _ in range(20):
        o = sim.obs[0, :2]
        fast = int(np.argmin(o[:, OBS_SRTT]))
        assert o[fast, OBS_AVAILABLE] == 0 and o[1 - fast, OBS_AVAILABLE] == 1
        *_, term, trunc, _ = env.step(1)
        if term or trunc:
            break


def test_waiting_for_the_fast_path_keeps_the_slow_path_idle():
    """Always waiting: the slow path carries only what minRTT sends before the first RTT samples
    (both paths start at the initial RTT), far less than always sending on it."""
    def slow_share(action):
        env = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic").unwrapped
        env.reset(seed=3)
        done = False
        while not done:
            *_, term, trunc, info = env.step(action)
            done = term or trunc
        per_path = info["episode_metrics"]["per_path_goodput_mbps"]
        return per_path[1] / sum(per_path)
    assert slow_share(0) < 0.5 * slow_share(1)


def test_vector_env_from_make_vec_autoresets_in_the_same_step():
    venv = gym.make_vec("mpsched/Multipath-v0", num_envs=4, vectorization_mode="vector_entry_point",
                        scenario=SMALL, cc="bbr", decision="interval", interval_ms=50)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (4, venv.single_observation_space.shape[0])
    ended = 0
    for _ in range(400):
        obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
        if (term | trunc).any():
            ended += int((term | trunc).sum())
            assert all(fi is not None for fi, e in zip(info["final_info"], term | trunc) if e)
    assert ended > 0 and venv.observation_space.contains(obs)


def test_step_infos_are_one_dict_per_connection():
    """The batched step's infos index like a list: a negative index reads the same dict (which
    callers may extend), a slice gives a list, past the end raises IndexError."""
    venv = SB3VecEnv(num_envs=3, scenario=SMALL, cc="bbr", decision="blocked")
    venv.reset()
    rew, term, trunc, infos = venv.process.step(np.ones(3, dtype=np.int64))
    assert rew.dtype == np.float32 and term.shape == trunc.shape == (3,)
    assert infos[-1] is infos[2] and infos[0:2] == [infos[0], infos[1]]
    assert set(infos[0]) >= {"goodput_mbps", "elapsed_s", "decisions", "cc"} and infos[0]["cc"] == "bbr"
    assert infos[1]["decisions"] == 1
    for bad in (3, -4):
        with pytest.raises(IndexError):
            infos[bad]


def test_sb3_trains_on_the_batched_env():
    venv = SB3VecEnv(num_envs=4, scenario=SMALL, cc="cubic", decision="blocked")
    model = DQN("MlpPolicy", venv, learning_starts=50, buffer_size=1000, seed=0, verbose=0)
    model.learn(300)
    action, _ = model.predict(venv.reset(), deterministic=True)
    assert action.shape == (4,)


@pytest.mark.parametrize("name", [*FEATURE_SETS, "full"])
def test_feature_sets_are_bounded(name):
    env = gym.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr", observation=name)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        obs, *_ = env.step(1)
        assert obs.shape == (len(feature_set(name, 2)),)
        assert np.all((obs >= 0) & (obs <= CLIP))


@pytest.mark.parametrize("reward", REWARDS)
def test_reward_presets_are_finite(reward):
    env = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic", reward=reward,
                   reward_params={"gamma": 1.0} if reward == "ispras" else None)
    env.reset(seed=0)
    rewards = [env.step(1)[1] for _ in range(20)]
    assert np.all(np.isfinite(rewards))
    if reward == "completion":
        assert all(r <= 0 for r in rewards)


@pytest.mark.parametrize("kwargs, message", [
    ({"cc": "bbr3"}, "unknown cc 'bbr3'; valid: balia, bbr, bbr2"),
    ({"scenario": "nope"}, "unknown scenario 'nope'; valid:"),
    ({"decision": "sometimes"}, "unknown decision mode 'sometimes'; valid: blocked"),
    ({"observation": "everything"}, "unknown observation set 'everything'; valid:"),
    ({"reward": "money"}, "unknown reward 'money'; valid:"),
    ({"reward": "ispras", "reward_params": {"beta": -1}}, "reward.beta must be >= 0"),
    ({"scenario": "mptcp_tut_e0", "observation": "ispras_dqn", "decision": "interval"}, None),
    ({"scenario": {**SMALL, "paths": SMALL["paths"][:1]}, "observation": "ispras_dqn", "decision": "packet"},
     "reads path 2"),
    ({"scenario": {**SMALL, "paths": SMALL["paths"][:1]}}, "decision mode 'blocked' needs scenarios with at least 2"),
])
def test_bad_input_is_named(kwargs, message):
    if message is None:
        gym.make("mpsched/Multipath-v0", **kwargs)  # 5 paths, set reads paths 1 and 2: fine
        return
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        gym.make("mpsched/Multipath-v0", **kwargs)


def test_single_env_step_matches_the_batched_step_and_survives_pickling():
    """The single env's ``step_one`` returns what the batched ``step`` does for its one connection,
    and a copy pickled mid-episode (the compiled step's bound machine code is left out) continues
    identically to the end."""
    import pickle

    single = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic").unwrapped
    batched = gym.make("mpsched/Multipath-v0", scenario=SMALL, cc="cubic").unwrapped.process
    single.reset(seed=3)
    batched.sim.seed = 3
    batched.reset()
    actions = iter(np.random.default_rng(0).integers(0, 2, size=10_000).tolist())
    copy, ended = None, False
    while not ended:
        a = next(actions)
        obs, reward, term, trunc, info = single.step(a)
        rew, terms, truncs, infos = batched.step([a])
        np.testing.assert_equal((obs, reward, term, trunc, info),
                                (batched.last_obs[0], float(rew[0]), bool(terms[0]), bool(truncs[0]), infos[0]))
        if copy is not None:
            np.testing.assert_equal(copy.step_one(a), (reward, term, trunc, info))
            np.testing.assert_equal(copy.last_obs[0], obs)
        elif info["decisions"] == 20:
            copy = pickle.loads(pickle.dumps(single.process))
        ended = term or trunc
    assert copy is not None and info["decisions"] > 40 and "episode_metrics" in info
