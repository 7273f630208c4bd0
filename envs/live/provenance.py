"""Where and how a live measurement was taken: the one record every live tool keeps beside its runs
(the XQUIC commit the extension was built from, the kernel, Python, mpsched's commit, the date, the
command, the CPU count and the load average), so a number in tests/data says what produced it.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_average() -> float:
    """The 1-minute load average (the live runs share their CPUs: every kept run records it)."""
    return os.getloadavg()[0]


def xquic_commit() -> str:
    """The XQUIC commit the installed ``mpsched_xquic`` extension was built from (``not installed``)."""
    try:
        import mpsched_xquic
    except ImportError:
        return "not installed"
    return str(mpsched_xquic.XQUIC_COMMIT)


def mpsched_commit() -> str:
    """The short commit of this checkout, ``+uncommitted`` after it when tracked files differ from
    it (a measurement of code no commit holds); '' outside a git checkout."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--"], capture_output=True,
                                 timeout=10).returncode == 1
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{commit}+uncommitted" if commit and changed else commit


def provenance(program: str, argv: Sequence[str]) -> dict[str, Any]:
    """The provenance of a measurement made now by ``program`` (e.g. ``python -m studies.transfer``)
    run with ``argv``: XQUIC commit, kernel, Python, mpsched commit, date, command, CPUs and the
    load average (1, 5, 15 min) as it starts."""
    return {"xquic_commit": xquic_commit(), "kernel": platform.release(), "python": platform.python_version(),
            "mpsched_commit": mpsched_commit(), "date": utc_now(), "command": f"{program} {shlex.join(argv)}".strip(),
            "cpus": os.cpu_count(), "load_avg": list(os.getloadavg())}
