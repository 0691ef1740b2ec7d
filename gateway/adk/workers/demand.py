"""Where a run's invocation goes when workers start on demand (``GATEWAY_WORKERS=auto``).

Theory of operation. A worker process costs ~95 MiB idle and ~1 s of CPU to start, and a
run that crosses the pipe costs ~2% more CPU than one run in the main process
(docs/multicore.md). One user's runs gain nothing from a worker, so a lightly loaded
gateway runs every invocation itself and starts none: idle RSS is one process's. The load
that makes workers pay is runs in flight at once: while fewer than ``LOCAL_RUNS`` are (in
the main process and the workers together), a new run stays in the main process; past
that, it goes to the least busy ready worker, and none being ready yet, it stays here while
one starts. Another worker starts, one at a time, when every ready one is as busy as the
main process may be, up to one per core. Runs in flight are counted, not the loop's lag:
the count is what the pool knows exactly and a test can drive. For an agent whose runs
mostly wait on a slow model, four at once may start a worker the CPU did not need yet:
that costs memory (a worker's), never correctness.

``place`` is the whole rule, with no I/O, so a test drives it with numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

__all__ = ["LOCAL_RUNS", "Placement", "place"]

# Runs in flight at once below which the main process runs a new run's invocation itself.
LOCAL_RUNS = 4


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where the next run goes, and whether another worker should start now."""

    in_worker: bool
    start_worker: bool


def place(here: int, ready: Sequence[int], starting: bool, started: int, most: int) -> Placement:
    """``here``: runs in flight in the main process; ``ready``: runs in flight in each ready
    worker; ``starting``: whether a worker is starting; ``started``: workers started (ready
    or not); ``most``: workers at most."""
    if here + sum(ready) < LOCAL_RUNS:
        return Placement(in_worker=False, start_worker=False)
    wanted = not ready or min(ready) >= LOCAL_RUNS
    return Placement(in_worker=bool(ready), start_worker=wanted and not starting and started < most)
