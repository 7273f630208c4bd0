"""From a loaded agent to a policy body, one exporter per agent kind (``agents.registry``).

Each exporter reads the agent's parameters as the agent's module stores them, and checks its
reading against the agent itself: the body's Python reference rule must give the agent's own
``act`` on random observations, so an agent module that changed its rule or its state layout
stops the export with an error instead of shipping a header that decides differently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from envs.features import CLIP
from export.bodies import Activation, Body, Dense, LinearBanditBody, MLPBody, QTableBody
from export.errors import ExportError

SELF_CHECK_ROWS = 2000
SELF_CHECK_AGREEMENT = 0.995  # float64 reference vs the agent's float32 torch: near-ties may differ


# ---------------------------------------------------------------------------------- torch networks
def torch_layers(module, where: str) -> list:
    """Dense/Activation list of a torch module made of Linear layers and element-wise
    activations (nested Sequentials flattened); anything else is refused by name."""
    from torch import nn

    out: list = []

    def walk(m) -> None:
        if isinstance(m, nn.Sequential):
            for child in m:
                walk(child)
        elif isinstance(m, nn.Linear):
            b = m.bias.detach().cpu().numpy() if m.bias is not None else np.zeros(m.out_features, dtype=np.float32)
            out.append(Dense(m.weight.detach().cpu().numpy(), b))
        elif isinstance(m, nn.ReLU):
            out.append(Activation("relu"))
        elif isinstance(m, nn.Tanh):
            out.append(Activation("tanh"))
        elif isinstance(m, nn.LeakyReLU):
            out.append(Activation("leaky_relu", float(m.negative_slope)))
        elif isinstance(m, nn.ELU):
            out.append(Activation("elu", float(m.alpha)))
        elif isinstance(m, (nn.Identity, nn.Flatten, nn.Dropout)):
            pass  # no-ops at inference on a flat feature vector
        else:
            raise ExportError(f"unsupported layer {type(m).__name__} in {where}; supported: Linear, ReLU, Tanh, "
                              f"LeakyReLU, ELU, Identity, Flatten, Dropout")
    walk(module)
    return out


def _flat_extractor(extractor, where: str) -> None:
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if not isinstance(extractor, FlattenExtractor):
        raise ExportError(f"unsupported feature extractor {type(extractor).__name__} in {where}; only "
                          f"FlattenExtractor (MlpPolicy on a flat observation) is exportable")


def sb3_body(agent) -> tuple[Body, str]:
    model = getattr(agent, "model", None)
    if model is None:
        raise ExportError("the SB3 agent has no model (not trained or loaded)")
    algo = type(model).__name__
    policy = model.policy
    q_net = getattr(policy, "q_net", None)
    if q_net is not None and hasattr(q_net, "q_net"):  # DQN-style: argmax of the Q-network
        _flat_extractor(q_net.features_extractor, f"{algo} q_net")
        return MLPBody(torch_layers(q_net.q_net, f"{algo} q_net"), f"{algo} q_net"), f"{algo}: Q-network argmax"
    if hasattr(policy, "mlp_extractor") and hasattr(policy, "action_net"):  # actor-critic: argmax of the logits
        from stable_baselines3.common.distributions import CategoricalDistribution

        if not isinstance(policy.action_dist, CategoricalDistribution):
            raise ExportError(f"{algo}: action distribution {type(policy.action_dist).__name__} is not exportable "
                              f"(only Discrete actions: CategoricalDistribution)")
        _flat_extractor(getattr(policy, "pi_features_extractor", policy.features_extractor), f"{algo} policy")
        layers = torch_layers(policy.mlp_extractor.policy_net, f"{algo} mlp_extractor.policy_net")
        layers += torch_layers(policy.action_net, f"{algo} action_net")
        return MLPBody(layers, f"{algo} policy"), f"{algo}: policy network + action head, argmax of the logits"
    raise ExportError(f"Stable-Baselines3 algorithm {algo} ({type(policy).__name__}) is not exportable: only "
                      f"DQN-style Q-networks and actor-critic MLP policies with a discrete action head")


# ---------------------------------------------------------------------------------- online agents
def qlearning_body(agent) -> tuple[Body, str]:
    from agents import qlearning as ql

    names = list(ql.FEATURES)
    index = {(p, n): p * len(names) + k for p in range(ql.N_PATHS) for k, n in enumerate(names)}
    needed = {"srtt", "rtos", "loss_pct", "delivery_rate"}
    if set(names) != needed or ql.N_PATHS != 2:
        raise ExportError(f"agents/qlearning.py reads features {names} over {ql.N_PATHS} paths; the exporter knows "
                          f"{sorted(needed)} over 2 paths: update export/exporters.py")
    to_nat = {"srtt": ql.TO_MS, "rtos": ql.TO_COUNT, "loss_pct": ql.TO_PCT, "delivery_rate": ql.TO_MBPS}
    keys = ("rtt_low_ms", "rtt_high_ms", "loss_low_pct", "loss_high_pct", "rtos_many", "thr_low_mbps")
    body = QTableBody(agent.q, index, to_nat, {k: agent.params[k] for k in keys}, by_role=agent.by_role,
                      n_features=agent.n_features)
    return body, "tabular Q-learning: state classes from thresholds, greedy Q-table lookup"


def bandit_body(agent) -> tuple[Body, str]:
    from agents.linucb import IsprasLinUCB, LinUCB
    from agents.peekaboo import Peekaboo

    p = agent.params
    if isinstance(agent, Peekaboo):
        return (LinearBanditBody(agent.theta, "peekaboo", np.linalg.inv(agent.A), alpha=float(p["alpha"]),
                                 reverse=float(p["reverse_prob"])),
                "Peekaboo: LinUCB values; online rule UCB + stochastic reversal (seeded rng)")
    if isinstance(agent, IsprasLinUCB):
        return (LinearBanditBody(agent.theta, "ispras", p_worse=float(p["p_send_if_worse"]),
                                 p_better=float(p["p_send_if_better"])),
                "ISPRAS LinUCB: per-arm linear values; published probabilistic rule with a seeded rng")
    if isinstance(agent, LinUCB):
        return (LinearBanditBody(agent.theta, "ucb", np.linalg.inv(agent.A), alpha=float(p["alpha"])),
                "LinUCB (Li et al. 2010): per-arm linear values; online rule argmax UCB")
    raise ExportError(f"bandit agent {type(agent).__name__} has no exporter")


def falcon_body(agent) -> tuple[Body, str]:
    net = agent.net if agent.deployed else agent.meta_net
    which = "deployed online network" if agent.deployed else "meta-learned starting model (not yet deployed)"
    body = MLPBody(torch_layers(getattr(net, "body", net), f"FALCON {which}"), f"FALCON {which}")
    return body, f"FALCON: {which}, Q-network argmax (frozen: no online adaptation in C)"


def policy_search_body(agent) -> tuple[Body, str]:
    layers: list = []
    for layer in agent.layers():
        layers.append(Dense(layer[1], layer[2]) if layer[0] == "dense" else Activation(layer[0]))
    form = "linear scorer" if len(layers) == 1 else f"MLP scorer ({layers[0].weight.shape[0]} {layers[1].kind} units)"
    return (MLPBody(layers, f"policy search {form}"),
            f"policy search: {form} found by {agent.params['optimiser']} on whole episodes, argmax of the scores")


EXPORTERS: dict[str, Callable[[Any], tuple[Body, str]]] = {
    "sb3": sb3_body,
    "qlearning": qlearning_body,
    "linucb_ispras": bandit_body,
    "linucb": bandit_body,
    "peekaboo": bandit_body,
    "falcon": falcon_body,
    "policy_search": policy_search_body,
}


# ---------------------------------------------------------------------------------- self-check
def reference_act(body: Body, x: np.ndarray) -> np.ndarray:
    """The body's deterministic rule in numpy (float64), as the C code computes it."""
    x = np.asarray(x, dtype=np.float64)
    if isinstance(body, MLPBody):
        return np.argmax(body.reference(x), axis=1)
    if isinstance(body, LinearBanditBody):
        v = x @ body.theta.T
        return (v[:, 1] >= v[:, 0]).astype(np.int64) if body.rule == "ispras" else np.argmax(v, axis=1)
    if isinstance(body, QTableBody):
        t, nat, ix = body.thresholds, body.to_natural, body.feature_index

        def cls(path: int) -> np.ndarray:
            g = {n: x[:, ix[(path, n)]] * nat[n] for n in nat}
            low = (g["srtt"] >= t["rtt_high_ms"]) | (g["rtos"] >= t["rtos_many"]) | (g["loss_pct"] >= t["loss_high_pct"])
            high = ((g["srtt"] < t["rtt_low_ms"]) & (g["loss_pct"] < t["loss_low_pct"]) & (g["rtos"] < 1)
                    & (g["delivery_rate"] >= t["thr_low_mbps"]))
            return np.where(low, 0, np.where(high, 2, 1))
        greedy = body.greedy[3 * cls(0) + cls(1)].astype(np.int64)
        if body.by_role:  # the features by role: path 1 is F, the column the action
            return greedy
        return (greedy != (x[:, ix[(1, "srtt")]] < x[:, ix[(0, "srtt")]])).astype(np.int64)
    raise ExportError(f"no reference rule for {type(body).__name__}")


def self_check(agent, body: Body, kind: str, seed: int = 0) -> float:
    """Share of random observations (features uniform in [0, CLIP], and a tenth of them
    structured: zeros and small values) on which the body's rule matches ``agent.act``."""
    rng = np.random.default_rng(seed)
    n = body.n_features
    x = rng.uniform(0.0, CLIP, size=(SELF_CHECK_ROWS, n))
    x[: SELF_CHECK_ROWS // 10] = rng.uniform(0.0, 0.5, size=(SELF_CHECK_ROWS // 10, n))
    x[: SELF_CHECK_ROWS // 20] *= rng.integers(0, 2, size=(SELF_CHECK_ROWS // 20, n))
    x = x.astype(np.float32)
    theirs = np.asarray(agent.act(x, deterministic=True)).reshape(-1)
    ours = reference_act(body, x)
    agree = float(np.mean(theirs == ours))
    if agree < SELF_CHECK_AGREEMENT:
        raise ExportError(f"the {kind} exporter disagrees with the agent's own act() on {100 * (1 - agree):.1f}% of "
                          f"random observations: agents/ changed how it decides; update export/exporters.py")
    return agree
