"""What the timeline counts of a run's placing (``gateway.adk.workers.placed``): its
worker's runs and runs starting (the run itself left out), the fewest of each in any ready
worker, and the events its Start leaves out."""

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
