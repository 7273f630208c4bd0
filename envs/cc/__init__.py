"""The one registry of congestion controls: ``cc=<name>`` anywhere in the workbench resolves here.

Each entry is a module with ``init``, ``on_ack``, ``on_loss``, ``on_rto`` (see ``envs.cc.base``)
and a ``DEFAULTS`` dict of parameters. The compiled dispatchers below call a CC by its id, the
index of its name in ``NAMES``.
"""

from collections.abc import Mapping

import numpy as np
from numba import njit

from envs.cc import balia, bbr, bbr2, cubic, lia, olia, reno, wvegas
from envs.errors import ConfigError, unknown_name
from envs.sim.layout import N_CCP

MODULES = {"reno": reno, "cubic": cubic, "bbr": bbr, "bbr2": bbr2,
           # coupled MPTCP CCs: a subflow's update reads its sibling subflows' rows (envs.cc.coupled)
           "lia": lia, "olia": olia, "balia": balia, "wvegas": wvegas}
NAMES = tuple(MODULES)


def cc_id(name: str) -> int:
    if name not in MODULES:
        raise unknown_name("cc", name, NAMES)
    return NAMES.index(name)


def cc_params(name: str, overrides: Mapping[str, float] | None = None) -> np.ndarray:
    """Parameter vector of CC ``name``: its defaults, updated with ``overrides``."""
    defaults = MODULES[name].DEFAULTS if name in MODULES else None
    if defaults is None:
        raise unknown_name("cc", name, NAMES)
    values = dict(defaults)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(f"cc {name!r} has no parameter {key!r}; valid: {', '.join(values)}")
        values[key] = float(value)
    out = np.zeros(N_CCP)
    out[: len(values)] = list(values.values())
    return out


@njit(cache=True, _nrt=False)
def cc_init(cid, C, P, f, now, mss):
    if cid == 0:
        reno.init(C, P, f, now, mss)
    elif cid == 1:
        cubic.init(C, P, f, now, mss)
    elif cid == 2:
        bbr.init(C, P, f, now, mss)
    elif cid == 3:
        bbr2.init(C, P, f, now, mss)
    elif cid == 4:
        lia.init(C, P, f, now, mss)
    elif cid == 5:
        olia.init(C, P, f, now, mss)
    elif cid == 6:
        balia.init(C, P, f, now, mss)
    else:
        wvegas.init(C, P, f, now, mss)


@njit(cache=True, _nrt=False)
def cc_on_ack(cid, C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b):
    if cid == 0:
        reno.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 1:
        cubic.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 2:
        bbr.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 3:
        bbr2.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 4:
        lia.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 5:
        olia.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    elif cid == 6:
        balia.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)
    else:
        wvegas.on_ack(C, P, f, nsub, now, acked, rtt, min_rtt, rate, inflight, round_start, mss, rng, b)


@njit(cache=True, _nrt=False)
def cc_on_loss(cid, C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b):
    if cid == 0:
        reno.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 1:
        cubic.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 2:
        bbr.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 3:
        bbr2.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 4:
        lia.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 5:
        olia.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    elif cid == 6:
        balia.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)
    else:
        wvegas.on_loss(C, P, f, nsub, now, lost, lost_sent, inflight, mss, rng, b)


@njit(cache=True, _nrt=False)
def cc_on_rto(cid, C, P, f, now, inflight, mss):
    if cid == 0:
        reno.on_rto(C, P, f, now, inflight, mss)
    elif cid == 1:
        cubic.on_rto(C, P, f, now, inflight, mss)
    elif cid == 2:
        bbr.on_rto(C, P, f, now, inflight, mss)
    elif cid == 3:
        bbr2.on_rto(C, P, f, now, inflight, mss)
    elif cid == 4:
        lia.on_rto(C, P, f, now, inflight, mss)
    elif cid == 5:
        olia.on_rto(C, P, f, now, inflight, mss)
    elif cid == 6:
        balia.on_rto(C, P, f, now, inflight, mss)
    else:
        wvegas.on_rto(C, P, f, now, inflight, mss)
