"""Compile an exported header and run it: from Python through ctypes (``ExportedPolicy``, which
the simulator can use in place of the Python policy), or as a standalone C program (``harness``:
the tests' comparison harness and the benchmark's timing loop).

``ExportedPolicy`` acts like an agent (``act(obs, deterministic)``, so ``agents.training.
evaluate_agent`` runs it unchanged on the environment's feature vectors), and it can also decide
from the simulator's raw sender-observable arrays through the header's own feature construction
and ``decide`` (``evaluate_exported(..., inputs="raw")``): then the exact artefact that ships,
feature code included, is what is evaluated.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np

from envs.policy_library import batch_code, build_library, compile_c, find_compiler, header_info
from envs.transport import conn_fields, path_fields, to_raw
from export.errors import ExportError

WAIT, ERROR = -1, -2


def harness_source(header_name: str, info: dict[str, Any]) -> str:
    """A standalone C program around one header: ``eval <in> <out>`` runs every entry point
    on the rows of ``<in>``; ``bench <in> <iterations>`` times ``decide`` over them."""
    p, P = info["prefix"], info["prefix"].upper()
    NPF, NCF = len(path_fields()), len(conn_fields())
    fixed = info["fixed_point"]
    ft = "int32_t" if fixed else "float"
    extra = ""
    if fixed:
        extra = f"""
        {{
            int32_t *xq = (int32_t *)malloc(sizeof(int32_t) * (size_t)n * {P}_N_FEATURES);
            int32_t *oq = (int32_t *)malloc(sizeof(int32_t) * (size_t)n * {P}_N_OUTPUTS);
            for (r = 0; r < n * {P}_N_FEATURES; ++r)
                xq[r] = mpsched_to_q(x[r]);
            run_forward_q(xq, n, oq);
            fwrite(oq, sizeof(int32_t), (size_t)n * {P}_N_OUTPUTS, out);
            run_act_q(xq, n, 0, ia);
            fwrite(ia, sizeof(int32_t), (size_t)n, out);
            free(xq);
            free(oq);
        }}"""
    return f"""/* generated test and timing harness for {p} */
#define _POSIX_C_SOURCE 199309L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "{header_name}"

{batch_code(info, "static ")}
static void *
slurp(FILE *f, size_t size, size_t n)
{{
    void *buf = malloc(size * (n ? n : 1));
    if (buf == 0 || fread(buf, size, n, f) != n) {{
        fprintf(stderr, "short input\\n");
        exit(2);
    }}
    return buf;
}}

