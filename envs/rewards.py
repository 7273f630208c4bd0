"""Reward presets: the one definition of each reward, computed from sender-observable state only
(so the same reward can be computed inside a real transport for online learning).

A reward is evaluated per decision from two snapshots of the sender's state, at the previous
decision and now; ``Snapshot`` holds what they need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from envs.errors import ConfigError, out_of_range, unknown_name
from envs.sim.layout import COBS_ACKED, COBS_ELAPSED, OBS_ACKED, OBS_LATEST_RTT, OBS_LOSSES, OBS_SENT, OBS_SRTT

MBIT_S = 125_000.0
REWARDS = ("throughput", "ispras", "peekaboo", "completion")


@dataclass(frozen=True)
class RewardSpec:
    """``name`` plus its weights and normalisers (``configs/env``: ``reward.*``)."""

    name: str = "throughput"
    alpha: float = 1.0  # ispras: weight of throughput
    beta: float = 0.5  # ispras: weight of RTT
    gamma: float = 0.0  # ispras: weight of loss (transport.md objective)
    thr_norm_mbps: float = 100.0
    rtt_norm_ms: float = 100.0
    time_norm_s: float = 1.0  # completion: seconds that cost a reward of -1

    def __post_init__(self) -> None:
        if self.name not in REWARDS:
            raise unknown_name("reward", self.name, REWARDS)
        for k in ("alpha", "beta", "gamma"):
            if getattr(self, k) < 0:
                raise out_of_range(f"reward.{k}", getattr(self, k), ">= 0")
        for k in ("thr_norm_mbps", "rtt_norm_ms", "time_norm_s"):
            if not getattr(self, k) > 0:
                raise out_of_range(f"reward.{k}", getattr(self, k), "> 0")


@dataclass
class Snapshot:
    """Sender-observable counters of B connections at one decision."""

    acked: np.ndarray  # [B] in-order bytes acknowledged
    path_acked: np.ndarray  # [B, P]
    path_sent: np.ndarray  # [B, P] bytes
    losses: np.ndarray  # [B, P] packets declared lost
    elapsed: np.ndarray  # [B] s
    srtt: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [B, P] s
    latest_rtt: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def take(cls, obs: np.ndarray, cobs: np.ndarray, P: int) -> Snapshot:
        o = obs[:, :P]
        return cls(cobs[:, COBS_ACKED].copy(), o[..., OBS_ACKED].copy(), o[..., OBS_SENT].copy(),
                   o[..., OBS_LOSSES].copy(), cobs[:, COBS_ELAPSED].copy(), o[..., OBS_SRTT].copy(),
                   o[..., OBS_LATEST_RTT].copy())


def reward(spec: RewardSpec, before: Snapshot, now: Snapshot, real: np.ndarray, mss: float) -> np.ndarray:
    """Reward per connection for the decision that led from ``before`` to ``now``.

    real: [B, P] mask of the connections' real paths.
    - throughput: in-order goodput over the interval, / thr_norm.
    - ispras: alpha * sum_i thr_i / thr_norm - beta * sum_i srtt_i / rtt_norm - gamma * sum_i loss_i
      (ISPRAS, spec/schedulers.md; each term normalised; loss_i = packets lost per packet sent).
    - peekaboo: sum over acknowledged bytes of size / RTT (Peekaboo, Wu et al. 2020), / thr_norm.
    - completion: -elapsed time / time_norm, so an episode's return is minus its completion time.
    """
    dt = np.maximum(now.elapsed - before.elapsed, 1e-9)
    thr_norm = spec.thr_norm_mbps * MBIT_S
    if spec.name == "throughput":
        return (now.acked - before.acked) / dt / thr_norm
    if spec.name == "ispras":
        thr = np.where(real, (now.path_acked - before.path_acked) / dt[:, None], 0.0).sum(1) / thr_norm
        rtt = np.where(real, now.srtt, 0.0).sum(1) / (spec.rtt_norm_ms / 1000)
        sent = np.maximum(now.path_sent - before.path_sent, mss)
        loss = np.where(real, np.minimum((now.losses - before.losses) * mss / sent, 1.0), 0.0).sum(1)
        return spec.alpha * thr - spec.beta * rtt - spec.gamma * loss
    if spec.name == "peekaboo":
        per_rtt = np.where(real, (now.path_acked - before.path_acked) / np.maximum(now.latest_rtt, 1e-3), 0.0)
        return per_rtt.sum(1) / thr_norm
    if spec.name == "completion":
        return -dt / spec.time_norm_s
    raise ConfigError(f"reward {spec.name!r} has no definition")  # unreachable: validated


