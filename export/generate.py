"""Assemble a policy header: provenance, the shared transport interface, feature construction
generated from the feature-set definition (``envs.features``), the policy body, ``decide``."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from envs.features import CLIP, FAST, SECOND, CONN, Feature, table
from envs.sim.layout import COBS_NAMES, OBS_NAMES
from export import cnames
from export.bodies import QF, Body
from export.errors import ExportError
from envs.transport import conn_fields, path_fields

ABI = 1  # bump when the shared structs or helpers change incompatibly
DECISION_DOC = {
    "blocked": ("the fast path (lowest srtt) when it has window; otherwise, when another path has window, the "
                "policy chooses: action 0 = wait for the fast path (MPSCHED_WAIT), action 1 = send on the second "
                "path (lowest-srtt available path); MPSCHED_WAIT when no path has window"),
    "packet": "action i < n_paths = send on path i; action n_paths (or any path the connection lacks) = MPSCHED_WAIT",
    "interval": ("the index of the scheduling mode to run until the next decision (interval_ms); see the mode "
                 "list above; not a path"),
}


@dataclass
class PolicySpec:
    """Everything the header needs besides the body."""

    prefix: str
    features: tuple[Feature, ...]
    feature_set: str
    decision: str
    n_actions: int
    fixed_point: bool
    provenance: list[tuple[str, str]]
    seed: int = 0
    modes: list[str] = field(default_factory=list)  # interval mode: the modes (envs.plugins.scheduler_label)
    interval_ms: float = 0.0  # interval mode: how often the policy decides


# ---------------------------------------------------------------------------------- shared part
def _shared() -> str:
    g = f"MPSCHED_POLICY_ABI_{ABI}"
    pf = "\n".join(f"    {f.c_type} {f.c_name}; /* {f.doc} */" for f in path_fields())
    cf = "\n".join(f"    {f.c_type} {f.c_name}; /* {f.doc} */" for f in conn_fields())
    clip_q = Fraction(CLIP) * 2**QF
    if clip_q.denominator != 1:
        raise ExportError(f"CLIP={CLIP} is not representable in Q.{QF}")
    return f"""/* ---- shared by every mpsched policy header (defined once per translation unit) ---------- */
#ifndef {g}
#define {g}

#include <stdint.h>

#define MPSCHED_WAIT (-1)              /* decide(): send nothing now */
#define MPSCHED_ERROR (-2)             /* decide()/features(): NULL pointer or too few paths */
#define MPSCHED_UNBOUNDED UINT64_MAX   /* a counter with no limit (remaining bytes of a bulk transfer) */
#define MPSCHED_CLIP {cnames.f64(CLIP)}             /* every feature lies in [0, MPSCHED_CLIP] */
#define MPSCHED_QF {QF}                 /* fixed point: features are Q7.{QF} (value * 2^{QF}) */
#define MPSCHED_QCLIP {int(clip_q)}        /* MPSCHED_CLIP in Q7.{QF} */

/* One path (subflow) as the sender sees it, in transport units. Fill every member; a member a
   policy does not read may be 0. */
typedef struct mpsched_path_obs {{
{pf}
}} mpsched_path_obs;

/* The connection. */
typedef struct mpsched_conn_obs {{
{cf}
}} mpsched_conn_obs;

/* The only mutable state: a SplitMix64 generator owned by the caller, used only by stochastic
   rules (pass NULL for the deterministic policy). Seed it with mpsched_rng_seed(). */
typedef struct mpsched_rng {{
    uint64_t state;
}} mpsched_rng;

static inline void
mpsched_rng_seed(mpsched_rng *rng, uint64_t seed)
{{
    rng->state = seed;
}}

