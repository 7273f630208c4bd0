"""Exporting policies to C (export/): every learned agent's header compiled with a generated
harness under gcc and clang and compared with the Python policy on random and recorded inputs;
feature parity on simulator states; the compiled policy run inside the simulator; the CLI and
MLflow run ids; bad input."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents import checkpoint
from agents.registry import make_agent, preset
from agents.training import evaluate_agent
from envs.errors import write_atomic
from envs.features import CLIP, compute, feature_set, table
from envs.decision import mode_labels
from envs.multipath_env import build_process
from envs.plugins import parse_scheduler_label
from envs.scenario import resolve_scenarios, scenario_from_dict
from envs.sim.layout import CN_N_SUB, OBS_AVAILABLE, OBS_LOSSES, OBS_SRTT
from envs.vector_env import SB3VecEnv
from export import ExportError, export_agent, export_checkpoint
from export.bodies import QF, Activation, Dense, MLPBody
from export.generate import PolicySpec, header
from export.runtime import ExportedPolicy, Harness, blocked_decision, compile_c, evaluate_exported
from envs.transport import conn_fields, from_raw, path_fields, to_raw
from conftest import ROOT, compose_config

AGENTS = ("dqn", "dqn_completion", "dqn_backlog", "dqn_modes", "ppo", "a2c", "qlearning", "linucb", "linucb_classic",
          "peekaboo", "falcon", "policy_search")
COMPILERS = [c for c in ("gcc", "clang") if shutil.which(c)]
pytestmark = pytest.mark.skipif(not COMPILERS and not shutil.which("cc"), reason="no C compiler (gcc, clang or cc)")
COMPILERS = COMPILERS or ["cc"]
N_RANDOM = 10_000
# Waiting for the fast path matters here, so trained policies do not all answer the same.
SMALL = {"name": "export_small",
         "paths": [{"bandwidth_mbps": 20, "delay_ms": 5, "loss_pct": 0.2, "jitter_ms": 1.0},
                   {"bandwidth_mbps": 4, "delay_ms": 40, "loss_pct": 0.5}],
         "workload": {"type": "file", "file_mb": 0.5}}
TRAIN_STEPS = {"dqn": 2000, "dqn_completion": 2000, "dqn_backlog": 2000, "dqn_modes": 2000, "ppo": 2048, "a2c": 1024, "falcon": 1600,
               "policy_search": 40_000}  # decisions of every candidate: a few generations
FALCON_PARAMS = {"inner_steps": 128, "hidden": [16, 16]}
POLICY_SEARCH_PARAMS = {"population": 4, "runs": 8}  # small generations: several within the steps
RESULTS: dict[str, dict[str, float]] = {}  # figures printed at the end (pytest -s)


class Always:
    def on_step(self, n, rewards, infos) -> bool:
        return True


def agent_config(name: str) -> tuple[dict, dict]:
    """A preset's agent and env sections, a preset built on another (``defaults: [dqn, _self_]``)
    merged over its base as Hydra composes it."""
    cfg = preset(name)
    return cfg["agent"], cfg["env"]


def decision_kwargs(env: dict) -> dict:
    """A preset's decision mode and, in interval mode, its interval and scheduling modes."""
    return {"decision": env["decision"], **{k: env[k] for k in ("interval_ms", "modes") if k in env}}


def env_kwargs(env: dict) -> dict:
    return {**decision_kwargs(env), "observation": env["observation"], "reward": env["reward"]["name"],
            "reward_params": {k: v for k, v in env["reward"].items() if k != "name"}}


# ---------------------------------------------------------------------------------- fixtures
def splitmix_u32(state: int, n: int) -> tuple[np.ndarray, int]:
    """The header's generator (mpsched_rng_u32), n draws from ``state``."""
    out = np.empty(n, dtype=np.uint64)
    m = 2**64 - 1
    for i in range(n):
        state = (state + 0x9E3779B97F4A7C15) & m
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out[i] = (z ^ (z >> 31)) >> 32
    return out, state


def with_file(name: str, file_mb: float):
    """A shipped scenario with a smaller file (short episodes)."""
    return resolve_scenarios(name)[0].with_workload(type="file", file_mb=file_mb)


def record_states(policy, observation: str, decision: str = "blocked", runs: int = 4, seed: int = 11,
                  scenarios=(SMALL, "ispras_s2"), cc: str = "cubic", **modes) -> dict[str, np.ndarray]:
    """Simulator states at decision points under ``policy`` (features -> actions): the raw
    arrays and the environment's features (``modes``: interval mode's interval_ms and modes)."""
    obs, cobs, nsub, feats = [], [], [], []
    for k, scen in enumerate(scenarios):
        scen = scenario_from_dict(dict(scen)) if isinstance(scen, dict) else with_file(scen, 1.0)
        p = build_process(runs, scenario=scen, cc=cc, seed=seed + k, observation=observation, decision=decision,
                          max_duration_s=20.0, **modes)
        p.reset()
        while not p.sim.done.all():
            live = ~p.sim.done
            s = p.sim
            obs.append(s.obs[live, :s.P].copy())
            cobs.append(s.cobs[live].copy())
            nsub.append(s.cn[live, CN_N_SUB].astype(np.int32))
            f = p.observe()
            feats.append(f[live])
            p.step(policy(f))
    return {"obs": np.concatenate(obs), "cobs": np.concatenate(cobs), "nsub": np.concatenate(nsub),
            "features": np.concatenate(feats)}


