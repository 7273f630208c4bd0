"""Where Ray runs, for sweeps (``tune.py``) and studies (``evaluate.py study=...``): the cluster
at ``ray.address`` (or ``$RAY_ADDRESS``), with this checkout shipped to its workers, else a Ray
instance started on this machine with ``ray.num_cpus`` CPUs (all cores by default)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# what a cluster's workers do not need of this checkout (Ray also skips what .gitignore lists)
EXCLUDES = [".git/", "outputs/", "multirun/", "ray_results/", "mlruns/", "mlflow.db", "*.so"]


def address(r: Any) -> str | None:
    """The cluster to join: ``ray.address``, else ``$RAY_ADDRESS``; None: a local instance."""
    return (r.get("address") if r is not None else None) or os.environ.get("RAY_ADDRESS") or None


def connect(r: Any, env_vars: dict[str, str] | None = None) -> bool:
    """Start or join Ray as ``r`` (the ``ray`` config section: ``address``, ``num_cpus``) says;
    ``env_vars`` are set in every worker. Returns whether this call started the connection (the
    caller then ends it with ``ray.shutdown()``); a session already open (a notebook, a test)
    is used as it is."""
    import ray  # slow to import: only where Ray is used
    if ray.is_initialized():
        return False
    env_vars = dict(env_vars or {})
    where = address(r)
    if where:
        ray.init(address=where, runtime_env={"working_dir": str(ROOT), "env_vars": env_vars, "excludes": EXCLUDES})
        return True
    num_cpus = (r.get("num_cpus") if r is not None else None) or os.cpu_count()  # range: envs.schema.RaySettings
    # workers import this checkout (ahead of any installed copy) and keep its numba cache
    ray.init(num_cpus=num_cpus, include_dashboard=False, configure_logging=False,
             runtime_env={"env_vars": {**env_vars, "PYTHONPATH": os.pathsep.join(
                 [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}})
    return True