int
main(int argc, char **argv)
{{
    FILE *in, *out;
    int32_t hdr[3];
    int n, np, r;
    uint64_t seed;
    float *x;
    uint64_t *pr, *cr;
    int32_t *nsub;
    if (argc != 4 || (strcmp(argv[1], "eval") != 0 && strcmp(argv[1], "bench") != 0)) {{
        fprintf(stderr, "usage: %s eval <in> <out> | bench <in> <iterations>\\n", argv[0]);
        return 2;
    }}
    in = fopen(argv[2], "rb");
    if (in == 0 || fread(hdr, sizeof(int32_t), 3, in) != 3 || hdr[2] != {P}_N_FEATURES) {{
        fprintf(stderr, "bad input file\\n");
        return 2;
    }}
    n = hdr[0];
    np = hdr[1];
    if (fread(&seed, sizeof(seed), 1, in) != 1)
        return 2;
    x = (float *)slurp(in, sizeof(float), (size_t)n * {P}_N_FEATURES);
    pr = (uint64_t *)slurp(in, sizeof(uint64_t), (size_t)n * np * {NPF});
    cr = (uint64_t *)slurp(in, sizeof(uint64_t), (size_t)n * {NCF});
    nsub = (int32_t *)slurp(in, sizeof(int32_t), (size_t)n);
    fclose(in);
    if (strcmp(argv[1], "bench") == 0) {{
        long iters = atol(argv[3]), k;
        struct timespec t0, t1;
        volatile int32_t sink = 0;
        mpsched_path_obs *paths = (mpsched_path_obs *)malloc(sizeof(mpsched_path_obs) * (size_t)n * np);
        mpsched_conn_obs *conns = (mpsched_conn_obs *)malloc(sizeof(mpsched_conn_obs) * (size_t)n);
        double ns;
        for (r = 0; r < n; ++r)
            fill(pr + (size_t)r * np * {NPF}, cr + (size_t)r * {NCF}, nsub[r], paths + (size_t)r * np, conns + r);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: robust on a shared machine */
        for (k = 0; k < iters; ++k) {{
            r = (int)(k % n);
            sink += {p}_decide(paths + (size_t)r * np, nsub[r], conns + r, 0);
        }}
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)iters;
        printf("%.3f %d\\n", ns, (int)sink);
        free(paths);
        free(conns);
    }} else {{
        float *fo = (float *)malloc(sizeof(float) * (size_t)n * {P}_N_OUTPUTS);
        {ft} *feat = ({ft} *)malloc(sizeof({ft}) * (size_t)n * {P}_N_FEATURES);
        int32_t *ia = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        uint64_t st;
        out = fopen(argv[3], "wb");
        if (out == 0)
            return 2;
        run_forward(x, n, fo);
        fwrite(fo, sizeof(float), (size_t)n * {P}_N_OUTPUTS, out);
        run_act(x, n, 0, ia);
        fwrite(ia, sizeof(int32_t), (size_t)n, out);
        st = seed;
        run_act(x, n, &st, ia);
        fwrite(ia, sizeof(int32_t), (size_t)n, out);
        ia[0] = run_features(pr, cr, nsub, np, n, feat);
        fwrite(feat, sizeof({ft}), (size_t)n * {P}_N_FEATURES, out);
        run_decide(pr, cr, nsub, np, n, 0, ia);
        fwrite(ia, sizeof(int32_t), (size_t)n, out);
        st = seed;
        run_decide(pr, cr, nsub, np, n, &st, ia);
        fwrite(ia, sizeof(int32_t), (size_t)n, out);{extra}
        fclose(out);
        free(fo);
        free(feat);
        free(ia);
    }}
    free(x);
    free(pr);
    free(cr);
    free(nsub);
    return 0;
}}
"""


class Harness:
    """The standalone harness program for one header, compiled with ``compiler``."""

    def __init__(self, header_path: str | Path, compiler: str | None = None, workdir: str | Path | None = None,
                 opt: str = "-O2") -> None:
        self.header_path = Path(header_path)
        self.info = header_info(self.header_path.read_text())
        self.compiler = find_compiler(compiler)
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="mpsched-harness-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.exe = compile_c(harness_source(self.header_path.name, self.info),
                             self.dir / f"harness_{Path(self.compiler).name}", self.compiler,
                             include_dirs=(self.header_path.parent,), opt=opt)

    def _write(self, x: np.ndarray, path_raw: np.ndarray, conn_raw: np.ndarray, nsub: np.ndarray, seed: int) -> Path:
        n, np_, _ = path_raw.shape
        f = self.dir / "input.bin"
        with open(f, "wb") as fh:
            fh.write(np.array([n, np_, self.info["n_features"]], dtype=np.int32).tobytes())
            fh.write(np.array([seed], dtype=np.uint64).tobytes())
            fh.write(np.ascontiguousarray(x, dtype=np.float32).tobytes())
            fh.write(np.ascontiguousarray(path_raw, dtype=np.uint64).tobytes())
            fh.write(np.ascontiguousarray(conn_raw, dtype=np.uint64).tobytes())
            fh.write(np.ascontiguousarray(nsub, dtype=np.int32).tobytes())
        return f

    def run(self, x: np.ndarray, path_raw: np.ndarray, conn_raw: np.ndarray, nsub: np.ndarray,
            seed: int = 1) -> dict[str, np.ndarray]:
        """Every entry point on N rows: forward, act (rng NULL / seeded), features from the raw
        counters, decide (rng NULL / seeded), and forward_q for fixed point."""
        n = x.shape[0]
        i = self.info
        if not (path_raw.shape[0] == conn_raw.shape[0] == nsub.shape[0] == n):
            raise ExportError("harness: features, raw counters and path counts need the same number of rows")
        inp = self._write(x, path_raw, conn_raw, nsub, seed)
        outp = self.dir / "output.bin"
        res = subprocess.run([str(self.exe), "eval", str(inp), str(outp)], capture_output=True, text=True)
        if res.returncode != 0:
            raise ExportError(f"harness failed: {res.stderr}")
        buf = outp.read_bytes()
        pos = 0

        def take(dtype, count, shape):
            nonlocal pos
            a = np.frombuffer(buf, dtype=dtype, count=count, offset=pos).reshape(shape)
            pos += a.nbytes
            return a
        out = {"forward": take(np.float32, n * i["n_outputs"], (n, i["n_outputs"])),
               "act": take(np.int32, n, (n,)), "act_rng": take(np.int32, n, (n,)),
               "features": take(np.int32 if i["fixed_point"] else np.float32, n * i["n_features"],
                                (n, i["n_features"])),
               "decide": take(np.int32, n, (n,)), "decide_rng": take(np.int32, n, (n,))}
        if i["fixed_point"]:
            out["forward_q"] = take(np.int32, n * i["n_outputs"], (n, i["n_outputs"]))
            out["act_q"] = take(np.int32, n, (n,))
        return out

    def bench(self, path_raw: np.ndarray, conn_raw: np.ndarray, nsub: np.ndarray, iterations: int) -> float:
        """Nanoseconds per ``decide`` call, averaged over ``iterations`` calls cycling the rows."""
        x = np.zeros((path_raw.shape[0], self.info["n_features"]), dtype=np.float32)
        inp = self._write(x, path_raw, conn_raw, nsub, 0)
        res = subprocess.run([str(self.exe), "bench", str(inp), str(int(iterations))], capture_output=True, text=True)
        if res.returncode != 0:
            raise ExportError(f"harness failed: {res.stderr}")
        return float(res.stdout.split()[0])


# ---------------------------------------------------------------------------------- ctypes
_F32P = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
_I32P = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")
_U64P = np.ctypeslib.ndpointer(np.uint64, flags="C_CONTIGUOUS")


class ExportedPolicy:
    """A compiled policy header used like an agent.

    ``act(obs, deterministic)`` decides from feature vectors [N, n_features] (what the
    environment observes), ``decide_raw(obs, cobs, nsub)`` from the simulator's raw arrays
    through the header's feature construction and ``decide``. ``deterministic=False`` uses the
    policy's stochastic rule with the header's seedable generator (``seed``; one stream for the
    policy object)."""

    def __init__(self, header: str | Path, compiler: str | None = None, seed: int | None = None) -> None:
        text = Path(header).read_text() if isinstance(header, Path) or (
            isinstance(header, str) and "\n" not in header and Path(header).is_file()) else str(header)
        self.header_text = text
        self.info = header_info(text)
        self.n_features = self.info["n_features"]
        self.n_actions = self.info["n_actions"]
        self.lib_path = build_library(text, compiler)
        lib = ctypes.CDLL(str(self.lib_path))
        self._lib = lib
        lib.run_forward.argtypes = [_F32P, ctypes.c_int, _F32P]
        lib.run_act.argtypes = [_F32P, ctypes.c_int, ctypes.c_void_p, _I32P]
        lib.run_features.argtypes = [_U64P, _U64P, _I32P, ctypes.c_int, ctypes.c_int,
                                     _I32P if self.info["fixed_point"] else _F32P]
        lib.run_features.restype = ctypes.c_int
        lib.run_decide.argtypes = [_U64P, _U64P, _I32P, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, _I32P]
        for fn in ("run_forward", "run_act", "run_decide"):
            getattr(lib, fn).restype = None
        self.rng_state = np.array([self.info["default_seed"] if seed is None else seed], dtype=np.uint64)

    def seed(self, seed: int) -> None:
        self.rng_state[0] = np.uint64(seed % 2**64)

    def _rows(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim == 1:
            x = x[None]
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ExportError(f"expected observations [N, {self.n_features}], got {x.shape}")
        return x

    def forward(self, x: np.ndarray) -> np.ndarray:
        x = self._rows(x)
        out = np.empty((x.shape[0], self.info["n_outputs"]), dtype=np.float32)
        self._lib.run_forward(x, x.shape[0], out)
        return out

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        x = self._rows(obs)
        a = np.empty(x.shape[0], dtype=np.int32)
        rng = None if deterministic else self.rng_state.ctypes.data
        self._lib.run_act(x, x.shape[0], rng, a)
        return a.astype(np.int64)

    def features_raw(self, path_raw: np.ndarray, conn_raw: np.ndarray, nsub: np.ndarray) -> np.ndarray:
        """The header's features from raw counters [N, P, n_path_fields], [N, n_conn_fields]."""
        pr, cr, ns = self._raw_args(path_raw, conn_raw, nsub)
        dt = np.int32 if self.info["fixed_point"] else np.float32
        x = np.empty((pr.shape[0], self.n_features), dtype=dt)
        if self._lib.run_features(pr, cr, ns, pr.shape[1], pr.shape[0], x):
            raise ExportError(f"features: some rows have fewer than {self.info['min_paths']} paths")
        return x

    def decide(self, path_raw: np.ndarray, conn_raw: np.ndarray, nsub: np.ndarray,
               deterministic: bool = True) -> np.ndarray:
        """``decide`` per row: a path index, WAIT (-1) or ERROR (-2)."""
        pr, cr, ns = self._raw_args(path_raw, conn_raw, nsub)
        out = np.empty(pr.shape[0], dtype=np.int32)
        rng = None if deterministic else self.rng_state.ctypes.data
        self._lib.run_decide(pr, cr, ns, pr.shape[1], pr.shape[0], rng, out)
        return out

    @staticmethod
    def _raw_args(path_raw, conn_raw, nsub):
        pr = np.ascontiguousarray(path_raw, dtype=np.uint64)
        cr = np.ascontiguousarray(conn_raw, dtype=np.uint64)
        ns = np.ascontiguousarray(nsub, dtype=np.int32)
        if pr.ndim != 3 or pr.shape[2] != len(path_fields()) or cr.shape != (pr.shape[0], len(conn_fields())):
            raise ExportError(f"raw counters of shapes {pr.shape}, {cr.shape} do not fit the structs")
        if pr.shape[1] > 8 or (ns > pr.shape[1]).any():
            raise ExportError("at most 8 paths, and nsub <= paths given")
        return pr, cr, ns

    def decide_sim(self, process, deterministic: bool = True) -> np.ndarray:
        """Environment actions for a ``DecisionProcess`` at its current decision points, from its
        raw arrays through the header's ``decide`` (blocked mode: WAIT -> 0, a path -> 1)."""
        from envs.sim.layout import CN_N_SUB

        sim = process.sim
        pr, cr = to_raw(sim.obs[:, :sim.P], sim.cobs)
        nsub = sim.cn[:, CN_N_SUB].astype(np.int32)
        d = self.decide(pr, cr, nsub, deterministic)
        mode = process.decision.mode
        if mode == "blocked":
            return (d >= 0).astype(np.int64)
        if mode == "packet":
            return np.where(d >= 0, d, sim.P).astype(np.int64)
        return np.maximum(d, 0).astype(np.int64)


