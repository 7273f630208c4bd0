"""Offline fine-tuning of a per-packet DQN on live decisions: behaviour cloning (Pomerleau 1991;
the imitation step of DQfD, Hester et al. 2018) from a live heuristic's blocked decisions that
XQUIC recorded (``envs.live.dataset``).

The DQN's Q-network is trained so that its argmax answers as the heuristic did at the recorded
decisions: a cross-entropy loss on the Q-values taken as logits, plus DQfD's large-margin term
(``margin``: the demonstrated action's Q-value exceeds every other by at least the margin), starting
from the simulator-trained weights. The target network is synchronised, the result is an
ordinary checkpoint of the same agent (``meta.json`` records the dataset and the fit), so it
loads, evaluates and exports as before (``python -m export``).

    python -m agents.offline --checkpoint outputs/<date>/<time>/checkpoint \\
        --dataset decisions/ispras_s1-bbr2-ecf.npz --out finetuned/
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from agents import checkpoint
from agents.base import Agent
from envs.errors import ConfigError, out_of_range
from envs.live.dataset import BlockedDecisions


@dataclass
class CloneSettings:
    """How the Q-network is fitted to the demonstrations."""

    epochs: int = 30
    learning_rate: float = 1e-3
    batch_size: int = 256
    margin: float = 0.1  # DQfD's large-margin term (0: cross-entropy only)
    seed: int = 0

    def check(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise out_of_range(name, getattr(self, name), "an integer >= 1")
        if not self.learning_rate > 0:
            raise out_of_range("learning_rate", self.learning_rate, "> 0")
        if not self.margin >= 0:
            raise out_of_range("margin", self.margin, ">= 0")


@dataclass
class CloneResult:
    decisions: int
    demonstrated_wait_share: float
    agreement_before: float  # share of the demonstrations the policy answered alike before the fit
    agreement_after: float
    final_loss: float


def _q_net(agent: Agent) -> torch.nn.Module:
    model = getattr(agent, "model", None)
    if model is None or not hasattr(model, "q_net"):
        raise ConfigError(f"behaviour cloning fine-tunes a DQN (a Q-network); this checkpoint's agent is "
                          f"{agent.spec.get('name')!r} ({type(agent).__name__})")
    return model.q_net


def behaviour_clone(agent: Agent, data: BlockedDecisions, settings: CloneSettings | None = None) -> CloneResult:
    """Fit ``agent``'s Q-network to ``data``'s answers (in place); returns the fit's figures."""
    cfg = settings or CloneSettings()
    cfg.check()
    if len(data) == 0:
        raise ConfigError("the decision dataset holds no blocked decisions: nothing to learn from")
    if data.features.shape[1] != agent.n_features:
        raise ConfigError(f"the dataset has {data.features.shape[1]} features ({', '.join(data.feature_names)}); "
                          f"the agent reads {agent.n_features}")
    q_net = _q_net(agent)
    x = torch.as_tensor(np.asarray(data.features, dtype=np.float32))
    y = torch.as_tensor(np.asarray(data.actions, dtype=np.int64))
    before = float(np.mean(agent.act(data.features) == data.actions))
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.Adam(q_net.parameters(), lr=cfg.learning_rate)
    q_net.train()
    loss = torch.zeros(())
    for _ in range(cfg.epochs):
        for idx in torch.randperm(len(y), generator=gen).split(cfg.batch_size):
            q = q_net(x[idx])
            loss = torch.nn.functional.cross_entropy(q, y[idx])
            if cfg.margin > 0:
                other = q + cfg.margin * (1 - torch.nn.functional.one_hot(y[idx], q.shape[1]))
                loss = loss + (other.max(dim=1).values - q.gather(1, y[idx, None])[:, 0]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    q_net.eval()
    model = agent.model  # type: ignore[attr-defined]  # an SB3 DQN (checked by _q_net)
    model.q_net_target.load_state_dict(q_net.state_dict())
    after = float(np.mean(agent.act(data.features) == data.actions))
    return CloneResult(len(data), data.waits / len(data), before, after, float(loss.detach()))


def finetune(source: Path, datasets: Sequence[Path], out: Path,
             settings: CloneSettings | None = None) -> tuple[Path, CloneResult]:
    """The checkpoint ``source`` cloned on ``datasets`` (pooled) into ``out`` (a checkpoint directory)."""
    agent, meta = checkpoint.load(source)
    parts = [BlockedDecisions.load(d) for d in datasets]
    if not parts:
        raise ConfigError("give at least one decision dataset")
    for path, part in zip(datasets, parts):
        observation = part.provenance.get("observation")
        if observation and observation != meta.get("observation"):
            raise ConfigError(f"{path} carries the {observation!r} features; {source} reads {meta.get('observation')!r}")
    data = BlockedDecisions.concat(parts, parts[0].feature_names)
    cfg = settings or CloneSettings()
    result = behaviour_clone(agent, data, cfg)
    keep = ("scenario", "cc", "scheduler", "xquic_commit", "kernel", "date", "command")
    prov = [{k: v for k, v in part.provenance.items() if k in keep} for part in parts]
    meta = {**meta, "finetuned": {"from": str(source), "datasets": [str(d) for d in datasets],
                                  "dataset_provenance": prov, "settings": asdict(cfg), "result": asdict(result)}}
    yaml = (source / checkpoint.CONFIG).read_text()
    checkpoint.save(out, agent, meta, OmegaConf.to_yaml(OmegaConf.create(yaml)))
    return out, result


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m agents.offline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, required=True, help="the simulator-trained DQN checkpoint")
    ap.add_argument("--dataset", type=Path, nargs="+", required=True,
                    help="blocked decisions (envs.live.dataset, .npz; several are pooled)")
    ap.add_argument("--out", type=Path, required=True, help="the fine-tuned checkpoint directory")
    defaults = CloneSettings()
    for name, value in asdict(defaults).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    a = ap.parse_args(argv)
    settings = CloneSettings(**{k: getattr(a, k) for k in asdict(defaults)})
    out, r = finetune(a.checkpoint, a.dataset, a.out, settings)
    print(f"{r.decisions} demonstrated decisions ({100 * r.demonstrated_wait_share:.1f}% waits): the policy agreed "
          f"with {100 * r.agreement_before:.1f}% before, {100 * r.agreement_after:.1f}% after; checkpoint {out}")
    print(f"export: python -m export checkpoint={out} out=policy.h")


if __name__ == "__main__":
    from envs.errors import debug_argv, ending

    with ending(bad_input_code=2):
        main(debug_argv(sys.argv[1:]))