static inline uint32_t
mpsched_rng_u32(mpsched_rng *rng)
{{
    uint64_t z = (rng->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}}

/* Path roles (envs/sim/roles.py path_roles, as envs/features.py reads them): fast = lowest srtt
   (lowest index on a tie); second = lowest-srtt available path other than fast, or fast when
   there is none. */
static inline void
mpsched_path_roles(const mpsched_path_obs *paths, int n_paths, int *fast, int *second)
{{
    int i, f = 0, s = -1;
    for (i = 1; i < n_paths; ++i)
        if (paths[i].srtt_us < paths[f].srtt_us)
            f = i;
    for (i = 0; i < n_paths; ++i)
        if (i != f && paths[i].available != 0 && (s < 0 || paths[i].srtt_us < paths[s].srtt_us))
            s = i;
    *fast = f;
    *second = s < 0 ? f : s;
}}

/* round(v / 2^s), well defined for negative v */
static inline int64_t
mpsched_rshift_round(int64_t v, int s)
{{
    int64_t half = (int64_t)1 << (s - 1);
    return v >= 0 ? (v + half) >> s : -((-v + half) >> s);
}}

/* floor(a * an * 2^MPSCHED_QF / (b * bd)) clipped to [0, MPSCHED_QCLIP]: a fixed-point feature from raw
   counters, integer arithmetic only (b = 0 reads as a tiny divisor, as in the simulator). */
static inline int32_t
mpsched_qfeature(uint64_t a, uint64_t an, uint64_t b, uint64_t bd)
{{
    uint64_t num, den, ip, rem, q;
    if (a == 0)
        return 0;
    while (a > UINT64_MAX / an || b > UINT64_MAX / bd) {{
        a >>= 1;
        b >>= 1;
    }}
    if (b == 0)
        return MPSCHED_QCLIP;
    num = a * an;
    den = b * bd;
    ip = num / den;
    if (ip >= (uint64_t)(MPSCHED_QCLIP >> MPSCHED_QF))
        return MPSCHED_QCLIP;
    rem = num - ip * den;
    while (den >= (UINT64_C(1) << (63 - MPSCHED_QF))) {{
        den >>= 1;
        rem >>= 1;
    }}
    q = (ip << MPSCHED_QF) + (rem << MPSCHED_QF) / den;
    return q < (uint64_t)MPSCHED_QCLIP ? (int32_t)q : MPSCHED_QCLIP;
}}

static inline uint32_t
mpsched_isqrt64(uint64_t v)
{{
    uint64_t r = 0, bit = UINT64_C(1) << 62;
    while (bit > v)
        bit >>= 2;
    while (bit != 0) {{
        if (v >= r + bit) {{
            v -= r + bit;
            r = (r >> 1) + bit;
        }} else {{
            r >>= 1;
        }}
        bit >>= 2;
    }}
    return (uint32_t)r;
}}

#ifndef MPSCHED_NO_FLOAT
/* Dot products of the float32 variant accumulate in MPSCHED_ACC (double unless defined before
   the first policy header, e.g. -DMPSCHED_ACC=float on an FPU without double precision). */
#ifndef MPSCHED_ACC
#define MPSCHED_ACC double
#endif

/* v clipped to [0, MPSCHED_CLIP] as float (envs/features.py) */
static inline float
mpsched_clip(double v)
{{
    return v > 0.0 ? (float)(v < MPSCHED_CLIP ? v : MPSCHED_CLIP) : 0.0f;
}}

static inline double
mpsched_per(double v)
{{
    return v > 1e-9 ? v : 1e-9;
}}

static inline int32_t
mpsched_to_q(float v)
{{
    return (int32_t)(v * (float)(INT32_C(1) << MPSCHED_QF) + (v >= 0.0f ? 0.5f : -0.5f));
}}
#endif

#endif /* {g} */
"""


# ---------------------------------------------------------------------------------- features
def _rational(scale: float, what: str) -> Fraction:
    r = Fraction(scale).limit_denominator(10**12)
    if r <= 0 or abs(float(r) - scale) > 1e-12 * abs(scale):
        raise ExportError(f"feature {what}: scale {scale!r} has no exact small rational form for fixed point")
    return r


def describe(f: Feature) -> str:
    where = ("connection" if f.path is None else f"the {f.path} path" if isinstance(f.path, str)
             else f"path {f.path + 1}")
    per = f" / max({f.per}, 1e-9)" if f.per else ""
    return f"{f.name} = {f.field}{per} of {where} / {f.scale:g}"


def _feature_code(spec: PolicySpec, fixed: bool) -> tuple[str, int]:
    """The ``features`` (float) or ``features_q`` (fixed) function; returns (code, min paths)."""
    p = spec.prefix
    pf, cf = path_fields(), conn_fields()
    field_idx, path_code, per_idx, scale = table(spec.features)
    roles = any(c in (FAST, SECOND) for c in path_code)
    min_paths = max([1] + [int(c) + 1 for c in path_code if c >= 0])
    lines = []
    for j, f in enumerate(spec.features):
        code = int(path_code[j])
        if code == CONN:
            rf = cf[COBS_NAMES.index(COBS_NAMES[field_idx[j]])]
            src = f"conn->{rf.c_name}"
        else:
            rf = pf[OBS_NAMES.index(OBS_NAMES[field_idx[j]])]
            who = "fast" if code == FAST else "second" if code == SECOND else str(code)
            src = f"paths[{who}].{rf.c_name}"
        per_f = pf[int(per_idx[j])] if per_idx[j] >= 0 else None
        per_src = f"paths[{who}].{per_f.c_name}" if per_f else None
        lines.append(f"    /* x[{j}] {cnames.comment_text(describe(f))} */")
        if fixed:
            # value = (raw / div) / (per_raw / per_div) / scale = raw * (per_div / (div * scale)) / per_raw
            c = Fraction(per_f.divisor if per_f else 1) / (Fraction(rf.divisor) * _rational(float(scale[j]), f.name))
            b = per_src if per_f else "1"
            if c.numerator >= 2**40 or c.denominator >= 2**40:
                raise ExportError(f"feature {f.name}: constant {c} too large for fixed point")
            lines.append(f"    xq[{j}] = mpsched_qfeature({src}, {cnames.u64(c.numerator)}, {b}, "
                         f"{cnames.u64(c.denominator)});")
        else:
            v = f"(double){src}" if rf.divisor == 1 else f"(double){src} / {cnames.f64(rf.divisor)}"
            if per_f:
                d = f"(double){per_src}" if per_f.divisor == 1 else f"(double){per_src} / {cnames.f64(per_f.divisor)}"
                v = f"{v} / mpsched_per({d})"
            lines.append(f"    x[{j}] = mpsched_clip({v} / {cnames.f64(float(scale[j]))});")
    xt, x, sfx = ("int32_t", "xq", "_q") if fixed else ("float", "x", "")
    head = ["static inline int",
            f"{p}_features{sfx}(const mpsched_path_obs *paths, int n_paths, const mpsched_conn_obs *conn, {xt} *{x})",
            "{"]
    if roles:
        head.append("    int fast, second;")
    head += [f"    if (paths == 0 || conn == 0 || {x} == 0 || n_paths < {p.upper()}_MIN_PATHS)",
             "        return MPSCHED_ERROR;"]
    if roles:
        head.append("    mpsched_path_roles(paths, n_paths, &fast, &second);")
    return "\n".join(head + lines + ["    return 0;", "}"]) + "\n", min_paths


def _decide(spec: PolicySpec) -> str:
    p, P = spec.prefix, spec.prefix.upper()
    xt, x, sfx = ("int32_t", "xq", "_q") if spec.fixed_point else ("float", "x", "")
    head = ["static inline int",
            f"{p}_decide(const mpsched_path_obs *paths, int n_paths, const mpsched_conn_obs *conn, mpsched_rng *rng)",
            "{", f"    {xt} {x}[{P}_N_FEATURES];"]
    if spec.decision == "blocked":
        body = ["    int fast, second;",
                f"    if (paths == 0 || conn == 0 || n_paths < {P}_MIN_PATHS)",
                "        return MPSCHED_ERROR;",
                "    mpsched_path_roles(paths, n_paths, &fast, &second);",
                "    if (paths[fast].available != 0)",
                "        return fast; /* minRTT: the fast path has window */",
                "    if (second == fast)",
                "        return MPSCHED_WAIT; /* no path has window */",
                f"    {p}_features{sfx}(paths, n_paths, conn, {x});",
                f"    return {p}_act{sfx}({x}, rng) == 1 ? second : MPSCHED_WAIT;"]
    elif spec.decision == "packet":
        body = ["    int a;",
                f"    if ({p}_features{sfx}(paths, n_paths, conn, {x}) != 0)",
                "        return MPSCHED_ERROR;",
                f"    a = {p}_act{sfx}({x}, rng);",
                "    return a < n_paths ? a : MPSCHED_WAIT;"]
    elif spec.decision == "interval":
        body = [f"    if ({p}_features{sfx}(paths, n_paths, conn, {x}) != 0)",
                "        return MPSCHED_ERROR;",
                f"    return {p}_act{sfx}({x}, rng);"]
    else:
        raise ExportError(f"decision mode {spec.decision!r} is not supported by the exporter")
    return "\n".join(head + body + ["}"]) + "\n"


def _float_wrappers(spec: PolicySpec, body: Body) -> str:
    """Fixed-point header: float entry points for tests and hosts with an FPU."""
    p, P = spec.prefix, spec.prefix.upper()
    return f"""#ifndef MPSCHED_NO_FLOAT
/* float conveniences of the fixed-point policy (not needed on the decision path) */
static inline void
{p}_forward(const float *x, float *out)
{{
    int32_t xq[{P}_N_FEATURES], oq[{P}_N_OUTPUTS];
    int i;
    for (i = 0; i < {P}_N_FEATURES; ++i)
        xq[i] = mpsched_to_q(x[i]);
    {p}_forward_q(xq, oq);
    for (i = 0; i < {P}_N_OUTPUTS; ++i)
        out[i] = (float)oq[i] / (float)(UINT32_C(1) << {P}_OUT_FRAC);
}}

static inline int
{p}_act(const float *x, mpsched_rng *rng)
{{
    int32_t xq[{P}_N_FEATURES];
    int i;
    for (i = 0; i < {P}_N_FEATURES; ++i)
        xq[i] = mpsched_to_q(x[i]);
    return {p}_act_q(xq, rng);
}}
#endif
"""


def _interface_doc(spec: PolicySpec, body: Body) -> str:
    p = spec.prefix
    if spec.fixed_point:
        fx = (f" *   int  {p}_features_q(paths, n_paths, conn, int32_t *xq)  features in Q7.{QF} (integer only)\n"
              f" *   void {p}_forward_q(const int32_t *xq, int32_t *outq)   raw outputs, Q.{p.upper()}_OUT_FRAC\n"
              f" *   int  {p}_act_q(const int32_t *xq, mpsched_rng *rng)   action index of the training env\n"
              f" *   void {p}_forward(const float *x, float *out)           float wrapper (unless MPSCHED_NO_FLOAT)\n"
              f" *   int  {p}_act(const float *x, mpsched_rng *rng)         float wrapper (unless MPSCHED_NO_FLOAT)\n")
    else:
        fx = (f" *   int  {p}_features(paths, n_paths, conn, float *x)     the {len(spec.features)} normalised "
              f"features; 0 or MPSCHED_ERROR\n"
              f" *   void {p}_forward(const float *x, float *out)           raw outputs ({body.n_out} floats)\n"
              f" *   int  {p}_act(const float *x, mpsched_rng *rng)         action index of the training env\n")
    return (f" * Interface (all static inline; no allocation; no global mutable state):\n"
            f" *   int  {p}_decide(const mpsched_path_obs *paths, int n_paths,\n"
            f" *                   const mpsched_conn_obs *conn, mpsched_rng *rng)\n"
            f" *        the path to send the next packet on (0 .. n_paths-1), MPSCHED_WAIT, or MPSCHED_ERROR;\n"
            f" *        call it whenever a packet may be sent. rng: NULL for the deterministic policy.\n"
            + fx +
            f" * decide(): {cnames.comment_text(DECISION_DOC[spec.decision])}.\n"
            f" * act(): {cnames.comment_text(body.rule_doc)}.\n"
            f" * Build: C99, any compiler; float variant needs <math.h> (-lm) only if {p.upper()}_NEEDS_LIBM is 1.\n"
            f" * Do not compile with -ffast-math (features are bit-exact with the simulator's otherwise).\n")


def _interval_macros(spec: PolicySpec) -> str:
    """Interval mode: what the host runs the policy with, ``P_INTERVAL_MS`` (decide this often) and
    ``P_MODES`` (the modes decide()'s index names, ``;``-separated ``envs.plugins.scheduler_label``s,
    read by ``envs.policy_library.header_info``)."""
    if spec.decision != "interval":
        return ""
    if not spec.modes or not spec.interval_ms > 0:
        raise ExportError("an interval policy needs its modes and an interval > 0 ms")
    bad = [m for m in spec.modes if ";" in m or '"' in m]
    if bad:
        raise ExportError(f"mode labels cannot contain ';' or '\"': {bad}")
    P = spec.prefix.upper()
    return (f"#define {P}_INTERVAL_MS {spec.interval_ms!r} /* decide() this often; its answer runs until the next */\n"
            f"#define {P}_MODES \"{';'.join(spec.modes)}\" /* decide()'s answer i runs mode i */\n")


def header(spec: PolicySpec, body: Body) -> str:
    if body.n_features != len(spec.features):
        raise ExportError(f"the policy reads {body.n_features} features, the feature set {spec.feature_set!r} "
                          f"has {len(spec.features)}")
    p, P = spec.prefix, spec.prefix.upper()
    feat_code, min_paths = _feature_code(spec, spec.fixed_point)
    guard = f"{P}_H"
    prov = "\n".join(f" * {k + ':':<18}{cnames.comment_text(v)}" for k, v in spec.provenance)
    feats = "\n".join(f" *   x[{j}] {cnames.comment_text(describe(f))}" for j, f in enumerate(spec.features))
    modes = ("".join(f" *   mode {i}: {cnames.comment_text(m)}\n" for i, m in enumerate(spec.modes))
             if spec.decision == "interval" else "")
    needs_math = (not spec.fixed_point) and body.needs_math
    parts = [
        f"/*\n * {cnames.comment_text(p)}: an mpsched scheduling policy exported to C.\n *\n{prov}\n *\n"
        f" * Features ({cnames.comment_text(spec.feature_set)}, from envs/features.py; each clipped to "
        f"[0, {CLIP:g}]; fast = lowest srtt, second = lowest-srtt available other path):\n{feats}\n{modes} *\n"
        + _interface_doc(spec, body) + " */\n",
        f"#ifndef {guard}\n#define {guard}\n\n#include <stdint.h>\n" + ("#include <math.h>\n" if needs_math else "")
        + "\n" + _shared() + "\n",
        f"/* ---- policy {cnames.comment_text(p)} ---------------------------------------------------- */\n"
        f"#define {P}_N_FEATURES {len(spec.features)}\n#define {P}_N_OUTPUTS {body.n_out}\n"
        f"#define {P}_N_ACTIONS {spec.n_actions}\n#define {P}_MIN_PATHS {min_paths}\n"
        f"#define {P}_STOCHASTIC {int(body.stochastic)} /* 1: act()/decide() draw from rng when it is not NULL */\n"
        f"#define {P}_FIXED_POINT {int(spec.fixed_point)}\n#define {P}_NEEDS_LIBM {int(needs_math)}\n"
        f"#define {P}_DEFAULT_SEED UINT64_C({int(spec.seed) % 2**64})\n"
        f"#define {P}_DECISION_{cnames.macro(spec.decision)} 1\n" + _interval_macros(spec) + "\n",
        feat_code + "\n",
        (body.c_fixed(p) + "\n" + _float_wrappers(spec, body)) if spec.fixed_point else body.c_float(p),
        "\n" + _decide(spec) + f"\n#endif /* {guard} */\n",
    ]
    return "".join(parts)
