"""Named observation (feature) sets: the one definition of what an agent sees.

A feature is declarative, ``value = field / divisor_field / scale``, clipped to ``[0, CLIP]``,
read from sender-observable state only (``envs.sim.layout`` OBS_* per path, COBS_* per
connection). Being data rather than code, the same definition drives the simulator's
observations (vectorised numpy below) and, later, the C code exported with a policy.

Paths are addressed by index (0, 1, ...) or by role: ``fast`` is the path of lowest srtt,
``second`` the lowest-srtt *available* path other than it (docs/schedulers.md, notation;
``envs.sim.roles``); when no such path exists ``second`` reads as ``fast``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from envs.errors import ConfigError, unknown_name
from envs.sim import roles
from envs.sim.layout import COBS_NAMES, OBS_NAMES

CLIP = 10.0  # every normalised feature lies in [0, CLIP]
MB = 1e6  # bytes
MBIT_S = 125_000.0  # bytes per second in one Mbit/s


@dataclass(frozen=True)
class Feature:
    """``field`` (an OBS name for a path, a COBS name for the connection), optionally divided
    by ``per`` (another field of the same path), divided by ``scale``."""

    name: str
    field: str
    path: int | str | None = None  # index, "fast", "second"; None for connection fields
    per: str | None = None
    scale: float = 1.0

    def __post_init__(self) -> None:
        names = OBS_NAMES if self.path is not None else COBS_NAMES
        if self.field not in names:
            raise unknown_name("feature field", self.field, names)
        if self.per is not None and (self.path is None or self.per not in OBS_NAMES):
            raise ConfigError(f"feature {self.name}: 'per' must name a path field, got {self.per!r}")
        if isinstance(self.path, str) and self.path not in ("fast", "second"):
            raise ConfigError(f"feature {self.name}: path must be an index, 'fast' or 'second'")


def _per_path(role: int | str, specs: list[tuple[str, str, str | None, float]]) -> list[Feature]:
    tag = role if isinstance(role, str) else str(role + 1)
    return [Feature(f"{name}_{tag}", field, role, per, scale) for name, field, per, scale in specs]


_ISPRAS_DQN = tuple([Feature(f"cwnd_{i + 1}", "cwnd", i, None, MB) for i in range(2)]
                    + [Feature(f"srtt_{i + 1}", "srtt", i, None, 0.1) for i in range(2)]
                    + [Feature(f"inflight_{i + 1}", "inflight", i, None, MB) for i in range(2)])
_ISPRAS_Q = [("srtt", "srtt", None, 0.1), ("rtos", "rtos", None, 1.0),
             ("loss_pct", "losses", "sent", 1.0 / (100 * 1448)), ("delivery_rate", "delivery_rate", None, 10 * MBIT_S)]
FEATURE_SETS: dict[str, tuple[Feature, ...]] = {
    # ISPRAS DQN: cwnd_1, cwnd_2, srtt_1, srtt_2, inflight_1, inflight_2
    "ispras_dqn": _ISPRAS_DQN,
    # The ISPRAS DQN's six plus the bytes the connection has yet to send (``backlog``, in MB): what
    # a sender knows of the transfer's end when the application gave it the data (or its size) up
    # front, and what a wait-for-the-fast-path rule near the end reads (studies/headroom.py)
    "ispras_backlog": _ISPRAS_DQN + (Feature("backlog", "backlog", None, None, MB),),
    # Peekaboo / ISPRAS LinUCB context: cwnd, swnd and in-flight over RTT for F and S
    "peekaboo": tuple(
        f for role in ("fast", "second") for f in _per_path(role, [
            ("cwnd_rate", "cwnd", "srtt", 100 * MBIT_S),
            ("swnd_rate", "swnd", "srtt", 100 * MBIT_S),
            ("inflight_rate", "inflight", "srtt", 100 * MBIT_S)])),
    # ISPRAS tabular Q-learning (agents/qlearning.py): per path (by index) srtt in units of 100 ms
    # (clipped at 1 s), RTO count (clipped at 10), loss % = losses * 1448 / sent * 100 (packets
    # declared lost per packet sent, since the connection started; assumes the default MSS of
    # 1448 B; clipped at 10 %), delivery rate in units of 10 Mbit/s (clipped at 100 Mbit/s)
    "ispras_q": tuple(f for i in range(2) for f in _per_path(i, _ISPRAS_Q)),
    # the same four for F and S, the paths by role, as the Q-learning preset numbers them
    # (agent.params.actions: roles)
    "ispras_q_roles": tuple(f for role in ("fast", "second") for f in _per_path(role, _ISPRAS_Q)),
    # LEEYOO: per path srtt, cwnd, in flight; send window; the chunk's elapsed download time, its
    # bytes not yet acknowledged and acknowledged (the current item of the workload: a dash chunk)
    "leeyoo": tuple(
        [f for i in range(2) for f in _per_path(i, [("srtt", "srtt", None, 0.1), ("cwnd", "cwnd", None, MB),
                                                    ("inflight", "inflight", None, MB)])]
        + [Feature("rwnd", "rwnd", None, None, 10 * MB), Feature("chunk_elapsed", "item_elapsed", None, None, 1.0),
           Feature("remaining", "remaining", None, None, 10 * MB),
           Feature("chunk_acked", "item_acked", None, None, 10 * MB)]),
}
SCALES = {"cwnd": MB, "swnd": MB, "srtt": 0.1, "rttvar": 0.1, "min_rtt": 0.1, "latest_rtt": 0.1,
          "inflight": MB, "delivery_rate": 100 * MBIT_S, "losses": 1000.0, "retrans": 1000.0,
          "rtos": 10.0, "pacing_rate": 100 * MBIT_S, "available": 1.0, "acked": 100 * MB, "sent": 100 * MB,
          "backlog": 10 * MB, "elapsed": 10.0, "reorder": MB, "rwnd": 10 * MB, "remaining": 10 * MB,
          "item_acked": 10 * MB, "item_elapsed": 10.0, "items_acked": 100.0, "item_rate": 100 * MBIT_S}


def full_set(n_paths: int) -> tuple[Feature, ...]:
    """Every sender-observable field of every path and of the connection."""
    return tuple([f for i in range(n_paths) for f in _per_path(i, [(n, n, None, SCALES[n]) for n in OBS_NAMES])]
                 + [Feature(n, n, None, None, SCALES[n]) for n in COBS_NAMES])


def feature_set(name: str, n_paths: int) -> tuple[Feature, ...]:
    """The named set for connections of ``n_paths`` paths; checks path indices exist."""
    if name == "full":
        return full_set(n_paths)
    if name not in FEATURE_SETS:
        raise unknown_name("observation set", name, [*FEATURE_SETS, "full"])
    feats = FEATURE_SETS[name]
    for f in feats:
        if isinstance(f.path, int) and f.path >= n_paths:
            raise ConfigError(f"observation set {name!r} reads path {f.path + 1}, "
                              f"but the scenario has {n_paths} path(s)")
    return feats


FAST, SECOND, CONN = -1, -2, -3  # path codes of the compiled table


def table(features: tuple[Feature, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The set as arrays (field index, path code, divisor field or -1, scale) for the compiled
    evaluator, and for code generation."""
    field = np.array([(OBS_NAMES if f.path is not None else COBS_NAMES).index(f.field) for f in features])
    path = np.array([CONN if f.path is None else FAST if f.path == "fast" else SECOND if f.path == "second"
                     else int(f.path) for f in features])
    per = np.array([-1 if f.per is None else OBS_NAMES.index(f.per) for f in features])
    scale = np.array([f.scale for f in features], dtype=np.float64)
    return field, path, per, scale


