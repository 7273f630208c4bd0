"""Policy search: a learner that scores policies, not decisions (docs/cc_robustness.md, "A learner
that scores policies").

The per-decision learners (DQN, LinUCB, Q-learning) miss the wait rule on ispras_s1-s3 under BBRv1
because its gain is a few hundred small waits per transfer, each below the return's noise. This
agent instead searches the parameters of a small policy by whole episodes, as ``studies.headroom``
does for its parametric family: every candidate of a generation runs the same training episodes
(common random numbers: the same simulator seed and episode indices, hence the same scenario, CC,
jitter and loss draws), and is scored by its episodes' goodput (or return).

The policy reads the observation the environment gives every learner (``env.observation``: the
feature set a transport computes the same way, ``envs.features``), so it moves to XQUIC unchanged,
and it exports as an argmax network (``export.bodies.MLPBody``):

- ``hidden: 0`` (the preset): a linear scorer, action ``argmax_a s_a`` with ``s_0 = 1`` and
  ``s_a = 1 + w_a . x + b_a`` for ``a >= 1`` (in the blocked decision: send on the second path iff
  ``w . x + b > 0``; the constant 1, ``SCORE_OFFSET``, keeps the outputs away from 0 for the
  exported float32 arithmetic);
- ``hidden: h``: a tiny MLP, ``s_a = 1 + v_a . act(W x + c) + b_a`` (``activation`` tanh or relu).

The parameters are used as float32 values (the header's), in Python as in C.

It starts as the constant policy ``init_action`` (1 in the blocked decision: send on the second path,
minRTT's answer; ``w = 0``, ``b = init_margin``), so that the search starts at minRTT.

Each generation evaluates, on ``runs`` fresh training episodes common to all of them, the
incumbent (the policy ``act`` uses), the optimiser's mean and ``population`` samples of the
optimiser (CMA-ES, the ``cma`` package, or a cross-entropy method: ``optimiser``). The samples'
scores update the optimiser. The mean, whose parameters came from the previous generations'
episodes, is then compared with the incumbent on this generation's episodes, which neither chose
it: it replaces the incumbent only if its paired gain (per episode, same seeds) is positive with a
t statistic of at least ``accept_t``. So the incumbent starts at minRTT and changes only on
evidence from episodes that did not select it.

A generation's episodes are stratified by cell, each (scenario, CC) the training mix can draw
(``cc=mix`` on ispras_s1-s3: 12): every cell has the same number of its episodes (or one fewer),
at least two (``runs`` grows to twice the cells, rounded up to whole batches of connections), and
every candidate runs the same ones. A candidate's score is the mean of its cells' means (each cell
counts alike), and the acceptance t is the stratified one: the mean gain's variance is the cells'
own, ``sum_h s_h^2 / n_h / H^2``, with Welch-Satterthwaite's degrees of freedom, and it must reach
the t of the same one-sided level as ``accept_t`` has for the paired t on as many episodes (where
one cell of two episodes carries all the variance, one degree: t >= 11 for ``accept_t: 2`` on 24
episodes), so the test is never looser than the unstratified one. Drawn at random, 16 episodes
covered the four CCs of ``cc=mix`` anywhere from 1 to 8 times and ispras_s1 under BBRv1, the one
cell where the candidates answered other than minRTT, 0 to 3 times; with its gain exactly 0 in the
other cells the paired t could not reach 2 however steady that gain: it counted the difference
between the cell that gains and those that cannot as noise (docs/cc_robustness.md, "Stratified
generations"). With one cell (one scenario and CC) the episodes and the t are the unstratified ones.

The budget is ``generations`` (agent.params), counted over the whole run (a resumed run goes on to
the same total), with the run's ``train.steps`` as an upper bound; ``generations: 0`` leaves
``train.steps`` alone. ``train.steps`` counts every simulated decision of every candidate: a
generation of ``population + 2`` candidates x ``runs`` episodes costs that many episodes'
decisions, and that cost depends on the CC and on the candidates, since a waiting policy is asked
again a millisecond later: ~25,000 on the ``study=headroom`` scenarios, ~130,000-170,000 on
ispras_s1-s3 under BBRv1, and under ``cc=mix`` on ispras_s1-s3 anywhere up to several times that,
as a candidate that waits under Reno or CUBIC (2-3 Mbit/s for some 30 s) is asked again every
millisecond of the transfer. A decision budget therefore buys a CC-dependent number of
generations (2,000,000 bought 12 under BBRv1 but 1-4 under ``cc=mix``); a generation budget gives
the search the same number of updates under every CC. A generation cut by ``train.steps`` is
discarded (and logged as a warning): the upper bound keeps a run from going on without end.

Scores (``objective``): ``log_goodput`` (the mean of the episodes' log goodput: scale-free, so a
mix of scenarios whose rates differ tenfold counts each by its relative gain), ``goodput``, or
``return`` (the sum of the environment's rewards over the episode).

Seeded: the optimiser draws from a generator of the agent's seed (never numpy's global one), and
the episodes are the training environment's own seed with episode indices counted by the agent, so
the same seed gives the same numbers; the optimiser's state is in the checkpoint, so a resumed run
continues the same sequence.
"""

