"""How long a test waits before it gives up, scaled to how busy the machine is.

A budget is about liveness: what a test waits for must come, and a test that waits longer
fails instead of hanging CI. The budgets were chosen on a quiet 2-core machine with the
whole machine to one test; ``scaled`` stretches them by ``SLOWDOWN``, fixed once per test
process:

- ``GATEWAY_TEST_SLOWDOWN`` if it is set (``1``: the budgets as written);
- else the machine's load per core as the process starts (another job, another engineer's
  tests), at least 1, times the share of the cores each xdist worker's test gets (two
  workers on two cores: 2).

On a quiet machine with one worker nothing changes, so no budget is looser than it was where
it was chosen. A test about speed does not belong here: it counts what happened (chunks
streamed after a cancel) or is a benchmark under scripts/.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

# Past this a budget only delays the report of a broken test.
_MOST = 10.0


def _slowdown() -> float:
    if said := os.environ.get("GATEWAY_TEST_SLOWDOWN"):
        return max(1.0, float(said))
    cores = os.cpu_count() or 1
    busy = max(1.0, os.getloadavg()[0] / cores)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    shared = max(1.0, 2 * workers / cores)
    return min(_MOST, busy * shared)


SLOWDOWN = _slowdown()


def scaled(seconds: float) -> float:
    """``seconds`` chosen on a quiet machine, on this one."""
    return seconds * SLOWDOWN


async def eventually(
    condition: Callable[[], object], seconds: float, *, what: str, every: float = 0.05
) -> None:
    """Waits until ``condition()`` holds, looking every ``every`` seconds; fails saying
    ``what`` did not happen once ``scaled(seconds)`` have passed."""
    deadline = time.monotonic() + scaled(seconds)
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(every)
