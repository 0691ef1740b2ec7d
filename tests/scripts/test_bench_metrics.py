"""scripts/bench_metrics.py on a small budget: both sides measured in each round, the
metrics side's scrape counting every run; never a speed."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_metrics_on_against_off_in_the_same_run() -> None:
    report = script_report("scripts.bench_metrics", "--rounds 2 --runs 6 --clients 1")
    assert "round 1 (off then on)" in report and "round 2 (on then off)" in report
    for side in ("off", "on "):
        assert report.count(f"metrics {side} 1 clients 6 runs:") == 2
    assert "medians of 2 rounds (metrics on / off; target >= 0.95)" in report
    assert "1 clients: " in report and "ratio" in report
