"""scripts/bench_metrics.py on a small budget: both sides measured in interleaved pairs in
each round, the metrics side's scrape counting every run; never a speed."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_metrics_on_against_off_in_the_same_run() -> None:
    report = script_report("scripts.bench_metrics", "--rounds 2 --runs 8 --pairs 2 --clients 1,2")
    assert "round 1" in report and "round 2" in report
    for clients in (1, 2):
        assert report.count(f"  {clients} clients, 2 pairs of 4 runs: on ") == 2
        assert f"  {clients} clients: runs/s ratio " in report
    assert "medians of 2 rounds (metrics on / off; target >= 0.95)" in report
