"""C identifiers, literals and comments from arbitrary Python values."""

from __future__ import annotations

import math
import re

import numpy as np

from export.errors import ExportError

C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto
if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary""".split())


def identifier(name: str, fallback: str = "policy") -> str:
    """A valid C identifier from ``name``: every other character becomes ``_``, runs collapse,
    a leading digit or underscore gets a ``p`` in front, a keyword gets ``_`` after."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
    s = re.sub(r"_+", "_", s).strip("_")
    if not s:
        s = fallback
    if s[0].isdigit():
        s = "p" + s
    if s in C_KEYWORDS:
        s += "_"
    return s


def macro(name: str) -> str:
    return identifier(name).upper()


def unique(names: list[str]) -> list[str]:
    """Identifiers made unique by a numeric suffix (after sanitising, ``a-b`` and ``a_b`` clash)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        base = n
        k = seen.get(base, 0)
        while n in seen:
            k += 1
            n = f"{base}_{k}"
        seen[base] = k
        seen[n] = 0
        out.append(n)
    return out


def comment_text(value: object) -> str:
    """Text safe inside a ``/* */`` block: no comment terminator, no control characters."""
    s = str(value).replace("*/", "*\\/").replace("/*", "/\\*")
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "?", s)


def _finite(v: float, what: str) -> float:
    if not math.isfinite(v):
        raise ExportError(f"{what}: non-finite value {v!r} cannot be exported")
    return v


def f32(v: float, what: str = "parameter") -> str:
    """A float literal that parses back to exactly ``float32(v)``."""
    s = str(np.float32(_finite(float(v), what)))  # shortest text that reads back as this float32
    if "e" not in s and "." not in s:
        s += ".0"
    return s + "f"


def f64(v: float, what: str = "constant") -> str:
    """A double literal that parses back to exactly ``v``."""
    s = repr(float(_finite(float(v), what)))
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def i32(v: int) -> str:
    v = int(v)
    if not -(2**31) <= v < 2**31:
        raise ExportError(f"fixed point: value {v} does not fit int32")
    return f"INT32_C({v})" if v == -(2**31) else str(v)


def i64(v: int) -> str:
    v = int(v)
    if not -(2**63) < v < 2**63:
        raise ExportError(f"fixed point: value {v} does not fit int64")
    return f"INT64_C({v})"


def u64(v: int) -> str:
    v = int(v)
    if not 0 <= v < 2**64:
        raise ExportError(f"value {v} does not fit uint64")
    return f"UINT64_C({v})"


def array(ctype: str, name: str, values, fmt, per_line: int = 8, indent: str = "") -> str:
    """``static const ctype name[n] = {...};`` (1-D) or ``[n][m]`` (2-D)."""
    arr = np.asarray(values)
    if arr.ndim == 1:
        body = _rows([fmt(v) for v in arr], per_line, indent + "    ")
        return f"{indent}static const {ctype} {name}[{arr.shape[0]}] = {{\n{body}\n{indent}}};\n"
    if arr.ndim == 2:
        rows = [f"{indent}    {{" + _rows([fmt(v) for v in row], per_line, indent + "     ").lstrip() + "}" for row in arr]
        return (f"{indent}static const {ctype} {name}[{arr.shape[0]}][{arr.shape[1]}] = {{\n"
                + ",\n".join(rows) + f"\n{indent}}};\n")
    raise ExportError(f"cannot emit a {arr.ndim}-D array {name}")


def _rows(items: list[str], per_line: int, indent: str) -> str:
    return ",\n".join(indent + ", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line))
