"""Train a scheduler: ``python train.py agent=dqn cc=bbr2`` (configs/train.yaml; README: Training)."""

import time

STARTED = time.perf_counter()  # the run's time split counts its start-up from here, before the imports

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from envs.errors import ending, finish, hydra_argv
from envs.schema import register

register()  # the config schemas configs/*.yaml build on (envs/schema.py)


@hydra.main(config_path="configs", config_name="train", version_base=None)
def main(cfg: DictConfig) -> None:
    with ending():  # bad input: one line naming it; Ctrl-C: where the checkpoint is and how to resume
        from agents.tracking import run_log

        log = run_log()  # MLflow's helper process starts importing MLflow now, beside the imports below
        from agents.training import run  # after Hydra parsed the command line (torch loads slowly)

        result = run(cfg, Path(HydraConfig.get().runtime.output_dir), started=STARTED, run_log=log)
    print(f"\n{result['steps']} steps, {result['episodes']} episodes. "
          f"Evaluation on the training scenarios and CCs ({cfg.train.eval_runs} runs each, unseen seeds):")
    print(result["table"])
    print(f"\ncheckpoint:  {result['checkpoint']}")
    if result["best_checkpoint"]:
        print(f"selected:    {result['best_checkpoint']} (train.select=validation; the evaluation above is of this one)")
    print(f"MLflow run:  {result['run_id']} in {result['tracking_uri']}  (browse: mlflow ui)")
    print(result["time"])


if __name__ == "__main__":
    sys.argv[1:] = hydra_argv(sys.argv[1:])
    main()
    finish()
