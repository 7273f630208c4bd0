"""Path roles and the blocked-path rule, the one definition the simulator's ``blocked`` decision
mode, the feature sets, the heuristics built on it (ECF, BLEST, fast-only) and the exported
policies' Python reference use (the exported C headers' ``mpsched_path_roles`` is its C form, checked against this one by
``tests/test_export.py``).

Roles (ISPRAS, Peekaboo): the *fast* path is the path of lowest srtt (the lowest index on a
tie); the *second* path is the lowest-srtt path other than the fast one that is available
(``OBS_AVAILABLE``: window space beyond what is in flight and scheduled on it, and, under a stack
that does not hold scheduled packets on the path (Linux), pacing credit), -1 when there is none.

The blocked-path rule (ISPRAS DQN, Peekaboo, FALCON, the Q-learning and LinUCB schedulers; ECF
and BLEST decide the same question by their own estimates, fast-only always waits): minRTT runs
while the fast path is available; when the fast path is *blocked* (no window; under Linux's
profile also no pacing credit: ``envs/sim/stacks.py`` ``path_buffer``) and the second path is
available, the scheduler decides whether to send on the second path or to wait for the fast one; when
no path has window, nothing is sent.
"""

from numba import njit

from envs.sim.layout import OBS_AVAILABLE, OBS_SRTT


@njit(inline="always", cache=True, _nrt=False)
def path_roles(obs, nsub):
    """(fast, second) over the first ``nsub`` rows of ``obs[path, OBS_*]``; second is -1 when no
    other path is available (fast is 0 when there are no paths)."""
    fast = 0
    for i in range(1, nsub):
        if obs[i, OBS_SRTT] < obs[fast, OBS_SRTT]:
            fast = i
    second = -1
    for i in range(nsub):
        if i != fast and obs[i, OBS_AVAILABLE] > 0.0 and (second < 0 or obs[i, OBS_SRTT] < obs[second, OBS_SRTT]):
            second = i
    return fast, second


@njit(inline="always", cache=True, _nrt=False)
def blocked_rule(obs, nsub):
    """(fast, second, blocked): send on ``fast`` unless ``blocked``; when blocked, the scheduler
    decides between ``second`` and waiting, or waits when ``second`` is -1."""
    fast, second = path_roles(obs, nsub)
    return fast, second, not obs[fast, OBS_AVAILABLE] > 0.0
