"""The registry of congestion controls and heuristic schedulers, the plug-ins of the compiled core.

A plug-in is a module that defines its compiled functions and registers them with one call at its
end (``register_cc`` or ``register_scheduler``), declaring how many state and parameter slots of
the core's layout (``envs.sim.layout``) it uses; registration refuses one that does not fit. The
built-in plug-ins are the modules of ``envs.cc`` and ``envs.schedulers``, found by walking those
packages; a user's plug-in module is imported from an ``mpsched.plugins`` entry point, from the
``MPSCHED_PLUGINS`` environment variable (comma-separated module names), or simply imported (or
its registration called) before the simulator is. Ids are the positions in ``cc_names()`` /
``scheduler_names()``: built-ins sorted by name, then other plug-ins in registration order.

The compiled dispatch over the registered plug-ins is generated once, when the simulator's core is
first imported (``envs.plugins.dispatch``); the registry is closed from then on.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from envs.errors import ConfigError, unknown_name
from envs.sim.layout import N_CC, N_CCP, N_SCHED, SCHED_STATE

BUILTIN_PACKAGES = {"cc": "envs.cc", "scheduler": "envs.schedulers"}
ENTRY_POINT_GROUP = "mpsched.plugins"
ENV_VAR = "MPSCHED_PLUGINS"
N_PARAMS = SCHED_STATE  # parameter slots of a scheduler: the first columns of ``sched``
N_STATE = N_SCHED - SCHED_STATE  # its state slots: the rest
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class PluginError(ConfigError):
    """A plug-in that cannot be registered: bad name, oversized state, not a compiled function,
    or registered after the compiled core was built."""


@dataclass(frozen=True)
class CCPlugin:
    """A congestion control (interface: ``envs.cc.base``)."""

    name: str
    init: Any
    on_ack: Any
    on_loss: Any
    on_rto: Any
    defaults: Mapping[str, float]  # parameter name -> default, in the order of the ``P[f, :]`` slots
    state_slots: int  # columns of ``C[f, :]`` it uses (0 .. state_slots - 1)
    builtin: bool

    functions = ("init", "on_ack", "on_loss", "on_rto")


@dataclass(frozen=True)
class SchedulerPlugin:
    """A heuristic scheduler (interface: ``envs.schedulers.base``)."""

    name: str
    pick: Any
    params: Mapping[str, object]  # name -> default (a tuple: a list filling the remaining slots)
    state_slots: int  # entries of ``st`` it uses
    burst: bool = False
    validate: Callable[[dict, int | None], None] | None = None
    c_source: str | None = None  # "<file>:<function>" of its C form (the XQUIC backend), if any
    builtin: bool = False

    functions = ("pick",)


@dataclass
class _Registry:
    cc: dict[str, CCPlugin] = field(default_factory=dict)
    scheduler: dict[str, SchedulerPlugin] = field(default_factory=dict)
    discovered: bool = False
    discovering: bool = False
    sealed_by: str | None = None  # the module that built the compiled dispatch


_REG = _Registry()


def _builtin(fn: Any, kind: str) -> bool:
    return fn.py_func.__module__.startswith(BUILTIN_PACKAGES[kind] + ".")


def _check_open(kind: str, name: str) -> None:
    if _REG.sealed_by is not None:
        raise PluginError(
            f"cannot register {kind} {name!r}: the compiled core was already built with the registered "
            f"plug-ins (by {_REG.sealed_by}). Register plug-ins before the simulator is imported: import "
            f"your module first, or name it in ${ENV_VAR} or an {ENTRY_POINT_GROUP!r} entry point")


def _check_common(kind: str, name: str, fns: Mapping[str, Any], state_slots: int, max_state: int) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise PluginError(f"{kind} name must be lower-case letters, digits and '_', got {name!r}")
    for role, fn in fns.items():
        py_func = getattr(fn, "py_func", None)
        if py_func is None:
            raise PluginError(f"{kind} {name!r}: {role} must be a numba-compiled function (@njit), got {fn!r}")
        module = sys.modules.get(py_func.__module__)
        if module is None or getattr(module, py_func.__name__, None) is not fn:
            raise PluginError(f"{kind} {name!r}: {role} must be defined at module level "
                              f"(the generated dispatch imports it by name)")
    if isinstance(state_slots, bool) or not isinstance(state_slots, int) or not 0 <= state_slots <= max_state:
        raise PluginError(f"{kind} {name!r}: state_slots must be an integer in [0, {max_state}] "
                          f"(the core's layout), got {state_slots!r}")


def _same(old: Any, new: Any) -> bool:
    """Re-registration of the very same functions (a module imported twice) is not a clash."""
    return all(getattr(old, f) is getattr(new, f) for f in old.functions)


def register_cc(name: str, *, init: Any, on_ack: Any, on_loss: Any, on_rto: Any,
                defaults: Mapping[str, float], state_slots: int) -> CCPlugin:
    """Register congestion control ``name`` (``cc=<name>``) with its four compiled functions
    (signatures in ``envs.cc.base``), its parameters' defaults (one ``P[f, :]`` slot each, in
    order; at most ``N_CCP``) and the number of ``C[f, :]`` slots it uses (at most ``N_CC``,
    counting the shared slots of ``envs.cc.base``)."""
    fns = {"init": init, "on_ack": on_ack, "on_loss": on_loss, "on_rto": on_rto}
    _check_common("cc", name, fns, state_slots, N_CC)
    if len(defaults) > N_CCP:
        raise PluginError(f"cc {name!r} has {len(defaults)} parameters; the core holds at most {N_CCP} (N_CCP)")
    plugin = CCPlugin(name, init, on_ack, on_loss, on_rto, dict(defaults), state_slots, _builtin(init, "cc"))
    return _store("cc", _REG.cc, plugin)


def register_scheduler(name: str, *, pick: Any, params: Mapping[str, object], state_slots: int = 0,
                       burst: bool = False, validate: Callable[[dict, int | None], None] | None = None,
                       c_source: str | None = None) -> SchedulerPlugin:
    """Register heuristic scheduler ``name`` (``scheduler=<name>``): its compiled ``pick``
    (``envs.schedulers.base``), its parameters' defaults (at most ``N_PARAMS`` slots; a tuple
    default, last, takes a list filling the remaining slots), the number of state slots ``st``
    it uses (at most ``N_STATE``), whether it may be sent in bursts (``burst``, the contract in
    ``envs.schedulers.base``), an optional ``validate(values, n_paths)`` raising ``ConfigError``,
    and where its C form is (``"<file>:<function>"``), if it has one."""
    _check_common("scheduler", name, {"pick": pick}, state_slots, N_STATE)
    values = list(params.values())
    if any(isinstance(v, tuple) for v in values[:-1]):
        raise PluginError(f"scheduler {name!r}: only the last parameter may take a list")
    scalars = sum(not isinstance(v, tuple) for v in values)
    if scalars + (1 if values and isinstance(values[-1], tuple) else 0) > N_PARAMS:
        raise PluginError(f"scheduler {name!r} has {len(values)} parameters; the core holds at most "
                          f"{N_PARAMS} (N_PARAMS)")
    plugin = SchedulerPlugin(name, pick, dict(params), state_slots, bool(burst), validate, c_source,
                             _builtin(pick, "scheduler"))
    return _store("scheduler", _REG.scheduler, plugin)


def _store(kind: str, table: dict[str, Any], plugin: Any) -> Any:
    """Add ``plugin`` to ``table`` (the registry of its ``kind``) unless the very same one is there;
    another plug-in of that name, or a registration after the core was built, is refused."""
    if not plugin.builtin:
        discover()  # a clash with a built-in name shows now, not when the built-in registers
    old = table.get(plugin.name)
    if old is not None and not _same(old, plugin):
        module = getattr(old, old.functions[0]).py_func.__module__
        raise PluginError(f"{kind} {plugin.name!r} is already registered (by {module})")
    if old is None:
        _check_open(kind, plugin.name)
        table[plugin.name] = plugin
    return table[plugin.name]


def discover() -> None:
    """Import every built-in plug-in module, then the user's (entry points, ``MPSCHED_PLUGINS``)."""
    if _REG.discovered or _REG.discovering:
        return
    _REG.discovering = True
    try:
        for package_name in BUILTIN_PACKAGES.values():
            package = importlib.import_module(package_name)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                importlib.import_module(f"{package_name}.{info.name}")
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()
        for module in filter(None, (m.strip() for m in os.environ.get(ENV_VAR, "").split(","))):
            try:
                importlib.import_module(module)
            except ImportError as err:
                raise PluginError(f"${ENV_VAR}: cannot import plug-in module {module!r}: {err}") from err
        _REG.discovered = True
    finally:
        _REG.discovering = False


