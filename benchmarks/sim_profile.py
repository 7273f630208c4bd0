"""Where the compiled core spends its time: ``python benchmarks/sim_profile.py [--sim-s S] [--cc CC]
[--stack STACK] [--batch B]``.

Needs Linux ``perf`` and binutils (``addr2line``, ``nm``, ``readelf``). The script re-runs itself
with the project's numba functions compiled afresh, with debug line information
(``NUMBA_DEBUGINFO=1``, a temporary numba cache), runs the batched core on ispras_s1 (by default
under bbr and the default stack profile, B = 64, 2 paths, minRTT) while ``perf record`` samples
the process, and maps every sample in their machine code back through its chain of inlined
functions. It prints the share of the time of each phase of a step (the functions
``kernel._run``, inlined into ``kernel.advance``, inlines or calls: receive, feedback, schedule,
depart, the workload, ...), of each innermost function, the hottest source lines, and where the
samples outside compiled code went (libm's ``log``, the interpreter). Debug information
does not change the optimised code, only what it is annotated with.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import linecache
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's envs
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # sim_speed's scenario

PATHS = 2


def demangle(name: str) -> str:
    """``_ZN4envs3sim6kernel8_receiveB3v..`` -> ``envs.sim.kernel._receive`` (numba's mangling:
    length-prefixed parts, then an ABI tag)."""
    if not name.startswith("_ZN"):
        return name
    parts, i = [], 3
    while i < len(name) and name[i].isdigit():
        j = i
        while name[j].isdigit():
            j += 1
        n = int(name[i:j])
        parts.append(name[j:j + n])
        i = j + n
    return ".".join(parts)


def _ltext_size(obj: str) -> int:
    """Size of the object file's code section (numba emits ``.ltext``)."""
    out = subprocess.run(["readelf", "-S", "-W", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 6 and f[1] == ".ltext":
            return int(f[5], 16)
    raise RuntimeError(f"no .ltext section in {obj}")


def _symbol_offset(obj: str, symbol: str) -> int:
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == symbol:
            return int(f[0], 16)
    raise RuntimeError(f"{symbol} not in {obj}")


def code_regions(workdir: str) -> list[tuple[int, int, str]]:
    """(start address, size, object file) of the machine code of every numba function of this
    project compiled in this process. A callee's code is linked into its caller's library, but a
    call may still go to the copy in the callee's own library, so every library is mapped."""
    from numba.core.registry import CPUDispatcher
    regions, seen = [], set()
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith(("envs", "agents")):
            continue
        for disp in vars(mod).values():
            if not isinstance(disp, CPUDispatcher) or id(disp) in seen:
                continue
            seen.add(id(disp))
            for cres in disp.overloads.values():
                lib = cres.library
                try:
                    code = lib._get_compiled_object()
                except RuntimeError:  # loaded from a cache: no object to map (not the case here)
                    continue
                obj = os.path.join(workdir, f"lib{len(regions)}.o")
                with open(obj, "wb") as fh:
                    fh.write(code)
                name = cres.fndesc.llvm_func_name
                start = lib.get_pointer_to_function(name) - _symbol_offset(obj, name)
                regions.append((start, _ltext_size(obj), obj))
    return sorted(regions)


def child(sim_s: float, workdir: str, cc: str, stack: str | None, batch: int) -> None:
    from sim_speed import scenario
    from envs.sim.simulator import SimConfig, Simulator

    sim = Simulator(scenario(PATHS, sim_s), cc, batch=batch, seed=0,
                    config=SimConfig() if stack is None else SimConfig(stack=stack))
    sim.reset()
    sim.advance(1)  # compiles, with line information
    regions = code_regions(workdir)
    data = os.path.join(workdir, "perf.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-F", "4999", "-p", str(os.getpid()), "-o", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # perf attaches
    t0 = time.process_time()
    sim.run()
    cpu = time.process_time() - t0
    perf.send_signal(signal.SIGINT)
    code = perf.wait()
    if not os.path.exists(data) or code not in (0, -signal.SIGINT, 128 + signal.SIGINT):
        raise SystemExit(f"perf record failed ({code}): {perf.stderr.read().decode().strip()}")
    print(f"ispras_s1, {cc}, stack {stack or 'default'}, B = {batch}, {PATHS} paths, {sim_s:.0f} simulated s: "
          f"{cpu / (batch * sim_s / sim.dt) * 1e6:.3f} us per connection-step (CPU)\n")
    report(data, regions)


def _inline_chains(obj: str, offsets: list[int]) -> dict[int, list[tuple[str, str]]]:
    """addr2line's inlining chain (innermost first: function, file:line) at each offset."""
    out = subprocess.run(["addr2line", "-e", obj, "-j", ".ltext", "-i", "-f", "-a", *map(hex, offsets)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    chains: dict[int, list[tuple[str, str]]] = {}
    i = 0
    while i < len(out):
        if out[i].startswith("0x"):
            key = int(out[i], 16)
            chains[key] = []
            i += 1
            continue
        chains[key].append((demangle(out[i]), out[i + 1].split(" ")[0]))
        i += 2
    return chains


def report(data: str, regions: list[tuple[int, int, str]]) -> None:
    script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True,
                            text=True, check=True).stdout
    starts = [r[0] for r in regions]
    inside: dict[int, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    outside: collections.Counter[str] = collections.Counter()
    for line in script.splitlines():
        f = line.split()
        if not f:
            continue
        ip = int(f[0], 16)
        k = bisect.bisect_right(starts, ip) - 1
        if k >= 0 and ip < starts[k] + regions[k][1]:
            inside[k][ip - starts[k]] += 1
        else:
            outside[os.path.basename(f[-1].strip("()"))] += 1
    n_inside = sum(sum(c.values()) for c in inside.values())
    total = n_inside + sum(outside.values())
    if not n_inside:
        raise SystemExit("no samples in compiled code (did perf attach?)")
    phase: collections.Counter[str] = collections.Counter()
    func: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    for k, offs in inside.items():
        chains = _inline_chains(regions[k][2], sorted(offs))
        for off, n in offs.items():
            chain = chains.get(off) or [("?", "?:0")]
            names = [fn for fn, _ in chain]  # innermost first
            if names[-1].endswith(("kernel._run", "kernel.advance")):  # numba inlines _run into advance
                phase[names[-2] if len(names) > 1 else "kernel._run (its own loop)"] += n
            else:
                phase[f"{names[-1]} (called, not inlined)"] += n
            func[names[0]] += n
            lines[chain[0][1]] += n

    def show(title: str, counts: collections.Counter, k: int, text: bool = False) -> None:
        print(title)
        for key, n in counts.most_common(k):
            extra = ""
            if text and ":" in key:
                path, _, no = key.rpartition(":")
                if no.isdigit():
                    extra = "  " + linecache.getline(path, int(no)).strip()[:80]
            print(f"  {100 * n / total:5.1f}%  {key.replace(os.getcwd() + os.sep, '')}{extra}")
        print()

    print(f"{total} samples, {100 * n_inside / total:.1f}% in compiled code\n")
    show("phase of a step (the function kernel._run inlines or calls; its own loop: advance's):", phase, 14)
    show("innermost function:", func, 15)
    show("source line (innermost; numba's line tables may give a helper from another module, such as\n"
         "envs/sim/rng.py, its caller's file name):", lines, 15, True)
    show("outside compiled code (library):", outside, 5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim-s", type=float, default=30.0, help="simulated seconds per connection")
    parser.add_argument("--cc", default="bbr", help="congestion control of every subflow")
    parser.add_argument("--stack", default=None, help="stack profile (envs/sim/stacks.py; default: the default's)")
    parser.add_argument("--batch", type=int, default=64, help="connections in the batch")
    parser.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.sim_s, args.child, args.cc, args.stack, args.batch)
        return
    missing = [tool for tool in ("perf", "addr2line", "nm", "readelf") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"sim_profile needs {', '.join(missing)} (Debian: apt install linux-perf binutils)")
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "NUMBA_DEBUGINFO": "1", "NUMBA_CACHE_DIR": os.path.join(work, "cache")}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", work, "--sim-s", str(args.sim_s),
                        "--cc", args.cc, "--batch", str(args.batch), *(["--stack", args.stack] if args.stack else [])],
                       env=env, check=True)


if __name__ == "__main__":
    main()
