"""Suite-wide settings.

Hypothesis draws new random examples on every local run, which is how the property tests find
counterexamples (pin each one with ``@example``). CI sets ``HYPOTHESIS_PROFILE=ci`` (.ci/run): a
derandomised profile that replays the same examples on every run, so whether a change lands does
not depend on which examples a run happened to draw (Hypothesis docs, "Settings: derandomize").
"""

import os
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hypothesis import settings
from omegaconf import DictConfig

from envs.schema import register

register()  # the config schemas configs/*.yaml build on, for the tests that compose configs

ROOT = Path(__file__).resolve().parents[1]  # the repository (configs/, train.py, evaluate.py)

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def compose_config(name: str, *overrides: str, config_dir: Path = ROOT / "configs") -> DictConfig:
    """``<config_dir>/<name>.yaml`` composed as its entry point composes it, with command-line
    overrides (``compose_config("train", "agent=dqn", "train.steps=400")``)."""
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def run_script(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python <script> <args>`` from the repository's root, its output captured as text."""
    return subprocess.run([sys.executable, script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
