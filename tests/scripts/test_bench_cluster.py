"""scripts/bench_cluster.py on a small budget: every configuration measured, fan-out included.

What it prints is for people; this checks the plumbing (one and several processes on one
PostgreSQL, the SQLite baseline, an observer on another process), never a speed.
"""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_every_configuration_and_the_fan_out() -> None:
    report = script_report(
        "scripts.bench_cluster",
        "--rounds 1 --runs 8 --clients 2 --fanout-runs 2",
        timeout=300,
    )
    for name in ("sqlite x1", "postgres x1", "postgres x2", "postgres x3"):
        assert any(line.split()[:2] == name.split() for line in report.splitlines()), report
    assert "fan-out A->B  p50" in report
    assert "new tab mid-run  on A p50" in report
