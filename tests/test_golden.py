"""Golden results: the simulator's output, bit for bit, on a fixed set of cells.

Every heuristic scheduler registered when it was written x {reno, cubic, bbr, bbr2, lia} on two scenarios (ISPRAS S1
with a 1 MB file: loss, jitter, reordering; and a lossy, jittery two-path bulk transfer with a
capacity trace, an outage, competing flows switching on and off, and UDP cross traffic), two
seeds of two connections each: every metric of ``Simulator.results()``. Then a few episodes
through the Gymnasium API in each decision mode with a fixed action sequence: every observation,
reward, termination flag and info row. Values are stored exactly (``float.hex``) in
``tests/data/golden.txt`` (one line per cell or env step) and compared with ``==`` on those
strings, so a -0.0 for a 0.0 or another NaN counts as a change.

A change of the model that is meant to change results fails this test. Regenerate the file only
then, on purpose, and say so in the commit::

    python tests/test_golden.py --regenerate

Nothing regenerates it automatically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

if __name__ == "__main__":  # run as a script from a checkout: use this checkout's packages
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gymnasium  # noqa: E402

import envs  # noqa: E402,F401 (registers mpsched/Multipath-v0)
from envs.scenario import Scenario, load_scenario, scenario_from_dict  # noqa: E402
from envs.sim.simulator import Simulator  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "golden.txt")
# the heuristic schedulers registered when the file was generated (named here, so that a scheduler
# added later, or a test's toy one, does not change the set)
SCHEDULERS = ("minrtt", "rr", "fixed", "wrr", "redundant", "ecf", "blest", "sod", "atlb", "hsr", "lws", "lts",
              "kato", "fast_only", "otias", "split", "minrtt_fast")
CCS = ("reno", "cubic", "bbr", "bbr2", "lia")
SEEDS = (0, 7)
BATCH = 2
GYM_STEPS = 60  # env steps per Gymnasium episode (fewer when it ends first)


def scenarios() -> dict[str, Scenario]:
    s1 = load_scenario("ispras_s1").model_dump()
    s1["workload"] = {"type": "file", "file_mb": 1.0}
    mixed = {
        "name": "golden_mixed",
        "paths": [
            {"bandwidth_mbps": 30, "delay_ms": 15, "loss_pct": 0.3, "jitter_ms": 1.5, "queue_bdp": 1.0,
             "bandwidth_trace": [[0, 30], [0.4, 10]], "outages": [[0.7, 0.9]],
             "competing": {"flows": 2, "cc": "reno", "flows_schedule": [[0, 1], [0.3, 2], [0.8, 0]]}},
            {"bandwidth_mbps": 12, "delay_ms": 30, "reverse_delay_ms": 20, "loss_pct": 1.0, "jitter_ms": 3.0,
             "queue_packets": 60, "competing": {"udp_mbps": 2.0}},
        ],
        "workload": {"type": "bulk", "duration_s": 1.2},
        "jitter_reorders": True,
    }
    return {"ispras_s1": scenario_from_dict(s1), "mixed": scenario_from_dict(mixed)}


def _hex(values: np.ndarray | float) -> str:
    return " ".join(float(v).hex() for v in np.asarray(values, dtype=np.float64).ravel())


def _metrics(results: dict[str, np.ndarray]) -> str:
    return " ".join(f"{metric}: {_hex(v)}" for metric, v in results.items())


def results_lines(name: str, scen: Scenario) -> Iterator[tuple[str, str]]:
    """(key, exact values) of every metric of every cell of one scenario."""
    for sched in SCHEDULERS:
        for cc in CCS:
            for seed in SEEDS:
                sim = Simulator(scen, cc, scheduler=sched, batch=BATCH, seed=seed)
                sim.reset()
                sim.run()
                yield f"sim/{name}/{sched}/{cc}/{seed}", _metrics(sim.results())


def _actions(decision: str, n_actions: int) -> Iterator[int]:
    """A fixed action sequence that visits every action, not periodically with a short period."""
    k = 0
    while True:
        yield (k * k + 3 * k) // 2 % n_actions if decision != "blocked" else int(k % 3 != 1)
        k += 1


def gym_lines(name: str, scen: Scenario) -> Iterator[tuple[str, str]]:
    """(key, exact values) of every step of a few Gymnasium episodes of one scenario."""
    for decision in ("blocked", "interval", "packet"):
        for cc, seed in (("bbr2", 3), ("cubic", 5)):
            env = gymnasium.make("mpsched/Multipath-v0", scenario=scen, cc=cc, decision=decision)
            obs, _ = env.reset(seed=seed)
            key = f"gym/{name}/{decision}/{cc}/{seed}"
            yield f"{key}/0", _hex(obs)
            actions = _actions(decision, int(env.action_space.n))
            for k in range(1, GYM_STEPS + 1):
                obs, reward, term, trunc, info = env.step(next(actions))
                # observation; reward, terminated, truncated, info's goodput, elapsed time, decisions
                yield f"{key}/{k}", _hex(obs) + " | " + _hex([reward, term, trunc, info["goodput_mbps"],
                                                              info["elapsed_s"], info["decisions"]])
                if term or trunc:
                    yield f"{key}/{k}/episode_metrics", _metrics(info["episode_metrics"])
                    break
            env.close()


def golden() -> dict[str, str]:
    out: dict[str, str] = {}
    for name, scen in scenarios().items():
        out.update(results_lines(name, scen))
        out.update(gym_lines(name, scen))
    return out


def load() -> dict[str, str]:
    with open(DATA) as fh:
        return dict(line.rstrip("\n").split("\t", 1) for line in fh if not line.startswith("#"))


def regenerate() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True).stdout.strip()
    values = golden()
    with open(DATA, "w") as fh:
        fh.write("# Golden results of tests/test_golden.py: key<TAB>values (float.hex; a cell: metric: values ...;\n"
                 "# an env step: observation | reward, terminated, truncated, goodput_mbps, elapsed_s, decisions).\n"
                 f"# Generated by `python tests/test_golden.py --regenerate` at commit {commit}"
                 f"{' with uncommitted changes' if dirty else ''}, numpy {np.__version__}.\n"
                 "# Do not edit by hand; regenerate only for a change meant to change results.\n")
        for key, v in values.items():
            fh.write(f"{key}\t{v}\n")
    print(f"wrote {len(values)} entries to {DATA}")


@pytest.fixture(scope="module")
def stored() -> dict[str, str]:
    return load()


@pytest.mark.parametrize("name", ["ispras_s1", "mixed"])
@pytest.mark.parametrize("part", ["sim", "gym"])
def test_golden(stored, part, name):
    lines = results_lines if part == "sim" else gym_lines
    got = dict(lines(name, scenarios()[name]))
    want = {k: v for k, v in stored.items() if k.startswith(f"{part}/{name}/")}
    assert want, f"no stored {part}/{name} entries in {DATA}"
    changed = [k for k in want if got.get(k) != want[k]]
    assert got.keys() == want.keys() and not changed, (
        f"{len(changed)} of {len(want)} {part}/{name} entries changed (first: {changed[:3]}); "
        f"new keys: {sorted(got.keys() - want.keys())[:3]}, missing: {sorted(want.keys() - got.keys())[:3]}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    regenerate()
