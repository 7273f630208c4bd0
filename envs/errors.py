"""Errors the workbench raises for bad input: always a sentence naming what is wrong; and how
every command-line entry point ends (``ending`` when something goes wrong, ``finish`` when its
work is done)."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

DEBUG_FLAG = "--debug"


class ConfigError(ValueError):
    """A name, value or combination in a config or on the command line that cannot be used."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the run kept what it had: the message says where it is and how to continue."""


def unknown_name(kind: str, name: object, valid: Iterable[str]) -> ConfigError:
    """``unknown cc 'bbr3'; valid: bbr, bbr2, cubic, reno``."""
    return ConfigError(f"unknown {kind} {name!r}; valid: {', '.join(sorted(valid))}")


def out_of_range(field: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"{field} must be {allowed}, got {value!r}")


def debug_argv(argv: list[str]) -> list[str]:
    """``argv`` without ``--debug``, which asks for full tracebacks (as Hydra's HYDRA_FULL_ERROR=1)."""
    if DEBUG_FLAG in argv:
        os.environ["HYDRA_FULL_ERROR"] = "1"
    return [a for a in argv if a != DEBUG_FLAG]


def make_writable_dir(directory: Path) -> None:
    """Make ``directory`` (with its parents) and check that a directory can be made in it, which
    ``os.access`` does not tell for root; raises ``OSError`` naming what failed."""
    directory.mkdir(parents=True, exist_ok=True)
    os.rmdir(tempfile.mkdtemp(dir=directory))


def write_atomic(path: str | Path, text: str) -> Path:
    """Write through a temporary file in the same directory and rename: never a partial file. The
    file gets the mode a plain ``open`` would give it (0o666 less the umask), not ``mkstemp``'s 0o600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def hydra_argv(argv: list[str]) -> list[str]:
    """``debug_argv`` for an entry point run by Hydra, which also refuses, in one line (exit code 2)
    and before any work, an output directory that cannot be made (``hydra.run.dir``, or
    ``hydra.sweep.dir`` with ``-m``; Hydra's defaults ``outputs/...`` and ``multirun/...``): Hydra
    makes it before the program starts and would end in a traceback from pathlib. An interpolated
    part (``${now:...}``) is checked up to the directory it starts in."""
    argv = debug_argv(argv)
    sweep = "-m" in argv or "--multirun" in argv
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    value = next((a.split("=", 1)[1] for a in argv if a.lstrip("+~").startswith(key + "=")),
                 "multirun/${now:%Y-%m-%d}" if sweep else "outputs/${now:%Y-%m-%d}")
    static, interpolated, _ = value.partition("${")
    with ending(bad_input_code=2):
        try:
            make_writable_dir(Path(static) if not interpolated or static.endswith("/") else Path(static).parent)
        except OSError as err:
            raise ConfigError(f"{key}={value}: cannot make the run's output directory there "
                              f"({err.strerror or err}); give a writable {key}=<dir>") from None
    return argv


def debugging() -> bool:
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


@contextmanager
def ending(bad_input_code: int = 1) -> Iterator[None]:
    """How an entry point ends when something goes wrong: bad input (ConfigError) prints one
    ``error: ...`` line to stderr and exits ``bad_input_code``; Ctrl-C prints one ``interrupted: ...`` line (where the work
    is and how to continue, when the run says so) and exits 130; any other exception prints its
    type and message in one line and exits 1. With ``--debug`` or HYDRA_FULL_ERROR=1 the
    exception propagates with its traceback."""
    try:
        yield
    except ConfigError as err:
        if debugging():
            raise
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(bad_input_code)
    except KeyboardInterrupt as err:
        if debugging():
            raise
        print(f"interrupted: {err}" if str(err) else "interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    except Exception as err:  # a fault outside our checks: one line, the traceback on request
        if debugging():
            raise
        sys.exit(f"error: {type(err).__name__}: {err} (rerun with {DEBUG_FLAG} for the traceback)")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, ``timeout``, ``docker stop``, a batch scheduler ending a job) taken as
    Ctrl-C while the block runs, so that what handles Ctrl-C there (a training run keeps its
    checkpoint and marks its MLflow run KILLED) handles it too. Only in the main thread, the one
    a signal handler can be set in (a Ray Tune trial's training keeps the default)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def finish() -> None:
    """End the process after an entry point's work is done: run its exit handlers (logging's
    flush, MLflow's, temporary files'), flush the output, then exit without tearing the
    interpreter down. That teardown frees, one by one, every object torch, ``torch._dynamo``
    (which torch's optimisers import, and which imports triton) and MLflow made: 1-2 s at the
    end of ``python train.py agent=dqn cc=bbr2`` (docs/performance.md), for nothing, as the
    process is ending. Only from the top level of the program the interpreter was started with
    (``python train.py``) and with no other thread left to finish; run from other code (a
    profiler, a debugger, a test running the script in its own process) it returns, and that
    code ends as it would."""
    if sys._getframe(1).f_back is not None:  # the caller's module was run by other code
        return
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        return  # the interpreter's own end waits for them
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