from __future__ import annotations

import logging
import math
import pickle
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import stdtr, stdtrit

from agents.base import Agent, Budget, Monitor, as_rows
from agents.params import Rule, choice, integer, number, read_params
from agents.state import load_json, rng_state, save_json, set_rng_state
from envs.errors import ConfigError

if TYPE_CHECKING:
    from envs.decision import DecisionProcess
    from envs.sim.simulator import Simulator
    from envs.vector_env import SB3VecEnv

log = logging.getLogger(__name__)

ARRAYS_FILE = "policy_search.npz"
OPTIMISER_FILE = "optimiser.pkl"
STATE_FILE = "policy_search.json"
MIN_GOODPUT = 1e-3  # Mbit/s: log_goodput of an episode that delivered nothing
# Every action's score is shifted by this constant (the argmax does not change): the outputs stay
# away from 0, so that the exported header's float32 rounding is small against them (the scores of
# a linear policy cross 0 at its boundary, where any rounding is large relative to them)
SCORE_OFFSET = 1.0


def stratified_mean(x: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """The mean over the last axis with every stratum weighted alike: the mean of the strata's means."""
    return np.mean([x[..., strata == k].mean(axis=-1) for k in np.unique(strata)], axis=0)


def stratified_t(gain: np.ndarray, strata: np.ndarray) -> tuple[float, float, float]:
    """The stratified mean of paired gains, its t statistic and the t's degrees of freedom. The
    estimate's variance is the strata's own, ``V = sum_h v_h`` with ``v_h = s_h^2 / n_h / H^2`` (the
    design fixes every stratum's share, so the differences between the strata's gains are not
    sampling noise); its degrees of freedom Welch-Satterthwaite's, ``V^2 / sum_h v_h^2 / (n_h - 1)``
    (few where one or two strata carry the variance). With one stratum, the paired t and ``n - 1``."""
    parts = [gain[strata == k] for k in np.unique(strata)]
    mean = float(np.mean([p.mean() for p in parts]))
    v = [float(p.var(ddof=1)) / p.size / len(parts) ** 2 for p in parts]
    var = sum(v)
    if len(parts) == 1:
        df = float(gain.size - 1)
    else:
        df = var ** 2 / sum(x ** 2 / (p.size - 1) for x, p in zip(v, parts)) if var > 0 else math.inf
    return mean, (mean / math.sqrt(var) if var > 0 else (math.inf if mean > 0 else 0.0)), df


def required_t(accept_t: float, n: int, df: float) -> float:
    """The t a stratified gain on ``n`` episodes with ``df`` degrees of freedom needs: the one of the
    same one-sided level as ``accept_t`` has for the paired t on ``n`` episodes (``n - 1``
    degrees), so that fewer degrees ask for more, never less (``accept_t`` itself at ``n - 1``)."""
    if df >= n - 1:
        return accept_t
    return float(stdtrit(df, stdtr(n - 1, accept_t)))  # Student t's quantile of its CDF at accept_t


class _Normal:
    """``randn(lam, n)`` for CMA-ES from the agent's own generator (picklable with its state), so
    that ``cma`` never touches numpy's global generator."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __call__(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)


class _CrossEntropy:
    """The cross-entropy method with a diagonal Gaussian: ``ask`` draws ``popsize`` samples,
    ``tell`` (lower is better, as CMA-ES) refits mean and std to the best ``elite`` share, the std
    smoothed and kept above ``min_std``."""

    def __init__(self, x0: np.ndarray, sigma0: float, popsize: int, elite: float, rng: np.random.Generator,
                 min_std: float = 1e-3) -> None:
        self.mean = np.array(x0, dtype=np.float64)
        self.std = np.full_like(self.mean, sigma0)
        self.popsize, self.elite, self.rng, self.min_std = popsize, elite, rng, min_std

    def ask(self) -> list[np.ndarray]:
        return list(self.mean + self.std * self.rng.standard_normal((self.popsize, self.mean.size)))

    def tell(self, xs: list[np.ndarray], values: list[float]) -> None:
        order = np.argsort(values, kind="stable")
        n = max(1, int(round(self.elite * len(xs))))
        best = np.array([xs[i] for i in order[:n]])
        self.mean = best.mean(axis=0)
        self.std = np.maximum(0.5 * self.std + 0.5 * best.std(axis=0), self.min_std)


class PolicySearch(Agent):
    """See the module docstring. Params (``agent.params``): ``hidden`` (0: linear), ``activation``,
    ``optimiser`` (cma | cem), ``population``, ``runs``, ``sigma0``, ``elite`` (cem), ``objective``,
    ``accept_t``, ``init_action``, ``init_margin``, ``generations`` (the budget; 0: ``train.steps``).
    ``runs`` is at least twice the training mix's cells (see the module docstring)."""

    DEFAULTS: dict[str, Any] = {"hidden": 0, "activation": "tanh", "optimiser": "cma", "population": 10, "runs": 16,
                                "sigma0": 0.5, "elite": 0.3, "objective": "log_goodput", "accept_t": 2.0,
                                "init_action": 1, "init_margin": 0.1, "generations": 0}
    RULES: dict[str, Rule] = {
        "hidden": integer(0), "activation": choice("tanh", "relu"), "optimiser": choice("cma", "cem"),
        "population": integer(2), "runs": integer(2), "sigma0": number(0.0, lo_open=True),
        "elite": number(0.0, 1.0, lo_open=True), "objective": choice("log_goodput", "goodput", "return"),
        "accept_t": number(), "init_action": integer(0), "init_margin": number(0.0, lo_open=True),
        "generations": integer(0)}

    def __init__(self, spec: dict[str, Any], n_features: int, n_actions: int, seed: int) -> None:
        super().__init__(spec, n_features, n_actions, seed)
        self.params = read_params(spec, self.DEFAULTS, self.RULES)
        if n_actions < 2:
            raise ConfigError(f"policy search needs at least 2 actions, this environment has {n_actions}")
        if self.params["init_action"] >= n_actions:
            raise ConfigError(f"agent.params.init_action must be an action of this environment (0..{n_actions - 1}), "
                              f"got {self.params['init_action']}")
        if self.params["optimiser"] == "cma":
            try:
                import cma  # noqa: F401  (checked here: a missing package is a config-time error)
            except ImportError as err:
                raise ConfigError("agent.params.optimiser=cma needs the 'cma' package (pip install cma), or set "
                                  "agent.params.optimiser=cem") from err
        d, h, k = n_features, int(self.params["hidden"]), n_actions - 1
        self.shapes: list[tuple[int, ...]] = [(h, d), (h,), (k, h), (k,)] if h else [(k, d), (k,)]
        self.size = sum(int(np.prod(s)) for s in self.shapes)
        self.rng = np.random.default_rng(seed)
        self.theta = self.initial()  # the incumbent: what act() uses
        self.optimiser: Any = None  # made at the first learn (its state then goes into checkpoints)
        self._before: bytes | None = None  # the optimiser as the running generation found it (pickled)
        self.sim_seconds = 0.0  # of the last learn: the simulator's resets and steps
        self.generation = 0
        self.episodes_used = 0  # training episode indices consumed (common to a generation's candidates)
        self.accepted = 0
        self.history: list[dict[str, float]] = []

    # ---------------------------------------------------------------------- the policy
    def initial(self) -> np.ndarray:
        """The constant policy ``init_action``: zero weights into the last layer; with a hidden
        layer, its weights drawn from the agent's generator (scale 1/sqrt(d)), so that the search
        can grow them without starting from a symmetric point."""
        parts = [np.zeros(s) for s in self.shapes]
        a0, margin = int(self.params["init_action"]), float(self.params["init_margin"])
        last = parts[-1]
        if a0 == 0:
            last[:] = -margin
        else:
            last[a0 - 1] = margin
        if self.params["hidden"]:
            parts[0] = self.rng.standard_normal(self.shapes[0]) / math.sqrt(self.n_features)
        return np.concatenate([p.ravel() for p in parts])

    def unpack(self, theta: np.ndarray) -> list[np.ndarray]:
        out, i = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            # float32 values, as the exported header holds them: Python and C score with the same weights
            out.append(np.asarray(theta[i:i + n], dtype=np.float32).astype(np.float64).reshape(s))
            i += n
        return out

    def layers(self, theta: np.ndarray | None = None) -> list[tuple[str, np.ndarray, np.ndarray] | tuple[str]]:
        """The scorer as dense layers over all ``n_actions`` outputs (action 0's row zero) and
        activations: ``("dense", W, b)`` and ``(activation,)``, in order."""
        parts = self.unpack(self.theta if theta is None else theta)
        w, b = parts[-2], parts[-1]
        last = ("dense", np.vstack([np.zeros((1, w.shape[1])), w]), np.concatenate([[0.0], b]) + SCORE_OFFSET)
        if not self.params["hidden"]:
            return [last]
        return [("dense", parts[0], parts[1]), (str(self.params["activation"]),), last]

    def scores(self, obs: np.ndarray, theta: np.ndarray | None = None) -> np.ndarray:
        """Per row and action, the scorer's outputs [N, n_actions] (float64)."""
        h = as_rows(obs, self.n_features)
        for layer in self.layers(theta):
            if layer[0] == "dense":
                h = h @ layer[1].T + layer[2]  # type: ignore[misc]
            elif layer[0] == "tanh":
                h = np.tanh(h)
            else:
                h = np.maximum(h, 0.0)
        return h

    def values(self, obs: np.ndarray) -> np.ndarray:
        return self.scores(obs)

    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """argmax of the incumbent's scores (ties: the lowest action); the policy is deterministic."""
        return np.argmax(self.scores(obs), axis=1).astype(np.int64)

    # ---------------------------------------------------------------------- the search
    def _make_optimiser(self) -> Any:
        p = self.params
        if p["optimiser"] == "cem":
            return _CrossEntropy(self.theta, float(p["sigma0"]), int(p["population"]), float(p["elite"]), self.rng)
        import cma

        opts = {"popsize": int(p["population"]), "seed": math.nan, "randn": _Normal(self.rng), "verbose": -9,
                "verb_log": 0, "verb_disp": 0, "tolfun": 0.0, "tolx": 0.0, "tolstagnation": 10**9,
                "tolflatfitness": 10**9, "maxiter": math.inf}
        return cma.CMAEvolutionStrategy(self.theta.tolist(), float(p["sigma0"]), opts)

    def _mean(self) -> np.ndarray:
        """The optimiser's mean (CMA-ES's or the cross-entropy method's)."""
        return np.array(self.optimiser.mean, dtype=np.float64)

    def run_episodes(self, process: DecisionProcess, theta: np.ndarray,
                     episode: int | np.ndarray) -> tuple[np.ndarray, int, Any]:
        """One episode per connection of ``process`` under the policy ``theta``, from episode index
        ``episode`` (one, or one per connection) of the process's seed (the same episodes for every
        candidate). Returns each connection's objective, the decisions taken and the last step's
        infos."""
        s = process.sim
        s.episode[:] = episode
        clock = time.perf_counter()
        process.reset()
        self.sim_seconds += time.perf_counter() - clock
        returns = np.zeros(s.B)
        decisions = 0
        infos: Any = None
        while not s.done.all():
            live = ~s.done
            actions = np.argmax(self.scores(process.last_obs, theta), axis=1)
            clock = time.perf_counter()
            rewards, _, _, infos = process.step(actions)
            self.sim_seconds += time.perf_counter() - clock
            returns += np.where(live, rewards, 0.0)
            decisions += int(live.sum())
        objective = str(self.params["objective"])
        if objective == "return":
            return returns, decisions, infos
        goodput = np.asarray(s.results()["goodput_mbps"], dtype=np.float64)
        goodput = np.nan_to_num(goodput, nan=0.0)
        return (np.log(np.maximum(goodput, MIN_GOODPUT)) if objective == "log_goodput" else goodput), decisions, infos

    def learn(self, env: SB3VecEnv, steps: int, monitor: Monitor) -> None:
        process = env.process
        B = process.sim.B
        cells = len(self.cells(process.sim))
        rounds = max(1, math.ceil(max(int(self.params["runs"]), 2 * cells) / B))
        if self.optimiser is None:
            self.optimiser = self._make_optimiser()
        metrics = getattr(monitor, "log", None)  # train.py's monitor logs to the run's MLflow run
        self.sim_seconds = 0.0
        try:
            self._search(process, B, rounds, steps, monitor, metrics)
        finally:  # the simulator's share of the run (train.py's time split), when the env counts it
            if hasattr(env, "seconds"):
                env.seconds += self.sim_seconds

    def finished(self) -> bool:
        """The generation budget is spent (never, with ``generations: 0``)."""
        target = int(self.params["generations"])
        return target > 0 and self.generation >= target

    def budget(self, steps_done: int, steps_total: int) -> Budget:
        """Generations, when they are the budget (``train.steps`` is then only its upper bound);
        with ``generations: 0``, the decisions of ``train.steps``."""
        target = int(self.params["generations"])
        if not target:
            return super().budget(steps_done, steps_total)
        return Budget("generation", target, self.generation)

    @staticmethod
    def cells(sim: Simulator) -> list[tuple[str, str]]:
        """The strata of the training mix: every (scenario, CC) an episode can draw."""
        names = list(dict.fromkeys(sc.name for sc in sim.scenarios))
        return [(name, cc) for name in names for cc in dict.fromkeys(sim.ccs)]

    def design(self, sim: Simulator, rounds: int) -> tuple[np.ndarray, np.ndarray, int]:
        """This generation's episodes, stratified: episode indices [rounds, B] (round r runs
        connection b's episode ``[r, b]``), the cell (``cells``) each draws, and the first index
        the next generation may use. Slot ``r * B + b`` asks for cell ``(g * rounds * B + r * B +
        b) mod K`` (g the generation, K the cells), so every cell has the same number of a
        generation's episodes, or one fewer; connection b takes its next episode index (from
        ``episodes_used`` on) that draws that cell (``Simulator.episode_draw``: the draw of the
        simulator's own episode generator, nothing configured). With one cell this is episode ``episodes_used + r`` on every connection."""
        cells = self.cells(sim)
        index = {cell: k for k, cell in enumerate(cells)}
        B, K = sim.B, len(cells)
        episodes = np.zeros((rounds, B), dtype=np.int64)
        strata = np.zeros((rounds, B), dtype=np.int64)
        nxt = np.full(B, self.episodes_used, dtype=np.int64)
        for r in range(rounds):
            for b in range(B):
                want = (self.generation * rounds * B + r * B + b) % K
                while True:
                    drawn, cc, _ = sim.episode_draw(b, int(nxt[b]))
                    if index[(drawn.name, cc)] == want:
                        break
                    nxt[b] += 1
                episodes[r, b], strata[r, b] = nxt[b], want
                nxt[b] += 1
        return episodes, strata.ravel(), int(nxt.max())

    def _search(self, process: DecisionProcess, B: int, rounds: int, steps: int, monitor: Monitor, metrics: Any) -> None:
        done_steps = 0
        while done_steps < steps and not self.finished():
            start = time.perf_counter()
            # a checkpoint taken within the generation, or a generation cut short, goes back to the
            # optimiser as it was before this generation's samples: a resumed search continues the same
            self._before = pickle.dumps(self.optimiser)
            episodes, strata, next_episode = self.design(process.sim, rounds)
            asked = self.optimiser.ask()
            samples = [np.asarray(x, dtype=np.float64) for x in asked]
            mean = self._mean()
            same = bool(np.array_equal(mean, self.theta))  # the first generation: the mean is the incumbent
            cands = [self.theta, *([] if same else [mean]), *samples]
            scores: np.ndarray = np.zeros((len(cands), rounds * B))
            complete = go_on = True
            for i, theta in enumerate(cands):
                for r in range(rounds):
                    obj, n, infos = self.run_episodes(process, theta, episodes[r])
                    scores[i, r * B:(r + 1) * B] = obj
                    done_steps += n
                    # the monitor sees each batch of episodes as it ends (its progress bar, the
                    # per-episode goodput in MLflow, periodic evaluations and checkpoints)
                    rewards = obj if self.params["objective"] == "return" else np.zeros(B)
                    go_on = monitor.on_step(n, rewards, list(infos)) and done_steps < steps
                    if not go_on and (i, r) != (len(cands) - 1, rounds - 1):
                        complete = False
                        break
                if not complete:
                    break
            if not complete:  # a generation cut short by the budget is discarded
                self._restore(self._before)
                if int(self.params["generations"]) and done_steps >= steps:
                    log.warning("policy search: train.steps (%d decisions) ran out after %d of %d generations; "
                                "raise train.steps (the upper bound) to reach agent.params.generations",
                                steps, self.generation, int(self.params["generations"]))
                break
            self._before = None
            if same:
                scores = np.vstack([scores[:1], scores])
            score = stratified_mean(scores, strata)  # per candidate, every cell weighted alike
            self.optimiser.tell(asked, [-float(v) for v in score[2:]])  # both minimise
            self.episodes_used = next_episode
            self.generation += 1
            mean_gain, t, df = stratified_t(scores[1] - scores[0], strata)  # the mean against the incumbent
            need = required_t(float(self.params["accept_t"]), strata.size, df)
            accepted = bool(mean_gain > 0 and t >= need)
            if accepted:
                self.theta = mean.copy()
                self.accepted += 1
            record = {"generation": float(self.generation), "incumbent": float(score[0]),
                      "mean": float(score[1]), "best_sample": float(score[2:].max()),
                      "samples": float(score[2:].mean()), "gain_t": t if math.isfinite(t) else 0.0,
                      "gain_df": df if math.isfinite(df) else 0.0, "needed_t": need,
                      "accepted": float(accepted), "seconds": time.perf_counter() - start}
            self.history.append(record)
            if callable(metrics):
                metrics({f"search/{k}": v for k, v in record.items()})
            if not go_on:
                break

    # ---------------------------------------------------------------------- checkpoints
    def _restore(self, blob: bytes | None) -> None:
        """The optimiser from its pickle (None: none yet), the agent's generator then its own."""
        self.optimiser = pickle.loads(blob) if blob is not None else None
        self._before = None
        if isinstance(self.optimiser, _CrossEntropy):
            self.rng = self.optimiser.rng
        elif self.optimiser is not None and isinstance(self.optimiser.opts.get("randn"), _Normal):
            self.rng = self.optimiser.opts["randn"].rng

    def save(self, directory: Path) -> None:
        directory = Path(directory)
        np.savez(directory / ARRAYS_FILE, theta=self.theta)
        if self.optimiser is not None:  # within a generation: as it was before it (see learn)
            blob = self._before if self._before is not None else pickle.dumps(self.optimiser)
            (directory / OPTIMISER_FILE).write_bytes(blob)
        save_json(directory, {"generation": self.generation, "episodes_used": self.episodes_used,
                              "accepted": self.accepted, "history": self.history, "params": self.params,
                              "rng": rng_state(self.rng)}, STATE_FILE)

    def load_state(self, directory: Path) -> None:
        directory = Path(directory)
        path = directory / ARRAYS_FILE
        if not path.is_file():
            raise ConfigError(f"checkpoint {directory} has no {ARRAYS_FILE}")
        with np.load(path) as z:
            theta = np.asarray(z["theta"], dtype=np.float64)
        if theta.shape != (self.size,):
            raise ConfigError(f"checkpoint {directory}: {theta.size} policy parameters, this agent needs {self.size} "
                              f"(agent.params.hidden or the feature set differ)")
        self.theta = theta
        state = load_json(directory, STATE_FILE)
        self.generation, self.episodes_used = int(state["generation"]), int(state["episodes_used"])
        self.accepted, self.history = int(state["accepted"]), list(state["history"])
        opt = directory / OPTIMISER_FILE
        set_rng_state(self.rng, state["rng"])
        # the optimiser's generator is the agent's own (pickled with it): keep them one object
        self._restore(opt.read_bytes() if opt.is_file() else None)
