"""Heuristic schedulers: one module each (interface: ``envs.schedulers.base``), which registers
itself at its end with ``envs.plugins.register_scheduler``; ``scheduler=<name>`` resolves through
``envs.plugins``."""
