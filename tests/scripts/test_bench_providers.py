"""scripts/bench_providers.py on a small budget: every side measured, for both providers.

What it prints is for people; this checks the plumbing (the provider in its own process,
the recorded request read again directly, the ADK Runner and the gateway), never a speed.
"""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_every_side_of_both_providers() -> None:
    report = script_report("scripts.bench_providers", "--rounds 1 --runs 2 --pace-ms 2")
    for name in ("chat-completions (openai/local-model)", "gemini (gemini-2.5-flash)"):
        assert name in report
    for quantile in ("p50", "p99"):
        assert report.count(f"request at the provider {quantile}: direct") == 2
        assert report.count(f"first token {quantile}: direct") == 2
        assert report.count(f"chunk delay against direct {quantile}: adk") == 2
    assert report.count("CPU per chunk: direct") == 2
