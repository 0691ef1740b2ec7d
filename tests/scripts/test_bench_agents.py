"""scripts/bench_agents.py on a small budget: the expense example on both sides, and the ratio.

What it prints is for people; this checks the plumbing, never a speed. 50 runs from one
user are more than the per-user rate limit's burst, so a benchmark gateway that limited its
one user would fail here.
"""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_runs_the_expense_example_on_the_gateway_and_the_runner() -> None:
    report = script_report("scripts.bench_agents", "--rounds 1 --runs 50 --clients 1,2")
    assert "the expenses example, 'Show me my expenses'" in report
    for door in ("gateway", "runner"):
        for clients, runs in ((1, "50"), (2, "50")):
            assert any(
                line.split()[:3] == [door, str(clients), runs] for line in report.splitlines()
            ), report
    assert "gateway/runner runs per second: 1 client" in report
    assert "(target >= 0.90)" in report
    assert "(load " in report
