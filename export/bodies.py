"""What a policy computes from its feature vector, as data, and the C that computes it.

A *body* turns the normalised features ``x`` into raw outputs (``forward``) and an action of the
training environment (``act``). Three kinds cover every learned agent of the workbench:

- ``MLPBody``: dense layers and element-wise activations, argmax head (SB3 DQN's Q-network,
  PPO/A2C's policy network + action head, FALCON's Q-network);
- ``QTableBody``: ISPRAS tabular Q-learning (state classes from thresholds, Q-table lookup);
- ``LinearBanditBody``: LinUCB (classic), ISPRAS LinUCB and Peekaboo (per-arm linear values, the
  UCB bonus, the probabilistic rules).

Each emits C99 for the float32 variant (``c_float``) and the int32 fixed-point variant
(``c_fixed``). ``{P}`` in the generated text is the policy prefix.

Fixed point: features are Q7.24 (``int32``, ``value * 2^24``, at most 10 * 2^24); hidden values use
one format ``Q(a)`` per network with ``a <= 24`` chosen from interval bounds over the whole input box
``[0, CLIP]^n`` so that nothing can overflow; weights are ``int32`` in a per-layer format ``Q(w)``,
products and sums in ``int64``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from envs.features import CLIP
from export import cnames
from export.errors import ExportError

QF = 24  # fractional bits of the fixed-point features
ACTIVATIONS = ("relu", "tanh", "leaky_relu", "elu")
TANH_SEGMENTS_LOG2 = 7  # fixed-point tanh: 2^7 linear segments per unit of input ...
TANH_RANGE = 8  # ... over [0, 8); tanh(8) = 1 - 2.3e-7
UNROLL_MACS = 256  # dense layers with up to this many weights are unrolled


@dataclass
class Dense:
    weight: np.ndarray  # [out, in]
    bias: np.ndarray  # [out]

    def __post_init__(self) -> None:
        self.weight = np.asarray(self.weight, dtype=np.float32)
        self.bias = np.asarray(self.bias, dtype=np.float32)
        if self.weight.ndim != 2 or self.bias.shape != (self.weight.shape[0],):
            raise ExportError(f"dense layer: weight {self.weight.shape} and bias {self.bias.shape} do not fit")


@dataclass
class Activation:
    kind: str
    param: float = 0.0  # leaky_relu: negative slope; elu: alpha

    def __post_init__(self) -> None:
        if self.kind not in ACTIVATIONS:
            raise ExportError(f"unsupported activation {self.kind!r}; supported: {', '.join(ACTIVATIONS)}")


class Body(ABC):
    n_features: int
    n_out: int
    stochastic: bool = False  # the rng-driven rule draws random numbers
    needs_math: bool = False  # float variant uses <math.h>
    rule_doc: str = ""  # what act() does, for the header

    @abstractmethod
    def c_float(self, p: str) -> str:
        """Constants plus ``{p}_forward(const float *x, float *out)`` and
        ``{p}_act(const float *x, mpsched_rng *rng)``."""

    @abstractmethod
    def c_fixed(self, p: str) -> str:
        """Constants plus ``{p}_forward_q(const int32_t *xq, int32_t *outq)`` and
        ``{p}_act_q(const int32_t *xq, mpsched_rng *rng)``; defines ``{P}_OUT_FRAC``."""


def _argmax(n: int, arr: str, var: str = "best") -> str:
    """First index of the maximum (ties: the lowest index, as numpy and torch)."""
    return (f"    {var} = 0;\n"
            f"    for (k = 1; k < {n}; ++k)\n"
            f"        if ({arr}[k] > {arr}[{var}])\n"
            f"            {var} = k;\n")


def _q32(p: float) -> int:
    """Probability as a threshold on a uniform 32-bit draw: draw < threshold with probability p."""
    if not 0.0 <= p <= 1.0:
        raise ExportError(f"probability {p} outside [0, 1]")
    return int(round(p * 2**32))


# ---------------------------------------------------------------------------------- bounds
def _dense_bounds(layer: Dense, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = layer.weight.astype(np.float64)
    wp, wn = np.maximum(w, 0.0), np.minimum(w, 0.0)
    b = layer.bias.astype(np.float64)
    return b + wp @ lo + wn @ hi, b + wp @ hi + wn @ lo


def _act_bounds(a: Activation, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if a.kind == "relu":
        return np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    if a.kind == "tanh":
        return np.tanh(lo), np.tanh(hi)
    if a.kind == "leaky_relu":
        f = lambda v: np.where(v >= 0, v, a.param * v)  # noqa: E731 (monotone for slope >= 0)
        return np.minimum(f(lo), f(hi)), np.maximum(f(lo), f(hi))
    return np.where(lo > 0, lo, -a.param), np.maximum(hi, np.where(hi > 0, hi, a.param * np.expm1(hi)))


def _frac_bits(max_abs: float, limit_bits: int, cap: int) -> int:
    """Largest f <= cap with max_abs * 2^f < 2^limit_bits."""
    if max_abs <= 0.0:
        return cap
    return min(cap, limit_bits - 1 - math.floor(math.log2(max_abs)))


# ---------------------------------------------------------------------------------- MLP
@dataclass
class MLPBody(Body):
    """Dense layers and activations in order; ``act`` is the argmax of the outputs."""

    layers: list  # Dense | Activation
    source: str = "network"
    n_features: int = field(init=False)
    n_out: int = field(init=False)

    def __post_init__(self) -> None:
        dense = [l for l in self.layers if isinstance(l, Dense)]
        if not dense:
            raise ExportError(f"{self.source}: no dense layer to export")
        if not isinstance(self.layers[0], Dense):
            raise ExportError(f"{self.source}: the network must start with a dense layer")
        width = dense[0].weight.shape[1]
        self.n_features = width
        for l in self.layers:
            if isinstance(l, Dense):
                if l.weight.shape[1] != width:
                    raise ExportError(f"{self.source}: layer expects {l.weight.shape[1]} inputs, gets {width}")
                width = l.weight.shape[0]
        self.n_out = width
        self.needs_math = any(isinstance(l, Activation) and l.kind in ("tanh", "elu") for l in self.layers)
        self.rule_doc = "argmax of the outputs (ties: lowest action); rng is not used"

    def _blocks(self) -> list[tuple[Dense, list[Activation]]]:
        blocks: list[tuple[Dense, list[Activation]]] = []
        for l in self.layers:
            if isinstance(l, Dense):
                blocks.append((l, []))
            else:
                blocks[-1][1].append(l)
        return blocks

    def reference(self, x: np.ndarray) -> np.ndarray:
        """float64 evaluation of the exported parameters (for checks)."""
        h = np.asarray(x, dtype=np.float64)
        for l in self.layers:
            if isinstance(l, Dense):
                h = h @ l.weight.astype(np.float64).T + l.bias.astype(np.float64)
            elif l.kind == "relu":
                h = np.maximum(h, 0.0)
            elif l.kind == "tanh":
                h = np.tanh(h)
            elif l.kind == "leaky_relu":
                h = np.where(h >= 0, h, l.param * h)
            else:
                h = np.where(h > 0, h, l.param * np.expm1(h))
        return h

    # -------------------------------------------------------------- float32
    @staticmethod
    def _act_float(a: Activation) -> str:
        if a.kind == "relu":
            return "acc = acc > 0.0f ? acc : 0.0f;"
        if a.kind == "tanh":
            return "acc = tanhf(acc);"
        if a.kind == "leaky_relu":
            return f"acc = acc >= 0.0f ? acc : {cnames.f32(a.param)} * acc;"
        return f"acc = acc > 0.0f ? acc : {cnames.f32(a.param)} * expm1f(acc);"

    def _dense_code(self, p: str, n: int, d: Dense, src: str, dst: str, acts: list[str], fixed: bool,
                    shift: int = 0) -> list[str]:
        """One dense layer plus its activations (C statements on ``acc``/``v``), reading
        ``src[i]`` and writing ``dst[j]``. Weights are stored [input][output]; small layers are
        unrolled (constant indices, independent sums per output), larger ones loop with the
        output index innermost so that compilers vectorise across outputs."""
        n_out, n_in = d.weight.shape
        w, bias = (f"{p}_qw{n}", f"{p}_qb{n}") if fixed else (f"{p}_w{n}", f"{p}_b{n}")
        var = "v" if fixed else "acc"
        if n_in * n_out <= UNROLL_MACS:
            out = []
            for j in range(n_out):
                if fixed:
                    terms = "\n        + ".join(f"(int64_t){w}[{i}][{j}] * {src}[{i}]" for i in range(n_in))
                    out.append(f"    v = (int32_t)mpsched_rshift_round({bias}[{j}]\n        + {terms}, {shift});")
                else:
                    terms = "\n        + ".join(f"(MPSCHED_ACC){w}[{i}][{j}] * {src}[{i}]" for i in range(n_in))
                    out.append(f"    acc = (float)((MPSCHED_ACC){bias}[{j}]\n        + {terms});")
                out += [f"    {a}" for a in acts]
                out.append(f"    {dst}[{j}] = {var};")
            return out
        st = "int64_t" if fixed else "MPSCHED_ACC"
        out = ["    {", f"        {st} s[{n_out}];",
               f"        for (j = 0; j < {n_out}; ++j)", f"            s[j] = {bias}[j];",
               f"        for (i = 0; i < {n_in}; ++i) {{",
               f"            {st} xi = {src}[i];",
               f"            for (j = 0; j < {n_out}; ++j)",
               f"                s[j] += ({st}){w}[i][j] * xi;", "        }",
               f"        for (j = 0; j < {n_out}; ++j) {{"]
        out.append(f"            v = (int32_t)mpsched_rshift_round(s[j], {shift});" if fixed
                   else "            acc = (float)s[j];")
        out += [f"            {a}" for a in acts]
        out += [f"            {dst}[j] = {var};", "        }", "    }"]
        return out

    def _needs_loops(self) -> bool:
        return any(d.weight.size > UNROLL_MACS for d, _ in self._blocks())

    def c_float(self, p: str) -> str:
        blocks = self._blocks()
        consts = []
        for n, (d, _) in enumerate(blocks):
            consts.append(f"/* layer {n}: {d.weight.shape[1]} -> {d.weight.shape[0]}; {p}_w{n}[input][output] */\n")
            consts.append(cnames.array("float", f"{p}_w{n}", d.weight.T, lambda v: cnames.f32(v, f"{self.source} weight")))
            consts.append(cnames.array("float", f"{p}_b{n}", d.bias, lambda v: cnames.f32(v, f"{self.source} bias")))
        body = ["static inline void", f"{p}_forward(const float *x, float *out)", "{"]
        for n, (d, _) in enumerate(blocks[:-1]):
            body.append(f"    float h{n}[{d.weight.shape[0]}];")
        body.append("    float acc;")
        if self._needs_loops():
            body.append("    int i, j;")
        src = "x"
        for n, (d, acts) in enumerate(blocks):
            dst = "out" if n == len(blocks) - 1 else f"h{n}"
            body += self._dense_code(p, n, d, src, dst, [self._act_float(a) for a in acts], False)
            src = dst
        body.append("}")
        act = ["static inline int", f"{p}_act(const float *x, mpsched_rng *rng)", "{",
               f"    float out[{self.n_out}];", "    int k, best;", "    (void)rng;",
               f"    {p}_forward(x, out);", _argmax(self.n_out, "out").rstrip("\n"), "    return best;", "}"]
        return "".join(consts) + "\n" + "\n".join(body) + "\n\n" + "\n".join(act) + "\n"

    # -------------------------------------------------------------- fixed point
    def fixed_formats(self) -> tuple[int, list[int]]:
        """(activation fraction bits a, weight fraction bits per dense layer)."""
        lo = np.zeros(self.n_features)
        hi = np.full(self.n_features, float(CLIP))
        max_act = float(CLIP)
        pre_bounds = []  # per dense layer: max over outputs of sum_i |w_ji| max|x_i| + |b_j|
        for l in self.layers:
            if isinstance(l, Dense):
                m = np.maximum(np.abs(lo), np.abs(hi))
                pre_bounds.append(float(np.max(np.abs(l.weight.astype(np.float64)) @ m + np.abs(l.bias))))
                lo, hi = _dense_bounds(l, lo, hi)
            else:
                if l.kind == "elu":
                    raise ExportError(f"{self.source}: layer ELU is not supported in fixed point (use the float32 "
                                      f"variant)")
                lo, hi = _act_bounds(l, lo, hi)
            max_act = max(max_act, float(np.max(np.abs(lo))), float(np.max(np.abs(hi))))
        a = _frac_bits(max_act, 31, QF)
        need = TANH_SEGMENTS_LOG2 + 1 if any(isinstance(l, Activation) and l.kind == "tanh" for l in self.layers) else 4
        if a < need:
            raise ExportError(f"{self.source}: values up to {max_act:.3g} leave {a} fraction bits in int32 fixed "
                              f"point (need {need}); use the float32 variant")
        ws = []
        for (d, _), bound in zip(self._blocks(), pre_bounds):
            w_max = float(np.max(np.abs(d.weight))) if d.weight.size else 0.0
            f = min(_frac_bits(w_max, 31, 30), _frac_bits(bound, 62, 62) - a)
            if f < 8:
                raise ExportError(f"{self.source}: weights up to {w_max:.3g} (sums up to {bound:.3g}) leave {f} "
                                  f"fraction bits in fixed point (need 8); use the float32 variant")
            ws.append(f)
        return a, ws

    def c_fixed(self, p: str) -> str:
        a, ws = self.fixed_formats()
        blocks = self._blocks()
        P = p.upper()
        consts = [f"#define {P}_ACT_FRAC {a} /* hidden values and outputs: Q(31-{a}).{a} */\n",
                  f"#define {P}_OUT_FRAC {a}\n"]
        for n, ((d, _), f) in enumerate(zip(blocks, ws)):
            wq = np.rint(d.weight.astype(np.float64).T * 2.0**f).astype(np.int64)
            bq = np.rint(d.bias.astype(np.float64) * 2.0**(f + a)).astype(np.int64)
            consts.append(f"/* layer {n}: {d.weight.shape[1]} -> {d.weight.shape[0]}; {p}_qw{n}[input][output] Q.{f}, "
                          f"bias Q.{f + a} */\n")
            consts.append(cnames.array("int32_t", f"{p}_qw{n}", wq, cnames.i32))
            consts.append(cnames.array("int64_t", f"{p}_qb{n}", bq, cnames.i64, per_line=4))
        tanh = any(isinstance(l, Activation) and l.kind == "tanh" for l in self.layers)
        helpers = ""
        if tanh:
            s = a - TANH_SEGMENTS_LOG2
            n_seg = TANH_RANGE << TANH_SEGMENTS_LOG2
            tab = np.rint(np.tanh(np.arange(n_seg + 1) / 2.0**TANH_SEGMENTS_LOG2) * 2.0**a).astype(np.int64)
            consts.append(cnames.array("int32_t", f"{p}_tanh_tab", tab, cnames.i32, per_line=10))
            helpers = (f"static inline int32_t\n{p}_tanh_q(int32_t v)\n{{\n"
                       f"    int32_t m = v < 0 ? -v : v;\n"
                       f"    int32_t i = m >> {s};\n"
                       f"    int32_t r;\n"
                       f"    if (i >= {n_seg})\n"
                       f"        r = {p}_tanh_tab[{n_seg}];\n"
                       f"    else\n"
                       f"        r = {p}_tanh_tab[i] + (int32_t)mpsched_rshift_round("
                       f"(int64_t)({p}_tanh_tab[i + 1] - {p}_tanh_tab[i]) * (m & {(1 << s) - 1}), {s});\n"
                       f"    return v < 0 ? -r : r;\n}}\n\n")
        body = ["static inline void", f"{p}_forward_q(const int32_t *xq, int32_t *outq)", "{"]
        if a != QF:
            body.append(f"    int32_t x0[{self.n_features}];")
        for n, (d, _) in enumerate(blocks[:-1]):
            body.append(f"    int32_t h{n}[{d.weight.shape[0]}];")
        body.append("    int32_t v;")
        if self._needs_loops() or a != QF:
            body.append("    int i, j;")
        src = "xq"
        if a != QF:
            body += [f"    for (i = 0; i < {self.n_features}; ++i)", f"        x0[i] = xq[i] >> {QF - a};"]
            src = "x0"
        for n, ((d, acts), f) in enumerate(zip(blocks, ws)):
            dst = "outq" if n == len(blocks) - 1 else f"h{n}"
            lines = []
            for act in acts:
                if act.kind == "relu":
                    lines.append("v = v > 0 ? v : 0;")
                elif act.kind == "tanh":
                    lines.append(f"v = {p}_tanh_q(v);")
                else:  # leaky_relu
                    slope = int(round(act.param * 2**QF))
                    lines.append(f"v = v >= 0 ? v : (int32_t)mpsched_rshift_round((int64_t)v * {slope}, {QF});")
            body += self._dense_code(p, n, d, src, dst, lines, True, f)
            src = dst
        if a != QF and not self._needs_loops():
            body.append("    (void)j;")
        body.append("}")
        act_fn = ["static inline int", f"{p}_act_q(const int32_t *xq, mpsched_rng *rng)", "{",
                  f"    int32_t out[{self.n_out}];", "    int k, best;", "    (void)rng;",
                  f"    {p}_forward_q(xq, out);", _argmax(self.n_out, "out").rstrip("\n"), "    return best;", "}"]
        return "".join(consts) + "\n" + helpers + "\n".join(body) + "\n\n" + "\n".join(act_fn) + "\n"


# ---------------------------------------------------------------------------------- Q-table
@dataclass
class QTableBody(Body):
    """ISPRAS tabular Q-learning over 2 paths (``agents.qlearning``): a class per path from
    thresholds on (srtt, RTOs, loss, delivery rate); state = 3 * class(path 1) + class(path 2),
    path 1 the first path of the features. By index (``by_role`` False, ``ispras_q``): greedy path
    = argmax Q[state] (ties: path 1), action = 0 when it is the fast path (the lower srtt feature,
    path 1 on a tie), else 1. By role (``ispras_q_roles``: path 1 is F, path 2 the second path):
    action = argmax Q[state] (ties: 0, wait)."""

    q: np.ndarray  # [9, 2] float64
    feature_index: dict  # (path, feature name) -> index in x; names srtt, rtos, loss_pct, delivery_rate
    to_natural: dict  # feature name -> factor to natural units (ms, count, %, Mbit/s)
    thresholds: dict  # rtt_low_ms, rtt_high_ms, loss_low_pct, loss_high_pct, rtos_many, thr_low_mbps
    by_role: bool = False  # agent.params.actions: roles
    n_features: int = 8
    n_out: int = 2

    def __post_init__(self) -> None:
        self.q = np.asarray(self.q, dtype=np.float64)
        if self.q.shape != (9, 2):
            raise ExportError(f"qlearning: Q-table of shape {self.q.shape}, the exporter knows (9, 2)")
        self.greedy = np.argmax(self.q, axis=1)  # exact, in float64 as the agent decides
        self.rule_doc = ("state = 3 * class(fast path) + class(second path), the features by role; action = argmax "
                         "Q[state] (ties: 0, wait for the fast path); rng is not used" if self.by_role else
                         "state = 3 * class(path 1) + class(path 2); greedy path = argmax Q[state] (ties: path 1); "
                         "action 0 (wait for the fast path) when the greedy path is the fast one, else 1; rng is not "
                         "used")

    def _conds(self, fixed: bool) -> dict[str, tuple[str, str]]:
        """C conditions on x[...] for each threshold test of one path (``%d`` = path)."""
        t, nat = self.thresholds, self.to_natural

        def test(name: str, op: str, value: float, path: str) -> str:
            idx = f"{{{name}_{path}}}"
            if not fixed:  # exactly the agent's float64 expression
                return f"(double)x[{idx}] * {cnames.f64(nat[name])} {op} {cnames.f64(value)}"
            # x * nat >= v  <=>  xq >= ceil(v / nat * 2^QF) for integer xq (and < likewise)
            bound = math.ceil(Fraction(value) / Fraction(nat[name]) * 2**QF)
            return f"xq[{idx}] {op} {min(bound, 2**31 - 1)}"
        out = {}
        for path in ("0", "1"):
            low = [test("srtt", ">=", t["rtt_high_ms"], path), test("rtos", ">=", t["rtos_many"], path),
                   test("loss_pct", ">=", t["loss_high_pct"], path)]
            high = [test("srtt", "<", t["rtt_low_ms"], path), test("loss_pct", "<", t["loss_low_pct"], path),
                    test("rtos", "<", 1, path), test("delivery_rate", ">=", t["thr_low_mbps"], path)]
            fmt = {f"{n}_{path}": self.feature_index[(int(path), n)] for n in ("srtt", "rtos", "loss_pct",
                                                                               "delivery_rate")}
            out[path] = (" || ".join(c.format(**fmt) for c in low), " && ".join(c.format(**fmt) for c in high))
        return out

    def _common(self, p: str, fixed: bool) -> str:
        xt, xname = ("int32_t", "xq") if fixed else ("float", "x")
        suffix = "_q" if fixed else ""
        c = self._conds(fixed)
        s1 = self.feature_index[(0, "srtt")]
        s2 = self.feature_index[(1, "srtt")]
        classes = []
        for path in ("0", "1"):
            low, high = c[path]
            classes.append(f"    c{path} = ({low}) ? 0 : ({high}) ? 2 : 1;")
        if self.by_role:
            doc = "3 * c(fast path) + c(second path), the features by role"
            act = f"    (void)rng;\n    return {p}_greedy[{p}_state{suffix}({xname})];\n"
        else:
            doc = "3 * c(path 1) + c(path 2)"
            act = (f"    int fast = {xname}[{s2}] < {xname}[{s1}] ? 1 : 0;\n    (void)rng;\n"
                   f"    return {p}_greedy[{p}_state{suffix}({xname})] != fast ? 1 : 0;\n")
        return (cnames.array("int", f"{p}_greedy", self.greedy, str, per_line=9)
                + f"\n/* performance class per path: 0 low, 1 medium, 2 high; state = {doc} */\n"
                f"static inline int\n{p}_state{suffix}(const {xt} *{xname})\n{{\n    int c0, c1;\n"
                + "\n".join(classes) + "\n    return 3 * c0 + c1;\n}\n\n"
                f"static inline int\n{p}_act{suffix}(const {xt} *{xname}, mpsched_rng *rng)\n{{\n"
                + act + "}\n")

    def c_float(self, p: str) -> str:
        return (cnames.array("float", f"{p}_q", self.q, lambda v: cnames.f32(v, "Q-table")) + "\n"
                + self._common(p, False) + "\n"
                f"static inline void\n{p}_forward(const float *x, float *out)\n{{\n"
                f"    int s = {p}_state(x);\n    out[0] = {p}_q[s][0];\n    out[1] = {p}_q[s][1];\n}}\n")

    def c_fixed(self, p: str) -> str:
        m = float(np.max(np.abs(self.q))) if self.q.size else 0.0
        f = _frac_bits(m, 31, QF)
        if f < 4:
            raise ExportError(f"qlearning: Q-values up to {m:.3g} do not fit int32 fixed point")
        P = p.upper()
        qq = np.rint(self.q * 2.0**f).astype(np.int64)
        return (f"#define {P}_OUT_FRAC {f} /* Q-values: Q.{f} */\n"
                + cnames.array("int32_t", f"{p}_qq", qq, cnames.i32) + "\n"
                + self._common(p, True) + "\n"
                f"static inline void\n{p}_forward_q(const int32_t *xq, int32_t *outq)\n{{\n"
                f"    int s = {p}_state_q(xq);\n    outq[0] = {p}_qq[s][0];\n    outq[1] = {p}_qq[s][1];\n}}\n")


# ---------------------------------------------------------------------------------- bandits
@dataclass
class LinearBanditBody(Body):
    """Per-arm linear values ``theta_a . x`` (``forward``) and one of the rules:

    - ``ispras`` (ISPRAS LinUCB): rng NULL: action 1 iff val_1 >= val_0; rng: send (1) with
      probability ``p_worse`` if val_1 < val_0 else ``p_better``;
    - ``ucb`` (classic LinUCB): rng NULL: argmax val; rng: argmax val + alpha sqrt(x' A^-1 x);
    - ``peekaboo``: as ``ucb``, and with rng the UCB choice is reversed with probability
      ``reverse``.
    """

    theta: np.ndarray  # [arms, d]
    rule: str
    a_inv: np.ndarray | None = None  # [arms, d, d] (ucb, peekaboo)
    alpha: float = 0.0
    p_worse: float = 0.0
    p_better: float = 0.0
    reverse: float = 0.0
    n_features: int = field(init=False)
    n_out: int = field(init=False)

    def __post_init__(self) -> None:
        self.theta = np.asarray(self.theta, dtype=np.float64)
        self.n_out, self.n_features = self.theta.shape
        if self.rule not in ("ispras", "ucb", "peekaboo"):
            raise ExportError(f"unknown bandit rule {self.rule!r}")
        if self.rule != "ispras":
            shape = () if self.a_inv is None else np.shape(self.a_inv)
            if shape != (self.n_out, self.n_features, self.n_features):
                raise ExportError(f"bandit rule {self.rule}: A^-1 of shape {shape} does not fit")
            self.a_inv = np.asarray(self.a_inv, dtype=np.float64)
            self.needs_math = True
        elif self.n_out != 2:
            raise ExportError("the ISPRAS LinUCB rule needs 2 arms")
        self.stochastic = self.rule in ("ispras", "peekaboo")
        self.rule_doc = {
            "ispras": (f"rng NULL: action 1 (send on the second path) iff val_1 >= val_0; rng given: the published "
                       f"rule, send with probability {self.p_worse} if val_1 < val_0, else {self.p_better}"),
            "ucb": (f"rng NULL: argmax val_a (ties: action 0); rng given: the online LinUCB rule, argmax val_a + "
                    f"{self.alpha} * sqrt(x' A_a^-1 x) (no random draw)"),
            "peekaboo": (f"rng NULL: argmax val_a (ties: action 0); rng given: Peekaboo's online rule, argmax val_a + "
                         f"{self.alpha} * sqrt(x' A_a^-1 x), reversed with probability {self.reverse}"),
        }[self.rule]

    def _rule_consts(self, p: str) -> str:
        P = p.upper()
        if self.rule == "ispras":
            return (f"#define {P}_P_SEND_IF_WORSE UINT64_C({_q32(self.p_worse)}) /* {self.p_worse} * 2^32 */\n"
                    f"#define {P}_P_SEND_IF_BETTER UINT64_C({_q32(self.p_better)}) /* {self.p_better} * 2^32 */\n")
        if self.rule == "peekaboo":
            return f"#define {P}_P_REVERSE UINT64_C({_q32(self.reverse)}) /* {self.reverse} * 2^32 */\n"
        return ""

    def _act(self, p: str, fixed: bool) -> str:
        P = p.upper()
        xt, x, sfx, vt = ("int32_t", "xq", "_q", "int32_t") if fixed else ("float", "x", "", "float")
        n, d = self.n_out, self.n_features
        lines = ["static inline int", f"{p}_act{sfx}(const {xt} *{x}, mpsched_rng *rng)", "{",
                 f"    {vt} val[{n}];"]
        if self.rule == "ispras":
            lines += [f"    {p}_forward{sfx}({x}, val);",
                      "    if (rng == 0)",
                      "        return val[1] >= val[0] ? 1 : 0;",
                      f"    return (uint64_t)mpsched_rng_u32(rng) < (val[1] < val[0] ? {P}_P_SEND_IF_WORSE "
                      f": {P}_P_SEND_IF_BETTER) ? 1 : 0;", "}"]
            return "\n".join(lines) + "\n"
        lines += ["    int a, i, j, k, best;", f"    {p}_forward{sfx}({x}, val);", "    if (rng != 0) {"]
        if fixed:
            lines += [f"        for (a = 0; a < {n}; ++a) {{",
                      "            int64_t s = 0;",
                      f"            for (i = 0; i < {d}; ++i) {{",
                      "                int64_t y = 0;",
                      f"                for (j = 0; j < {d}; ++j)",
                      f"                    y += (int64_t){p}_qainv[a][i * {d} + j] * xq[j];",
                      f"                s += (int64_t)xq[i] * mpsched_rshift_round(y, {P}_AINV_FRAC);",
                      "            }",
                      f"            val[a] += (int32_t)mpsched_rshift_round((int64_t){P}_QALPHA * "
                      f"(int64_t)mpsched_isqrt64(s > 0 ? (uint64_t)s : 0u), 2 * MPSCHED_QF - {P}_OUT_FRAC);",
                      "        }"]
        else:
            lines += [f"        for (a = 0; a < {n}; ++a) {{",
                      "            MPSCHED_ACC s = 0;",
                      f"            for (i = 0; i < {d}; ++i) {{",
                      "                MPSCHED_ACC y = 0;",
                      f"                for (j = 0; j < {d}; ++j)",
                      f"                    y += (MPSCHED_ACC){p}_ainv[a][i * {d} + j] * x[j];",
                      "                s += x[i] * y;",
                      "            }",
                      f"            val[a] = (float)(val[a] + {cnames.f32(self.alpha)} * sqrt((double)(s > 0 ? s : 0)));",
                      "        }"]
        lines += ["    }", _argmax(n, "val").rstrip("\n")]
        if self.rule == "peekaboo":
            lines += [f"    if (rng != 0 && (uint64_t)mpsched_rng_u32(rng) < {P}_P_REVERSE)",
                      "        best = 1 - best;"]
        lines += ["    (void)i; (void)j;", "    return best;", "}"]
        return "\n".join(lines) + "\n"

    def c_float(self, p: str) -> str:
        out = [cnames.array("float", f"{p}_theta", self.theta, lambda v: cnames.f32(v, "bandit theta"))]
        if self.a_inv is not None:
            out.append(cnames.array("float", f"{p}_ainv", self.a_inv.reshape(self.n_out, -1),
                                    lambda v: cnames.f32(v, "bandit A^-1")))
        out.append(self._rule_consts(p))
        out.append(f"\nstatic inline void\n{p}_forward(const float *x, float *out)\n{{\n    int a, i;\n"
                   f"    for (a = 0; a < {self.n_out}; ++a) {{\n        MPSCHED_ACC acc = 0;\n"
                   f"        for (i = 0; i < {self.n_features}; ++i)\n"
                   f"            acc += (MPSCHED_ACC){p}_theta[a][i] * x[i];\n"
                   f"        out[a] = (float)acc;\n    }}\n}}\n\n")
        out.append(self._act(p, False))
        return "".join(out)

    def c_fixed(self, p: str) -> str:
        P = p.upper()
        xmax = float(CLIP)
        sums = np.abs(self.theta).sum(axis=1) * xmax
        val_max = float(np.max(sums)) if sums.size else 0.0
        t_max = float(np.max(np.abs(self.theta))) if self.theta.size else 0.0
        ft = min(_frac_bits(t_max, 31, 30), _frac_bits(val_max, 62, 62) - QF)
        extra = 0.0
        if self.a_inv is not None:
            quad = float(np.max(np.abs(self.a_inv).sum(axis=(1, 2)))) * xmax * xmax  # bound on x' A^-1 x
            extra = abs(self.alpha) * math.sqrt(quad)
        v = _frac_bits(val_max + extra, 31, QF)  # format of the values (and UCB scores)
        if v < 8 or ft < 8 or (self.a_inv is not None and extra * 2.0**(2 * QF) >= 2.0**62):
            raise ExportError(f"bandit: values up to {val_max + extra:.3g} (theta up to {t_max:.3g}) do not fit "
                              f"int32 fixed point; use the float32 variant")
        out = [f"#define {P}_OUT_FRAC {v} /* values: Q.{v} */\n#define {P}_THETA_FRAC {ft}\n",
               cnames.array("int32_t", f"{p}_qtheta", np.rint(self.theta * 2.0**ft).astype(np.int64), cnames.i32)]
        if self.a_inv is not None:
            row = np.abs(self.a_inv).sum(axis=2).max() * xmax  # bound on |(A^-1 x)_i|
            fi = min(_frac_bits(float(np.abs(self.a_inv).max()), 31, 30), _frac_bits(float(row), 62, 62) - QF)
            if fi < 8 or quad * 2.0**(2 * QF) >= 2.0**62:
                raise ExportError("bandit: A^-1 does not fit fixed point; use the float32 variant")
            out.append(f"#define {P}_AINV_FRAC {fi}\n#define {P}_QALPHA {int(round(self.alpha * 2**QF))}\n")
            out.append(cnames.array("int32_t", f"{p}_qainv",
                                    np.rint(self.a_inv.reshape(self.n_out, -1) * 2.0**fi).astype(np.int64), cnames.i32))
        out.append(self._rule_consts(p))
        out.append(f"\nstatic inline void\n{p}_forward_q(const int32_t *xq, int32_t *outq)\n{{\n    int a, i;\n"
                   f"    for (a = 0; a < {self.n_out}; ++a) {{\n        int64_t acc = 0;\n"
                   f"        for (i = 0; i < {self.n_features}; ++i)\n"
                   f"            acc += (int64_t){p}_qtheta[a][i] * xq[i];\n"
                   f"        outq[a] = (int32_t)mpsched_rshift_round(acc, {ft + QF - v});\n    }}\n}}\n\n")
        out.append(self._act(p, True))
        return "".join(out)
