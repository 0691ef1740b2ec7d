"""Where a run is placed (``gateway.adk.workers.placed``): the worker with the fewest runs,
of several the fewest starting, of several still each in turn; and what the timeline counts
of its placing: its worker's runs and runs starting (the run itself left out), the fewest of
each in any ready worker, and the events its Start leaves out."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.adk.workers import placed

pytestmark = pytest.mark.unit


@dataclasses.dataclass
class Run:
    yielded: bool


@dataclasses.dataclass
class Worker:
    runs: dict[int, Run]


def test_a_placing_counts_its_workers_runs_and_starts_against_the_fewest_of_each() -> None:
    # The chosen worker: the new run (starting) and 3 more, 1 of them starting; another
    # with 2 runs, both starting; a third with 5, none starting.
    chosen = Worker({0: Run(False), 1: Run(False), 2: Run(True), 3: Run(True)})
    both = Worker({4: Run(False), 5: Run(False)})
    none = Worker({n: Run(True) for n in range(6, 11)})
    counts = dict(placed.counted(chosen, [chosen, both, none], kept=4))
    assert counts == {
        "=runs": 3,
        "=starting": 1,
        "=least": 2,
        "=least_starting": 0,
        "=kept": 4,
    }
    assert placed.starting(both) == 2
    # Alone, its own counts are the fewest.
    assert dict(placed.counted(chosen, [chosen], kept=0))["=least_starting"] == 1


def test_a_run_goes_to_the_worker_with_the_fewest_runs_however_many_start_there() -> None:
    starting = Worker({n: Run(False) for n in range(3)})
    busier = Worker({n: Run(True) for n in range(3, 7)})
    assert placed.least_busy([busier, starting], turn=0) is starting
    assert placed.least_busy([busier, starting], turn=1) is starting


def test_of_workers_with_as_many_runs_a_run_goes_to_the_one_with_fewer_starting() -> None:
    # The first of them took every tie before, whatever started there.
    starting = Worker({0: Run(False), 1: Run(True)})
    streaming = Worker({2: Run(True), 3: Run(True)})
    for turn in range(4):
        assert placed.least_busy([starting, streaming], turn) is streaming


def test_idle_workers_take_runs_in_turn() -> None:
    # At light load every run went to the first idle worker.
    one, two = Worker({}), Worker({})
    chosen = [placed.least_busy([one, two], turn) for turn in range(4)]
    assert chosen == [one, two, one, two]
