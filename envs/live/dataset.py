"""XQUIC's per-decision telemetry as a dataset of blocked decisions: for each sampled decision
(``XquicTransfer.decisions()``, every ``decision_every``-th call of ``get_path``) with every path
active, whether it was a blocked decision (the fast path without window, another path with:
``envs.sim.roles``), the scheduler's answer there (0 = wait for the fast path, 1 = send on the
second path: the blocked mode's actions) and the features a policy of a given feature set would
have read (``envs.features``, from the records in the simulator's units).

The transfer report counts waits and feature quantiles with it; ``agents.offline`` fine-tunes a
per-packet DQN on it (behaviour cloning from the best live heuristic).

    python -m envs.live.dataset --scenario ispras_s1 --cc bbr2 --scheduler ecf --runs 3 --out ecf_s1_bbr2.npz

(root, the live setup and the ``mpsched_xquic`` extension: README "XQUIC").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from envs.errors import ConfigError
from envs.features import compute, feature_set, table
from envs.sim import roles

WAIT, SEND = 0, 1  # the blocked mode's actions


@njit(cache=True)
def blocked_rows(obs: np.ndarray, nsub: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Which rows of ``obs[N, P, OBS_*]`` are blocked decisions (``envs.sim.roles``: the fast path
    without window, another path with); ``second[i]`` gets that row's second path (-1: none)."""
    out = np.zeros(obs.shape[0], dtype=np.bool_)
    for i in range(obs.shape[0]):
        fast, sec, blocked = roles.blocked_rule(obs[i], int(nsub[i]))
        second[i] = sec
        out[i] = blocked and sec >= 0
    return out


@dataclass
class BlockedDecisions:
    """The blocked decisions of some decision records: features [N, F] (float32), actions [N]
    (``WAIT``/``SEND``; an answer naming another path than the second counts as a send)."""

    feature_names: list[str]
    features: np.ndarray
    actions: np.ndarray
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def waits(self) -> int:
        return int(np.count_nonzero(self.actions == WAIT))

    def __len__(self) -> int:
        return len(self.actions)

    @classmethod
    def concat(cls, parts: Sequence[BlockedDecisions], names: list[str]) -> BlockedDecisions:
        if not parts:
            return cls(names, np.zeros((0, len(names)), np.float32), np.zeros(0, np.int64))
        return cls(names, np.concatenate([p.features for p in parts]), np.concatenate([p.actions for p in parts]),
                   dict(parts[0].provenance))

    def save(self, path: Path) -> Path:
        np.savez_compressed(path, features=self.features, actions=self.actions,
                            feature_names=np.array(self.feature_names),
                            provenance=np.array(json.dumps(self.provenance)))
        return path

    @classmethod
    def load(cls, path: Path) -> BlockedDecisions:
        try:
            with np.load(path) as d:
                return cls([str(x) for x in d["feature_names"]], d["features"].astype(np.float32),
                           d["actions"].astype(np.int64), json.loads(str(d["provenance"])))
        except (OSError, KeyError, ValueError) as err:
            raise ConfigError(f"cannot read the decision dataset {path}: {err}") from None


def blocked_decisions(rec: dict, observation: str | None) -> BlockedDecisions:
    """The blocked decisions among XQUIC's decision records ``rec`` whose paths are all active,
    with the features of ``observation`` (None: no features, only the answers)."""
    from envs.live.xquic import records_to_sim

    obs, cobs, active = records_to_sim(rec)
    keep = active.all(axis=1) if len(active) else np.zeros(0, dtype=bool)
    obs, cobs, chosen = obs[keep], cobs[keep], np.asarray(rec["chosen"])[keep]
    P = obs.shape[1]
    nsub = np.full(len(obs), float(P))
    second = np.zeros(len(obs), dtype=np.int64)
    blocked = blocked_rows(obs, nsub, second) if len(obs) else np.zeros(0, dtype=bool)
    actions = np.where(chosen[blocked] == -1, WAIT, SEND).astype(np.int64)
    names = [f.name for f in feature_set(observation, P)] if observation else []
    feats = compute(table(feature_set(observation, P)), obs[blocked], cobs[blocked], nsub[blocked]) \
        if observation and blocked.any() else np.zeros((int(blocked.sum()), len(names)), np.float32)
    return BlockedDecisions(names, feats, actions)


