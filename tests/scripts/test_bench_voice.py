"""scripts/bench_voice.py on a small budget: both sides measured each way, every chunk
arriving, the gateway's addition printed; never a speed."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_the_gateway_against_a_direct_client() -> None:
    report = script_report("scripts.bench_voice", "--rounds 2 --chunks 10 --pace-ms 5")
    assert "round 1" in report and "round 2" in report
    for way in ("up", "down"):
        for side in ("direct", "gateway", "added"):
            assert report.count(f"  {way:4} {side:7}: p50 ") == 2
        for stat in ("p50", "p99"):
            assert f"  {way} {stat}: " in report
    assert "medians of 2 rounds, added by the gateway" in report
