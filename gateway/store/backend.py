"""The seam between the store's logic and a database: the one ``Backend`` a store opens.

A backend is where SQL runs: its reads (functions of its own connection, returning plain
values, ``Reads``), how it commits a batch of write commands in one transaction, and
whether other processes write the same database (``shared``). Everything else (group
commit, decoding, projection, what an event does to its run, crash recovery) is above it
and the same for every backend. The seam names no backend: ``open.open_backend`` picks
one from the ``--db`` value (``urls``), and the backends import the seam, never the factory.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol, TypeVar

from gateway.store.branches import BranchTree
from gateway.store.frames import FrameLog
from gateway.store.projection import StoredMessages
from gateway.store.recovery import OpenRun
from gateway.store.rows import StoredListing, StoredSession
from gateway.store.thread_index import ThreadFilter, ThreadRow
from gateway.store.threads import ThreadSummary, Usage
from gateway.store.writes import Write

T = TypeVar("T")


class Reads(Protocol):
    """Every read of the store, each a function of the backend's connection (its module)."""

    def load_session(
        self,
        db: Any,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        window: int | None,
        after: float | None,
    ) -> StoredSession | None: ...

    def thread_messages(
        self,
        db: Any,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        max_bytes: int | None = None,
        before: int | None = None,
        limit: int | None = None,
    ) -> StoredMessages | None: ...

    def messages_from(
        self, db: Any, *, app_name: str, user_id: str, session_id: str, start: int, limit: int
    ) -> StoredMessages: ...

    def thread_summaries(
        self, db: Any, *, app_name: str, user_id: str | None, quarantined_only: bool
    ) -> list[ThreadSummary]: ...

    def list_sessions(self, db: Any, *, app_name: str, user_id: str | None) -> StoredListing: ...

    def thread_rows(
        self, db: Any, *, app_name: str, user_id: str, listing: ThreadFilter
    ) -> list[ThreadRow]: ...

    def thread_row(
        self, db: Any, *, app_name: str, user_id: str, session_id: str
    ) -> ThreadRow | None: ...

    def app_names(self, db: Any) -> list[str]: ...

    def branch_tree(
        self, db: Any, *, app_name: str, user_id: str, session_id: str
    ) -> BranchTree | None: ...

    def thread_owner(self, db: Any, *, app_name: str, session_id: str) -> str | None: ...

    def open_runs(
        self, db: Any, *, app_name: str, session_ids: Collection[str] | None = None
    ) -> list[OpenRun]: ...

    def scope_state(self, db: Any, app_name: str, user_id: str | None) -> dict[str, Any]: ...

    def log_head(self, db: Any, *, app_name: str, user_id: str, session_id: str) -> int: ...

    def read_thread(
        self, db: Any, *, app_name: str, user_id: str, session_id: str, window: int
    ) -> tuple[StoredSession, Usage, int] | None:
        """A thread of ``user_id`` as opening it gives it (``writes.OpenThread``): its
        session (``load_session`` with ``window``), the user's usage and the head of its log;
        None if the user has no such thread (another user's, or none). The writer's opening
        reads it so, and so does a read beside the writer."""
        ...

    def usage(self, db: Any, *, app_name: str, user_id: str) -> Usage: ...

    def invocation_rows(
        self, db: Any, *, app_name: str, user_id: str, session_id: str
    ) -> list[tuple[int, str]]: ...

    def run_rows(
        self, db: Any, *, app_name: str, user_id: str, session_id: str, run_id: str
    ) -> list[tuple[int, str]]: ...

    def frames_after(
        self,
        db: Any,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        after: int,
        limit: int | None = None,
    ) -> FrameLog: ...


class Backend(Protocol):
    """An open database of the store."""

    reads: Reads
    # Other processes may write it too: nothing may rest on this process owning it.
    shared: bool

    async def read(self, fn: Callable[[Any], T], *, now: bool = False) -> T:
        """``fn(connection)`` in one call, seeing what every finished commit stored;
        ``now``: a short read a run waits on, run on the loop's thread at once where the
        database lets it (a SQLite file), not handed to another thread."""
        ...

    async def commit(self, writes: Sequence[Write]) -> list[object]:
        """Applies the writes in one transaction; a write that fails alone is undone alone
        and its ``Failed`` returned in its place. Raises if the database failed."""
        ...

    async def sole_writer(self) -> bool:
        """Whether no other gateway process writes the database now: then a run left open
        was cut off by a crash, since no live process can be running it."""
        ...

    async def close(self, *, writable: bool) -> None: ...
