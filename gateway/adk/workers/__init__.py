"""ADK invocations in worker processes, so one gateway uses every core (docs/multicore.md).

The main process keeps the sockets, the hub, the leases and the store; a worker runs the
invocations it is given and stores their events through the main process. ``pool`` is the
main process's side, ``worker`` the worker's, ``remote_session`` the session service a
worker's Runner has, ``messages`` and ``channel`` the pipe between them, ``errors`` what
the pool raises to its callers.
"""

from gateway.adk.workers.errors import RemoteFailure, WorkerLost, WorkersNotStarted
from gateway.adk.workers.pool import Spawn, WorkerPool, WorkerRun

__all__ = ["RemoteFailure", "Spawn", "WorkerLost", "WorkerPool", "WorkerRun", "WorkersNotStarted"]