def blocked_decision(act: Callable[[np.ndarray], np.ndarray], observation: str, path_raw: np.ndarray,
                     conn_raw: np.ndarray, nsub: np.ndarray) -> np.ndarray:
    """The Python reference of a blocked-mode header's ``decide`` on raw counters, as the
    simulator's blocked mode acts (the rule of ``envs.sim.roles``): the fast path when it has
    window; else, if another path has, ``act`` on the features (1: the second path, 0: WAIT =
    -1); else WAIT. Row r has ``nsub[r]`` paths."""
    from envs.features import compute, feature_set, table
    from envs.sim.roles import blocked_rule
    from envs.transport import from_raw

    obs, cobs = from_raw(path_raw, conn_raw)
    nsub = np.asarray(nsub)
    fast, second, blocked = np.array([blocked_rule(obs[r], int(nsub[r])) for r in range(len(obs))],
                                     dtype=np.int64).reshape(-1, 3).T
    out = np.where(blocked, -1, fast)
    ask = (blocked == 1) & (second >= 0)
    if ask.any():
        feats = compute(table(feature_set(observation, obs.shape[1])), obs, cobs, nsub.astype(float))
        out[ask] = np.where(act(feats[ask]) == 1, second[ask], -1)
    return out


def evaluate_exported(policy: ExportedPolicy, s, scenario, cc: str, runs: int, seed: int, inputs: str = "raw",
                      record: list | None = None) -> dict[str, np.ndarray]:
    """``agents.training.evaluate_agent`` for a compiled policy: ``inputs="features"`` passes the
    environment's feature vectors to ``act``; ``"raw"`` passes the raw sender-observable arrays
    to ``decide`` (the header's own feature construction). ``record`` collects the actions."""
    from envs.multipath_env import build_process

    if inputs not in ("raw", "features"):
        raise ExportError(f"inputs must be 'raw' or 'features', got {inputs!r}")
    process = build_process(runs, scenario=scenario, cc=cc, seed=seed, cc_params=s.ccs, **s.env_kwargs)
    process.reset()
    while not process.sim.done.all():
        if inputs == "raw":
            a = policy.decide_sim(process)
        else:
            a = policy.act(process.observe(), deterministic=True)
        if record is not None:
            record.append((~process.sim.done, a.copy()))
        process.step(a)
    return process.sim.results()
