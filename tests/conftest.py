"""Suite-wide settings.

Hypothesis draws new random examples on every local run, which is how the property tests find
counterexamples (pin each one with ``@example``). CI sets ``HYPOTHESIS_PROFILE=ci`` (.ci/run): a
derandomised profile that replays the same examples on every run, so whether a change lands does
not depend on which examples a run happened to draw (Hypothesis docs, "Settings: derandomize").
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
