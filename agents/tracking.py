"""Where runs are tracked: MLflow's store, opened so that a server that does not answer fails in
seconds and concurrent first runs in one directory both get the local store; and a training
run's MLflow run (``RunLog``), kept by a helper process while the run starts up (``run_log``).

MLflow is imported where it is used (importing it, its SQL store and what ``mlflow.start_run``
probes takes about 2.3 s of CPU, as long as the rest of a training run's start-up)."""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO
from urllib.parse import urlparse

LOCAL_DEFAULT = "sqlite:///mlflow.db"  # MLflow's own default: mlflow.db in the working directory
# MLflow 3.13 stopped opening a directory store (``file:``, a plain path) unless this is true
# (its ``mlflow.environment_variables.MLFLOW_ALLOW_FILE_STORE``; mlflow/mlflow#18534)
FILE_STORE_OPT_IN = "MLFLOW_ALLOW_FILE_STORE"
PROBE_TIMEOUT_S = 3.0
# the URI schemes MLflow's tracking store registry knows (mlflow/tracking/_tracking_service/utils.py:
# file, sqlite and the other SQLAlchemy databases, http(s), databricks), plus plug-ins' ("mlflow.tracking_store")
STORE_SCHEMES = ("", "file", "sqlite", "http", "https", "postgresql", "mysql", "mssql", "databricks", "databricks-uc",
                 "uc")
LOCK_TIMEOUT_S = 120.0


def mlflow_key(key: str) -> str:
    """``key`` in the characters MLflow allows in metric, parameter and tag names
    (``wait_rule(k=1.25)`` -> ``wait_rule_k_1.25_``)."""
    return re.sub(r"[^\w\-./ :]", "_", key)


def open_store(uri: str | None, experiment: str, field: str = "mlflow.tracking_uri") -> str:
    """Point MLflow at ``uri`` (None: its local default) and select ``experiment``; returns the
    URI in use. A server (http/https) must answer within PROBE_TIMEOUT_S, else a ConfigError names
    ``field``; a local store (sqlite or a directory) is created once, under a file lock beside it,
    a database store's new experiment keeping its artifacts beside it too (``<its directory>/mlruns``)."""
    import mlflow
    from filelock import FileLock

    if uri:
        mlflow.set_tracking_uri(uri)
    uri = mlflow.get_tracking_uri()
    probe(uri, field)
    if not is_local(uri):
        mlflow.set_experiment(experiment)
        return uri
    check_local_store(uri, field)
    with FileLock(str(_local_path(uri)) + ".lock", timeout=LOCK_TIMEOUT_S):
        if urlparse(uri).scheme == "sqlite" and mlflow.get_experiment_by_name(experiment) is None:
            # its artifacts beside the store: MLflow's default for a database store is ./mlruns in
            # the working directory, wherever the store is (for the local default store, the same place)
            mlflow.create_experiment(experiment, artifact_location=(_local_path(uri).parent / "mlruns").as_uri())
        mlflow.set_experiment(experiment)
    return uri


def check_local_store(uri: str | None, field: str = "mlflow.tracking_uri") -> None:
    """Refuse a local store (``uri`` as ``is_local`` reads it) whose directory cannot be made or
    written, naming ``field``: its lock would otherwise wait LOCK_TIMEOUT_S for a lock file it can
    never create. Needs no MLflow (train.py checks before training, in its own process)."""
    uri = _resolved(uri)
    check_scheme(uri, field)
    if not is_local(uri):
        return
    from envs.errors import ConfigError, make_writable_dir  # not at the top: the helper process imports no envs

    if urlparse(uri).scheme != "sqlite" and not _file_store_opens():
        raise ConfigError(f"{field}={uri}: MLflow {_mlflow_version()} opens no directory store (its file store is "
                          f"in maintenance mode) unless {FILE_STORE_OPT_IN}=true; give a database store such as "
                          f"sqlite:///{_local_path(uri) / 'mlflow.db'}, or set {FILE_STORE_OPT_IN}=true")
    directory = _local_path(uri).parent
    try:
        make_writable_dir(directory)
    except OSError as err:
        raise ConfigError(f"{field}={uri}: the local store's directory {directory} cannot be written "
                          f"({err.strerror or type(err).__name__}); give a writable one, or leave {field} unset "
                          f"for the local default store ({LOCAL_DEFAULT}, in the working directory)") from None


def check_scheme(uri: str, field: str = "mlflow.tracking_uri") -> None:
    """Refuse a URI scheme MLflow has no store for (``ftp://...``), listing the ones it has: MLflow
    itself ended in a TypeError of its own exception (UnsupportedModelRegistryStoreURIException)."""
    scheme = urlparse(uri).scheme.split("+")[0]  # postgresql+psycopg2: a database and its driver
    if len(scheme) == 1 or scheme in STORE_SCHEMES:  # a Windows drive letter (C:\runs) is a directory
        return
    from importlib.metadata import entry_points  # only now: reading every installed package's entry points takes ~0.3 s

    from envs.errors import unknown_name
    plugins = [e.name for e in entry_points(group="mlflow.tracking_store")]
    if scheme not in plugins:
        raise unknown_name(f"{field} scheme", scheme, [s for s in (*STORE_SCHEMES, *plugins) if s])


