"""The online learners (agents/qlearning.py, linucb.py, peekaboo.py, falcon.py): the published
rules on hand-built contexts, checkpoints, the training run, and learning on a scenario where
waiting for the fast path matters."""

import json

import numpy as np
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from agents import checkpoint
from agents.falcon import Falcon
from agents.linucb import IsprasLinUCB, LinUCB
from agents.peekaboo import Peekaboo
from agents.qlearning import QLearning
from agents.registry import AGENT_KINDS, make_agent
from agents.training import EVAL_SEED_OFFSET, evaluate_agent, run, setup
from envs.errors import ConfigError
from envs.evaluation import evaluate_heuristic
from envs.features import FEATURE_SETS
from envs.multipath_env import build_process
from envs.scenario import scenario_from_dict
from envs.vector_env import SB3VecEnv
from conftest import ROOT, compose_config

CONFIGS = ("qlearning", "linucb", "linucb_classic", "peekaboo", "falcon")

# Waiting for the fast path matters: a 0.5 MB file over a 20 Mbit/s, 10 ms RTT path beside a
# 1 Mbit/s, 100 ms RTT one, which opens after XQUIC's path setup (120 ms, while the file is still
# being sent). Always waiting: 0.21 s; minRTT puts packets on the slow path, and the last byte
# waits for them, so a random policy loses about a third.
WAIT = {"name": "wait_matters",
        "paths": [{"bandwidth_mbps": 20, "delay_ms": 5}, {"bandwidth_mbps": 1, "delay_ms": 50}],
        "workload": {"type": "file", "file_mb": 0.5}}
LEARN_STEPS = 4000
EVAL_RUNS = 16
EVAL_SEED = 50_000
MARGIN = 0.9  # trained mean completion must be at most 90% of the random policy's


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


def agent_config(name: str) -> tuple[dict, dict]:
    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "configs" / "agent" / f"{name}.yaml"))
    return cfg["agent"], cfg["env"]


def mean_completion(policy, observation: str, cc: str = "cubic") -> float:
    p = build_process(EVAL_RUNS, scenario=WAIT, cc=cc, seed=EVAL_SEED, observation=observation, reward="completion")
    p.reset()
    while not p.sim.done.all():
        p.step(policy(p.observe()))
    return float(np.mean(p.sim.results()["completion_s"]))


def sample_observations(observation: str, n: int = 64) -> np.ndarray:
    """Observations met on the scenario under a random policy, plus random rows."""
    rng = np.random.default_rng(3)
    p = build_process(8, scenario=WAIT, cc="cubic", seed=7, observation=observation)
    p.reset()
    rows = []
    for _ in range(6):
        rows.append(p.observe())
        p.step(rng.integers(0, 2, 8))
    width = rows[0].shape[1]
    rows.append(rng.uniform(0, 3, size=(n, width)).astype(np.float32))
    return np.concatenate(rows)


# ---------------------------------------------------------------------------------- the registry
def test_kinds_are_registered():
    for kind in ("qlearning", "linucb_ispras", "linucb", "peekaboo", "falcon", "policy_search"):
        assert kind in AGENT_KINDS
    for name in CONFIGS:
        spec, _ = agent_config(name)
        assert spec["kind"] in AGENT_KINDS and spec["name"] == name


# ---------------------------------------------------------------------------------- ISPRAS LinUCB
def ispras(**params) -> IsprasLinUCB:
    return IsprasLinUCB({"kind": "linucb_ispras", "params": params}, 6, 2, seed=0)


@pytest.mark.parametrize("theta_s, expected", [(-1.0, 0.3), (1.0, 0.9), (0.0, 0.9)])
def test_ispras_linucb_sends_with_the_published_probabilities(theta_s, expected):
    agent = ispras()
    agent.theta[0] = np.full(6, 0.0)  # val_F = 0
    agent.theta[1] = np.full(6, theta_s)  # val_S < 0, > 0 or = val_F
    x = np.tile(np.linspace(0.1, 0.6, 6), (40_000, 1))
    sent = agent.explore(x).mean()
    assert abs(sent - expected) < 0.01  # 4+ binomial standard deviations
    assert np.all(agent.act(x[:3]) == (1 if theta_s >= 0 else 0))  # evaluation: the likelier branch


