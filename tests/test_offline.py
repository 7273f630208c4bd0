"""Offline fine-tuning of the per-packet DQN on live decisions (agents.offline): behaviour cloning
on the blocked decisions XQUIC recorded (envs.live.dataset), and the fine-tuned policy exported
as before (C header = Python decisions)."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from agents import checkpoint
from agents.offline import CloneSettings, behaviour_clone, finetune
from agents.registry import make_agent
from envs.errors import ConfigError
from envs.live.dataset import SEND, WAIT, BlockedDecisions
from envs.vector_env import SB3VecEnv
from conftest import ROOT

RECORDED = ROOT / "tests" / "data" / "xquic_decisions_s1_bbr_ecf.npz"


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


@pytest.fixture(scope="module")
def dqn_checkpoint(tmp_path_factory) -> Path:
    """A small simulator-trained ISPRAS DQN (configs/agent/dqn.yaml), saved as a checkpoint."""
    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "configs" / "agent" / "dqn.yaml"))
    spec, env = cfg["agent"], cfg["env"]
    agent = make_agent(spec, 6, 2, seed=0)
    venv = SB3VecEnv(4, scenario="ispras_s1", cc="bbr2", seed=1, decision=env["decision"],
                     observation=env["observation"], reward=env["reward"]["name"],
                     reward_params={k: v for k, v in env["reward"].items() if k != "name"})
    agent.learn(venv, 1500, Always())
    meta = {"agent": "dqn", "kind": "sb3", "observation": env["observation"], "n_features": 6, "n_actions": 2,
            "n_paths": 2, "decision": env["decision"], "spec": spec, "seed": 0, "steps_done": 1500,
            "finished": True, "config_hash": "test", "scenarios": ["ispras_s1"], "ccs": ["bbr2"]}
    out = tmp_path_factory.mktemp("dqn") / "checkpoint"
    checkpoint.save(out, agent, meta, OmegaConf.to_yaml(OmegaConf.create(cfg)))
    return out


def demonstrations() -> BlockedDecisions:
    """The recorded live dataset (XQUIC, ECF on ispras_s1 under BBRv1, the best live heuristic of that
    cell; provenance inside)."""
    if not RECORDED.is_file():
        pytest.fail(f"{RECORDED} is missing (record it with python -m envs.live.dataset)")
    return BlockedDecisions.load(RECORDED)


def test_recorded_dataset_has_provenance_and_both_answers():
    d = demonstrations()
    assert d.feature_names == ["cwnd_1", "cwnd_2", "srtt_1", "srtt_2", "inflight_1", "inflight_2"]
    assert len(d) >= 200 and 0 < d.waits < len(d)  # ECF waits at some blocked decisions and sends at others
    assert set(np.unique(d.actions)) <= {WAIT, SEND}
    for key in ("xquic_commit", "kernel", "date", "command", "scheduler", "scenario", "cc"):
        assert d.provenance.get(key), key
    assert d.provenance["scheduler"] == "ecf" and (d.provenance["scenario"], d.provenance["cc"]) == ("ispras_s1", "bbr")


def test_behaviour_cloning_fits_the_live_heuristic_and_exports_as_before(dqn_checkpoint, tmp_path):
    from export import export_checkpoint
    from export.runtime import ExportedPolicy

    data = demonstrations()
    data.save(tmp_path / "d.npz")
    out, r = finetune(dqn_checkpoint, [tmp_path / "d.npz"], tmp_path / "finetuned", CloneSettings(epochs=40, seed=0))
    majority = max(data.waits, len(data) - data.waits) / len(data)
    assert r.agreement_after >= max(r.agreement_before, majority) and r.agreement_after > 0.9, r
    agent, meta = checkpoint.load(out)
    assert meta["finetuned"]["dataset_provenance"][0]["scheduler"] == "ecf"
    assert np.mean(agent.act(data.features) == data.actions) == pytest.approx(r.agreement_after)
    header = export_checkpoint(out, tmp_path / "policy.h")
    policy = ExportedPolicy(header)
    assert np.array_equal(policy.act(data.features).reshape(-1), agent.act(data.features))


def test_cloning_is_reproducible_per_seed(dqn_checkpoint):
    data = demonstrations()
    outs = []
    for _ in range(2):
        agent, _ = checkpoint.load(dqn_checkpoint)
        behaviour_clone(agent, data, CloneSettings(epochs=3, seed=5))
        outs.append(agent.model.q_net(__import__("torch").as_tensor(data.features[:50])).detach().numpy())
    assert np.array_equal(outs[0], outs[1])


def test_bad_input_is_refused(dqn_checkpoint, tmp_path):
    agent, _ = checkpoint.load(dqn_checkpoint)
    with pytest.raises(ConfigError, match="epochs must be an integer >= 1"):
        behaviour_clone(agent, demonstrations(), CloneSettings(epochs=0))
    with pytest.raises(ConfigError, match="holds no blocked decisions"):
        behaviour_clone(agent, BlockedDecisions(["a"] * 6, np.zeros((0, 6), np.float32), np.zeros(0, np.int64)))
    with pytest.raises(ConfigError, match="cannot read the decision dataset"):
        BlockedDecisions.load(tmp_path / "missing.npz")
    lin = tmp_path / "lin"
    shutil.copytree(dqn_checkpoint, lin)
    linucb = make_agent({"name": "linucb_classic", "kind": "linucb", "params": {}}, 6, 2, 0)
    with pytest.raises(ConfigError, match="behaviour cloning fine-tunes a DQN"):
        behaviour_clone(linucb, demonstrations())
