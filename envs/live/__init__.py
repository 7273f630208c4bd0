"""Live runs: the scenario files on real kernels, measured with the simulator's metrics and
observation features (README, "Live runs").

- ``system``: what a run needs from the machine (root, packages, MPTCP, CCs), checked before
  anything is created; commands as argument lists, in a host's namespace.
- ``testbed``: a scenario as a Mininet network (client, one router per path, server), with
  everything it creates recorded and removed.
- ``emulation`` and ``delayline``: per path and direction, rate and queue (TCLink HTB + a bfifo: the buffer in bytes),
  delay and jitter (netem, or the NFQUEUE delay line), random loss (netem, or nftables numgen).
- ``verification``: RTT, jitter, rate and loss measured before a run; a miss is refused.
- ``mptcp`` and ``telemetry``: the kernel MPTCP backend (per-socket CC, one subflow per path) and
  its per-subflow ``tcp_info`` as the simulator's ``obs``/``cobs`` arrays.
- ``backends``: ``backend=`` names (mptcp; xquic: ``xquic.py`` over the ``mpsched_xquic`` extension).
- ``env``: ``mpsched/Live-v0``; ``evaluation`` and ``cli``: ``evaluate.py backend=live`` and
  ``compare=[sim,live]``; ``setup``: ``python -m envs.live.setup`` (``--xquic``: ``xquic_build``,
  the pinned XQUIC built and the extension installed).
- ``provenance``: what every kept live measurement records beside its runs (XQUIC commit, kernel,
  mpsched commit, date, command, load average).
"""
