"""Where a run goes when workers start on demand: here while the load is light, to a ready
worker past it, and another worker started, one at a time, when the ready ones are busy."""

from __future__ import annotations

import pytest

from gateway.adk.workers.demand import LOCAL_RUNS, Placement, place

pytestmark = pytest.mark.unit

HERE = Placement(in_worker=False, start_worker=False)


def test_a_light_load_runs_here_and_starts_nothing() -> None:
    assert place(0, [], starting=False, started=0, most=2) == HERE
    assert place(LOCAL_RUNS - 1, [], starting=False, started=0, most=2) == HERE
    # Workers up from a burst before: a light load is still the main process's.
    assert place(1, [0, 1], starting=False, started=2, most=2) == HERE


def test_load_starts_a_worker_and_runs_here_until_it_is_ready() -> None:
    assert place(LOCAL_RUNS, [], starting=False, started=0, most=2) == Placement(False, True)
    assert place(LOCAL_RUNS + 3, [], starting=True, started=1, most=2) == HERE


def test_a_ready_worker_takes_the_runs_and_another_starts_once_it_is_as_busy() -> None:
    assert place(LOCAL_RUNS, [0], starting=False, started=1, most=2) == Placement(True, False)
    busy = place(LOCAL_RUNS, [LOCAL_RUNS], starting=False, started=1, most=2)
    assert busy == Placement(True, True)
    assert place(0, [LOCAL_RUNS, 9], starting=False, started=2, most=2) == Placement(True, False)
