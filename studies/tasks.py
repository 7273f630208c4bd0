"""How a study's training jobs and cells run: as Ray tasks, ``workers`` at a time, on this machine
or on the cluster that ``agents.cluster`` joins, or one after another in this process (no Ray
start-up, which costs more than a heuristics-only study's batched cells take: see ``use_ray``).
Either way every task's outcome comes back, its value or its error: a task that raised, or whose
worker died more than ``ray.max_retries`` times (Ray retries a task whose worker process died,
not one that raised: with the same seeds it would raise again), is an error of its own and the
other tasks go on."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

from tqdm import tqdm

from agents import cluster
from envs.errors import unknown_name
from envs.schema import STUDY_TASKS, StudyRaySettings

@dataclass
class Task:
    key: Any                 # what the outcome is for
    fn: Callable[..., Any]   # a module-level function (pickled by reference for Ray)
    args: tuple


@dataclass
class Outcome:
    key: Any
    value: Any = None
    error: str | None = None  # "<exception type>: <message>" when the task failed


class Backend(Protocol):
    name: str

    def map(self, todo: list[Task]) -> Iterator[Outcome]:
        """Every task's outcome, in the order they finish."""


def say(msg: str) -> None:
    """A line on stderr that keeps the progress bar below it."""
    tqdm.write(msg, file=sys.stderr)


def describe(err: BaseException) -> str:
    """One line for a failed task: the task's own exception (not Ray's wrapper) or Ray's reason."""
    cause = getattr(err, "cause", None)  # RayTaskError carries the exception the task raised
    if isinstance(cause, BaseException):
        err = cause
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"[:500]


class Serial:
    """Every task in this process, one after another."""

    name = "serial"

    def map(self, todo: list[Task]) -> Iterator[Outcome]:
        for task in todo:
            try:
                outcome = Outcome(task.key, task.fn(*task.args))
            except Exception as err:  # one task's failure is its outcome; the others still run
                outcome = Outcome(task.key, error=describe(err))
            yield outcome


class RayTasks:
    """Tasks on Ray (one CPU each), at most ``workers`` submitted at a time; a task whose worker
    dies is retried ``max_retries`` times."""

    name = "ray"

    def __init__(self, workers: int, ray_cfg: dict[str, Any]) -> None:
        self.workers = workers
        self.max_retries = int(ray_cfg.get("max_retries", StudyRaySettings.max_retries))
        self.started = cluster.connect(ray_cfg)

    def map(self, todo: list[Task]) -> Iterator[Outcome]:
        import ray

        remote: dict[Callable, Any] = {}
        pending: dict[Any, Task] = {}  # ObjectRef -> its task
        queue = iter(todo)

        def submit(task: Task) -> None:
            if task.fn not in remote:
                remote[task.fn] = ray.remote(task.fn).options(num_cpus=1, max_retries=self.max_retries,
                                                              retry_exceptions=False)
            pending[remote[task.fn].remote(*task.args)] = task

        for task in islice(queue, self.workers):
            submit(task)
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(ref)
            try:
                outcome = Outcome(task.key, ray.get(ref))
            except ray.exceptions.RayError as err:
                outcome = Outcome(task.key, error=describe(err))
            following = next(queue, None)
            if following is not None:
                submit(following)
            yield outcome

    def close(self) -> None:
        if self.started:
            import ray
            ray.shutdown()


def use_ray(workers: int, ray_cfg: dict[str, Any], heavy: bool) -> bool:
    """Whether tasks go to Ray: ``ray.tasks=always``, or ``auto`` (the default) with a cluster
    named, or with ``workers`` > 1 and ``heavy`` work (training, or cells of learned agents, which
    act in Python at every decision); ``never``, ``workers=1`` or light work on this machine run
    in this process."""
    mode = ray_cfg.get("tasks", StudyRaySettings.tasks)
    if mode not in STUDY_TASKS:
        raise unknown_name("ray.tasks", mode, STUDY_TASKS)
    if mode != "auto":
        return mode == "always"
    return bool(cluster.address(ray_cfg)) or (workers > 1 and heavy)


@contextmanager
def backend(workers: int, ray_cfg: dict[str, Any], heavy: bool = True) -> Iterator[Backend]:
    """Ray (local, or the cluster of ``ray.address`` / ``$RAY_ADDRESS``) when ``use_ray``, else
    this process. Ray is shut down afterwards if started here."""
    if not use_ray(workers, ray_cfg, heavy):
        yield Serial()
        return
    ray_tasks = RayTasks(workers, ray_cfg)
    try:
        yield ray_tasks
    finally:
        ray_tasks.close()


def run(backend: Backend, todo: list[Task], what: str) -> Iterator[Outcome]:
    """``backend.map(todo)`` with a progress bar over the tasks (stderr)."""
    if not todo:
        return
    with tqdm(total=len(todo), desc=f"[study] {what}", unit="task", file=sys.stderr, dynamic_ncols=True) as bar:
        for outcome in backend.map(todo):
            bar.update()
            yield outcome