def test_ispras_linucb_update_rule():
    agent = ispras(lr=0.1)
    agent.theta[1] = 0.05  # val_S = 0.05 * sum(x) at decision time
    x = np.array([[0.2, 0.1, 0.4, 0.3, 0.0, 0.5]])
    val = 0.05 * x.sum()
    agent.update(x, np.array([1]), np.array([2.0]), x, np.array([False]))
    A = np.eye(6) + x.T @ x
    b = 2.0 * x[0]
    np.testing.assert_allclose(agent.A[1], A)
    np.testing.assert_allclose(agent.b[1], b)
    np.testing.assert_allclose(agent.theta[1], np.linalg.solve(A, b) + 0.1 * (2.0 - val))
    np.testing.assert_allclose(agent.theta[0], 0.0)  # the other arm is untouched
    grad = ispras(lr=0.1, adjust="gradient")
    grad.update(x, np.array([0]), np.array([2.0]), x, np.array([False]))
    np.testing.assert_allclose(grad.theta[0], np.linalg.solve(A, b) + 0.1 * 2.0 * x[0])


# ---------------------------------------------------------------------------------- classic LinUCB
def test_classic_linucb_picks_the_higher_upper_confidence_bound():
    agent = LinUCB({"kind": "linucb", "params": {"alpha": 1.0}}, 2, 2, seed=0)
    x = np.array([[1.0, 0.0]])
    # arm 0: well explored, mean 0.5; arm 1: seen once, mean 0.3, wide bound
    for _ in range(100):
        agent.update(x, np.array([0]), np.array([0.5]), x, np.array([False]))
    agent.update(x, np.array([1]), np.array([0.6]), x, np.array([False]))
    mean = agent.values(x)[0]
    width = np.array([np.sqrt(x[0] @ np.linalg.inv(agent.A[a]) @ x[0]) for a in range(2)])
    np.testing.assert_allclose(mean, [50 / 101, 0.3])  # ridge-1 least squares
    np.testing.assert_allclose(agent.ucb(x)[0], mean + width)
    assert mean[0] > mean[1] and (mean + width)[1] > (mean + width)[0]
    assert agent.explore(x)[0] == 1  # the higher UCB
    assert agent.act(x)[0] == 0  # evaluation exploits the mean
    agent.params["alpha"] = 0.0
    assert agent.explore(x)[0] == 0


def test_classic_linucb_update_is_the_least_squares_statistics():
    agent = LinUCB({"kind": "linucb"}, 3, 2, seed=0)
    X = np.random.default_rng(0).uniform(0, 1, (20, 3))
    acts = np.arange(20) % 2
    r = X @ np.array([1.0, -1.0, 0.5])
    agent.update(X, acts, r, X, np.zeros(20, bool))
    for a in range(2):
        Xa = X[acts == a]
        np.testing.assert_allclose(agent.A[a], np.eye(3) + Xa.T @ Xa)
        np.testing.assert_allclose(agent.b[a], Xa.T @ r[acts == a])


# ---------------------------------------------------------------------------------- Peekaboo
@pytest.mark.parametrize("reverse_prob", [0.05, 0.2])
def test_peekaboo_reverses_the_chosen_action_at_the_configured_rate(reverse_prob):
    agent = Peekaboo({"kind": "peekaboo", "params": {"alpha": 0.0, "reverse_prob": reverse_prob}}, 6, 2, seed=1)
    agent.theta[0] = 1.0  # waiting is clearly better
    x = np.tile(np.full(6, 0.5), (40_000, 1))
    actions = agent.explore(x)
    assert abs(actions.mean() - reverse_prob) < 0.01
    assert agent.reversals == actions.sum()
    assert np.all(agent.act(x[:5]) == 0)  # evaluation: no reversal


