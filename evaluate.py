"""Evaluate a scheduler on the simulator: ``python evaluate.py scheduler=minrtt scenario=ispras_s1
cc=bbr runs=10`` (``format=json`` for one JSON object; ``workload=dash`` to replace the
scenario's workload; ``metrics=[goodput_mbps,rebuffer_s]`` to choose what is printed), or a
study: ``python evaluate.py study=ispras`` or lists, ``scheduler=[minrtt,rr]
scenario=[ispras_s1,ispras_s2] cc=[cubic,bbr]`` (README: Reproducing the studies). See
``configs/evaluate.yaml`` (every key it accepts: ``envs/schema.py`` EvaluateConfig)."""

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from envs import config
from envs.errors import ConfigError, ending, finish, hydra_argv
from envs.evaluation import capped_note, evaluate_heuristic, summary, to_json, to_table
from envs.live import cli as live_cli  # backend=live, compare=[sim,live] (README "Live runs")
from studies import spec as study_spec


@hydra.main(config_path="configs", config_name="evaluate", version_base=None)
def main(cfg: DictConfig) -> None:
    with ending():
        config.validate(cfg)
        if live_cli.wants_live(cfg):  # backend=live, compare=[sim,live]
            return live_cli.run(cfg)
        study_spec.check_overrides(cfg, list(HydraConfig.get().overrides.task))
        if study_spec.wanted(cfg):
            return run_study(cfg)
        scen, cc, cc_params = config.evaluation_request(cfg)
        names = config.metric_request(cfg, scen)
        per_run = evaluate_heuristic(scen, cc, cfg.scheduler, cfg.runs, cfg.seed, config.sim_config(cfg.env),
                                     cc_params, config.plain(cfg.scheduler_params), float(cfg.window_s))
        header = {"scenario": scen.name, "workload": scen.workload.type, "cc": cc, "scheduler": cfg.scheduler,
                  "stack": cfg.env.stack, "runs": cfg.runs, "seed": cfg.seed}
        stats = summary(per_run, names)
        note = capped_note(scen, per_run["completion_s"], float(cfg.env.max_duration_s))
        if cfg.format == "json":
            print(to_json({**header, "capped": note}, stats))
        else:
            print(to_table(header, stats, note))


def run_study(cfg: DictConfig) -> None:
    from studies.runner import run_study as run  # pulls in pandas and matplotlib
    result = run(cfg, Path(HydraConfig.get().runtime.output_dir))
    files = result["files"]
    print(files["results.md"].read_text())
    print(files["robustness.md"].read_text())
    if "transfer.md" in files:
        print(files["transfer.md"].read_text())
    for key, error in result["failed"].items():
        print(f"failed cell {' / '.join(key)}: {error}")
    empty = {key: r["error"] for key, r in result["results"].items() if not r.get("failed") and not r["metrics"]}
    print(f"{len(result['results'])} cells ({len(result['failed'])} failed, {len(empty)} n/a) in "
          f"{result['wall_s']:.1f} s; outputs in {files['results.md'].parent}")
    print(f"MLflow run:  {result['run_id']} in {result['tracking_uri']}")
    if not any(r["metrics"] for r in result["results"].values()):  # nothing was measured
        key, why = next(iter({**empty, **result["failed"]}.items()))
        raise ConfigError(f"no cell could be evaluated ({' / '.join(key)}: {why})")


if __name__ == "__main__":
    sys.argv[1:] = hydra_argv(sys.argv[1:])
    main()
    finish()
