"""An exported policy header (``python -m export``) as a shared library: the header plus batched
entry points (``run_forward``, ``run_act``, ``run_features``, ``run_decide``) over the raw counters
of the transport's structs (``envs.transport``), compiled with strict flags and cached by content.
``export.runtime`` runs it from Python; the live XQUIC backend (``envs.live.xquic``) loads its
``run_decide`` into the server.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from envs.errors import ConfigError
from envs.transport import conn_fields, path_fields

STRICT_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")


class CompileError(ConfigError):
    """No C compiler, not a policy header, or the compiler rejected the code (its diagnostics are in
    the message)."""


def find_compiler(prefer: str | None = None) -> str:
    """``prefer``, else $CC, else gcc, clang or cc, whichever exists."""
    for c in ([prefer] if prefer else []) + [os.environ.get("CC", "")] + ["gcc", "clang", "cc"]:
        if c and shutil.which(c):
            return c
    raise CompileError(f"no C compiler found{f' ({prefer})' if prefer else ''}: install gcc or clang, or set CC")


def compile_c(source: str, out: Path, compiler: str | None = None, shared: bool = False,
              extra: tuple[str, ...] = (), include_dirs: tuple[Path, ...] = (), opt: str = "-O2") -> Path:
    cc = find_compiler(compiler)
    out = Path(out)
    src = out.with_suffix(".c")
    src.write_text(source)
    cmd = [cc, *STRICT_FLAGS, opt, *extra, *(f"-I{d}" for d in include_dirs)]
    if shared:
        cmd += ["-shared", "-fPIC"]
    cmd += [str(src), "-o", str(out)] + ([] if "-c" in extra or "-S" in extra else ["-lm"])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise CompileError(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
    if res.stderr.strip():
        raise CompileError(f"{' '.join(cmd)} produced diagnostics:\n{res.stderr[-4000:]}")
    return out


def header_info(text: str) -> dict[str, Any]:
    """Prefix and sizes of a generated header."""
    m = re.search(r"static inline int\n(\w+)_decide\(", text)
    if not m:
        raise CompileError("not an mpsched policy header: no <prefix>_decide function")
    p = m.group(1)
    P = p.upper()

    def num(name: str) -> int:
        mm = re.search(rf"#define {P}_{name} (\d+)", text)
        if not mm:
            raise CompileError(f"policy header lacks {P}_{name}")
        return int(mm.group(1))
    dm = re.search(rf"#define {P}_DECISION_(\w+) 1", text)
    seed = re.search(rf"#define {P}_DEFAULT_SEED UINT64_C\((\d+)\)", text)
    if not seed:
        raise CompileError(f"policy header lacks {P}_DEFAULT_SEED")
    info = {"prefix": p, "n_features": num("N_FEATURES"), "n_outputs": num("N_OUTPUTS"), "n_actions": num("N_ACTIONS"),
            "min_paths": num("MIN_PATHS"), "stochastic": bool(num("STOCHASTIC")),
            "fixed_point": bool(num("FIXED_POINT")), "decision": dm.group(1).lower() if dm else "blocked",
            "default_seed": int(seed.group(1))}
    if info["fixed_point"]:
        info["out_frac"] = num("OUT_FRAC")
    if info["decision"] == "interval":  # export/generate.py, _interval_macros
        ms = re.search(rf"#define {P}_INTERVAL_MS ([0-9.eE+-]+)", text)
        modes = re.search(rf'#define {P}_MODES "([^"]*)"', text)
        if not ms or not modes:
            raise CompileError(f"interval policy header lacks {P}_INTERVAL_MS or {P}_MODES (exported before they "
                               "were written: export it again)")
        info["interval_ms"] = float(ms.group(1))
        info["modes"] = modes.group(1).split(";")
    return info


def fill_code() -> str:
    pf = "\n".join(f"        paths[i].{f.c_name} = pr[(size_t)i * {len(path_fields())} + {k}];"
                   for k, f in enumerate(path_fields()))
    cf = "\n".join(f"    conn->{f.c_name} = cr[{k}];" for k, f in enumerate(conn_fields()))
    return f"""static void