def _mlflow_version() -> str:
    from importlib.metadata import version
    return version("mlflow")


def _file_store_opens() -> bool:
    """Whether the installed MLflow opens a directory store: before 3.13, or with the opt-in set
    (read as MLflow reads a boolean variable: true or 1)."""
    from packaging.version import Version
    return (Version(_mlflow_version()) < Version("3.13")
            or os.environ.get(FILE_STORE_OPT_IN, "").strip().lower() in ("true", "1"))


def is_local(uri: str | None) -> bool:
    """Whether ``uri`` (None: ``$MLFLOW_TRACKING_URI``, else MLflow's local default) names a local
    store (sqlite, a directory) rather than a tracking server."""
    return urlparse(_resolved(uri)).scheme in ("sqlite", "file", "")


def _resolved(uri: str | None) -> str:
    """``uri``, or where MLflow would track without one: ``$MLFLOW_TRACKING_URI``, else its local default."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or LOCAL_DEFAULT


def probe(uri: str, field: str = "mlflow.tracking_uri") -> None:
    """Refuse a tracking server (http, https) that does not answer its health check within
    PROBE_TIMEOUT_S (MLflow's client would retry for minutes), and a scheme MLflow has no store for;
    other stores pass."""
    check_scheme(uri, field)
    if urlparse(uri).scheme not in ("http", "https"):
        return
    import requests

    from envs.errors import ConfigError
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
    import mlflow
    try:
        run = mlflow.MlflowClient().get_run(run_id)
    except mlflow.exceptions.MlflowException:
        return None
    return run_id if run.info.status != "FINISHED" else None


@dataclass
class RunSpec:
    """What a training run's MLflow run is: the store, the run's name and parent (a sweep's trial
    nests under the sweep's run), its params, and for a resumed run the checkpoint it continues,
    at which step, and that checkpoint's MLflow run (continued where this store has it unfinished)."""

    tracking_uri: str | None
    experiment: str
    run_name: str
    parent_run_id: str | None
    params: dict[str, str]
    resumed_from: str | None = None
    resumed_at_step: int = 0
    resumed_run_id: str | None = None


class _Ends:
    """A run log as a context manager: the run ends FINISHED, or FAILED when an exception leaves
    the block (as ``mlflow.start_run``'s), then the log closes."""

    def __enter__(self) -> _Ends:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.end("FINISHED" if exc_type is None else "FAILED")  # type: ignore[attr-defined]
        except Exception:
            if exc_type is None:
                raise  # else the exception leaving the block is the one to see
        finally:
            self.close()

    def close(self) -> None:
        pass


class RunLog(_Ends):
    """A training run's MLflow run and the calls the run makes on it (MLflow's fluent API, in
    this process)."""

    @staticmethod
    def prepare() -> None:
        """Import what the calls below use: MLflow, its SQL store, and IPython, which
        ``mlflow.start_run`` imports where it is installed (to look for Databricks' ``dbutils``)."""
        import mlflow  # noqa: F401
        from mlflow.store.tracking import sqlalchemy_store  # noqa: F401
        try:
            import IPython  # noqa: F401
        except ImportError:
            pass

    def start(self, spec: RunSpec) -> None:
        """Open the store and start the run (a resumed run continues its own MLflow run, also one
        left RUNNING by kill -9, where the store has it); log the params it does not have yet
        (MLflow refuses to change a param) and, when resumed, where from."""
        import mlflow
        open_store(spec.tracking_uri, spec.experiment)
        own = resumable(spec.resumed_run_id) if spec.resumed_from else None
        if spec.parent_run_id and not own:
            from envs.errors import ConfigError
            try:
                mlflow.MlflowClient().get_run(spec.parent_run_id)
            except mlflow.exceptions.MlflowException:
                raise ConfigError(f"mlflow.parent_run_id={spec.parent_run_id}: no such run in "
                                  f"{mlflow.get_tracking_uri()}") from None
        active = mlflow.start_run(run_id=own, run_name=None if own else spec.run_name,
                                  parent_run_id=None if own else spec.parent_run_id)
        have = mlflow.MlflowClient().get_run(active.info.run_id).data.params
        mlflow.log_params({k: v for k, v in spec.params.items() if k not in have})
        if spec.resumed_from:
            mlflow.set_tags({"resumed_from": spec.resumed_from, "resumed_at_step": spec.resumed_at_step,
                             **({} if own else {"resumed_from_run": str(spec.resumed_run_id)})})

    def where(self) -> tuple[str, str]:
        """The run's id and the tracking URI of its store."""
        import mlflow
        active = mlflow.active_run()
        assert active is not None, "RunLog.start first"
        return active.info.run_id, mlflow.get_tracking_uri()

    def log_batch(self, metrics: list[tuple[str, float, int, int]]) -> None:
        """(key, value, timestamp in ms, step) metrics, in batches of 1,000 (MLflow's limit)."""
        import mlflow
        from mlflow.entities import Metric
        run_id = self.where()[0]
        client = mlflow.MlflowClient()
        for i in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=[Metric(*m) for m in metrics[i:i + 1000]])

    def log_metrics(self, metrics: dict[str, float]) -> None:
        import mlflow
        mlflow.log_metrics(metrics)

    def log_artifacts(self, local_dir: str, artifact_path: str | None = None) -> None:
        import mlflow
        mlflow.log_artifacts(local_dir, artifact_path)

    def log_artifact(self, local_path: str) -> None:
        import mlflow
        mlflow.log_artifact(local_path)

    def log_text(self, text: str, artifact_file: str) -> None:
        import mlflow
        mlflow.log_text(text, artifact_file)

    def end(self, status: str = "FINISHED") -> None:
        """End the run (no-op when it has ended)."""
        import mlflow
        mlflow.end_run(status=status)


class RunLogProcess(_Ends):
    """A ``RunLog`` kept by a helper process (``python -c ... serve()``), which starts importing
    MLflow at once, so that the import runs beside the training run's own start-up on another
    core. The same calls, sent in order through a pipe: ``where`` and ``end`` wait for their
    answer, the others do not (an error in one, such as ``start``'s for a tracking server that
    does not answer, is raised by the next that waits, and ``end`` then ends the run FAILED). Ctrl-C is left to the training process (the helper ignores it);
    when the training process ends without ``end`` (kill -9), the helper ends too and a started
    run stays RUNNING, as MLflow leaves it in that case."""

    WAITS = ("where", "end")

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[1])
        # the training process's argv: MLflow names the run's source (and its git commit) after argv[0]
        boot = f"import sys; sys.argv = {sys.argv!r}; sys.path.insert(0, {root!r}); from agents.tracking import serve; serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.calls: IO[bytes] = self.proc.stdin
        self.answers: IO[bytes] = self.proc.stdout

    def __getattr__(self, name: str):
        if name.startswith("_") or not callable(getattr(RunLog, name, None)):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            waits = name in self.WAITS
            try:
                pickle.dump((name, args, kwargs, waits), self.calls)
                self.calls.flush()
                if not waits:
                    return None
                ok, value = pickle.load(self.answers)
            except (BrokenPipeError, EOFError):
                raise RuntimeError(f"the MLflow helper process ended (exit code {self.proc.wait()}); "
                                   "its error, if any, is above") from None
            if not ok:
                raise value
            return value
        return call

    def close(self) -> None:
        """Let the helper finish what was sent and end."""
        try:
            self.calls.close()
        except BrokenPipeError:
            pass
        self.proc.wait()


