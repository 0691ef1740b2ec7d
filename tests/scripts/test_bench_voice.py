"""scripts/bench_voice.py on a small budget: both sides measured each way, every chunk
arriving, the gateway's addition printed, barge-in timed on both sides, a few sessions at
once in a gateway process of its own; never a speed."""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_the_gateway_against_a_direct_client() -> None:
    flags = "--rounds 2 --chunks 10 --pace-ms 5 --barge-ins 2 --sessions 3 --session-seconds 0.5"
    report = script_report("scripts.bench_voice", flags)
    assert "round 1" in report and "round 2" in report
    for way in ("up", "down"):
        for side in ("direct", "gateway", "added"):
            assert report.count(f"  {way:4} {side:7}: p50 ") == 2
        for stat in ("p50", "p99"):
            assert f"  {way} {stat}: " in report
    assert "medians of 2 rounds, added by the gateway" in report
    for side in ("direct", "gateway"):
        assert report.count(f"  barge-in {side:7}: to silence ") == 2
    assert "  barge-in to silence: " in report
    assert "3 live sessions at once" in report
    assert "  gateway: " in report and "ms of CPU per second of audio" in report
