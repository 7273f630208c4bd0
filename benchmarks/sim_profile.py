"""Where the compiled core spends its time: ``python benchmarks/sim_profile.py [--sim-s S]``.

Needs Linux ``perf`` and binutils' ``addr2line``. The script re-runs itself with the kernel compiled
afresh, with debug line information (``NUMBA_DEBUGINFO=1``, a temporary numba cache), runs the
batched core on ispras_s1 under bbr (B = 64, 2 paths, minRTT) while ``perf record`` samples the
process, and maps every sample in the kernel's machine code back through its chain of inlined
functions. It prints the share of the time of each phase of a step (the functions ``kernel._run``
calls: receive, feedback, schedule, depart, ...), of each innermost function, the hottest source
lines, and where the samples outside the kernel's code went (libm's ``log``, the interpreter).
Debug information does not change the optimised code, only what it is annotated with.
"""

from __future__ import annotations

import argparse
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

B, PATHS = 64, 2


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


def _ltext(obj: str) -> tuple[int, int]:
    """Offset and size of the object file's code section (numba emits ``.ltext``)."""
    out = subprocess.run(["readelf", "-S", "-W", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 6 and f[1] in (".ltext", ".text") and int(f[5], 16) > 0:
            return int(f[4], 16), int(f[5], 16)
    raise RuntimeError(f"no code section in {obj}")


def child(sim_s: float, workdir: str) -> None:
    from sim_speed import scenario
    from envs.sim import kernel
    from envs.sim.simulator import Simulator

    sim = Simulator(scenario(PATHS, sim_s), "bbr", batch=B, seed=0)
    sim.reset()
    sim.advance(1)  # compiles, with line information
    (cres,) = kernel._run.overloads.values()
    lib = cres.library
    base = lib.get_pointer_to_function(cres.fndesc.llvm_func_name)
    obj = os.path.join(workdir, "run.o")
    with open(obj, "wb") as fh:
        fh.write(lib._get_compiled_object())
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
    print(f"ispras_s1, bbr, B = {B}, {PATHS} paths, {sim_s:.0f} simulated s: "
          f"{cpu / (B * sim_s / sim.dt) * 1e6:.3f} us per connection-step (CPU)\n")
    report(data, obj, base)


def report(data: str, obj: str, base: int) -> None:
    script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True,
                            text=True, check=True).stdout
    sec_off, size = _ltext(obj)
    inside: collections.Counter[int] = collections.Counter()
    outside: collections.Counter[str] = collections.Counter()
    for line in script.splitlines():
        f = line.split()
        if not f:
            continue
        off = int(f[0], 16) - base
        if 0 <= off < size:
            inside[off] += 1
        else:
            dso = os.path.basename(f[-1].strip("()"))
            outside["other compiled code (numba)" if dso.startswith("perf-") else dso] += 1
    total = sum(inside.values()) + sum(outside.values())
    if not inside:
        raise SystemExit("no samples in the kernel's code (did perf attach?)")
    offs = sorted(inside)
    out = subprocess.run(["addr2line", "-e", obj, "-j", ".ltext", "-i", "-f", "-a", *map(hex, offs)],
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
    phase: collections.Counter[str] = collections.Counter()
    func: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    for off, n in inside.items():
        chain = chains.get(off) or [("?", "?:0")]
        names = [fn for fn, _ in chain]  # innermost first
        if names[-1].endswith("kernel._run"):
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

    print(f"{total} samples, {100 * sum(inside.values()) / total:.1f}% in the kernel's code\n")
    show("phase of a step (the function kernel._run inlines or calls):", phase, 12)
    show("innermost function:", func, 15)
    show("source line (innermost; numba's line tables may give a helper from another module, such as\n"
         "envs/sim/rng.py, its caller's file name):", lines, 15, True)
    show("outside the kernel's code (library):", outside, 5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim-s", type=float, default=30.0, help="simulated seconds per connection")
    parser.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.sim_s, args.child)
        return
    missing = [tool for tool in ("perf", "addr2line", "readelf") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"sim_profile needs {', '.join(missing)} (Debian: apt install linux-perf binutils)")
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "NUMBA_DEBUGINFO": "1", "NUMBA_CACHE_DIR": os.path.join(work, "cache")}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", work, "--sim-s", str(args.sim_s)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
