"""Plug-ins of the compiled core: congestion controls (``envs.cc``) and heuristic schedulers
(``envs.schedulers``), each a module that registers itself (``envs.plugins.registry``); the
core's dispatch over them is generated from the registry (``envs.plugins.dispatch``)."""

from envs.plugins.registry import (
                                   N_PARAMS,
                                   N_STATE,
                                   CCPlugin,
                                   PluginError,
                                   SchedulerPlugin,
                                   cc_id,
                                   cc_names,
                                   cc_params,
                                   cc_plugin,
                                   cc_plugins,
                                   parse_scheduler_label,
                                   register_cc,
                                   register_scheduler,
                                   scheduler_id,
                                   scheduler_label,
                                   scheduler_names,
                                   scheduler_params,
                                   scheduler_plugin,
                                   scheduler_plugins,
                                   scheduler_values,
)

__all__ = ["N_PARAMS", "N_STATE", "CCPlugin", "PluginError", "SchedulerPlugin", "cc_id", "cc_names", "cc_params",
           "cc_plugin", "cc_plugins", "parse_scheduler_label", "register_cc", "register_scheduler", "scheduler_id", "scheduler_label", "scheduler_names",
           "scheduler_params", "scheduler_plugin", "scheduler_plugins", "scheduler_values"]