def run_log() -> RunLog | RunLogProcess:
    """A training run's ``RunLog``: in a helper process (``RunLogProcess``) that imports MLflow
    while the run starts up; in this process where MLflow is imported already (a test, a sweep),
    as there is then nothing to overlap."""
    return RunLog() if "mlflow" in sys.modules else RunLogProcess()


def serve() -> None:
    """The helper process of ``RunLogProcess``: a ``RunLog`` answering the calls read from stdin,
    its answers on stdout (MLflow's own prints go to stderr)."""
    # Ctrl-C reaches the process group, and a batch scheduler's SIGTERM may: the training process
    # decides, and this one ends when it closes the log (EOF below)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    calls: BinaryIO = sys.stdin.buffer
    log = RunLog()
    log.prepare()
    failed: BaseException | None = None
    not_started: BaseException | None = None
    while True:
        try:
            name, args, kwargs, waits = pickle.load(calls)
        except EOFError:  # the training process closed the log, or ended without closing it
            break
        if failed is not None and waits:
            if name == "end":
                _quietly(log.end, "FAILED")
            _answer(answers, False, failed)
            if not_started is None:  # a run that never started fails every call that waits, with its reason
                failed = None
            continue
        try:
            value = getattr(log, name)(*args, **kwargs)
        except Exception as err:
            if not waits:
                failed = failed or err
                if name == "start":
                    not_started = err
                continue
            _answer(answers, False, err)
            continue
        if waits:
            _answer(answers, True, value)
    sys.stderr.flush()
    os._exit(0)  # without tearing down what MLflow imported: the answers are written and flushed


def _answer(out: BinaryIO, ok: bool, value: Any) -> None:
    try:
        data = pickle.dumps((ok, value))
    except Exception:  # an exception that does not pickle: its type and message
        data = pickle.dumps((False, RuntimeError(f"{type(value).__name__}: {value}")))
    try:
        out.write(data)
        out.flush()
    except BrokenPipeError:  # the training process is gone (kill -9): end as after EOF, the run left as it is
        sys.stderr.flush()
        os._exit(0)  # an exception here would end the interpreter normally, and MLflow's atexit ends the run FINISHED


def _quietly(fn, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        pass