def policy_decision_features(rec: dict, observation: str) -> np.ndarray:
    """The features of ``observation`` on the states an interval policy decided on in XQUIC
    (``XquicTransfer.policy_decisions``), each with its paths (the policy decides once they exist)."""
    from envs.live.xquic import records_to_sim

    obs, cobs, _ = records_to_sim(rec)
    P = obs.shape[1]
    if not len(obs):
        return np.zeros((0, len(feature_set(observation, P))), np.float32)
    return compute(table(feature_set(observation, P)), obs, cobs, np.full(len(obs), float(P)))


def run_transfer(tb: Any, cc: str, workload: Any, scheduler: str, decision_every: int,
                 observation: str | None) -> tuple[Any, BlockedDecisions]:
    """One XQUIC transfer on testbed ``tb``, its decision ring drained while it runs; its result
    and its blocked decisions."""
    from envs.live.xquic import XquicTransfer

    tr = XquicTransfer(tb, cc, workload, 10.0, scheduler, decision_every)
    parts = []
    try:
        tr.start()
        while not tr.wait(0.25):
            parts.append(blocked_decisions(tr.take_decisions(), observation))
        result = tr.result()
    finally:
        tr.stop()
    parts.append(blocked_decisions(tr.take_decisions(), observation))
    names = [f.name for f in feature_set(observation, len(tb.paths))] if observation else []
    return result, BlockedDecisions.concat(parts, names)


def record(scenario: Any, cc: str, scheduler: str, runs: int, observation: str, decision_every: int = 4,
           say: Callable[[str], None] = print) -> BlockedDecisions:
    """``runs`` live XQUIC transfers of ``scheduler`` on one verified testbed: their blocked
    decisions, with provenance (XQUIC commit, kernel, every run's goodput and load average)."""
    from envs.live.provenance import load_average, provenance
    from envs.live.testbed import verified

    parts, runs_info = [], []
    with verified(scenario, say) as tb:
        for i in range(runs):
            r, d = run_transfer(tb, cc, scenario.workload, scheduler, decision_every, observation)
            g = float(r.metrics()["goodput_mbps"][0])
            runs_info.append({"goodput_mbps": g, "outcome": r.extra.get("outcome"), "blocked": len(d),
                              "waits": d.waits, "load_avg": load_average(), "error": r.error})
            say(f"run {i}: {g:.2f} Mbit/s, {len(d)} blocked decisions, {d.waits} waits, load {load_average():.2f}")
            parts.append(d)
    names = [f.name for f in feature_set(observation, len(scenario.paths))]
    out = BlockedDecisions.concat(parts, names)
    out.provenance = {**provenance("python -m envs.live.dataset", sys.argv[1:]), "scenario": scenario.name,
                      "cc": cc, "scheduler": scheduler, "observation": observation, "decision_every": decision_every,
                      "runs": runs_info, "file_mb": scenario.workload.file_mb}
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from envs.scenario import resolve_scenarios

    ap = argparse.ArgumentParser(prog="python -m envs.live.dataset", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="ispras_s1")
    ap.add_argument("--cc", default="bbr2")
    ap.add_argument("--scheduler", default="ecf", help="an XQUIC scheduler (minrtt, ecf, blest, ...) or policy=<header>")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--observation", default="ispras_dqn", help="the feature set of the policy to fine-tune")
    ap.add_argument("--decision-every", type=int, default=4)
    ap.add_argument("--file-mb", type=float, default=10.0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.runs < 1 or a.decision_every < 1:
        raise ConfigError(f"--runs and --decision-every must be >= 1, got {a.runs} and {a.decision_every}")
    scen = resolve_scenarios(a.scenario)[0].with_workload(file_mb=a.file_mb)
    d = record(scen, a.cc, a.scheduler, a.runs, a.observation, a.decision_every)
    d.save(a.out)
    print(f"{len(d)} blocked decisions ({d.waits} waits) in {a.out}")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending():
        main(debug_argv(sys.argv[1:]))
