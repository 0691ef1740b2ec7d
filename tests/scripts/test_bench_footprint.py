"""scripts/bench_footprint.py on a small budget: RSS idle, a run's and an idle socket's, and
the heap profile that names where the memory went.

What it prints is for people; this checks the plumbing (every figure against its target,
the traced gateway answering its signals, sites named in the gateway's own code), never a
size.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_measures_against_the_targets_and_profiles_the_heap() -> None:
    report = script_report(
        "scripts.bench_footprint", "--rounds 1 --warm 2 --runs 10 --sockets 5 --heap", 300
    )
    assert re.search(r"round 1: idle \d+\.\d MiB, -?\d+\.\d\d KiB a run", report), report
    # Growth per run is measured with the threads on a file: in memory they are the data.
    assert "threads on file" in report, report
    # Which venv the figures are for, from what the idle gateway imported.
    assert re.search(r"which venv: .*: an idle gateway imported \d+ modules", report), report
    for figure in ("idle RSS", "growth per run", "per idle WebSocket"):
        assert re.search(rf"{figure} +-?\d+\.\d+ [MK]iB +target [\d.]+: (met|NOT met)", report)
    assert "held after 10 runs, allocated during them, by site:" in report
    assert "held by 5 idle sockets, by site:" in report
    assert re.search(r"KiB a socket", report)
    assert re.search(r"\(from \w+/\w+\.py:\d+\)", report), report


def test_with_workers_the_benchmark_measures_a_worker_process_too() -> None:
    report = script_report(
        "scripts.bench_footprint", "--rounds 1 --warm 2 --runs 10 --sockets 5 --workers 2", 300
    )
    assert re.search(r"round 1: .*; a worker \d+\.\d MiB idle, \d+\.\d after the runs", report)
    for figure in ("a worker, idle", "a worker, after runs"):
        assert re.search(rf"{figure} *\d+\.\d MiB", report), report