def test_peekaboo_learns_online_from_the_first_decision():
    agent = Peekaboo({"kind": "peekaboo"}, 6, 2, seed=0)
    x = np.full((1, 6), 0.5)
    agent.update(x, np.array([1]), np.array([1.0]), x, np.array([False]))
    assert agent.updates == 1 and agent.values(x)[0, 1] > 0


# ---------------------------------------------------------------------------------- Q-learning
def q_row(path1: dict, path2: dict) -> np.ndarray:
    """An ispras_q observation from natural units (srtt ms, rtos, loss %, Mbit/s)."""
    def one(p):
        return [p.get("srtt", 20) / 100, p.get("rtos", 0), p.get("loss", 0.0), p.get("thr", 20) / 10]
    return np.array([one(path1) + one(path2)], dtype=np.float32)


@pytest.mark.parametrize("path, cls", [
    ({}, 2),                      # low RTT, no loss, no RTO, enough throughput: high
    ({"srtt": 100}, 1),           # medium RTT
    ({"srtt": 250}, 0),           # high RTT
    ({"rtos": 3}, 0),             # many RTOs
    ({"rtos": 1}, 1),             # an RTO: not high
    ({"loss": 0.5}, 1),           # moderate loss
    ({"loss": 3.0}, 0),           # high loss
    ({"thr": 0.5}, 1),            # low throughput
])
def test_qlearning_performance_classes(path, cls):
    agent = QLearning({"kind": "qlearning"}, 8, 2, seed=0)
    assert agent.classes(q_row(path, {}))[0, 0] == cls
    assert agent.classes(q_row({}, path))[0, 1] == cls
    assert agent.states(q_row(path, {"srtt": 300}))[0] == 3 * cls + 0


def test_qlearning_maps_paths_onto_the_blocked_decision_and_updates():
    agent = QLearning({"kind": "qlearning", "params": {"lr": 0.5, "gamma": 0.9}}, 8, 2, seed=0)
    slow_first = q_row({"srtt": 300}, {"srtt": 20})  # path 2 is the fast path
    s = agent.states(slow_first)[0]
    assert agent.fast_path(slow_first)[0] == 1
    assert agent.to_env_action(slow_first, np.array([1]))[0] == 0  # path 2 = wait for the fast path
    assert agent.to_env_action(slow_first, np.array([0]))[0] == 1  # path 1 = send on the second path
    # sending on the second path (env action 1) is "send on path 1" in the table
    nxt = q_row({}, {})
    s2 = agent.states(nxt)[0]
    agent.q[s2] = [0.4, 1.0]
    agent.update(slow_first, np.array([1]), np.array([-0.2]), nxt, np.array([False]))
    assert agent.q[s, 0] == pytest.approx(0.5 * (-0.2 + 0.9 * 1.0))
    assert agent.q[s, 1] == 0.0
    agent.update(slow_first, np.array([1]), np.array([-0.2]), nxt, np.array([True]))  # terminal: no bootstrap
    old = 0.5 * (-0.2 + 0.9)
    assert agent.q[s, 0] == pytest.approx(old + 0.5 * (-0.2 - old))
    agent.q[s] = [0.0, 1.0]  # greedy: path 2, the fast path -> wait
    assert agent.act(slow_first)[0] == 0