fill(const uint64_t *pr, const uint64_t *cr, int n_paths, mpsched_path_obs *paths, mpsched_conn_obs *conn)
{{
    int i;
    for (i = 0; i < n_paths; ++i) {{
{pf}
    }}
{cf}
}}
"""


def batch_code(info: dict[str, Any], export: str = "") -> str:
    """Batched entry points over N rows; ``export`` prefixes their definitions (e.g. for a
    shared library they are external; in a program, static)."""
    p, P = info["prefix"], info["prefix"].upper()
    NPF, NCF = len(path_fields()), len(conn_fields())
    ft, fsfx = ("int32_t", "_q") if info["fixed_point"] else ("float", "")
    return f"""{fill_code()}
#define MAXP 8
{export}void
run_forward(const float *x, int n, float *out)
{{
    int r;
    for (r = 0; r < n; ++r)
        {p}_forward(x + (size_t)r * {P}_N_FEATURES, out + (size_t)r * {P}_N_OUTPUTS);
}}

{export}void
run_act(const float *x, int n, uint64_t *rng_state, int32_t *act)
{{
    mpsched_rng rng;
    int r;
    rng.state = rng_state ? *rng_state : 0;
    for (r = 0; r < n; ++r)
        act[r] = {p}_act(x + (size_t)r * {P}_N_FEATURES, rng_state ? &rng : 0);
    if (rng_state)
        *rng_state = rng.state;
}}

{export}int
run_features(const uint64_t *pr, const uint64_t *cr, const int32_t *nsub, int np, int n, {ft} *x)
{{
    mpsched_path_obs paths[MAXP];
    mpsched_conn_obs conn;
    int r, bad = 0;
    for (r = 0; r < n; ++r) {{
        fill(pr + (size_t)r * np * {NPF}, cr + (size_t)r * {NCF}, nsub[r], paths, &conn);
        bad |= {p}_features{fsfx}(paths, nsub[r], &conn, x + (size_t)r * {P}_N_FEATURES) != 0;
    }}
    return bad;
}}

{export}void
run_decide(const uint64_t *pr, const uint64_t *cr, const int32_t *nsub, int np, int n, uint64_t *rng_state,
           int32_t *out)
{{
    mpsched_path_obs paths[MAXP];
    mpsched_conn_obs conn;
    mpsched_rng rng;
    int r;
    rng.state = rng_state ? *rng_state : 0;
    for (r = 0; r < n; ++r) {{
        fill(pr + (size_t)r * np * {NPF}, cr + (size_t)r * {NCF}, nsub[r], paths, &conn);
        out[r] = {p}_decide(paths, nsub[r], &conn, rng_state ? &rng : 0);
    }}
    if (rng_state)
        *rng_state = rng.state;
}}
""" + (f"""
{export}void
run_forward_q(const int32_t *xq, int n, int32_t *out)
{{
    int r;
    for (r = 0; r < n; ++r)
        {p}_forward_q(xq + (size_t)r * {P}_N_FEATURES, out + (size_t)r * {P}_N_OUTPUTS);
}}

{export}void
run_act_q(const int32_t *xq, int n, uint64_t *rng_state, int32_t *act)
{{
    mpsched_rng rng;
    int r;
    rng.state = rng_state ? *rng_state : 0;
    for (r = 0; r < n; ++r)
        act[r] = {p}_act_q(xq + (size_t)r * {P}_N_FEATURES, rng_state ? &rng : 0);
    if (rng_state)
        *rng_state = rng.state;
}}
""" if info["fixed_point"] else "")


def _cache_dir() -> Path:
    d = Path(os.environ.get("MPSCHED_EXPORT_CACHE") or Path(tempfile.gettempdir()) / f"mpsched-export-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def build_library(header_text: str, compiler: str | None = None) -> Path:
    """The header compiled (strict flags, warnings are errors) into a shared library with the
    batched ``run_*`` entry points; cached by content."""
    info = header_info(header_text)
    cc = find_compiler(compiler)
    key = hashlib.sha256((header_text + cc + " ".join(STRICT_FLAGS) + batch_code(info)).encode()).hexdigest()[:20]
    d = _cache_dir() / key
    lib = d / "policy.so"
    if lib.is_file():
        return lib
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=_cache_dir()))
    (tmp / "policy.h").write_text(header_text)
    src = '#include <stddef.h>\n#include <stdint.h>\n#include "policy.h"\n\n' + batch_code(info)
    compile_c(src, tmp / "policy.so", cc, shared=True, include_dirs=(tmp,))
    try:
        tmp.rename(d)
    except OSError:  # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return lib
