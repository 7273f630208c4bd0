"""Reward presets: the one definition of each reward, computed from sender-observable state only
(so the same reward can be computed inside a real transport for online learning).

A reward is evaluated per decision from the sender's counters at the previous decision (a
snapshot) and now; both the reward and the snapshot are computed in one compiled call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from envs.errors import out_of_range, unknown_name
from envs.sim.layout import (COBS_ACKED, COBS_ELAPSED, COBS_ITEM_RATE, COBS_ITEMS_ACKED, OBS_ACKED, OBS_INFLIGHT,
                             OBS_LATEST_RTT, OBS_LOSSES, OBS_SENT, OBS_SRTT)

MBIT_S = 125_000.0
REWARDS = ("throughput", "ispras", "peekaboo", "completion", "chunk")


@dataclass(frozen=True)
class RewardSpec:
    """``name`` plus its weights and normalisers (``configs/env``: ``reward.*``)."""

    name: str = "throughput"
    alpha: float = 1.0  # ispras: weight of throughput
    beta: float = 0.5  # ispras: weight of RTT; chunk: weight of the chunk-end reward
    gamma: float = 0.0  # ispras: weight of loss (docs/transport.md objective)
    thr_norm_mbps: float = 100.0
    rtt_norm_ms: float = 100.0
    time_norm_s: float = 1.0  # completion: seconds that cost a reward of -1
    credit: float = 0.0  # ispras: weight of the change of bytes in flight off the fast path (0: as published)
    inorder: bool = False  # ispras: throughput as the connection's in-order delivery (False: per path, as published)
    per_ms: float = 0.0  # ispras: bytes over this fixed interval instead of over the interval to the next decision (0: as published)
    rate_mbps: float = 0.0  # completion: credit for the bytes sent and not declared lost, at this rate (0: none)

    def __post_init__(self) -> None:
        if self.name not in REWARDS:
            raise unknown_name("reward", self.name, REWARDS)
        for k in ("alpha", "beta", "gamma", "credit", "per_ms", "rate_mbps"):
            if not getattr(self, k) >= 0:  # NaN too: it would make every reward NaN
                raise out_of_range(f"reward.{k}", getattr(self, k), ">= 0")
        for k in ("thr_norm_mbps", "rtt_norm_ms", "time_norm_s"):
            if not getattr(self, k) > 0:
                raise out_of_range(f"reward.{k}", getattr(self, k), "> 0")
        for k in ("alpha", "beta", "gamma", "credit", "per_ms", "rate_mbps", "thr_norm_mbps", "rtt_norm_ms",
                  "time_norm_s"):
            if not math.isfinite(getattr(self, k)):
                raise out_of_range(f"reward.{k}", getattr(self, k), "a finite number")

    def vector(self) -> np.ndarray:
        """Parameters in the order the compiled evaluator reads them."""
        return np.array([REWARDS.index(self.name), self.alpha, self.beta, self.gamma,
                         self.thr_norm_mbps * MBIT_S, self.rtt_norm_ms / 1000.0, self.time_norm_s, self.credit,
                         float(self.inorder), self.per_ms / 1000.0, self.rate_mbps * MBIT_S])


# A snapshot of the sender's counters at a decision:
# [acked, elapsed, items acked, then per path: acked, sent, losses, in flight, srtt]
SNAP_ACKED, SNAP_ELAPSED, SNAP_ITEMS, SNAP_PATHS = 0, 1, 2, 3
SNAP_PER_PATH = 5


def snapshot_width(n_paths: int) -> int:
    return SNAP_PATHS + SNAP_PER_PATH * n_paths


@njit(cache=True)
def reward_and_snapshot(prm, prev, obs, cobs, nsub, mss, live, out):
    """Reward of each live connection for the decision that led from its snapshot ``prev[b]`` to
    now, then ``prev[b]`` := now.

    - throughput: in-order goodput over the interval / thr_norm.
    - ispras: alpha * sum_i thr_i / thr_norm - beta * sum_i srtt_i / rtt_norm - gamma * sum_i loss_i
      (ISPRAS, docs/schedulers.md: each term normalised; loss_i = packets declared lost per packet
      sent on path i during the interval). Two options, off as published: ``credit`` adds
      credit * the change of the bytes in flight on the paths other than the fast one (lowest
      srtt at the decision) over the interval, normalised as the throughput term: the bytes a
      blocked decision moves onto the second path count when it moves them (they leave the term
      again when acknowledged or declared lost, when the throughput term counts them), not an RTT
      later, after many decisions; ``inorder`` makes the throughput term the connection's in-order
      delivery instead of the sum over paths; ``per_ms`` > 0 divides the throughput and credit terms'
      bytes by that fixed interval instead of by the interval to the next decision, so that a term
      counts the bytes of one decision, whatever the CC makes that interval: a rate over the interval
      makes a send's credit 1448 B over the ~38 ms until the next decision under XQUIC's CUBIC on
      ispras_s1 and over ~2 ms under BBRv1, so the rewards (and a DQN's Q-values) of the CCs differ
      by one to two orders of magnitude (README, "Learning that does not collapse").
    - peekaboo: sum over acknowledged bytes of size / RTT (Peekaboo, Wu et al. 2020) / thr_norm.
    - completion: -elapsed / time_norm, so an episode's return is minus its completion time. With
      ``rate_mbps`` > 0 a decision also earns the bytes sent over the interval, less those declared
      lost (``sent - mss * losses`` summed over the paths), over that rate: potential-based
      shaping (Ng, Harada, Russell, ICML 1999) whose potential, the bytes out and not known lost,
      ends every transfer at its size, so the undiscounted return is still minus the completion
      time, plus a constant. Without it every decision costs its interval and the values of a
      5 MB transfer (~-0.7 s) dwarf the difference a decision makes (~0.2 ms per packet moved
      off the fast path); with it a decision's reward is the rate of its interval against
      ``rate_mbps``, near zero where the paths run at that rate, so what stands out is what
      delays the end: the last packets held up behind a slow or lossy path.
    - chunk (LEEYOO, docs/schedulers.md): packets acknowledged in the interval (as goodput over
      the interval / thr_norm) plus, per chunk fully acknowledged in it, beta * size / download
      time of the last such chunk / thr_norm (the session ends when its last
      chunk reaches the client, before the server sees it acknowledged: that one earns none).
    """
    kind = int(prm[0])
    for b in range(prev.shape[0]):
        dt = max(cobs[b, COBS_ELAPSED] - prev[b, SNAP_ELAPSED], 1e-9)
        r = 0.0
        if kind == 0:
            r = (cobs[b, COBS_ACKED] - prev[b, SNAP_ACKED]) / dt / prm[4]
        elif kind == 3:
            r = -dt
            if prm[10] > 0.0:
                for i in range(int(nsub[b])):
                    base = SNAP_PATHS + SNAP_PER_PATH * i
                    out_bytes = obs[b, i, OBS_SENT] - prev[b, base + 1] - mss[b] * (obs[b, i, OBS_LOSSES] - prev[b, base + 2])
                    r += out_bytes / prm[10]
            r /= prm[6]
        elif kind == 4:
            r = (cobs[b, COBS_ACKED] - prev[b, SNAP_ACKED]) / dt / prm[4]
            r += prm[2] * (cobs[b, COBS_ITEMS_ACKED] - prev[b, SNAP_ITEMS]) * cobs[b, COBS_ITEM_RATE] / prm[4]
        else:
            per = prm[9] if kind == 1 and prm[9] > 0.0 else dt  # the throughput and credit terms' interval
            if kind == 1 and prm[8] > 0.0:
                r = prm[1] * (cobs[b, COBS_ACKED] - prev[b, SNAP_ACKED]) / per / prm[4]
            fast = _fastest(prev[b], int(nsub[b]))
            for i in range(int(nsub[b])):
                base = SNAP_PATHS + SNAP_PER_PATH * i
                acked = obs[b, i, OBS_ACKED] - prev[b, base]
                if kind == 1:
                    sent = max(obs[b, i, OBS_SENT] - prev[b, base + 1], mss[b])
                    loss = min((obs[b, i, OBS_LOSSES] - prev[b, base + 2]) * mss[b] / sent, 1.0)
                    moved = 0.0 if prm[8] > 0.0 else acked
                    if i != fast:
                        moved += prm[7] * (obs[b, i, OBS_INFLIGHT] - prev[b, base + 3])
                    r += prm[1] * moved / per / prm[4] - prm[2] * obs[b, i, OBS_SRTT] / prm[5] - prm[3] * loss
                else:
                    r += acked / max(obs[b, i, OBS_LATEST_RTT], 1e-3) / prm[4]
        out[b] = r if live[b] else 0.0
        prev[b, SNAP_ACKED] = cobs[b, COBS_ACKED]
        prev[b, SNAP_ELAPSED] = cobs[b, COBS_ELAPSED]
        prev[b, SNAP_ITEMS] = cobs[b, COBS_ITEMS_ACKED]
        for i in range(int(nsub[b])):
            base = SNAP_PATHS + SNAP_PER_PATH * i
            prev[b, base] = obs[b, i, OBS_ACKED]
            prev[b, base + 1] = obs[b, i, OBS_SENT]
            prev[b, base + 2] = obs[b, i, OBS_LOSSES]
            prev[b, base + 3] = obs[b, i, OBS_INFLIGHT]
            prev[b, base + 4] = obs[b, i, OBS_SRTT]


@njit(cache=True, inline="always")
def _fastest(snap, nsub):
    """The path of lowest srtt at the snapshot (the fast path of the decision it was taken at)."""
    fast = 0
    for i in range(1, nsub):
        if snap[SNAP_PATHS + SNAP_PER_PATH * i + 4] < snap[SNAP_PATHS + SNAP_PER_PATH * fast + 4]:
            fast = i
    return fast
