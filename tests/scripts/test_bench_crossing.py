"""scripts/bench_crossing.py on a small budget: a flagship story's crossing work, done the
way before session 42 and the way now.

What it prints is for people; this checks the plumbing (the story's texts and sessions
recorded, both ways checked equal and timed), never a speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_both_ways_over_a_storys_texts_and_sessions() -> None:
    report = script_report("scripts.bench_crossing", "--rounds 1")
    recorded = re.search(r"(\d+) appends, (\d+) streamed chunks, (\d+) sessions handed", report)
    assert recorded is not None, report
    # The flagship: the worker's appends of both runs, the reply's chunks, a Start each.
    assert int(recorded[1]) >= 6 and int(recorded[2]) >= 1 and int(recorded[3]) == 2
    assert re.search(r"before session 42 +\d+ µs a story", report), report
    assert re.search(r"now +\d+ µs a story \(\d+\.\d\dx\)", report), report