def test_qlearning_by_role_reads_the_paths_as_the_observation_names_them():
    """``actions: roles`` reads ``ispras_q_roles``, whose first path is F and second the second path
    (``envs.features``, as ``peekaboo``): on a scenario whose fast path is path 2 the features are
    ``ispras_q``'s with the paths swapped, the state is 3 x class(F) + class(S), and the table's
    columns are the env actions, so ispras_s1 (F = path 2) and ispras_s2 (F = path 1) share rows.
    F is the path of lower srtt as the sender sees it: under XQUIC path 2 shows 250 ms until its
    first RTT sample (envs/sim/stacks.py unsampled_rtt), so path 1 is F at the first decisions."""
    slow_first = {"name": "slow_first", "workload": {"type": "file", "file_mb": 1},
                  "paths": [{"bandwidth_mbps": 20, "delay_ms": 40}, {"bandwidth_mbps": 20, "delay_ms": 5}]}
    by_index, by_role = (build_process(2, scenario=slow_first, cc="cubic", seed=3, observation=o)
                         for o in ("ispras_q", "ispras_q_roles"))
    by_index.reset(), by_role.reset()
    second_is_f = 0
    for step in range(30):  # the same seed and actions: the same connections
        xi, xr = by_index.observe(), by_role.observe()
        f2 = xi[:, 4] < xi[:, 0]  # path 2 is F
        assert np.all(f2 | (xi[:, 0] < xi[:, 4]))  # never a tie here
        np.testing.assert_array_equal(xr, np.where(f2[:, None], np.concatenate([xi[:, 4:], xi[:, :4]], axis=1), xi))
        second_is_f += int(f2.sum())
        actions = np.array([step % 2, 1])
        by_index.step(actions), by_role.step(actions)
    assert 0 < second_is_f < 60  # path 2 is F once it has its first sample: both orders were compared
    agent = QLearning({"kind": "qlearning", "params": {"actions": "roles", "lr": 0.5, "gamma": 0.0}}, 8, 2, seed=0)
    assert agent.observation == "ispras_q_roles"
    f_high_s_low = q_row({"srtt": 20}, {"srtt": 300})  # by role: F high class, S low (RTT 300 ms)
    assert agent.states(f_high_s_low)[0] == 3 * 2 + 0
    agent.update(f_high_s_low, np.array([1]), np.array([2.0]), f_high_s_low, np.array([False]))
    assert agent.q[6].tolist() == [0.0, 1.0] and agent.act(f_high_s_low)[0] == 1  # column 1 = send
    env = SB3VecEnv(2, scenario=WAIT, cc="cubic", seed=0, observation="ispras_q")
    with pytest.raises(ConfigError, match="actions: roles reads the 'ispras_q_roles' observation set"):
        agent.learn(env, 10, Always())


def test_qlearning_batch_update_solves_the_self_loop():
    """``update: batch``: a row that leads back to itself (a wait leaves the paths' classes as
    they were) holds the solution of the transitions seen, whatever their order. One early large
    reward for a send (a long interval without a decision), then 875 sends earning 1 and 125 waits
    earning 0.5, every one back into the same state, gamma 0.9: the one-step update with the rates
    the preset had (lr 1 / n^0.8) ends with wait above send (23.63 against 23.45: a fast_only
    clone, as on ispras_s2), the batch update with send = rbar_send / (1 - gamma) = 10.559 and wait
    = 0.5 + 0.9 x 10.559 = 10.003."""
    x = q_row({"srtt": 300}, {"srtt": 80})  # by role: F low (RTT 300 ms), S medium (80 ms): state 1
    sends = [50.0] + [1.0] * 875
    q = {}
    for update in ("sample", "batch"):
        agent = QLearning({"kind": "qlearning", "params": {"actions": "roles", "update": update, "lr": 1.0,
                                                           "lr_decay": "visits", "lr_exponent": 0.8, "gamma": 0.9}},
                          8, 2, seed=0)
        agent.update(x, np.array([1]), np.array([sends[0]]), x, np.array([False]))
        for k in range(1000):
            wait = k % 8 == 0
            agent.update(x, np.array([0 if wait else 1]), np.array([0.5 if wait else 1.0]), x, np.array([False]))
        assert agent.states(x)[0] == 1 and agent.visits[1].tolist() == [125, 876]
        q[update] = agent.q[1].copy()
        assert agent.act(x)[0] == (0 if update == "sample" else 1)
    assert q["sample"] == pytest.approx([23.6275, 23.4534], abs=1e-4)
    send = np.mean(sends) / (1 - 0.9)
    assert q["batch"] == pytest.approx([0.5 + 0.9 * send, send], rel=1e-12)
    assert q["batch"] == pytest.approx([10.0034, 10.5594], abs=1e-4)
    # a terminal transition leads nowhere: its target is its reward
    agent = QLearning({"kind": "qlearning", "params": {"actions": "roles", "update": "batch"}}, 8, 2, seed=0)
    xx = np.repeat(x, 2, axis=0)
    agent.update(xx, np.array([1, 1]), np.array([2.0, 4.0]), xx, np.array([True, False]))
    assert agent.q[1, 1] == pytest.approx(3.0 / (1 - 0.9 * 0.5))
    with pytest.raises(ConfigError, match="agent.params.gamma must be < 1 with update: batch"):
        QLearning({"kind": "qlearning", "params": {"update": "batch", "gamma": 1.0}}, 8, 2, seed=0)


