"""scripts/bench_audit.py on a small budget: the store's appends with the audit beside them,
at each durability.

What it prints is for people; this checks the plumbing (both durabilities run and timed),
never a speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_the_stores_appends_with_the_audit_at_each_durability() -> None:
    report = script_report("scripts.bench_audit", "--rounds 1 --threads 3 --appends 4")
    assert "3 threads x 4 appends" in report, report
    assert re.search(r"audit at full \(before\) +append p50 +[\d.]+ ms, p99 +[\d.]+ ms", report)
    assert re.search(r"audit at normal \(now\) +append p50 .* \(\d+\.\d\dx at p99\)", report)
