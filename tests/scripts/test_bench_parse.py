"""scripts/bench_parse.py on a small budget: a flagship story's ADK texts, parsed both ways.

What it prints is for people; this checks the plumbing (the story's texts recorded, both
parsers timed and compared), never a speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_both_parsers_over_a_storys_texts() -> None:
    report = script_report("scripts.bench_parse", "--rounds 1")
    recorded = re.search(r"(\d+) ADK event texts parsed here, (\d+) bytes", report)
    assert recorded is not None, report
    # The worker's appends (7 a flagship story) and each reply's first streamed chunk: its
    # later chunks cross as their text, never parsed here (gateway.adk.workers.chunks).
    assert int(recorded[1]) >= 8 and int(recorded[2]) > 0
    assert re.search(r"Event\.model_validate_json +\d+ µs a story", report), report
    assert re.search(r"adk_json\.parse_event +\d+ µs a story \(\d+\.\d\dx\)", report), report
