"""BLEST, blocking estimation (Ferlin et al., "BLEST: blocking estimation-based MPTCP scheduler
for heterogeneous networks", IFIP Networking 2016; docs/schedulers.md).

If the fast path F has window space, send on F. Otherwise S is the available path of lowest
srtt; F could send ``X = m_F (w_F + (rtts - 1) / 2) rtts`` bytes during one RTT of S, with
``rtts = tau_S / tau_F`` and ``w_F`` in packets. If ``X lambda > free - m_S (f_S + 1)`` (free: the
connection's free send window, i.e. the receive window the receiver advertises less what is
outstanding), sending on S would leave F blocked by the window: wait; else send on S.

``lambda`` adapts once per fast-path srtt: up by ``step`` when head-of-line blocking showed (a
packet was sent with at most one MSS of receive window left), down by ``step`` otherwise, within
[``lambda``, ``lambda_max``]. Readings chosen: the spec's start 1 and step 0.1; the upper bound
1.3 is the Linux implementation's ``max_lambda`` (which starts at 1.2 and steps +0.04/-0.01 on
retransmissions; set the parameters to get that).

A second path without an RTT sample yet gets the packet, and the C version inside XQUIC
(bindings/src/mps_rules.c; parity test in tests/test_xquic.py) differs in one state, as ECF's do
(envs/schedulers/ecf.py says why)."""

from collections.abc import Mapping

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.errors import out_of_range
from envs.sim.layout import COBS_ELAPSED, COBS_RWND, OBS_CWND, OBS_INFLIGHT, OBS_LATEST_RTT, OBS_SRTT
from envs.sim.roles import blocked_rule

PARAMS = {"lambda": 1.0, "step": 0.1, "lambda_max": 1.3}
EXTRA = 0  # state: lambda - PARAMS lambda
HOL = 1  # state: 1 when the receive window limited sending since the last adaptation
LAST = 2  # state: elapsed time of the last adaptation


def validate(values: Mapping, n_paths: int | None) -> None:
    if not 0.0 < values["lambda"] <= 100.0:
        raise out_of_range("lambda", values["lambda"], "in (0, 100]")
    if not 0.0 <= values["step"] <= 10.0:
        raise out_of_range("step", values["step"], "in [0, 10]")
    if not values["lambda"] <= values["lambda_max"] <= 100.0:
        raise out_of_range("lambda_max", values["lambda_max"], f"in [lambda = {values['lambda']}, 100]")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    f, s, blocked = blocked_rule(obs, nsub)
    free = cobs[COBS_RWND]
    if free <= 2.0 * mss:
        st[HOL] = 1.0
    now = cobs[COBS_ELAPSED]
    if now - st[LAST] >= obs[f, OBS_SRTT]:
        if st[HOL] > 0.0:
            st[EXTRA] = min(st[EXTRA] + prm[1], prm[2] - prm[0])
        else:
            st[EXTRA] = max(st[EXTRA] - prm[1], 0.0)
        st[HOL] = 0.0
        st[LAST] = now
    if not blocked:
        return 1 << f
    if s < 0:
        return WAIT
    if obs[s, OBS_LATEST_RTT] <= 0.0:  # no RTT sample yet
        return 1 << s
    rtts = obs[s, OBS_SRTT] / obs[f, OBS_SRTT]
    x = mss * (obs[f, OBS_CWND] / mss + (rtts - 1.0) / 2.0) * rtts
    if x * (prm[0] + st[EXTRA]) > free - (obs[s, OBS_INFLIGHT] + mss):
        return WAIT
    return 1 << s


register_scheduler("blest", pick=pick, params=PARAMS, state_slots=LAST + 1, validate=validate,
                   c_source="bindings/src/mps_rules.c:pick_blest")
