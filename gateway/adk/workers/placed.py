"""Which worker a run goes to (``least_busy``), and what the timeline counts of its placing
(``GATEWAY_TIMELINE``, ``WorkerPool.run``) for ``scripts/load.py --timeline`` to line up
with its first text.

A run goes to the ready worker with the fewest runs in flight. Of several with as few, to
the one with the fewest starting: a new run's start waits in its worker for the steps of
the runs starting there (those that have sent no event yet go first in the worker's loop:
``first_turn``), not for the others. Of several still (idle workers, at light load), to
each in turn: the first of them took every run before.

So a run's placing is counted as the runs in flight in its worker and how many of them are
starting, the fewest of each in any ready worker (what another choice would have found),
and the events its ``Start`` leaves out (the worker keeps them: ``kept``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

__all__ = ["counted", "least_busy", "starting"]


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


W = TypeVar("W", bound=Worker)


def least_busy(ready: Sequence[W], turn: int) -> W:
    """The worker of ``ready`` (one at least) with the fewest runs; of several, the one with
    the fewest starting; of several still, the ``turn``-th of them (a count of the placings:
    ties go to each in turn). Runs starting are counted on a tie alone."""
    fewest = min(len(worker.runs) for worker in ready)
    tied = [worker for worker in ready if len(worker.runs) == fewest]
    if len(tied) > 1:
        starts = [starting(worker) for worker in tied]
        least = min(starts)
        tied = [worker for worker, started in zip(tied, starts, strict=True) if started == least]
    return tied[turn % len(tied)]


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