def _ordered(plugins: Mapping[str, Any]) -> list[Any]:
    discover()
    return ([plugins[n] for n in sorted(plugins) if plugins[n].builtin]
            + [p for p in plugins.values() if not p.builtin])


def cc_plugins() -> list[CCPlugin]:
    """Every congestion control, in id order."""
    return _ordered(_REG.cc)


def scheduler_plugins() -> list[SchedulerPlugin]:
    """Every heuristic scheduler, in id order."""
    return _ordered(_REG.scheduler)


def cc_names() -> tuple[str, ...]:
    return tuple(p.name for p in cc_plugins())


def scheduler_names() -> tuple[str, ...]:
    return tuple(p.name for p in scheduler_plugins())


def cc_plugin(name: str) -> CCPlugin:
    names = cc_names()
    if name not in names:
        raise unknown_name("cc", name, names)
    return _REG.cc[name]


def scheduler_plugin(name: str) -> SchedulerPlugin:
    names = scheduler_names()
    if name not in names:
        raise unknown_name("scheduler", name, names)
    return _REG.scheduler[name]


def cc_id(name: str) -> int:
    """The compiled core's id of congestion control ``name`` (an unknown name lists the valid ones)."""
    cc_plugin(name)
    return cc_names().index(name)


def scheduler_id(name: str) -> int:
    """The compiled core's id of heuristic scheduler ``name``."""
    scheduler_plugin(name)
    return scheduler_names().index(name)


