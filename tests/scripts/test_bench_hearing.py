"""scripts/bench_hearing.py on a small budget: notices heard by psycopg's ``notifies()`` and
by ``gateway.cluster.hearing``, each timed.

What it prints is for people; this checks the plumbing (both ways run and timed), never a
speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_a_notice_heard_both_ways() -> None:
    report = script_report("scripts.bench_hearing", "--rounds 1 --notices 20")
    assert re.search(r"round 1 notifies +[\d.]+ µs of CPU a notice", report), report
    assert re.search(r"round 1 hear +[\d.]+ µs of CPU a notice", report), report
    assert re.search(r"medians: .* µs a notice \(\d+\.\d\dx\)", report), report
