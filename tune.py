"""Sweep a scheduler's hyperparameters on Ray Tune: ``python tune.py agent=dqn cc=bbr2
tune.num_samples=16`` (configs/tune.yaml, configs/tune/<agent>.yaml; README: Hyperparameter sweeps)."""

import sys

import hydra
from omegaconf import DictConfig

from envs.errors import ending, hydra_argv
from envs.schema import register

register()  # the config schemas configs/*.yaml build on (envs/schema.py)


@hydra.main(config_path="configs", config_name="tune", version_base=None)
def main(cfg: DictConfig) -> None:
    with ending():
        from agents.sweep import sweep  # after Hydra parsed the command line (ray and torch load slowly)

        result = sweep(cfg)
    print(f"\n{result.trials} trials in {result.path}: {result.stopped_early} stopped early by the scheduler, "
          f"{len(result.failed)} failed")
    for trial_id, error in sorted(result.failed.items()):
        print(f"failed trial {trial_id}: {error}")
    print(f"MLflow sweep run: {result.parent_run_id} in {result.tracking_uri}  (browse: mlflow ui)")
    if result.best_config is not None:
        print(f"best trial: objective {result.best_objective:.4g} with "
              + " ".join(f"{k}={v}" for k, v in sorted(result.best_params.items())))
        print(f"best config: {result.best_config}\n  train it:  python train.py --config-path "
              f"{result.best_config.parent} --config-name {result.best_config.stem}")
    if result.interrupted:  # Ctrl-C: Ray saved the sweep's state
        print(f"interrupted: continue with python tune.py ... tune.resume=true tune.name={result.path.name}",
              file=sys.stderr)
        sys.exit(130)
    if result.best_config is None:
        sys.exit("error: no trial finished an evaluation")


if __name__ == "__main__":
    sys.argv[1:] = hydra_argv(sys.argv[1:])
    main()
