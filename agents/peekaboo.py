"""Peekaboo (Wu, Alay, Brunstrom, Ferlin, Caso, "Peekaboo: Learning-Based Multipath Scheduling
for Dynamic Heterogeneous Environments", IEEE JSAC 38(10), 2020; docs/schedulers.md, "Peekaboo
and its successors").

Per packet: send on the fast path F when it has window (the ``blocked`` decision mode does this
without asking); otherwise a contextual bandit (LinUCB) chooses between arm 0 = wait for F and
arm 1 = send on the second path S. Context: the ``peekaboo`` feature set (cwnd, swnd and bytes in
flight of F and of S, each divided by srtt, in units of 100 Mbit/s, clipped to [0, 10]: 6
features). Reward: the ``peekaboo`` preset (bytes acknowledged divided by their RTT over the
decision's consequences, ``envs.rewards``). Learning is online from the first decision (no
warm-up, ``A = ridge * I``, ``b = 0``), with the LinUCB rule ``argmax theta_a^T x + alpha *
sqrt(x^T A_a^-1 x)`` and the update ``A += x x^T``, ``b += r x`` of ``agents.linucb.LinUCB``, plus
the *stochastic adjustment*: with probability ``reverse_prob`` the chosen action is reversed, so
that the model keeps being corrected when the paths change.

Readings chosen (all in ``agent.params``):
- The paper's stochastic part rests on estimated "stochastic factors" of the paths (their
  dynamicity: delay variation, loss); this implementation follows the spec's reduction to a
  constant reversal probability, ``reverse_prob`` = 0.05 by default (chosen).
- ``alpha`` = 0.5 (chosen; the paper's supplementary material studies its effect under
  different path dynamicities), ``ridge`` = 1.
- ``act(obs, deterministic=True)`` (evaluation) exploits: ``argmax theta_a^T x``, no bonus, no
  reversal; ``deterministic=False`` / ``explore`` apply the full online rule (UCB, then reversal).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.linucb import LinUCB
from agents.params import number


class Peekaboo(LinUCB):
    """LinUCB over {wait for F, send on S} with the stochastic reversal. Params: ``alpha`` (0.5),
    ``reverse_prob`` (0.05), ``ridge`` (1.0)."""

    DEFAULTS = {**LinUCB.DEFAULTS, "alpha": 0.5, "reverse_prob": 0.05}
    RULES = {**LinUCB.RULES, "reverse_prob": number(0.0, 0.5)}

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        self.reversals = 0

    def explore(self, obs: np.ndarray) -> np.ndarray:
        chosen = super().explore(obs)
        flip = self.rng.random(chosen.shape[0]) < float(self.params["reverse_prob"])
        self.reversals += int(flip.sum())
        return np.where(flip, 1 - chosen, chosen).astype(np.int64)
