"""A thread's event log as the store keeps it: numbered frames, and a read after a cursor.

Every event the hub sends a thread's watchers is a frame of the thread's log, numbered
1, 2, 3... by the one process that runs the thread (``gateway.hub.eventlog`` gives the
numbers). The store keeps the newest ``GATEWAY_CURSOR_BYTES`` of each log; a reader that
asks for frames after a cursor learns from ``FrameLog.oldest`` whether the log still
reaches back that far. What a frame is (AG-UI JSON) is the hub's business; the store
keeps its bytes and who may be shown it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class LoggedFrame:
    """One frame of a thread's log.

    ``only_for``: a client instance, the only one a replay may show it to (a client tool's
    live call, which only the run's executor executes; "" when that executor was no
    instance, so no replay shows it). ``not_for``: an instance a replay leaves it out for
    (the user's own message and results, which the executor sent itself).
    """

    seq: int
    data: bytes
    only_for: str | None = None
    not_for: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class FrameLog:
    """The frames of a thread after a cursor, oldest first, and where the log stands:
    ``oldest`` the first frame it still keeps (None: it keeps none), ``head`` its last
    (0: none was ever written)."""

    frames: list[LoggedFrame]
    oldest: int | None
    head: int
