"""``mpsched/Live-v0``: one live connection as a Gymnasium environment (evaluation mode).

``gymnasium.make("mpsched/Live-v0", scenario="ispras_s1", cc="cubic", backend="mptcp",
interval_ms=50, observation="leeyoo")``. The first ``reset()`` builds and verifies the testbed;
each episode is one transfer of the scenario's workload; each step waits for the next
``interval_ms`` boundary (``interval`` decisions) and returns the observation the simulator's
feature set computes from the live sender's telemetry (``envs.live.telemetry``), and the reward
of ``envs.rewards`` on it. ``close()`` tears the testbed down.

With ``backend="mptcp"`` the scheduler is the kernel's: actions (one of ``modes``, as in the
simulator's interval mode, so the same agent fits) are accepted and recorded but not applied
(``info["action_applied"] is False``); the environment observes and measures. With
``backend="xquic"`` the action sets XQUIC's scheduler for the next interval (``modes``: XQUIC
schedulers by name, e.g. ``["minrtt", "rr"]``, the default, with parameters as labels,
``"wait_rule(k=1.25)"``, or as the simulator's configs write them, ``{"scheduler": "wait_rule",
"params": {"k": 1.25}}``; one set of parameters per rule; LEEYOO-style online learning on a real
transport); its telemetry is XQUIC's per-path state, recorded inside the scheduler every
``telemetry_ms``. Create, step and close it from one long-lived thread (the delay lines are tied
to the thread that started them).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from envs.decision import DEFAULT_INTERVAL_MODES, DecisionSpec, mode_specs
from envs.errors import ConfigError, out_of_range, unknown_name
from envs.features import CLIP, compute, feature_set, table
from envs.live.backends import get_backend
from envs.live.system import LiveError
from envs.live.testbed import Testbed
from envs.live.verification import start_verified
from envs.rewards import SNAP_ELAPSED, RewardSpec, reward_and_snapshot, snapshot_width
from envs.scenario import ScenarioLike, resolve_scenarios
from envs.schema import LiveOptions, check_field
from envs.sim.layout import COBS_ACKED, COBS_ELAPSED, N_COBS, N_OBS


class LiveEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, scenario: ScenarioLike = "ispras_s1", cc: str = "cubic", backend: str = LiveOptions.backend,
                 decision: str = "interval", interval_ms: float = DecisionSpec.interval_ms,
                 modes: Sequence[Mapping | str] | None = None, observation: str = "leeyoo",
                 reward: str = RewardSpec.name, reward_params: Mapping[str, Any] | None = None, seed: int = 0,
                 emulation: str = LiveOptions.emulation, telemetry_ms: float = LiveOptions.telemetry_ms,
                 verify: bool = LiveOptions.verify, mss: int = LiveOptions.mss,
                 verify_attempts: int = LiveOptions.verify_attempts, **unknown: Any) -> None:
        if unknown:  # gym.make passes every keyword on: a typo would end in Python's TypeError
            valid = [n for n in inspect.signature(LiveEnv.__init__).parameters if n not in ("self", "unknown")]
            raise unknown_name("mpsched/Live-v0 setting", next(iter(unknown)), valid)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise out_of_range("seed", seed, "an integer >= 0")
        found = resolve_scenarios(scenario)
        if len(found) != 1:
            raise ConfigError("mpsched/Live-v0 runs one scenario (a distribution is drawn once per testbed)")
        self.scenario_spec = found[0]
        self.backend = get_backend(backend)
        self.cc = self.backend.check(cc)
        if decision != "interval":
            raise ConfigError(f"mpsched/Live-v0 with backend {backend!r} supports decision='interval' only "
                              f"(per-packet decisions stay inside the transport), got {decision!r}")
        if not interval_ms > 0:
            raise ConfigError(f"interval_ms must be > 0, got {interval_ms}")
        self.interval_s = interval_ms / 1000.0
        self.modes = tuple(modes) if modes is not None else DEFAULT_INTERVAL_MODES
        if not self.modes:
            raise ConfigError("modes: interval mode needs at least one mode")
        # (scheduler, params) per mode; a backend that sets the scheduler runs each with its params
        self._mode_specs = mode_specs(self.modes)
        self._mode_names = [name for name, _ in self._mode_specs]
        if self.backend.controls_scheduler:
            self.backend.check_modes(self._mode_specs)
        rng = np.random.default_rng(seed)
        self.scenario = self.scenario_spec.sample(rng) if self.scenario_spec.is_distribution else self.scenario_spec
        self.P = len(self.scenario.paths)
        self.features = feature_set(observation, self.P)
        self._table = table(self.features)
        self.reward_spec = RewardSpec(reward, **dict(reward_params or {}))  # type: ignore[arg-type]  # checked by RewardSpec
        self._reward_prm = self.reward_spec.vector()
        self.observation_space = gym.spaces.Box(0.0, CLIP, shape=(len(self.features),), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(len(self.modes))
        self.seed_, self.emulation, self.telemetry_ms, self.verify, self.mss = seed, emulation, telemetry_ms, verify, mss
        live = {"emulation": emulation, "telemetry_ms": telemetry_ms, "mss": mss, "verify_attempts": verify_attempts}
        for name in live:  # the ranges configs/live declares (envs.schema.LiveOptions)
            check_field(live, LiveOptions, name)
        self.verify_attempts = verify_attempts
        self.testbed: Testbed | None = None
        self.transfer: Any = None  # the backend's transfer while one runs (MptcpTransfer, XquicTransfer)
        self.decisions = 0
        self.actions: list[int] = []
        self._prev = np.zeros((1, snapshot_width(self.P)))
        self._reward = np.zeros(1)
        self._nsub = np.array([float(self.P)])
        # the reward's packet, one per connection as the simulator's: in the transport's own count
        self._mss = np.array([float(self.backend.sent_per_packet(mss))])
        # compile (or load) the feature and reward functions now, not while a transfer runs
        dummy_obs, dummy_cobs = np.zeros((1, self.P, N_OBS)), np.zeros((1, N_COBS))
        self._features(dummy_obs, dummy_cobs)
        reward_and_snapshot(self._reward_prm, self._prev, dummy_obs, dummy_cobs, self._nsub, self._mss,
                            np.zeros(1, dtype=np.bool_), self._reward)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._end_transfer()
        if self.testbed is None:
            self.testbed = start_verified(  # a verification the machine left inconclusive is tried again
                partial(Testbed, self.scenario, emulation=self.emulation, seed=self.seed_, mss=self.mss,
                        verify=self.verify), self.verify_attempts if self.verify else 1)
        first = {"scheduler": self._mode_names[0], "modes": self._mode_specs} if self.backend.controls_scheduler else {}
        self.transfer = self.backend.transfer(self.testbed, self.cc, self.scenario.workload, self.telemetry_ms, **first)
        self.transfer.start()
        self.decisions, self.actions = 0, []
        self._prev[:] = 0.0
        obs, cobs = self._wait_and_sample(1)
        reward_and_snapshot(self._reward_prm, self._prev, obs, cobs, self._nsub, self._mss,
                            np.zeros(1, dtype=np.bool_), self._reward)
        info = {"cc": self.cc, "scenario": self.scenario.name, "backend": self.backend.name,
                "scheduler": self._mode_names[0] if self.backend.controls_scheduler else self.backend.scheduler}
        if self.testbed.verification is not None:
            info["verification"] = self.testbed.verification.table()
        return self._features(obs, cobs), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.transfer is None:
            raise LiveError("call reset() before step()")
        a = int(action)
        if not 0 <= a < len(self.modes):  # the Discrete action space's size
            raise ConfigError(f"action out of range [0, {len(self.modes) - 1}]: {a}")
        self.actions.append(a)
        if self.backend.controls_scheduler:
            self.transfer.set_mode(self._mode_names[a])
        self.decisions += 1
        obs, cobs = self._wait_and_sample(self.decisions + 1)
        dt = float(cobs[0, COBS_ELAPSED] - self._prev[0, SNAP_ELAPSED])  # as the simulator's info dt_s
        reward_and_snapshot(self._reward_prm, self._prev, obs, cobs, self._nsub, self._mss,
                            np.ones(1, dtype=np.bool_), self._reward)
        elapsed = float(cobs[0, COBS_ELAPSED])
        info: dict[str, Any] = {"goodput_mbps": float(cobs[0, COBS_ACKED]) * 8 / max(elapsed, 1e-9) / 1e6,
                                "elapsed_s": elapsed, "dt_s": dt, "decisions": self.decisions, "cc": self.cc,
                                "action_applied": self.backend.controls_scheduler}
        done = self.transfer.done.is_set()
        terminated = truncated = False
        if done:
            result = self.transfer.result()
            self.transfer = None
            metrics = result.metrics()
            info["episode_metrics"] = {k: (v[0].tolist() if v.ndim > 1 else float(v[0])) for k, v in metrics.items()}
            if result.error:
                info["error"] = result.error
            finished = np.isfinite(metrics["completion_s"][0]) or self.scenario.workload.type == "bulk"
            terminated, truncated = bool(finished), not finished
        return self._features(obs, cobs), float(self._reward[0]), terminated, truncated, info

    def close(self) -> None:
        self._end_transfer()
        if self.testbed is not None:
            self.testbed.close()
            self.testbed = None
        super().close()

    # ------------------------------------------------------------------ helpers
    def _end_transfer(self) -> None:
        if self.transfer is not None:
            self.transfer.stop()
            self.transfer = None

    def _wait_and_sample(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Sleep to the k-th interval boundary (or the transfer's end), then read the sender."""
        tr = self.transfer
        wait = tr.t0 + k * self.interval_s - time.monotonic()
        if wait > 0:
            tr.done.wait(wait)
        s = tr.sample_now()
        if s is None:
            raise LiveError("no telemetry from the live sender")
        return s.obs[None], s.cobs[None]

    def _features(self, obs: np.ndarray, cobs: np.ndarray) -> np.ndarray:
        return compute(self._table, obs, cobs, self._nsub)[0]