def test_qlearning_checkpoint_keeps_its_model_and_refuses_a_table_by_index(tmp_path):
    """The batch model is saved with the table (a resumed run solves on every transition seen);
    a table learned by role on the index features (before ``ispras_q_roles``) is refused."""
    spec = {"kind": "qlearning", "params": {"actions": "roles", "update": "batch"}}
    x = np.repeat(q_row({"srtt": 300}, {"srtt": 80}), 3, axis=0)
    agent = QLearning(spec, 8, 2, seed=0)
    agent.update(x, np.array([1, 0, 1]), np.array([1.0, 0.5, 2.0]), x, np.array([False, False, True]))
    agent.save(tmp_path)
    loaded = QLearning(spec, 8, 2, seed=0)
    loaded.load_state(tmp_path)
    np.testing.assert_array_equal(loaded.next_counts, agent.next_counts)
    loaded.update(x[:1], np.array([0]), np.array([0.5]), x[:1], np.array([False]))
    agent.update(x[:1], np.array([0]), np.array([0.5]), x[:1], np.array([False]))
    np.testing.assert_array_equal(loaded.q, agent.q)
    state = json.loads((tmp_path / "agent_state.json").read_text())
    (tmp_path / "agent_state.json").write_text(json.dumps({**state, "observation": "ispras_q"}))
    with pytest.raises(ConfigError, match="learned on the 'ispras_q' observation set, actions: roles reads "
                                          "'ispras_q_roles'; retrain it"):
        QLearning(spec, 8, 2, seed=0).load_state(tmp_path)


def test_qlearning_visit_count_rates():
    """``lr_decay: visits``: the n-th update of a pair moves it by lr / n^lr_exponent, so with
    exponent 1 and lr 1 a pair's value is the mean of its targets (gamma 0)."""
    agent = QLearning({"kind": "qlearning", "params": {"actions": "roles", "lr": 1.0, "lr_decay": "visits",
                                                       "lr_exponent": 1.0, "gamma": 0.0}}, 8, 2, seed=0)
    x = q_row({}, {"srtt": 300})
    targets = [4.0, 1.0, 2.5, -1.0]
    for r in targets:
        agent.update(x, np.array([1]), np.array([r]), x, np.array([False]))
    s = agent.states(x)[0]
    assert agent.q[s, 1] == pytest.approx(np.mean(targets)) and agent.visits[s].tolist() == [0, 4]
    with pytest.raises(ConfigError, match="agent.params.lr_exponent"):
        QLearning({"kind": "qlearning", "params": {"lr_exponent": 0.5}}, 8, 2, seed=0)
    with pytest.raises(ConfigError, match="agent.params.actions"):
        QLearning({"kind": "qlearning", "params": {"actions": "index"}}, 8, 2, seed=0)


def test_qlearning_feature_set_layout():
    names = [f.name for f in FEATURE_SETS["ispras_q"]]
    assert names == ["srtt_1", "rtos_1", "loss_pct_1", "delivery_rate_1",
                     "srtt_2", "rtos_2", "loss_pct_2", "delivery_rate_2"]


