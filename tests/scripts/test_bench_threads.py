"""scripts/bench_threads.py on a small database: every kind measured against the reattach
baseline in each round, and the searches finding what the data holds; never a speed."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_list_and_search_against_a_reattach() -> None:
    report = script_report(
        "scripts.bench_threads", "--per-user 60 --total 200 --samples 3 --rounds 2"
    )
    assert "200 threads (60 of 'demo') written" in report
    assert "search finds 30 (a page), rare finds 0" in report  # beyond 60 threads
    assert "round 1" in report and "round 2" in report
    for kind in ("list", "search", "rare", "short", "page", "reattach"):
        assert f"  {kind:<9} n=3 " in report
    assert "reattach's" in report
