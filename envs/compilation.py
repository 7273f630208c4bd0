"""The simulator core's compilation as a stage of its own. numba compiles the core on its first
call (tens of seconds) and keeps it in its on-disk cache (``envs/__init__.py`` names the cache
after the compiled sources, so a change of them compiles again); a run calls ``prepare`` before
its progress bar starts, so that the bar's rate and ETA are those of training alone."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from envs.decision import DecisionProcess


def _entry_points() -> list:
    """The compiled functions Python calls; everything else is compiled into them."""
    from envs.decision import _step
    from envs.sim import kernel
    return [kernel.reset_connection, kernel.advance, _step]


def cached() -> bool:
    """Whether numba's cache holds every entry point (its index for the current sources)."""
    try:
        return all(f._cache._cache_file._load_index() for f in _entry_points())
    except (AttributeError, OSError):  # numba's cache internals: assume it has to compile
        return False


def prepare(build: Callable[[], DecisionProcess], say: Callable[[str], None] | None = None) -> float:
    """Compile the core (or load it from the cache) by running one decision of the throwaway
    process ``build()`` returns (one connection of the run's first scenario and CC: the same
    compiled signatures as the run's). When it has to compile, ``say`` (default: stderr) tells so
    before and after. Returns the seconds it took."""
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    cold = not cached()
    if cold:
        say("compiling the simulator core (first run only, cached afterwards)...")
    start = time.perf_counter()
    process = build()
    process.reset()
    process.step(np.zeros(process.sim.B, dtype=np.int64))
    seconds = time.perf_counter() - start
    if cold:
        say(f"compiled the simulator core in {seconds:.1f} s")
    return seconds


def main() -> None:
    """``python -m envs.compilation``: compile the core ahead of the first run (after installing,
    in a container image); every scenario, CC and scheduler then runs from the cache."""
    from envs.multipath_env import build_process
    seconds = prepare(lambda: build_process(1, scenario="ispras_s1", cc="bbr2", seed=0),
                      say=lambda msg: print(msg, flush=True))
    print(f"the simulator core is ready ({seconds:.1f} s); cache: {_entry_points()[0].stats.cache_path}")


if __name__ == "__main__":
    main()
