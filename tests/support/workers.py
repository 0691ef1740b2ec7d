"""What tests of a gateway with worker processes share (``gateway.adk.workers``): its pool,
and workers killed as a crash kills them."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable

from gateway.adk.workers import WorkerPool
from tests.support.servers import RunningGateway


def pool_of(gateway: RunningGateway) -> WorkerPool:
    assert gateway.app.hub is not None
    pool = gateway.app.hub.engine.workers
    assert pool is not None, "the gateway runs its invocations in this process"
    return pool


def killed(pids: Iterable[int]) -> None:
    """SIGKILLs the workers and returns once each is dead, not yet reaped: the pool, whose
    loop reads each worker's sentinel (``processes.watch_exit``) before it places a run
    that comes after, hands no run to one of them from then on. Without the wait a run
    could go to one whose signal was not yet delivered."""
    pids = list(pids)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:  # blocks this loop (the pool's too) for as long as a death takes
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
