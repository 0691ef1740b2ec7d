"""scripts/bench_runs.py on a small budget: both sides measured, start-up over two servers.

What it prints is for people; this checks the plumbing (the gateway's and the runner's
phases, the start-up figures of every server), never a speed.
"""

from __future__ import annotations

import pytest

from gateway import config
from scripts.bench_runs import BENCH_FLAGS
from tests.support.processes import script_report

pytestmark = pytest.mark.process


@pytest.mark.parametrize("db", ["memory", "file"])
def test_the_benchmark_measures_both_sides_and_every_start(db: str) -> None:
    report = script_report(
        "scripts.bench_runs", f"--rounds 1 --runs 8 --clients 1,2 --starts 2 --db {db}"
    )
    for door in ("gateway", "runner"):
        for clients in (1, 2):
            assert any(
                line.split()[:3] == [door, str(clients), "8"] for line in report.splitlines()
            )
    assert "gateway/runner runs per second: 1 client" in report
    assert "first/paused" in report and "the plain runner's" in report
    assert "start-up, medians of 2 fresh servers:" in report


def test_the_benchmarks_lift_every_per_user_limit_a_plain_runner_lacks() -> None:
    # One user sends every run of a phase, each on a new thread: a cap on a user's threads
    # ended a phase of more than ~1,000 runs in SERVICE_QUOTA_EXCEEDED.
    settings = config.parse(list(BENCH_FLAGS))
    assert settings.user_rate == 0
    assert settings.user_reattach_bytes == 0
    assert settings.user_threads == 0
    assert settings.workers == 0