def random_features(n: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, CLIP, size=(n, width))
    x[: n // 4] = rng.uniform(0.0, 1.0, size=(n // 4, width))  # the common range
    x[: n // 20] *= rng.integers(0, 2, size=(n // 20, width))  # zeros (idle paths)
    return x.astype(np.float32)


def random_raw(n: int, n_paths: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random sender states in simulator units, with the fast path blocked half of the time."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((n, n_paths, len(path_fields())))
    mag = {"cwnd": 2e6, "swnd": 2e6, "srtt": 0.5, "rttvar": 0.1, "min_rtt": 0.3, "latest_rtt": 0.5, "inflight": 2e6,
           "delivery_rate": 2e7, "losses": 300, "retrans": 300, "rtos": 12, "pacing_rate": 2e7, "available": 1,
           "acked": 5e7, "sent": 5e7}
    for k, f in enumerate(path_fields()):
        obs[..., k] = rng.uniform(0, 1, (n, n_paths)) ** 2 * mag[f.sim_name]
    obs[..., OBS_SRTT] += 1e-3
    obs[..., OBS_AVAILABLE] = rng.integers(0, 2, (n, n_paths))
    obs[..., OBS_LOSSES] = np.floor(obs[..., OBS_LOSSES])
    cobs = rng.uniform(0, 1, (n, len(conn_fields()))) * np.array([1e7, 1e8, 30.0, 1e6, 1e7, 1e8, 1e7, 10.0, 300, 1e8])
    cobs[rng.uniform(size=n) < 0.3, 5] = np.inf  # bulk transfers
    pr, cr = to_raw(obs, cobs)
    return pr, cr, np.full(n, n_paths, dtype=np.int32)


class Policy:
    """An agent, its headers (float32, fixed point) and simulator states recorded under it."""

    def __init__(self, name: str, spec: dict, env: dict, meta: dict, agent, h_float: Path, h_fixed: Path,
                 states: dict) -> None:
        self.name, self.spec, self.env, self.meta, self.agent = name, spec, env, meta, agent
        self.kw = env_kwargs(env)
        self.h_float, self.h_fixed, self.states = h_float, h_fixed, states

    def layers(self) -> list[torch.nn.Module] | None:
        """The network's layers in order (what ``forward()`` computes; the sb3 flatten extractor is a
        no-op), or None for a policy without one."""
        a = self.agent
        if self.spec.get("kind", "sb3") == "sb3":
            pol = a.model.policy
            if hasattr(pol, "q_net"):
                return list(pol.q_net.q_net)
            return [*pol.mlp_extractor.policy_net, pol.action_net]
        if self.name == "falcon":
            return list((a.net if a.deployed else a.meta_net).body)
        return None

    # the Python policy's outputs (what forward() computes)
    def outputs(self, x: np.ndarray, double: bool = False) -> np.ndarray:
        """float32 torch as the agent runs it, or (``double``) the same network evaluated in
        float64: the Python policy without torch's own float32 rounding."""
        layers = self.layers()
        if layers is not None:
            dt = torch.float64 if double else torch.float32
            net = torch.nn.Sequential(*copy.deepcopy(layers)).to(dt)
            with torch.no_grad():
                return net(torch.as_tensor(x, dtype=dt)).numpy()
        if self.name == "qlearning":
            return self.agent.q[self.agent.states(x)]
        return self.agent.values(x)

    def magnitudes(self, x: np.ndarray) -> np.ndarray:
        """What float32's rounding of ``outputs`` scales with: each output's sums taken over the
        absolute values of their terms, layer by layer in float64 (|W| |h| + |b|, through each
        activation's slope at the actual pre-activation), the bound of a dot product's rounding
        error (Higham, Accuracy and Stability of Numerical Algorithms, 2002, sec. 3.1:
        |fl(w.h) - w.h| <= gamma_n |w|.|h|). An output that cancels to near 0 is compared at the
        precision of the terms that made it. For a policy without a network, its outputs' own."""
        layers = self.layers()
        if layers is None:
            return np.abs(self.outputs(x, double=True))
        with torch.no_grad():
            h = torch.as_tensor(x, dtype=torch.float64)
            m = h.abs()
            for layer in layers:
                if isinstance(layer, torch.nn.Linear):
                    w, b = layer.weight.double(), layer.bias.double()
                    h, m = h @ w.T + b, m @ w.abs().T + b.abs()
                elif isinstance(layer, torch.nn.ReLU):
                    m = m * (h > 0.0)
                    h = torch.relu(h)
                elif isinstance(layer, torch.nn.Tanh):
                    h = torch.tanh(h)
                    m = m * (1.0 - h * h) + h.abs()
                else:
                    raise TypeError(f"{self.name}: no magnitude rule for {type(layer).__name__}")
        return m.numpy()

    def act_rng(self, x: np.ndarray, seed: int) -> np.ndarray:
        """The rule a non-NULL rng selects, with the header's generator, in Python."""
        a = self.agent
        if self.name == "linucb_classic":
            return np.argmax(a.ucb(x), axis=1)
        if self.name == "peekaboo":
            u, _ = splitmix_u32(seed, len(x))
            q = int(round(a.params["reverse_prob"] * 2**32))
            chosen = np.argmax(a.ucb(x), axis=1)
            return np.where(u < q, 1 - chosen, chosen)
        if self.name == "linucb":
            u, _ = splitmix_u32(seed, len(x))
            v = a.values(x)
            p = np.where(v[:, 1] < v[:, 0], a.params["p_send_if_worse"], a.params["p_send_if_better"])
            return (u < np.rint(p * 2**32)).astype(np.int64)
        return a.act(x, deterministic=True)

    def rng_outputs(self, x: np.ndarray) -> np.ndarray:
        """What the rule a non-NULL rng selects compares, in float64 (UCB for classic LinUCB and
        Peekaboo, the action values otherwise)."""
        if self.name in ("linucb_classic", "peekaboo"):
            return self.agent.ucb(x)
        return self.outputs(x, double=True)

    def margin(self, x: np.ndarray) -> np.ndarray:
        """How much the policy prefers action 1 (bandits: per unit of feature sum)."""
        if self.name in ("linucb", "linucb_classic", "peekaboo"):
            v = self.agent.values(x)
            return (v[:, 1] - v[:, 0]) / np.maximum(x.sum(axis=1), 1e-9)
        o = self.outputs(x, double=True)
        return o[:, 1] - o[:, 0]

    def shift(self, d: float) -> None:
        """Move the decision boundary by ``d`` (last layer's bias, the bandit's theta_1, the Q-table's send column)."""
        a = self.agent
        if self.name in ("linucb", "linucb_classic", "peekaboo"):
            a.theta[1] -= d
            return
        if self.name == "qlearning":
            a.q[:, 1] -= d
            return
        if self.name == "policy_search":  # the last entry of theta: action 1's bias
            a.theta[-1] -= d
            return
        last = self.layers()[-1]
        with torch.no_grad():
            last.bias[1] -= float(d)


def boundary(margins: np.ndarray, tabular: bool) -> float:
    """The median margin; for a table, whose margins take a few values and whose median state sits
    in a cluster of equal ones (a tie answers one way), halfway from it to the nearest other value."""
    med = float(np.median(margins))
    others = np.unique(margins[margins != med])
    if not tabular or not len(others):
        return med
    return (med + float(others[np.argmin(np.abs(others - med))])) / 2


def balance(pol: Policy, observation: str, scens: tuple, lo: float = 0.2, hi: float = 0.8) -> dict[str, np.ndarray]:
    """Move ``pol``'s decision boundary to the median of the states it meets, twice; a shift
    changes those states (waiting where it sent), and where the median then swings between a
    policy that sends almost always and one that almost never does, bisect the boundary between
    the two until it answers each way at a fifth of the states or more. Returns the states met."""
    def met() -> tuple[dict[str, np.ndarray], float]:
        st = record_states(lambda f: pol.agent.act(f, deterministic=True), observation, scenarios=scens,
                           **decision_kwargs(pol.env))
        return st, float(np.mean(pol.agent.act(st["features"], deterministic=True)))

    total, seen = 0.0, []  # the boundary's total shift and the share of action 1 there (falls as it grows)
    for _ in range(2):
        st, share = met()
        seen.append((total, share))
        d = boundary(pol.margin(st["features"]), tabular=pol.name == "qlearning")
        pol.shift(d)
        total += d
    st, share = met()
    seen.append((total, share))
    for _ in range(12):
        below = [t for t, sh in seen if sh > hi]  # shifts that leave it sending too often
        above = [t for t, sh in seen if sh < lo]
        if lo <= share <= hi or not below or not above:
            break
        target = (max(below) + min(above)) / 2
        pol.shift(target - total)
        total = target
        st, share = met()
        seen.append((total, share))
    return st


def build(name: str, base: Path) -> dict[str, Policy]:
    """``trained``: the agent after a short training run, exported from its checkpoint;
    ``balanced``: a copy whose decision boundary is moved (twice or more) to the median of the states
    it meets on SMALL and ispras_s3, so that it answers both ways (briefly trained policies
    tend to answer one way at every decision point)."""
    spec, env = agent_config(name)
    if name == "falcon":
        spec = {**spec, "params": {**(spec.get("params") or {}), **FALCON_PARAMS}}
    if name == "policy_search":
        spec = {**spec, "params": {**(spec.get("params") or {}), **POLICY_SEARCH_PARAMS}}
    kw = env_kwargs(env)
    venv = SB3VecEnv(8, scenario=scenario_from_dict(dict(SMALL)), cc="cubic", seed=1, **kw)
    n_feat, n_act = venv.observation_space.shape[0], int(venv.action_space.n)
    agent = make_agent(spec, n_feat, n_act, seed=0)
    torch.manual_seed(0)
    agent.learn(venv, TRAIN_STEPS.get(name, 3000), Always())
    meta = {"agent": name, "kind": spec.get("kind", "sb3"), "observation": env["observation"],
            "n_features": n_feat, "n_actions": n_act, "n_paths": 2, "decision": env["decision"],
            "spec": spec, "seed": 0, "steps_done": TRAIN_STEPS.get(name, 3000), "finished": True,
            "config_hash": "0123456789ab", "scenarios": ["export_small"], "ccs": ["cubic"]}
    if env["decision"] == "interval":  # as train.py's meta names them (agents.training.interface)
        meta |= {"modes": mode_labels(env["modes"]), "interval_ms": float(env["interval_ms"])}
    d = base / name
    ckpt = checkpoint.save(d / "checkpoint", agent, meta, "test: true\n")
    export_checkpoint(ckpt, d / "trained.h", prefix=f"{name}_policy")
    export_checkpoint(ckpt, d / "trained_q.h", prefix=f"{name}_q", fixed_point=True)
    states = record_states(lambda f: agent.act(f, deterministic=True), env["observation"], **decision_kwargs(env))
    out = {"trained": Policy(name, spec, env, meta, agent, d / "trained.h", d / "trained_q.h", states)}
    bal = Policy(name, spec, env, meta, copy.deepcopy(agent), d / "balanced.h", d / "balanced_q.h", {})
    if name == "policy_search":  # a search that kept minRTT has all-zero weights, nothing to balance: its mean has some
        bal.agent.theta = np.array(agent.optimiser.mean, dtype=np.float64)
    scens = (SMALL, "ispras_s3")
    bal.states = balance(bal, env["observation"], scens)
    export_agent(bal.agent, meta, bal.h_float, prefix=f"{name}_balanced")
    export_agent(bal.agent, meta, bal.h_fixed, prefix=f"{name}_balanced_q", fixed_point=True)
    out["balanced"] = bal
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    cache: dict[str, dict[str, Policy]] = {}

    def get(name: str, variant: str = "trained") -> Policy:
        if name not in cache:
            cache[name] = build(name, base)
        return cache[name][variant]
    yield get
    if RESULTS:
        print("\nexport figures:")
        for k, v in RESULTS.items():
            print(f"  {k}: " + ", ".join(f"{kk}={vv:.6g}" for kk, vv in v.items()))


def inputs_for(t: Policy) -> np.ndarray:
    """>= 10,000 random plus every recorded observation."""
    return np.concatenate([random_features(N_RANDOM, t.meta["n_features"], seed=5), t.states["features"]])


def norm_rel_error(c: np.ndarray, p: np.ndarray, magnitude: np.ndarray | None = None) -> float:
    """max over inputs of max|c - p| / the input's scale: the largest of its outputs' magnitudes
    (``Policy.magnitudes``), or without them of its outputs (an output near 0 next to a larger one
    is compared at the larger one's precision)."""
    p = p.astype(np.float64)
    scale = np.maximum((np.abs(p) if magnitude is None else magnitude).max(axis=1), 1e-30)
    return float((np.abs(c.astype(np.float64) - p).max(axis=1) / scale).max())


TIE = 1e-5
"""Relative margin between the two best outputs under which float32 and float64 may choose
differently (a handful of float32 roundings of the outputs' own scale)."""


def near_ties(outputs: np.ndarray) -> np.ndarray:
    """Where the best two outputs (float64) are within ``TIE`` of their scale."""
    top = np.sort(outputs.astype(np.float64), axis=1)
    margin = top[:, -1] - top[:, -2]
    return margin <= TIE * np.maximum(np.abs(top).max(axis=1), 1e-12)


def assert_same_decisions(c: np.ndarray, py: np.ndarray, outputs: np.ndarray, label: str) -> None:
    """The header's decisions equal Python's wherever the decision is clear: they may differ
    only on near-ties, where the best two outputs (float64) are within ``TIE`` of their scale."""
    tie = near_ties(outputs)
    differ = np.asarray(c) != np.asarray(py)
    assert not np.any(differ & ~tie), f"{label}: {np.sum(differ & ~tie)} clear decisions differ"


def python_decide(t: Policy, pr, cr, nsub) -> np.ndarray:
    """What the simulator does with the Python policy on raw states: in blocked mode its rule
    around the policy, in interval mode the policy's mode index on the features."""
    act = lambda x: t.agent.act(x, deterministic=True)  # noqa: E731
    if t.meta["decision"] == "interval":
        obs, cobs = from_raw(pr, cr)
        return act(compute(table(feature_set(t.meta["observation"], obs.shape[1])), obs, cobs, np.asarray(nsub, float)))
    return blocked_decision(act, t.meta["observation"], pr, cr, nsub)


CASES = [(n, v) for n in AGENTS for v in ("trained", "balanced")]


# ---------------------------------------------------------------------------------- parity
@pytest.mark.parametrize("name, variant", CASES)
def test_float_header_matches_the_python_policy(trained, name, variant, tmp_path):
    t = trained(name, variant)
    x = inputs_for(t)
    assert len(x) >= N_RANDOM
    pr, cr, ns = random_raw(len(x), 2, seed=9)
    py = t.agent.act(x, deterministic=True)
    outputs = t.outputs(x, double=True)
    magnitude = t.magnitudes(x)
    for cc in COMPILERS:
        out = Harness(t.h_float, cc, tmp_path / cc).run(x, pr, cr, ns, seed=123)
        err = norm_rel_error(out["forward"], outputs, magnitude)
        # float32 sums: gamma_n = n 2^-24 a layer, about 5e-5 for three layers of up to 256 terms
        assert err <= 5e-5, f"{name}/{cc}: max relative error {err:.3g}"
        assert_same_decisions(out["act"], py, outputs, f"{name}/{cc}")
        # the rng rule too, but for the near-ties of what it compares (the balanced copies' boundary
        # sits at the median state, often inside a cluster of equal states)
        assert_same_decisions(out["act_rng"], t.act_rng(x, 123), t.rng_outputs(x), f"{name}/{cc} rng rule")
        # decide() on random raw sender states: the whole header against the simulator's logic
        assert np.array_equal(out["decide"], python_decide(t, pr, cr, ns))
        RESULTS[f"{name} {variant} float32 ({cc})"] = {
            "inputs": len(x), "max_rel_error": err, "vs_torch_float32": norm_rel_error(out["forward"], t.outputs(x)),
            "torch_float32_own": norm_rel_error(t.outputs(x), t.outputs(x, double=True)),
            "decision_agreement": float(np.mean(out["act"] == py)),
            "recorded_share_action1": float(np.mean(py[N_RANDOM:]))}
    pol = ExportedPolicy(t.h_float)  # the same artefact through ctypes
    assert np.array_equal(pol.act(x), out["act"])
    assert np.array_equal(pol.decide(pr, cr, ns), out["decide"])


@pytest.mark.parametrize("name", ["linucb", "linucb_classic", "peekaboo"])
def test_the_rng_rule_is_the_agents_own_exploration(trained, name):
    """With an rng the header follows the agent's own explore(): exactly for classic LinUCB (UCB,
    no draw), in distribution for the stochastic rules (different generators)."""
    t = trained(name, "balanced")
    pol = ExportedPolicy(t.h_float, seed=5)
    states = t.states["features"][:200]
    x = np.repeat(states, 200, axis=0)
    c = pol.act(x, deterministic=False)
    py = copy.deepcopy(t.agent).explore(x)
    clear = ~near_ties(t.rng_outputs(states))  # on a near-tie float32 and float64 may take either branch
    assert clear.sum() >= 100
    if name == "linucb_classic":
        assert np.array_equal(c.reshape(200, 200)[clear], py.reshape(200, 200)[clear])
    else:  # per state, the share of "send on the second path" over 200 draws
        c_share, py_share = c.reshape(200, 200).mean(axis=1)[clear], py.reshape(200, 200).mean(axis=1)[clear]
        assert np.abs(c_share - py_share).max() < 0.25 and abs(c_share.mean() - py_share.mean()) < 0.015  # > 4.5 binomial sd


@pytest.mark.parametrize("name, variant", CASES)
def test_fixed_point_header_agrees_with_the_python_policy(trained, name, variant, tmp_path):
    t = trained(name, variant)
    x = inputs_for(t)
    pr, cr, ns = random_raw(len(x), 2, seed=19)
    out = Harness(t.h_fixed, COMPILERS[0], tmp_path).run(x, pr, cr, ns)
    py = t.agent.act(x, deterministic=True)
    rate = float(np.mean(out["act"] == py))
    rec_rate = float(np.mean(out["act"][N_RANDOM:] == py[N_RANDOM:]))
    assert np.array_equal(out["act"], out["act_q"])  # the float wrapper runs the integer path
    raw_rate = float(np.mean(out["decide"] == python_decide(t, pr, cr, ns)))
    RESULTS[f"{name} {variant} int32 fixed point"] = {
        "inputs": len(x), "decision_agreement": rate, "recorded_agreement": rec_rate, "decide_agreement_raw": raw_rate,
        "max_abs_error": float(np.abs(out["forward"] - t.outputs(x, double=True)).max())}
    # a decision may flip only where the two action values are within the int32 format's error of
    # each other (ties: the balanced copies put the boundary at the median state, so there are many)
    ref = t.outputs(x, double=True)
    margin = np.abs(np.diff(ref[:, :2], axis=1)).ravel() if ref.ndim == 2 and ref.shape[1] >= 2 else None
    flips = out["act"] != py
    if margin is not None:
        bound = 4 * float(np.abs(out["forward"] - ref).max())
        assert np.all(margin[flips] <= bound), f"{name}: a decision flipped with margin {margin[flips].max():.3g}"
    assert rate >= 0.98, f"{name}: fixed point agrees on {100 * rate:.3f}% of decisions"
    assert raw_rate >= 0.98, f"{name}: fixed-point decide agrees on {100 * raw_rate:.3f}% of raw states"


# ---------------------------------------------------------------------------------- features
def feature_header(observation: str, n_paths: int, fixed: bool, prefix: str) -> str:
    feats = feature_set(observation, n_paths)
    rng = np.random.default_rng(0)
    body = MLPBody([Dense(rng.normal(size=(4, len(feats))), np.zeros(4)), Activation("relu"),
                    Dense(rng.normal(size=(2, 4)), np.zeros(2))])
    return header(PolicySpec(prefix, feats, observation, "blocked", 2, fixed, [("agent", "feature test")]), body)


@pytest.mark.parametrize("observation", ["ispras_dqn", "ispras_backlog", "peekaboo", "ispras_q", "ispras_q_roles",
                                         "leeyoo", "full"])
def test_feature_parity_on_simulator_states(observation, tmp_path):
    rng = np.random.default_rng(1)
    states = record_states(lambda f: rng.integers(0, 2, len(f)), observation, runs=4,
                           scenarios=(SMALL, "ispras_s2", "ispras_s3"), cc="bbr")
    pr, cr = to_raw(states["obs"], states["cobs"])
    ns = states["nsub"]
    # the Python features of the same counters (as a transport reports them: whole bytes, us)
    obs, cobs = from_raw(pr, cr)
    py = compute(table(feature_set(observation, 2)), obs, cobs, ns)
    pf = tmp_path / "f.h"
    pf.write_text(feature_header(observation, 2, False, "feat"))
    c = ExportedPolicy(pf).features_raw(pr, cr, ns)
    assert c.dtype == np.float32 and np.array_equal(c.view(np.uint32), py.view(np.uint32)), \
        f"{np.sum(c != py)} of {c.size} features differ"
    # rounding the simulator's fluid values to whole bytes and microseconds moves little
    rounding = float(np.abs(c - states["features"]).max())
    assert rounding < 1e-4
    qf = tmp_path / "q.h"
    qf.write_text(feature_header(observation, 2, True, "featq"))
    q = ExportedPolicy(qf).features_raw(pr, cr, ns).astype(np.float64) / 2**QF
    assert np.all((q <= py + 1e-6 * py) & (py - q <= 2.0**-QF + 1e-6 * py)), "fixed point: the floor in Q7.24"
    RESULTS[f"features {observation}"] = {"states": len(ns), "values": c.size, "float32_bit_exact": 1.0,
                                          "fixed_max_abs_error": float(np.abs(q - py).max()),
                                          "vs_unrounded_simulator_max_abs": rounding}


@pytest.mark.parametrize("n_paths", [2, 3, 4])
def test_c_blocked_rule_is_the_simulators(n_paths, tmp_path):
    """The header's path roles and blocked rule (``mpsched_path_roles``, ``decide``) against
    ``envs.sim.roles`` through ``blocked_decision``, with the header's own ``act`` on both sides:
    srtt ties (a few values), every availability pattern, fewer live paths than rows."""
    pf = tmp_path / "rule.h"
    pf.write_text(feature_header("ispras_dqn", 2, False, "rule"))
    policy = ExportedPolicy(pf)
    rng = np.random.default_rng(n_paths)
    n = 4000
    obs = np.zeros((n, n_paths, len(path_fields())))
    obs[..., OBS_SRTT] = rng.integers(1, 4, (n, n_paths)) * 0.01
    obs[..., OBS_AVAILABLE] = rng.integers(0, 2, (n, n_paths))
    obs[..., 0] = obs[..., 1] = 1e5  # cwnd, swnd: the features need a scale
    nsub = rng.integers(2, n_paths + 1, n).astype(np.int32)
    pr, cr = to_raw(obs, np.ones((n, len(conn_fields()))))
    c = policy.decide(pr, cr, nsub)
    py = blocked_decision(lambda x: policy.act(x, deterministic=True), "ispras_dqn", pr, cr, nsub)
    assert np.array_equal(c, py), f"{np.sum(c != py)} of {n} decisions differ"
    assert {-1, 0, 1} <= set(c.tolist())  # waits, the fast path and the second path all occur


@pytest.mark.parametrize("decision, n_actions", [("packet", 3), ("interval", 2)])
def test_decide_in_the_other_decision_modes(decision, n_actions, tmp_path):
    """packet: action i = path i, action n_paths = wait; interval: the mode index."""
    feats = feature_set("full", 2)
    rng = np.random.default_rng(2)
    body = MLPBody([Dense(rng.normal(size=(8, len(feats))), rng.normal(size=8)), Activation("tanh"),
                    Dense(rng.normal(size=(n_actions, 8)), np.zeros(n_actions))])
    h = tmp_path / "m.h"
    modes = ["minrtt", "wait_rule(k=1.25)"] if decision == "interval" else []
    h.write_text(header(PolicySpec("modes", feats, "full", decision, n_actions, False, [("agent", "modes")],
                                   modes=modes, interval_ms=50.0 if modes else 0.0), body))
    pol = ExportedPolicy(h)
    if decision == "interval":  # what a host runs it with, machine-readable (envs.policy_library.header_info)
        assert pol.info["modes"] == modes and pol.info["interval_ms"] == 50.0
        assert parse_scheduler_label(pol.info["modes"][1]) == ("wait_rule", {"k": 1.25})
    pr, cr, ns = random_raw(2000, 2, seed=4)
    x = pol.features_raw(pr, cr, ns)
    a = pol.act(x)
    assert len(np.unique(a)) == n_actions
    expected = np.where(a < 2, a, -1) if decision == "packet" else a
    assert np.array_equal(pol.decide(pr, cr, ns), expected)
    assert "mode 1: wait_rule(k=1.25)" in h.read_text() or decision == "packet"


def test_an_interval_policy_exports_the_modes_it_was_trained_with(trained, tmp_path):
    """The header names the preset's own modes (from the checkpoint's meta, else its training
    config); a checkpoint with neither is refused rather than given the default modes."""
    t = trained("dqn_modes", "trained")
    info = ExportedPolicy(t.h_float).info
    assert info["modes"] == ["minrtt", "wait_rule"] and info["interval_ms"] == 50.0
    meta = {k: v for k, v in t.meta.items() if k not in ("modes", "interval_ms")}
    d = tmp_path / "old"
    checkpoint.save(d, t.agent, meta, "env: {decision: interval, modes: [minrtt, {scheduler: wait_rule, params: {k: 2}}]}\n")
    assert ExportedPolicy(_write(tmp_path / "old.h", export_checkpoint(d))).info["modes"] == ["minrtt", "wait_rule(k=2)"]
    with pytest.raises(ExportError, match="interval policy's header names its modes"):
        export_agent(t.agent, meta)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_an_interval_header_needs_its_modes_and_interval(tmp_path):
    feats = feature_set("full", 2)
    body = MLPBody([Dense(np.ones((2, len(feats))), np.zeros(2))])
    for modes, ms in ((["minrtt", "wait_rule"], 0.0), ([], 50.0)):
        with pytest.raises(ExportError, match="needs its modes and an interval"):
            header(PolicySpec("m", feats, "full", "interval", 2, False, [], modes=modes, interval_ms=ms), body)


# ---------------------------------------------------------------------------------- round trip
class _Setup:
    """What evaluate_agent reads from a training Setup."""

    def __init__(self, t: Policy) -> None:
        self.ccs = {"cubic": {}}
        self.env_kwargs = {**t.kw, "max_duration_s": 60.0}


class Lockstep:
    """Acts with the compiled policy and records, for the same inputs, its decisions, the Python
    policy's and the Python outputs (for the near-tie rule of ``assert_same_decisions``)."""

    def __init__(self, t: Policy, policy: ExportedPolicy) -> None:
        self.t, self.policy, self.c, self.py, self.out = t, policy, [], [], []

    def act(self, obs, deterministic=True):
        a = np.asarray(self.policy.act(obs, deterministic)).reshape(-1)
        self.c.append(a.copy())
        self.py.append(np.asarray(self.t.agent.act(obs, deterministic)).reshape(-1))
        self.out.append(self.t.outputs(obs, double=True))
        return a

    def check(self, label: str) -> bool:
        """Asserts that the clear decisions agree; True when every decision did."""
        c, py = np.concatenate(self.c), np.concatenate(self.py)
        assert_same_decisions(c, py, np.concatenate(self.out), label)
        return bool(np.array_equal(c, py))


def run_raw(s: _Setup, scen, runs: int, seed: int, choose) -> tuple[dict, list]:
    """Episodes driven by ``choose(process)`` (as evaluate_exported drives the header)."""
    p = build_process(runs, scenario=scen, cc="cubic", seed=seed, cc_params=s.ccs, **s.env_kwargs)
    p.reset()
    log = []
    while not p.sim.done.all():
        a = choose(p)
        log.append((~p.sim.done, a.copy()))
        p.step(a)
    return p.sim.results(), log


@pytest.mark.parametrize("name", AGENTS)
def test_round_trip_in_the_simulator(trained, name):
    """The compiled policy in place of the Python one: same actions, same goodput. Through the
    environment's feature vectors (evaluate_agent, unchanged) and from the raw counters through
    the header's own features and decide() (compared with the Python policy reading the same
    counters, rounded to whole bytes and microseconds as a transport reports them)."""
    t = trained(name, "balanced")
    s = _Setup(t)
    tab = table(feature_set(t.meta["observation"], 2))

    def python_on_counters(p):
        pr, cr = to_raw(p.sim.obs[:, :p.sim.P], p.sim.cobs)
        obs, cobs = from_raw(pr, cr)
        return t.agent.act(compute(tab, obs, cobs, p.sim.cn[:, CN_N_SUB]), deterministic=True)

    policy = ExportedPolicy(t.h_float)
    decisions, sent = 0, 0
    for k, scen in enumerate((scenario_from_dict(dict(SMALL)), with_file("ispras_s3", 1.0))):
        r_py = evaluate_agent(t.agent, s, scen, "cubic", runs=4, seed=77 + k)
        lock = Lockstep(t, policy)
        r_c = evaluate_agent(lock, s, scen, "cubic", runs=4, seed=77 + k)
        # the compiled policy drives; where no near-tie flipped, the episodes are the Python ones
        same = lock.check(f"{name} {scen.name}")
        # from the raw counters: the header's float32 features against Python's float64 ones on
        # the same counters, in lockstep (a near-tie may flip, after which trajectories part)
        lockstep: list = []

        def both(p, lockstep=lockstep):  # called within this iteration
            pr, cr = to_raw(p.sim.obs[:, :p.sim.P], p.sim.cobs)
            obs, cobs = from_raw(pr, cr)
            x = compute(tab, obs, cobs, p.sim.cn[:, CN_N_SUB])
            a = t.agent.act(x, deterministic=True)
            c = policy.act(policy.features_raw(pr, cr, p.sim.cn[:, CN_N_SUB]))
            live = ~p.sim.done
            lockstep.append((a[live], c[live], t.outputs(x[live], double=True)))
            return a

        run_raw(s, scen, 4, 77 + k, both)
        py_a, c_a, outputs = (np.concatenate(v) for v in zip(*lockstep))
        # the balanced copy's boundary sits at the median state, often inside a cluster of equal
        # states (every connection's first decisions): there float32 and float64 may part
        assert_same_decisions(c_a, py_a, outputs, f"{name} {scen.name} (raw counters)")
        log_c: list = []
        r_raw = evaluate_exported(policy, s, scen, "cubic", runs=4, seed=77 + k, inputs="raw", record=log_c)
        assert np.all(r_raw["goodput_mbps"] > 0)
        if same:
            for key in ("goodput_mbps", "completion_s"):
                assert np.array_equal(r_py[key], r_c[key], equal_nan=True)
        live_actions = np.concatenate([a[live] for live, a in log_c])
        decisions += live_actions.size
        sent += int(live_actions.sum())
        RESULTS[f"round trip {name} {scen.name}"] = {
            "goodput_mbps_python": float(np.mean(r_py["goodput_mbps"])),
            "goodput_mbps_compiled": float(np.mean(r_c["goodput_mbps"])),
            "goodput_mbps_raw": float(np.mean(r_raw["goodput_mbps"]))}
    RESULTS[f"round trip {name}"] = {"decisions": decisions, "share_action1": sent / decisions}
    assert 0 < sent < decisions, "the policy should answer both ways for the round trip to mean something"


# ---------------------------------------------------------------------------------- C hygiene
def _top_level_statements(text: str) -> list[str]:
    """File-scope declarations and definitions (comments and preprocessor lines removed)."""
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    out, depth, cur = [], 0, []
    for ch in code:
        if depth == 0 or ch in "{}":
            cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            head = "".join(cur).split("{")[0]
            if depth == 0 and ")" in head and "=" not in head:  # end of a function body
                out.append("".join(cur).strip())
                cur = []
        elif ch == ";" and depth == 0:
            out.append("".join(cur).strip())
            cur = []
    return [s for s in out if s]


def all_headers(trained) -> list[Path]:
    return [p for n in AGENTS for v in ("trained", "balanced") for p in (trained(n, v).h_float, trained(n, v).h_fixed)]


def test_headers_have_no_mutable_global_state_and_one_interface(trained):
    for h in all_headers(trained):
        text = h.read_text()
        for st in _top_level_statements(text):
            assert st.startswith(("typedef ", "static const ", "static inline ")), f"{h.name}: {st[:80]}"
        p = re.search(r"static inline int\n(\w+)_decide\(const mpsched_path_obs \*paths, int n_paths, "
                      r"const mpsched_conn_obs \*conn, mpsched_rng \*rng\)", text)
        assert p, f"{h.name}: decide() signature"
        fixed = "FIXED_POINT 1" in text
        assert f"{p.group(1)}_forward(const float *x, float *out)" in text
        for key in ("agent:", "training config:", "feature set:", "export tool:", "mpsched export", "MLflow run:"):
            assert key in text, f"{h.name}: provenance lacks {key}"
        assert ("int32 fixed point" if fixed else "float32") in text


@pytest.mark.parametrize("cc", COMPILERS)
def test_all_policies_live_in_one_binary_warning_free(trained, tmp_path, cc):
    """Every exported header (8 agents x 2 variants x float/fixed) in one translation unit, under
    -std=c99 -Wall -Wextra -Werror -pedantic (and a few more warnings); each policy decides."""
    headers = all_headers(trained)
    for h in headers:
        shutil.copy(h, tmp_path / f"{h.parent.name}_{h.name}")
    prefixes = [re.search(r"static inline int\n(\w+)_decide\(", h.read_text()).group(1) for h in headers]
    calls = "\n".join(f"    sum += {p}_decide(paths, 2, &conn, &rng);" for p in prefixes)
    src = ("#include <stdio.h>\n#include <string.h>\n"
           + "".join(f'#include "{h.parent.name}_{h.name}"\n' for h in headers) + f"""
int main(void)
{{
    mpsched_path_obs paths[2];
    mpsched_conn_obs conn;
    mpsched_rng rng;
    int sum = 0;
    memset(paths, 0, sizeof(paths));
    memset(&conn, 0, sizeof(conn));
    paths[0].srtt_us = 10000;
    paths[1].srtt_us = 40000;
    paths[1].available = 1;
    paths[0].cwnd = 14480;
    paths[1].cwnd = 28960;
    mpsched_rng_seed(&rng, 1);
{calls}
    printf("%d\\n", sum);
    return 0;
}}
""")
    extra = ("-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wundef", "-Wcast-qual", "-Wvla")
    exe = compile_c(src, tmp_path / "all", cc, extra=extra, include_dirs=(tmp_path,))
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.returncode == 0


@pytest.mark.parametrize("cc", COMPILERS)
def test_fixed_point_headers_need_no_fpu(trained, tmp_path, cc):
    """With MPSCHED_NO_FLOAT the fixed-point headers decide with integer instructions only: the
    generated assembly touches no floating-point register or soft-float routine (and gcc
    compiles them with general registers only)."""
    headers = [trained(n, v).h_fixed for n in AGENTS for v in ("trained", "balanced")]
    prefixes = [re.search(r"static inline int\n(\w+)_decide\(", h.read_text()).group(1) for h in headers]
    src = ("#define MPSCHED_NO_FLOAT 1\n" + "".join(f'#include "{h}"\n' for h in headers)
           + "int run(const mpsched_path_obs *paths, const mpsched_conn_obs *conn, mpsched_rng *rng);\n"
           + "int run(const mpsched_path_obs *paths, const mpsched_conn_obs *conn, mpsched_rng *rng)\n{\n"
           + "    return " + " + ".join(f"{p}_decide(paths, 2, conn, rng)" for p in prefixes) + ";\n}\n")
    asm = compile_c(src, tmp_path / "nofpu.s", cc, extra=("-S",))
    text = asm.read_text()
    assert "_decide" in text or "run" in text
    fp = re.search(r"\b(v?(add|sub|mul|div|sqrt|max|min)[sp][sd]|v?cvt\w+|v?u?comis[sd]|f(ld|st|add|mul|div)\w*)\b"
                   r"|__\w+[sd]f[23]?\b|\b(sqrt|tanh|exp)f?\b", text)
    assert not fp, f"floating-point instruction in the fixed-point path: {fp.group(0)}"
    if cc == "gcc":
        compile_c(src, tmp_path / "nofpu.o", cc, extra=("-c", "-mgeneral-regs-only"))


# ---------------------------------------------------------------------------------- CLI, MLflow
@pytest.mark.slow
def test_cli_exports_a_training_run_by_mlflow_run_id(tmp_path):
    from agents.training import run

    cfg = compose_config("train", f"mlflow.tracking_uri=sqlite:///{tmp_path}/mlflow.db", "train.eval_every=0",
                         "train.eval_runs=1", "cc=cubic", "train.steps=300", "file_mb=0.5")
    result = run(cfg, tmp_path / "run")
    meta = checkpoint.read_meta(result["checkpoint"])
    out = tmp_path / "policy.h"
    cli = subprocess.run([sys.executable, "-m", "export", f"checkpoint={result['run_id']}", f"out={out}",
                          f"tracking_uri=sqlite:///{tmp_path}/mlflow.db"], cwd=ROOT, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    text = out.read_text()
    assert meta["config_hash"] in text and result["run_id"] in text and "mpsched export" in text
    assert "ispras_dqn" in text and "mpsched_policy_decide(" in text and "mpsched_policy_forward(" in text
    # the same from a checkpoint directory and from Python, the fixed-point variant too
    by_dir = export_checkpoint(result["checkpoint"])
    assert by_dir.split("checkpoint:")[1].split("\n")[1:] == text.split("checkpoint:")[1].split("\n")[1:]
    q = tmp_path / "q.h"
    cli = subprocess.run([sys.executable, "-m", "export", f"checkpoint={result['checkpoint']}", f"out={q}",
                          "fixed_point=true", "prefix=dqn-fixed v2"], cwd=ROOT, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "dqn_fixed_v2_decide(" in q.read_text()
    for h in (out, q):
        pol = ExportedPolicy(h)
        x = random_features(1000, 6, seed=1)
        agent, _ = checkpoint.load(result["checkpoint"])
        assert np.mean(pol.act(x) == agent.act(x)) >= 0.999


def test_cli_bad_arguments(tmp_path):
    for args, msg in [([], "checkpoint= is required"), (["checkpoint=x", "bogus=1"], "unknown argument 'bogus=1'"),
                      ([f"checkpoint={tmp_path}/nope", f"out={tmp_path}/p.h"], "neither a directory nor an MLflow"),
                      (["checkpoint=x", "fixed_point=maybe"], "fixed_point must be true or false")]:
        cli = subprocess.run([sys.executable, "-m", "export", *args], cwd=ROOT, capture_output=True, text=True)
        assert cli.returncode == 2 and msg in cli.stderr, cli.stderr
    assert not (tmp_path / "p.h").exists()


# ---------------------------------------------------------------------------------- bad input
def test_unsupported_agent_kind_names_it_and_writes_nothing(trained, tmp_path):
    t = trained("dqn")
    out = tmp_path / "p.h"
    with pytest.raises(ExportError, match=r"agent kind 'mystery' \(SB3Agent\) has no exporter"):
        export_agent(t.agent, {**t.meta, "kind": "mystery"}, out)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_unsupported_layer_names_it_and_keeps_the_old_file(trained, tmp_path):
    from torch import nn

    t = trained("dqn")
    agent = copy.deepcopy(t.agent)
    agent.model.policy.q_net.q_net[1] = nn.Softplus()
    out = tmp_path / "p.h"
    out.write_text("previous header\n")
    with pytest.raises(ExportError, match="unsupported layer Softplus in DQN q_net"):
        export_agent(agent, t.meta, out)
    assert out.read_text() == "previous header\n" and len(list(tmp_path.iterdir())) == 1
    agent.model.policy.q_net.q_net[1] = nn.ELU()
    export_agent(agent, t.meta, out)  # ELU: float32 yes ...
    with pytest.raises(ExportError, match="layer ELU is not supported in fixed point"):
        export_agent(agent, t.meta, tmp_path / "q.h", fixed_point=True)  # ... fixed point no
    assert not (tmp_path / "q.h").exists()
    with torch.no_grad():
        agent.model.policy.q_net.q_net[0].weight[0, 0] = float("nan")
    with pytest.raises(ExportError, match="non-finite"):
        export_agent(agent, t.meta, tmp_path / "n.h")


def test_an_agent_module_that_changed_its_rule_is_caught(trained, monkeypatch, tmp_path):
    t = trained("qlearning")
    agent = copy.deepcopy(t.agent)
    monkeypatch.setattr(type(agent), "act", lambda self, obs, deterministic=True: 1 - self.greedy_paths(obs))
    with pytest.raises(ExportError, match="disagrees with the agent's own act"):
        export_agent(agent, t.meta, tmp_path / "p.h")
    assert not (tmp_path / "p.h").exists()


@pytest.mark.parametrize("actions", ["paths", "roles"])
def test_qlearning_both_path_numberings_export_exactly(trained, actions, tmp_path):
    """The Q-table header in either reading of ISPRAS's "path 1 / path 2" (``agent.params.actions``):
    a table whose every row prefers another column, on random and recorded states, float32 and fixed
    point, decides as the agent does."""
    t = trained("qlearning")
    spec = {**t.spec, "params": {**t.spec["params"], "actions": actions}}
    agent = make_agent(spec, t.meta["n_features"], 2, seed=0)
    agent.q = np.random.default_rng(3).normal(size=agent.q.shape)
    meta = {**t.meta, "spec": spec, "observation": agent.observation}  # by index ispras_q, by role ispras_q_roles
    x = inputs_for(t)
    for fixed in (False, True):
        out = tmp_path / f"q_{actions}_{int(fixed)}.h"
        export_agent(agent, meta, out, prefix=f"q_{actions}", fixed_point=fixed)
        assert np.array_equal(ExportedPolicy(out).act(x), agent.act(x, deterministic=True))


@pytest.mark.parametrize("prefix, expected", [("my-policy 2.0", "my_policy_2_0"), ("2fast", "p2fast"),
                                              ("int", "int_"), ("", "mpsched_policy"), ("ok_name", "ok_name")])
def test_names_are_sanitised_to_c_identifiers(trained, tmp_path, prefix, expected):
    t = trained("peekaboo")
    meta = {**t.meta, "agent": "evil */ name\n#error x", "config_hash": "a*/b"}
    out = tmp_path / "p.h"
    export_agent(t.agent, meta, out, prefix=prefix)
    text = out.read_text()
    assert f"{expected}_decide(" in text and "evil *\\/ name" in text
    assert ExportedPolicy(out).info["prefix"] == expected  # compiles, warning-free


def test_write_atomic_never_leaves_a_partial_file(tmp_path, monkeypatch):
    out = tmp_path / "p.h"
    out.write_text("old\n")

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        write_atomic(out, "new\n")
    assert out.read_text() == "old\n" and len(list(tmp_path.iterdir())) == 1


def test_write_atomic_gives_the_mode_a_plain_open_gives(tmp_path):
    """Headers and transfer records were written 0o600 (``mkstemp``'s mode): another user could
    not read an exported header (2026-11-29)."""
    old = os.umask(0o022)
    try:
        assert write_atomic(tmp_path / "p.h", "x\n").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)
