"""Train a scheduler: ``python train.py agent=dqn cc=bbr2`` (configs/train.yaml; README: Training)."""

import time

STARTED = time.perf_counter()  # the run's time split counts its start-up from here, before the imports

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from envs.errors import ConfigError


@hydra.main(config_path="configs", config_name="train", version_base=None)
def main(cfg: DictConfig) -> None:
    from agents.training import run  # after Hydra parsed the command line (torch loads slowly)

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        result = run(cfg, out_dir, started=STARTED)
    except ConfigError as err:
        sys.exit(f"error: {err}")
    print(f"\n{result['steps']} steps, {result['episodes']} episodes. "
          f"Evaluation on the training scenarios and CCs ({cfg.train.eval_runs} runs each, unseen seeds):")
    print(result["table"])
    print(f"\ncheckpoint:  {result['checkpoint']}")
    print(f"MLflow run:  {result['run_id']} in {result['tracking_uri']}  (browse: mlflow ui)")
    print(result["time"])


if __name__ == "__main__":
    main()
