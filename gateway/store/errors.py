"""What the store raises when it cannot do its job at all, whatever the backend.

A thread it cannot read is a ``QuarantinedThreadError`` (``quarantine``), a ``StoreError``
too, so a caller that only tells usable from unusable catches one type.
"""

from __future__ import annotations


class StoreError(Exception):
    """The database cannot be used as it is: unreadable, corrupt, foreign, too new or in use."""


class CommitFailedError(StoreError):
    """The store could not commit: nothing of this write is stored (the cause is logged)."""


class BusyError(StoreError):
    """Another writer holds the database, or its connection was just lost: try again soon."""


class FencedError(StoreError):
    """The thread's lease passed to another process: a write made under the old one is
    refused, in its own transaction, and nothing of it is stored (``leases.Fence``)."""

    def __init__(self, thread_id: str, epoch: int) -> None:
        super().__init__(
            f"thread {thread_id!r} is no longer held under lease epoch {epoch}:"
            " another process took it over"
        )
        self.thread_id = thread_id
        self.epoch = epoch
