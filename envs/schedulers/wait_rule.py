"""The wait rule: at the blocked decision, send on the second path only if the next packet would
reach the receiver over it within ``k`` times the time it would take over the fast path
(docs/schedulers.md, "The wait rule"; the headroom search's own member, studies/headroom.py).

If the fast path F (lowest srtt) has window space, send on F. Otherwise S is the available path
of lowest srtt; the packet would arrive over S after ``t_S = srtt_S / 2`` and over F after
``t_F = srtt_F / 2 + srtt_F * ahead / cwnd_F``, where ``ahead`` is what must leave F before it:
what is committed to F beyond its window plus the connection's backlog (at least one packet),
sent at F's rate ``cwnd_F / srtt_F`` (the earliest-arrival estimate of OTIAS and ATLB,
``envs.schedulers.base.arrival_time``). Send on S when ``t_S <= k t_F``, else wait for F. ``k = inf`` is minRTT, ``k = 0``
fast_only, ``k = 1`` earliest arrival. Not burst-safe: ``t_F`` depends on the backlog, which each
packet sent shrinks.

The C version inside XQUIC (bindings/src/mps_rules.c; parity test in tests/test_xquic.py) differs
in one state: it does not wait for F while F has nothing in flight (XQUIC would never call the
scheduler again). Unlike ECF's and BLEST's, it reads a second path without an RTT sample as this
one does, by the srtt the sender shows (XQUIC's initial 250 ms before the first sample): until
2026-11-30 it sent such a path the packet, a whole first window on hetero_file's slow path that
this rule never sends (docs/transfer.md, "dqn_modes")."""

import math
from collections.abc import Mapping

from numba import njit

from envs.errors import out_of_range
from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT, arrival_time
from envs.sim.roles import blocked_rule

PARAMS = {"k": 1.0}  # send on S while its arrival is within k times F's


def validate(values: Mapping, n_paths: int | None) -> None:
    k = values["k"]
    if not (k >= 0.0 and not math.isnan(k)):
        raise out_of_range("k", k, ">= 0 (inf: minRTT)")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    f, s, blocked = blocked_rule(obs, nsub)
    if blocked and s >= 0:  # F without window, S with: the packet's arrival over each
        t_second, t_fast = arrival_time(obs, cobs, s, mss, False), arrival_time(obs, cobs, f, mss, False)
        return 1 << s if t_second <= prm[0] * t_fast else WAIT
    return WAIT if blocked else 1 << f


register_scheduler("wait_rule", pick=pick, params=PARAMS, validate=validate,
                   c_source="bindings/src/mps_rules.c:pick_wait")
