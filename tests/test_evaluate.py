"""``evaluate.py`` from the command line: table, JSON, overrides and clear errors."""

import json
import subprocess

import pytest
import yaml
from conftest import run_script



def run(*args: str) -> subprocess.CompletedProcess:
    return run_script("evaluate.py", *args)


def test_json_output_has_every_metric_with_per_run_lists():
    out = run("scheduler=minrtt", "scenario=ispras_s3", "cc=cubic", "runs=3", "file_mb=2", "format=json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("goodput_mbps", "completion_s", "mean_rtt_ms", "reorder_max_bytes", "loss_rate"):
        assert len(data[key]["per_run"]) == 3 and data[key]["mean"] is not None
    assert len(data["per_path_goodput_mbps"]["mean"]) == 2
    # 2 MB over two 70 Mbit/s paths: at most 140 Mbit/s, and CUBIC gets a good share of it
    assert 20 < data["goodput_mbps"]["mean"] <= 140


def test_table_shows_runs_and_confidence_interval():
    out = run("scheduler=rr", "scenario=ispras_s2", "cc=bbr", "runs=4", "duration_s=2")
    assert out.returncode == 0, out.stderr
    assert "mean ± 95% CI" in out.stdout and out.stdout.count("\n") >= 6


def test_one_run_shows_no_confidence_interval():
    """A CI needs two runs: with one the table says so instead of printing ± 0.00."""
    out = run("scheduler=minrtt", "scenario=ispras_s3", "cc=cubic", "runs=1", "file_mb=1")
    assert out.returncode == 0, out.stderr
    assert "mean (one run: no CI)" in out.stdout and "±" not in out.stdout


def test_workload_override_and_metric_selection():
    out = run("scenario=leeyoo_static", "workload=dash", "workload.chunks=4", "cc=cubic", "runs=2",
              "metrics=[avg_bitrate_mbps,rebuffer_s,download_time_s]", "format=json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["workload"] == "dash"
    assert {"avg_bitrate_mbps", "rebuffer_s", "download_time_s"} <= set(data) and "mean_rtt_ms" not in data
    assert 1 <= data["avg_bitrate_mbps"]["mean"] <= 10 and data["rebuffer_s"]["mean"] == 0.0
    table = run("scenario=leeyoo_static", "workload=web", "workload.objects=20", "cc=cubic", "runs=2")
    assert table.returncode == 0, table.stderr
    assert "download s" in table.stdout and "thr var (Mbit/s)^2" in table.stdout and "rebuffer" not in table.stdout


def test_user_scenario_file(tmp_path):
    spec = {"name": "mine", "paths": [{"bandwidth_mbps": 10, "delay_ms": 10}, {"bandwidth_mbps": 5, "delay_ms": 30}],
            "workload": {"type": "file", "file_mb": 1}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = run(f"scenario_file={path}", "runs=2", "format=json", "cc=reno")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scenario"] == "mine"


@pytest.mark.parametrize("args, message", [
    (["scheduler=fastest"], "unknown scheduler 'fastest'; valid:"),
    (["cc=bbr3"], "Could not find 'cc/bbr3'"),
    (["scenario=nowhere"], "Could not find 'scenario/nowhere'"),
    (["scenario.ispras_s1.paths.0.loss_pct=100"], "paths[0].loss_pct"),
    (["runs=0"], "runs must be an integer >= 1"),
    (["scenario_file=/no/such.yaml"], "scenario file not found"),
    (["workload=video"], "Available options in 'workload'"),
    (["metrics=[speed]"], "unknown metric 'speed'; valid:"),
    (["workload=dash", "workload.bitrates_mbps=[5,1]"], "workload.bitrates_mbps: must increase"),
])
def test_bad_input_fails_with_a_message_and_no_traceback(args, message):
    out = run(*args)
    assert out.returncode != 0
    assert message in out.stderr + out.stdout
    assert "Traceback" not in out.stderr