# ---------------------------------------------------------------------------------- FALCON
def test_falcon_reptile_step_and_change_detection():
    env = SB3VecEnv(4, scenario=WAIT, cc="cubic", seed=0, observation="peekaboo", reward="completion")
    agent = Falcon({"kind": "falcon", "params": {"meta_lr": 1.0, "inner_steps": 64}}, 6, 2, seed=0)
    init = [p.detach().clone() for p in agent.meta_net.parameters()]
    used, stop = agent.meta_train(env, 64, Always())
    assert used == 64 and not stop and agent.meta_iterations == 1
    # meta_lr = 1: the meta-parameters become the task-trained ones
    for mp, tp, p0 in zip(agent.meta_net.parameters(), agent.net.parameters(), init):
        assert torch.allclose(mp, tp, atol=1e-7) and not torch.allclose(mp, p0)
    agent.deploy()
    rng = np.random.default_rng(0)
    fired = [agent.detect(float(rng.normal(1.0, 0.1))) for _ in range(300)]
    assert not any(fired)
    fired = [agent.detect(float(rng.normal(0.0, 0.1))) for _ in range(10)]
    assert any(fired)
    agent.adapt()
    assert agent.adaptations == 1 and agent.det_n == 0
    # the detector's input: one mean reward per episode (or per change_segment decisions)
    agent.params["change_segment"] = 3
    assert agent.segments(np.array([1.0, 2.0]), np.array([False, False])) == []
    assert agent.segments(np.array([3.0, 4.0]), np.array([True, False])) == [2.0]
    assert agent.segments(np.array([5.0, 6.0]), np.array([False, False])) == [4.0]  # row 1: 3 decisions


