"""What the timeline counts of a run's placing in a worker (``GATEWAY_TIMELINE``,
``WorkerPool.run``), for ``scripts/load.py --timeline`` to line up with its first text.

A new run's start waits in its worker for the steps of the runs starting there (those that
have sent no event yet go first in the worker's loop: ``first_turn``), not for the others.
So a run's placing is counted as the runs in flight in its worker and how many of them are
starting, the fewest of each in any ready worker (what another choice would have found),
and the events its ``Start`` leaves out (the worker keeps them: ``kept``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["counted", "starting"]


class Flight(Protocol):
    """A run in flight in a worker, as the pool holds it."""

    @property
    def yielded(self) -> bool:
        """Whether the worker sent an event of the run yet."""
        ...


class Worker(Protocol):
    """A worker, as the pool holds it: its runs in flight by number."""

    @property
    def runs(self) -> Mapping[int, Flight]: ...


def starting(worker: Worker) -> int:
    """The worker's runs that have sent no event yet."""
    return sum(not run.yielded for run in worker.runs.values())


def counted(worker: Worker, ready: Sequence[Worker], kept: int) -> list[tuple[str, float]]:
    """The counts of a run just placed in ``worker`` (among it, the run itself, left out),
    ``ready`` the ready workers, ``kept`` the events its Start leaves out."""
    runs = len(worker.runs) - 1
    others = [other for other in ready if other is not worker]
    return [
        ("=runs", runs),
        ("=starting", starting(worker) - 1),
        ("=least", min([runs, *(len(other.runs) for other in others)])),
        ("=least_starting", min([starting(worker) - 1, *(starting(other) for other in others)])),
        ("=kept", kept),
    ]