@njit(cache=True)
def path_roles(obs: np.ndarray, nsub: int) -> tuple[int, int]:
    """Fast and second path (``envs.sim.roles``), the second reading as the fast one when no other
    path is available."""
    fast, second = roles.path_roles(obs, nsub)
    return fast, (fast if second < 0 else second)


@njit(cache=True)
def evaluate(field, path, per, scale, obs, cobs, nsub, out):
    """Features of every connection into ``out[B, n]`` (the set as ``table`` arrays)."""
    for b in range(obs.shape[0]):
        fast, second = path_roles(obs[b], int(nsub[b]))
        for j in range(field.shape[0]):
            p = path[j]
            if p == CONN:
                v = cobs[b, field[j]]
            else:
                i = fast if p == FAST else second if p == SECOND else p
                v = obs[b, i, field[j]]
                if per[j] >= 0:
                    v = v / max(obs[b, i, per[j]], 1e-9)
            v = v / scale[j]
            out[b, j] = 0.0 if not v > 0.0 else min(v, CLIP)


def compute(features: tuple[Feature, ...] | tuple[np.ndarray, ...], obs: np.ndarray, cobs: np.ndarray,
            nsub: np.ndarray) -> np.ndarray:
    """Feature matrix [B, n] (float32) from sender-observable arrays ``obs[B, P, N_OBS]``,
    ``cobs[B, N_COBS]``; ``features`` is a set or its ``table``."""
    tab = table(features) if isinstance(features[0], Feature) else features
    out = np.empty((obs.shape[0], tab[0].shape[0]), dtype=np.float32)
    evaluate(*tab, obs, cobs, nsub, out)
    return out
