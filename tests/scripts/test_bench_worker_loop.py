"""scripts/bench_worker_loop.py on a small budget: each loop runs a worker's load in small.

What it prints is for people; this checks the plumbing (every loop timed, against the
first), never a speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_times_each_loop_against_the_worker_s_before() -> None:
    report = script_report("scripts.bench_worker_loop", "--rounds 1 --runs 3 --chunks 2")
    figures = re.findall(r"^  (.+?) +(\d+\.\d\d) µs +(\d+\.\d\d)x$", report, re.MULTILINE)
    assert [name for name, _, _ in figures] == [
        "FirstTurnLoop, asyncio's call_soon (before)",
        "FirstTurnLoop (the worker's)",
        "asyncio, no order",
        "uvloop, no order (one process's)",
    ], report
    assert figures[0][2] == "1.00"
    assert all(float(cost) > 0 for _, cost, _ in figures)
