"""A thread set aside because a stored value of it cannot be decoded.

A thread with a stored value that cannot be decoded (old data, a bug) is quarantined: one
log line names it and the row, the ``quarantine`` table records it, and every later read of
it raises ``QuarantinedThreadError`` at once, without decoding. Other threads, start-up and
crash recovery go on without it. What a decoder found wrong is a ``codec.Damage``; the
service makes it a ``Quarantine`` and records it (``sqlite.writes.SetAside``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from gateway.store.errors import StoreError

if TYPE_CHECKING:
    pass

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")


@dataclasses.dataclass(frozen=True, slots=True)
class Quarantine:
    """Why a thread is set aside: which stored value of it cannot be decoded, and since when."""

    thread_id: str
    user_id: str
    seq: int | None  # the event row; None: the session's own state
    column: str  # "data" or "messages" of the event row, or "state" of the session
    reason: str  # what the decoder said, without the value, cut short
    at: float

    @property
    def where(self) -> str:
        return f"event row {self.seq} ({self.column})" if self.seq is not None else "its state"

    def describe(self) -> str:
        return (
            f"thread {self.thread_id!r:.200} of user {self.user_id!r:.200} is quarantined:"
            f" {self.where} cannot be decoded ({self.reason})"
        )

    def report(self, then: str) -> None:
        """The one warning that names the thread and the row."""
        # Each value apart, so that the log formatter cuts each on its own.
        log.warning(
            "thread %r of user %r is quarantined: %s cannot be decoded (%s); %s",
            self.thread_id,
            self.user_id,
            self.where,
            self.reason,
            then,
        )


class QuarantinedThreadError(StoreError):
    """A thread holds a stored value that cannot be decoded, so the store refuses to load it.

    The message names the thread and the row, for logs and operators; a client is told
    something it can act on instead (see ``hub``).
    """

    def __init__(self, quarantine: Quarantine) -> None:
        super().__init__(quarantine.describe())
        self.quarantine = quarantine