@pytest.mark.parametrize("name", CONFIGS)
def test_training_is_deterministic_given_the_seed(name, tmp_path):
    spec, env_cfg = agent_config(name)
    if name == "falcon":
        spec = {**spec, "params": {**spec["params"], "inner_steps": 64}}

    def trained(directory):
        env = SB3VecEnv(4, scenario=WAIT, cc="cubic", seed=0, observation=env_cfg["observation"],
                        reward="completion")
        agent = make_agent(spec, env.observation_space.shape[0], 2, seed=3)
        agent.learn(env, 400, Always())
        directory.mkdir()
        agent.save(directory)
        return directory

    a, b = trained(tmp_path / "a"), trained(tmp_path / "b")
    for f in sorted(a.iterdir()):
        if f.suffix == ".npz":
            with np.load(f) as x, np.load(b / f.name) as y:
                for k in x.files:
                    np.testing.assert_array_equal(x[k], y[k])
        elif f.suffix == ".pt":
            x, y = torch.load(f, weights_only=True), torch.load(b / f.name, weights_only=True)
            assert all(torch.equal(x[k], y[k]) for k in x)
        else:
            assert f.read_text() == (b / f.name).read_text(), f.name


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls, params, n_features, n_actions, message", [
    (IsprasLinUCB, {"p_send_if_worse": 1.5}, 6, 2, "agent.params.p_send_if_worse must be"),
    (IsprasLinUCB, {"adjust": "sideways"}, 6, 2, "agent.params.adjust must be one of"),
    (LinUCB, {"alpha": -1}, 6, 2, "agent.params.alpha must be"),
    (LinUCB, {"aplha": 1}, 6, 2, "unknown agent.params key 'aplha'"),
    (LinUCB, {}, 6, 3, "answers the 'blocked' decision"),
    (Peekaboo, {"reverse_prob": 0.9}, 6, 2, "agent.params.reverse_prob must be"),
    (QLearning, {"rtt_low_ms": 300}, 8, 2, "agent.params.rtt_low_ms must be < rtt_high_ms"),
    (QLearning, {"lr": 0}, 8, 2, "agent.params.lr must be"),
    (QLearning, {}, 6, 2, "reads the 'ispras_q' observation set"),
    (Falcon, {"hidden": []}, 6, 2, "agent.params.hidden must be"),
    (Falcon, {"change_detection": "yes"}, 6, 2, "agent.params.change_detection must be true or false"),
])
def test_bad_params_are_named(cls, params, n_features, n_actions, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls({"kind": "x", "params": params}, n_features, n_actions, seed=0)


# ---------------------------------------------------------------------------------- learning
@pytest.mark.parametrize("name", CONFIGS)
def test_learns_to_wait_and_checkpoints_round_trip(name, tmp_path):
    spec, env_cfg = agent_config(name)
    observation = env_cfg["observation"]
    env = SB3VecEnv(8, scenario=WAIT, cc="cubic", seed=1, observation=observation, reward="completion")
    agent = make_agent(spec, env.observation_space.shape[0], 2, seed=0)
    agent.learn(env, LEARN_STEPS, Always())

    trained = mean_completion(lambda o: agent.act(o, deterministic=True), observation)
    rng = np.random.default_rng(0)
    random = mean_completion(lambda o: rng.integers(0, 2, len(o)), observation)
    minrtt = float(np.mean(evaluate_heuristic(scenario_from_dict(WAIT), "cubic", "minrtt", EVAL_RUNS,
                                              seed=EVAL_SEED)["completion_s"]))
    print(f"\n{name}: trained {trained:.3f} s, random {random:.3f} s, minRTT {minrtt:.3f} s "
          f"({100 * (1 - trained / random):.1f}% faster than random, {100 * (1 - trained / minrtt):.1f}% than minRTT)")
    assert trained <= MARGIN * random
    assert trained < minrtt

    meta = {"agent": name, "kind": spec["kind"], "spec": spec, "seed": 0, "observation": observation,
            "n_features": env.observation_space.shape[0], "n_actions": 2, "n_paths": 2, "decision": "blocked"}
    ckpt = checkpoint.save(tmp_path / "ckpt", agent, meta, yaml.safe_dump({"agent": spec}))
    loaded, _ = checkpoint.load(ckpt, expect={"kind": spec["kind"], "observation": observation})
    assert type(loaded) is type(agent)
    obs = sample_observations(observation)
    np.testing.assert_array_equal(loaded.act(obs, deterministic=True), agent.act(obs, deterministic=True))
    # the exploration generator is restored too
    np.testing.assert_array_equal(loaded.act(obs, deterministic=False), agent.act(obs, deterministic=False))


# ---------------------------------------------------------------------------------- train.py
@pytest.fixture(scope="module")
def tracking(tmp_path_factory) -> str:
    """One MLflow store for the module's runs (creating its tables takes seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"


@pytest.mark.parametrize("name", CONFIGS)
def test_training_run_checkpoints_and_reloads(name, tmp_path, tracking):
    (tmp_path / "wait.yaml").write_text(yaml.safe_dump(WAIT))
    cfg = compose_config("train", f"agent={name}", "cc=cubic", f"scenario_file={tmp_path / 'wait.yaml'}",
                         "train.steps=600", "train.n_envs=4", "train.eval_every=0", "train.eval_runs=3",
                         "train.checkpoint_every=0", f"mlflow.tracking_uri={tracking}")
    result = run(cfg, tmp_path / "run")
    loaded, meta = checkpoint.load(result["checkpoint"])
    assert meta["finished"] and meta["kind"] == cfg.agent.kind and meta["observation"] == cfg.env.observation
    # the reloaded agent reproduces the run's final evaluation
    s = setup(cfg, tmp_path / "run")
    scen = s.scenarios[0]
    again = evaluate_agent(loaded, s, scen, "cubic", 3, s.seed + EVAL_SEED_OFFSET)
    row = next(r for r in result["rows"] if r["scheduler"] == name)
    assert np.mean(again["goodput_mbps"]) == pytest.approx(row["goodput_mbps"])
