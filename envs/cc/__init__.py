"""Congestion controls: one module each (interface and shared slots: ``envs.cc.base``), which
registers itself at its end with ``envs.plugins.register_cc``; ``cc=<name>`` resolves through
``envs.plugins``. The coupled MPTCP CCs share ``envs.cc.coupled``."""
