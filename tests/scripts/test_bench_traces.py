"""scripts/bench_traces.py on a small budget: traces off and exported, measured in one run.

What it prints is for people; this checks the plumbing (both modes measured, the traced
gateway's spans reached the collector, the comparison printed), never a speed.
"""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_traces_off_and_exported() -> None:
    report = script_report("scripts.bench_traces", "--rounds 1 --runs 6 --clients 1,2")
    lines = [line.split() for line in report.splitlines()]
    for mode in ("off", "traced"):
        for clients in ("1", "2"):
            [row] = [line for line in lines if line[:3] == [mode, clients, "6"]]
            # runs/s, the process's CPU per run, and its event loop's
            rate, cpu, loop = (float(cell) for cell in row[3:])
            assert rate > 0 and cpu > 0 and loop > 0
    [received] = [line for line in lines if line[:2] == ["spans", "received:"]]
    assert int(received[2]) > 0
    assert "traced against off, 1 client: runs/s" in report
    assert "traced against off, 2 clients: runs/s" in report
    assert "on the event loop" in report and "on other threads" in report
