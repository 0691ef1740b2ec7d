"""scripts/bench_gemini.py on a small budget: both sides timed, each way of reading a chunk
giving the same response. What it prints is for people; this checks the plumbing."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_both_sides_of_requests_and_chunks() -> None:
    report = script_report("scripts.bench_gemini", "--rounds 1 --calls 4 --turns 2")
    assert "round 1:" in report
    for title in ("a thread's first request", "after 2 turns", "a text chunk read"):
        assert f"{title}" in report
    assert report.count("google-genai") == 3 and report.count("x)") == 3
