"""ECF, earliest completion first (Lim et al., "ECF: an MPTCP path scheduler to manage
heterogeneous paths", ACM CoNEXT 2017; docs/schedulers.md).

If the fast path F (lowest srtt) has window space, send on F. Otherwise S is the available path
of lowest srtt; with ``k`` packets waiting, ``n = 1 + k / w_F``, ``delta = max(sigma_F,
sigma_S)``: if ``n tau_F < (1 + waiting beta)(tau_S + delta)``, wait for F (and set ``waiting``)
when ``(k / w_S) tau_S >= 2 tau_F + delta``, else send on S; otherwise clear ``waiting`` and send
on S. Readings chosen, as in the paper's Linux code: ``k`` is the connection's send backlog
(new data the receive window allows plus pending retransmissions) in MSS-sized packets, windows
are congestion windows in packets, ``sigma`` is the RFC 6298 rttvar. Not burst-safe: the answer
for S depends on the backlog, which each packet sent shrinks.

A second path without an RTT sample yet gets the packet (a new XQUIC path has none until the
peer acknowledges its PATH_CHALLENGE or its first data; ``StackProfile.unsampled_rtt``): the
rule's estimates would read XQUIC's initial 250 ms there. The C version inside XQUIC
(bindings/src/mps_rules.c; parity test in tests/test_xquic.py) differs on purpose in one state:
it does not wait for F while F has nothing in flight (XQUIC would never call the scheduler
again: the connection would stall)."""

from collections.abc import Mapping

from numba import njit

from envs.plugins import register_scheduler
from envs.schedulers.base import WAIT
from envs.errors import out_of_range
from envs.sim.layout import COBS_BACKLOG, OBS_CWND, OBS_LATEST_RTT, OBS_RTTVAR, OBS_SRTT
from envs.sim.roles import blocked_rule

PARAMS = {"beta": 0.25}  # hysteresis
WAITING = 0  # state: 1 while ECF waits for the fast path


def validate(values: Mapping, n_paths: int | None) -> None:
    if not 0.0 <= values["beta"] <= 10.0:
        raise out_of_range("beta", values["beta"], "in [0, 10]")


@njit(cache=True, _nrt=False)
def pick(prm, st, obs, cobs, nsub, mss, rng, b):
    f, s, blocked = blocked_rule(obs, nsub)
    if not blocked:
        return 1 << f
    if s < 0:
        return WAIT
    if obs[s, OBS_LATEST_RTT] <= 0.0:  # no RTT sample yet
        return 1 << s
    k = cobs[COBS_BACKLOG] / mss
    w_f = max(obs[f, OBS_CWND] / mss, 1.0)
    w_s = max(obs[s, OBS_CWND] / mss, 1.0)
    tau_f = obs[f, OBS_SRTT]
    tau_s = obs[s, OBS_SRTT]
    delta = max(obs[f, OBS_RTTVAR], obs[s, OBS_RTTVAR])
    n = 1.0 + k / w_f
    if n * tau_f < (1.0 + st[WAITING] * prm[0]) * (tau_s + delta):
        if (k / w_s) * tau_s >= 2.0 * tau_f + delta:
            st[WAITING] = 1.0
            return WAIT
        return 1 << s
    st[WAITING] = 0.0
    return 1 << s


register_scheduler("ecf", pick=pick, params=PARAMS, state_slots=WAITING + 1, validate=validate,
                   c_source="bindings/src/mps_rules.c:pick_ecf")
