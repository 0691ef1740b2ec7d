"""What the store answers about threads: one opened for a run, one in a listing, a user's usage."""

from __future__ import annotations

import dataclasses

from google.adk.sessions.session import Session

from gateway.store.quarantine import Quarantine


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """What one user's threads hold: how many, and their stored events in bytes."""

    threads: int = 0
    stored_bytes: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class OpenedThread:
    """Whose a thread is and, for its owner, its session; ``created`` if it was new.

    ``usage`` is the asker's, the new thread counted in; ``log_head`` the number of the
    last frame of the thread's event log (0: none yet).
    """

    owner: str
    session: Session | None
    created: bool
    usage: Usage = Usage()
    log_head: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One thread in a listing: whose it is, when it last changed, and its quarantine if any."""

    thread_id: str
    user_id: str
    updated_at: float
    quarantine: Quarantine | None
