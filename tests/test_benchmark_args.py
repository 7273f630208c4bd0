"""Bad flags of the benchmark scripts no other test module covers (``benchmarks/coupled_cc.py``,
``benchmarks/falcon_adaptation.py``): one line ``error: ...`` naming the flag and its range, a
non-zero exit, no traceback."""

from __future__ import annotations

import pytest

from conftest import refused


@pytest.mark.parametrize("argv, message", [
    (["--batch", "0"], "--batch must be an integer >= 1, got 0"),
    (["--duration", "-1"], "--duration must be > 0 (simulated seconds), got -1.0"),
    (["--duration", "inf"], "--duration must be > 0 (simulated seconds), got inf"),
])
def test_coupled_cc_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    assert message in refused("benchmarks.coupled_cc", argv, monkeypatch, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "--seeds must be an integer >= 1, got 0"),
    (["--window", "0"], "--window must be an integer >= 1, got 0"),
    (["--post-steps", "40"], "--post-steps must be >= --window x 8 = 80, got 40"),
])
def test_falcon_adaptation_refuses_bad_flags_in_one_line(argv, message, monkeypatch, capsys):
    assert message in refused("benchmarks.falcon_adaptation", argv, monkeypatch, capsys)
