"""What a call from Python into a compiled function costs when the simulator's arrays go as a
named record instead of one by one: ``python benchmarks/record_dispatch.py``.

numba's dispatcher types every argument before it runs the compiled code. A ``kernel.State``
(named tuple of the batch's 18 arrays) is typed in Python, the same arrays one by one in C; a
plain tuple and ``*args`` sit between. ``envs.decision._step``, called once per env step (about
11 us in packet mode, 2-3 us of it compiled), therefore takes the arrays flat and builds the
records itself, while ``kernel.advance`` and ``kernel.reset_connection`` (called per episode or
per run) take them as records. Prints microseconds per call of a compiled function that reads
one element, best of several repeats, with the simulator's own arrays.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's envs

from numba import njit  # noqa: E402

from envs.scenario import load_scenario  # noqa: E402
from envs.sim.kernel import State  # noqa: E402
from envs.sim.simulator import Simulator  # noqa: E402

CALLS = 20000


@njit(cache=True, _nrt=False)
def _record(s):
    return s.cn[0, 0]


@njit(cache=True, _nrt=False)
def _tuple(s):
    return s[6][0, 0]


@njit(cache=True, _nrt=False)
def _star(*s):
    return State(*s).cn[0, 0]


@njit(cache=True, _nrt=False)
def _flat(obs, cobs, fl, cc, ccp, bn, cn, seg, segi, ring, hole, sched, ctrace, atrace, wl, item, rec, rng):
    return cn[0, 0]


def per_call_us(call) -> float:
    call()
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            call()
        best = min(best, (time.perf_counter() - t0) / CALLS * 1e6)
    return best


def main() -> None:
    sim = Simulator(load_scenario("ispras_s1"), "bbr")
    sim.reset()
    state = sim.kernel_state()
    plain = tuple(state)
    cases = {"flat (18 arguments)": lambda: _flat(*state), "plain tuple": lambda: _tuple(plain),
             "*args": lambda: _star(*state), "named tuple (kernel.State)": lambda: _record(state)}
    print(f"one call into a compiled function with the simulator's {len(state)} arrays, best of 7 x {CALLS}:")
    for name, call in cases.items():
        print(f"  {name:28s} {per_call_us(call):6.2f} us")


if __name__ == "__main__":
    main()
