"""Gymnasium environments of the workbench: importing this package registers them.

``gymnasium.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr2", decision="blocked")``
and ``gymnasium.make_vec("mpsched/Multipath-v0", num_envs=64, vectorization_mode="vector_entry_point")``.

It also points numba's on-disk cache at a directory named after a hash of the compiled sources:
numba does not notice that a function called from a cached one changed in another module (a new
CC in ``envs/cc`` would otherwise run stale code), so every change of the sources gets a fresh
cache.
"""

import hashlib
import os
from pathlib import Path

import numba
from gymnasium.envs.registration import register, registry


def _numba_cache_dir() -> str:
    here = Path(__file__).parent
    compiled = [*sorted((here / "sim").glob("*.py")), *sorted((here / "cc").glob("*.py")),
                here / "features.py", here / "rewards.py", here / "decision.py",
                *sorted((here / "schedulers").glob("*.py")), *sorted((here / "plugins").glob("*.py"))]
    digest = hashlib.sha256()
    for path in compiled:
        digest.update(path.read_bytes())
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mpsched", "numba")
    return os.path.join(base, digest.hexdigest()[:16])


numba.config.CACHE_DIR = _numba_cache_dir()

if "mpsched/Multipath-v0" not in registry:
    register(id="mpsched/Multipath-v0", entry_point="envs.multipath_env:MultipathEnv",
             vector_entry_point="envs.vector_env:MultipathVectorEnv")
if "mpsched/Live-v0" not in registry:  # live testbed (envs/live): the same scenarios on real kernels
    register(id="mpsched/Live-v0", entry_point="envs.live.env:LiveEnv")
