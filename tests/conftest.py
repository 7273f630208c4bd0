"""Suite-wide settings.

Hypothesis draws new random examples on every local run, which is how the property tests find
counterexamples (pin each one with ``@example``). CI sets ``HYPOTHESIS_PROFILE=ci`` (.ci/run): a
derandomised profile that replays the same examples on every run, so whether a change lands does
not depend on which examples a run happened to draw (Hypothesis docs, "Settings: derandomize").
"""

import os
import runpy
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import settings
from omegaconf import DictConfig

from envs.schema import register

register()  # the config schemas configs/*.yaml build on, for the tests that compose configs

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]  # the repository (configs/, train.py, evaluate.py)

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Stable-Baselines3 models the tests build themselves (``verbose=0``) make a log directory on
    every ``learn()``: ``SB3_LOGDIR`` puts it under pytest's temporary directory, not the system's
    (the project's own agents log nowhere, agents/sb3.py)."""
    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))


@pytest.fixture(autouse=True, scope="session")
def _entry_point_run_directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where ``run_script`` puts the Hydra run directories of the entry points it runs: under
    pytest's temporary directory, not the checkout's ``outputs/``."""
    os.environ.setdefault("MPSCHED_TEST_RUNS", str(tmp_path_factory.mktemp("runs")))


def compose_config(name: str, *overrides: str, config_dir: Path = ROOT / "configs") -> DictConfig:
    """``<config_dir>/<name>.yaml`` composed as its entry point composes it, with command-line
    overrides (``compose_config("train", "agent=dqn", "train.steps=400")``)."""
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def run_script(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python <script> <args>`` from the repository's root, its output captured as text. A Hydra
    entry point given no ``hydra.run.dir`` writes its run directory under a temporary directory,
    not into the checkout's ``outputs/``."""
    if script in ("train.py", "evaluate.py", "tune.py") and not any(a.startswith("hydra.run.dir=") for a in args):
        runs = os.environ.get("MPSCHED_TEST_RUNS")  # set for the session by _entry_point_run_directory
        args = (*args, f"hydra.run.dir={tempfile.mkdtemp(prefix=f'{Path(script).stem}-', dir=runs)}")
    return subprocess.run([sys.executable, script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@contextmanager
def inconclusive_skips(attempts: int = 1) -> Iterator[None]:
    """A live step that raised ``VerificationInconclusive`` (the machine, not the emulation's
    settings: the delay lines ran late, the probes could not be offered) after ``attempts``
    verifications: the test cannot have a faithful network and skips with the last verification;
    a plain miss (``VerificationError``) still fails."""
    from envs.live.verification import VerificationInconclusive
    try:
        yield
    except VerificationInconclusive as err:
        pytest.skip(f"this machine could not run the emulation on time ({attempts} attempt(s)): {err}")


def verified_or_skip(make: Callable[[], T], attempts: int = 3) -> T:
    """``make()``'s testbed, started and verified with ``envs.live.verification.start_verified``'s
    retries; skipped (``inconclusive_skips``) when every attempt was inconclusive."""
    from envs.live.verification import start_verified
    with inconclusive_skips(attempts):
        return start_verified(make, attempts, on_failure=lambda attempt, err: print(
            f"verification attempt {attempt}: {str(err).splitlines()[0]}"))
    raise AssertionError("unreachable: inconclusive_skips skipped")


def skip_if_inconclusive(out: subprocess.CompletedProcess) -> None:
    """A live command (``evaluate.py backend=live ...``) that refused because every verification
    attempt was inconclusive (``verified_or_skip``'s case, in a child process): skip with its words."""
    if out.returncode != 0 and "verification inconclusive" in out.stderr:
        pytest.skip(f"this machine could not run the emulation on time: {out.stderr[-2000:]}")


def refused(module: str, argv: list[str], monkeypatch, capsys) -> str:
    """``python -m module *argv`` run in this process as ``__main__``: its one line ``error: ...``,
    after checking that it exits non-zero without a traceback."""
    monkeypatch.setattr(sys, "argv", [module, *argv])
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with warnings.catch_warnings(), pytest.raises(SystemExit) as end:
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module is imported already
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    err = capsys.readouterr().err + (end.value.code if isinstance(end.value.code, str) else "")
    assert end.value.code not in (0, None) and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ")
    return line
