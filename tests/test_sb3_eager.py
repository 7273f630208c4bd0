"""The DQN policy the workbench trains (agents/sb3.py ``EagerDQNPolicy``) is Stable-Baselines3's
DQN ``MlpPolicy`` to the bit: the same parameters after training and the same actions for the same
seed, and its optimiser never imports ``torch._dynamo``."""

import subprocess
import sys

import numpy as np
import torch
from stable_baselines3 import DQN

from agents.sb3 import EagerAdam, EagerDQNPolicy
from envs.vector_env import SB3VecEnv
from conftest import ROOT


def _trained(policy):
    env = SB3VecEnv(4, scenario="ispras_s1", cc="bbr2", seed=0, observation="ispras_dqn", reward="ispras")
    model = DQN(policy, env, seed=0, device="cpu", learning_starts=100, train_freq=2, target_update_interval=50,
                exploration_fraction=0.5, buffer_size=2000, policy_kwargs={"net_arch": [6, 6]})
    model.learn(1200)
    return model


def test_same_parameters_and_actions_as_sb3s_mlp_policy():
    torch.set_num_threads(1)
    stock, eager = _trained("MlpPolicy"), _trained(EagerDQNPolicy)
    assert isinstance(eager.policy.optimizer, EagerAdam)
    for a, b in zip(stock.policy.parameters(), eager.policy.parameters(), strict=True):
        assert torch.equal(a, b)
    for x, y in zip(stock.policy.optimizer.state_dict()["state"].values(),
                    eager.policy.optimizer.state_dict()["state"].values(), strict=True):
        assert all(torch.equal(x[k], y[k]) for k in x)
    obs = (np.random.default_rng(1).normal(size=(256, 6)) * [1e5, 0.05, 1e5, 1e5, 0.05, 1e5]).astype(np.float32)
    assert np.array_equal(stock.predict(obs, deterministic=True)[0], eager.predict(obs, deterministic=True)[0])
    # one observation (not a batch) and float64 batches go through SB3's own predict
    assert stock.predict(obs[0], deterministic=True)[0] == eager.predict(obs[0], deterministic=True)[0]
    assert np.array_equal(stock.predict(obs.astype(np.float64), deterministic=True)[0],
                          eager.predict(obs.astype(np.float64), deterministic=True)[0])


EAGER_RUN = """
import pathlib, sys
from agents.sb3 import SB3Agent
from envs.vector_env import SB3VecEnv

class Monitor:
    def on_step(self, n, rewards, infos):
        return True

env = SB3VecEnv(2, scenario="ispras_s1", cc="bbr2", seed=0, observation="ispras_dqn", reward="ispras")
agent = SB3Agent({"algorithm": "DQN", "hyperparams": {"learning_starts": 50, "train_freq": 2}}, 6, 2, 0)
agent.learn(env, 300, Monitor())
agent.save(pathlib.Path(sys.argv[1]))
agent.load_state(pathlib.Path(sys.argv[1]))
print("torch._dynamo" in sys.modules)
"""


def test_training_saving_and_loading_never_import_torch_dynamo(tmp_path):
    out = subprocess.run([sys.executable, "-c", EAGER_RUN, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-2000:]


def test_a_saved_n_step_dqn_loads_with_its_multi_step_returns_and_no_warning(tmp_path, recwarn):
    from agents.sb3 import SB3Agent

    class Monitor:
        def on_step(self, n, rewards, infos):
            return True

    env = SB3VecEnv(2, scenario="ispras_s1", cc="bbr2", seed=0, observation="ispras_dqn", reward="ispras")
    agent = SB3Agent({"algorithm": "DQN", "hyperparams": {"learning_starts": 50, "train_freq": 2, "n_steps": 8}}, 6, 2, 0)
    agent.learn(env, 200, Monitor())
    agent.save(tmp_path)
    recwarn.clear()
    loaded = SB3Agent({"algorithm": "DQN", "hyperparams": {"n_steps": 8}}, 6, 2, 0)
    loaded.load_state(tmp_path)
    assert not [w for w in recwarn if "n_steps" in str(w.message)]
    loaded.learn(env, 60, Monitor())
    assert loaded.model.replay_buffer.n_steps == 8
