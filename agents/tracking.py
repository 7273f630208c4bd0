"""Where runs are tracked: MLflow's store, opened so that a server that does not answer fails in
seconds and concurrent first runs in one directory both get the local store."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import mlflow
import requests
from filelock import FileLock

from envs.errors import ConfigError

LOCAL_DEFAULT = "sqlite:///mlflow.db"  # MLflow's own default: mlflow.db in the working directory
PROBE_TIMEOUT_S = 3.0
LOCK_TIMEOUT_S = 120.0


def open_store(uri: str | None, experiment: str, field: str = "mlflow.tracking_uri") -> str:
    """Point MLflow at ``uri`` (None: its local default) and select ``experiment``; returns the
    URI in use. A server (http/https) must answer within PROBE_TIMEOUT_S, else a ConfigError names
    ``field``; a local store (sqlite or a directory) is created once, under a file lock beside it."""
    if uri:
        mlflow.set_tracking_uri(uri)
    uri = mlflow.get_tracking_uri()
    probe(uri, field)
    scheme = urlparse(uri).scheme
    if scheme not in ("sqlite", "file", ""):
        mlflow.set_experiment(experiment)
        return uri
    with FileLock(str(_local_path(uri)) + ".lock", timeout=LOCK_TIMEOUT_S):
        mlflow.set_experiment(experiment)
    return uri


def probe(uri: str, field: str = "mlflow.tracking_uri") -> None:
    """Refuse a tracking server (http, https) that does not answer its health check within
    PROBE_TIMEOUT_S (MLflow's client would retry for minutes); other stores pass."""
    if urlparse(uri).scheme not in ("http", "https"):
        return
    try:
        requests.get(uri.rstrip("/") + "/health", timeout=PROBE_TIMEOUT_S)
    except requests.RequestException as err:
        raise ConfigError(f"{field}={uri}: the tracking server did not answer within {PROBE_TIMEOUT_S:g} s "
                          f"({type(err).__name__}); start it, fix the address, or leave {field} unset for the "
                          f"local default store ({LOCAL_DEFAULT}, in the working directory)") from None


def _local_path(uri: str) -> Path:
    """The file or directory of a local store (``sqlite:///x.db``, ``file:///dir``, ``dir``)."""
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        return Path(uri.split(":///", 1)[1] if ":///" in uri else "mlflow.db").resolve()
    return Path(parsed.path if parsed.scheme == "file" else uri).resolve()


def resumable(run_id: str | None) -> str | None:
    """``run_id`` if the current store has that run and it is not finished (a resumed run
    continues it), else None."""
    if not run_id:
        return None
    try:
        run = mlflow.MlflowClient().get_run(run_id)
    except mlflow.exceptions.MlflowException:
        return None
    return run_id if run.info.status != "FINISHED" else None
