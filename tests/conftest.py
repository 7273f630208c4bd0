"""Suite-wide settings.

Hypothesis draws new random examples on every local run, which is how the property tests find
counterexamples (pin each one with ``@example``). CI sets ``HYPOTHESIS_PROFILE=ci`` (.ci/run): a
derandomised profile that replays the same examples on every run, so whether a change lands does
not depend on which examples a run happened to draw (Hypothesis docs, "Settings: derandomize").
"""

import os
from pathlib import Path

from hypothesis import settings

from envs.schema import register

register()  # the config schemas configs/*.yaml build on, for the tests that compose configs

ROOT = Path(__file__).resolve().parents[1]  # the repository (configs/, train.py, evaluate.py)

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