def seal(by: str) -> tuple[list[CCPlugin], list[SchedulerPlugin]]:
    """Close the registry (the compiled dispatch is being built by ``by``); the plug-ins in id order."""
    ccs, schedulers = cc_plugins(), scheduler_plugins()
    _REG.sealed_by = by
    return ccs, schedulers


def cc_params(name: str, overrides: Mapping[str, float] | None = None) -> np.ndarray:
    """Parameter vector of CC ``name``: its defaults, updated with ``overrides``."""
    values = dict(cc_plugin(name).defaults)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(f"cc {name!r} has no parameter {key!r}; valid: {', '.join(values)}")
        values[key] = float(value)
    out = np.zeros(N_CCP)
    out[: len(values)] = list(values.values())
    return out


def _number(name: str, key: str, value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"scheduler {name!r}: {key} must be a number, got {value!r}") from None


def scheduler_values(name: str, overrides: Mapping[str, object] | None = None,
                     n_paths: int | None = None) -> dict[str, object]:
    """Parameters of scheduler ``name`` by name: its defaults updated with ``overrides``, checked
    by the plug-in's ``validate`` for scenarios of ``n_paths`` paths (None: unknown or varying)."""
    plugin = scheduler_plugin(name)
    values: dict[str, object] = dict(plugin.params)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(
                f"scheduler {name!r} has no parameter {key!r}; valid: {', '.join(values) or 'none'}")
        if isinstance(values[key], tuple):
            if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
                raise ConfigError(f"scheduler {name!r}: {key} must be a list of numbers, got {value!r}")
            values[key] = tuple(_number(name, key, v) for v in value)
        else:
            values[key] = _number(name, key, value)
    if plugin.validate is not None:
        try:
            plugin.validate(values, n_paths)
        except ConfigError as err:
            raise ConfigError(f"scheduler {name!r}: {err}") from None
    return values


def scheduler_label(name: str, params: Mapping[str, object] | None = None) -> str:
    """A scheduler with its parameters as one label, ``"wait_rule(k=1.25)"`` (a bare name when it
    has none), the form ``parse_scheduler_label`` reads back: how an exported interval policy names
    its modes (export/, XQUIC's ``policy_modes``)."""
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={v:g}' if isinstance(v, (int, float)) else f'{k}={v}' for k, v in params.items())})"


def parse_scheduler_label(label: str) -> tuple[str, dict[str, float]]:
    """``"wait_rule(k=1.25)"`` -> ``("wait_rule", {"k": 1.25})``; a bare name has no parameters.
    Only the form is checked here: the scheduler and its parameters are checked where they run."""
    name, _, rest = label.strip().partition("(")
    if not rest:
        return name.strip(), {}
    if not rest.endswith(")"):
        raise ConfigError(f"a scheduler is NAME or NAME(KEY=VALUE, ...), got {label!r}")
    params = {}
    for item in filter(None, (x.strip() for x in rest[:-1].split(","))):
        key, _, value = item.partition("=")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"scheduler {label!r}: {item!r} is not KEY=NUMBER") from None
    return name.strip(), params


def scheduler_params(name: str, overrides: Mapping[str, object] | None = None,
                     n_paths: int | None = None) -> np.ndarray:
    """Parameter vector of scheduler ``name`` (``scheduler_values`` in the plug-in's order), as
    the compiled core reads it."""
    values = scheduler_values(name, overrides, n_paths)
    out = np.zeros(N_PARAMS)
    i = 0
    for key, value in values.items():
        seq = value if isinstance(value, tuple) else (value,)
        if i + len(seq) > N_PARAMS:
            raise ConfigError(f"scheduler {name!r}: {key} takes at most {N_PARAMS - i} values, got {len(seq)}")
        out[i:i + len(seq)] = seq
        i += len(seq)
    return out
