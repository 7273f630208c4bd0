"""Online learning on the real transport (agents.live): a learner's update on a short trace of
mpsched/Live-v0 over XQUIC (tests/data/xquic_online_trace.json: LinUCB choosing ECF or minRTT
every 50 ms on ispras_s1 under BBRv2; provenance inside), without a live setup."""

import json

import numpy as np
import pytest

from agents import checkpoint
from agents.base import OnlineAgent
from agents.live import TraceRecorder, learn_live, preset, replay
from agents.registry import make_agent
from conftest import ROOT

TRACE = ROOT / "tests" / "data" / "xquic_online_trace.json"


@pytest.fixture(scope="module")
def trace() -> dict:
    return json.loads(TRACE.read_text())


def test_trace_is_a_live_xquic_run_with_provenance(trace):
    prov = trace["provenance"]
    assert prov["xquic_commit"].startswith("d67938db705c") and prov["kernel"] and prov["date"]
    assert prov["command"].startswith("python -m agents.live") and prov["modes"] == ["ecf", "minrtt"]
    acts = [t["action"] for t in trace["transitions"]]
    assert len(acts) >= 200 and set(acts) == {0, 1}  # the learner explored both schedulers
    assert trace["episodes"] and all(e["goodput_mbps"] > 0 for e in trace["episodes"])
    assert any(t["done"] for t in trace["transitions"])


@pytest.mark.parametrize("name", ["linucb_classic", "peekaboo"])
def test_online_update_on_the_live_trace(trace, name, tmp_path):
    spec = preset(name)["agent"]
    n = len(trace["feature_names"])
    agent = make_agent(spec, n, 2, seed=0)
    assert isinstance(agent, OnlineAgent)
    assert replay(agent, trace) == len(trace["transitions"])
    # LinUCB's update (Li et al. 2010): A_a = ridge I + sum x x^T, b_a = sum r x over the arm's transitions
    ridge = float(agent.params["ridge"])
    x = np.array([t["obs"] for t in trace["transitions"]], dtype=np.float32).astype(np.float64)
    a = np.array([t["action"] for t in trace["transitions"]])
    r = np.array([t["reward"] for t in trace["transitions"]])
    for arm in (0, 1):
        xs, rs = x[a == arm], r[a == arm]
        np.testing.assert_allclose(agent.A[arm], ridge * np.eye(n) + xs.T @ xs, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(agent.b[arm], xs.T @ rs, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(agent.theta[arm], np.linalg.solve(agent.A[arm], agent.b[arm]), rtol=1e-9)
    assert agent.updates == len(trace["transitions"])
    # what was learnt live saves and loads as a checkpoint of the same agent
    meta = {"agent": name, "kind": spec["kind"], "observation": "peekaboo", "n_features": n, "n_actions": 2,
            "n_paths": 2, "decision": "interval", "spec": spec, "seed": 0, "steps_done": agent.updates,
            "finished": True, "backend": "xquic"}
    checkpoint.save(tmp_path / "ck", agent, meta, "{}\n")
    loaded, _ = checkpoint.load(tmp_path / "ck")
    np.testing.assert_array_equal(loaded.act(x), agent.act(x))


def test_learn_live_runs_the_agents_own_loop(trace):
    """learn_live drives OnlineAgent.learn through a Gymnasium env (here one that replays the
    trace's observations and rewards): the updates equal replaying the same transitions."""
    import gymnasium as gym

    class Replay(gym.Env):
        observation_space = gym.spaces.Box(0.0, 10.0, shape=(len(trace["feature_names"]),), dtype=np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self):
            self.i = 0

        def reset(self, *, seed=None, options=None):
            return np.asarray(trace["transitions"][self.i]["obs"], dtype=np.float32), {}

        def step(self, action):
            t = trace["transitions"][self.i]
            self.i += 1
            return np.asarray(t["next_obs"], dtype=np.float32), t["reward"], t["done"], False, {}

    spec = preset("linucb_classic")["agent"]
    env = TraceRecorder(Replay())
    online = make_agent(spec, 6, 2, seed=0)
    learn_live(online, env, 50)
    again = make_agent(spec, 6, 2, seed=0)
    replay(again, {"transitions": env.transitions})
    np.testing.assert_allclose(online.A, again.A)
    assert len(env.transitions) == 50

