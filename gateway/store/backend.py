"""The seam between the store's logic and a database: the one ``Backend`` a store opens.

A backend is where SQL runs: its reads (functions of its own connection, returning plain
values, ``Reads``), how it commits a batch of write commands in one transaction, and
whether other processes write the same database (``shared``). Everything else (group
commit, decoding, projection, what an event does to its run, crash recovery) is above it
and the same for every backend. ``open_backend`` picks one from the ``--db`` value: a
``postgresql://`` (or ``postgres://``) URL is PostgreSQL, anything else a SQLite file.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol, TypeVar

from gateway.store.errors import StoreError
from gateway.store.frames import FrameLog
from gateway.store.projection import StoredMessages
from gateway.store.recovery import OpenRun
from gateway.store.rows import StoredListing, StoredSession
from gateway.store.threads import ThreadSummary
from gateway.store.writes import Write

T = TypeVar("T")

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(db: str) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database rather than a SQLite file."""
    return db.startswith(_POSTGRES_SCHEMES)


def described(db: str) -> str:
    """The database a ``--db`` value names, for people: a URL without its password or query."""
    if not is_postgres(db):
        return db
    try:
        parts = urllib.parse.urlsplit(db)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "postgresql://(a URL that cannot be parsed)"
    user = f"{parts.username}@" if parts.username else ""
    return f"postgresql://{user}{host}{port}{parts.path}"


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

    def thread_summaries(
        self, db: Any, *, app_name: str, user_id: str | None, quarantined_only: bool
    ) -> list[ThreadSummary]: ...

    def list_sessions(self, db: Any, *, app_name: str, user_id: str | None) -> StoredListing: ...

    def app_names(self, db: Any) -> list[str]: ...

    def thread_owner(self, db: Any, *, app_name: str, session_id: str) -> str | None: ...

    def open_runs(
        self, db: Any, *, app_name: str, session_ids: Collection[str] | None = None
    ) -> list[OpenRun]: ...

    def scope_state(self, db: Any, app_name: str, user_id: str | None) -> dict[str, Any]: ...

    def log_head(self, db: Any, *, app_name: str, user_id: str, session_id: str) -> int: ...

    def invocation_rows(
        self, db: Any, *, app_name: str, user_id: str, session_id: str
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

    async def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(connection)`` in one call, seeing what every finished commit stored."""
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


async def open_backend(db: str, *, durability: str, read_only: bool) -> Backend:
    """Connects to the database ``db`` names, checked and brought up to date.

    Raises ``StoreError`` with a sentence (never a password) if it cannot be used.
    """
    if is_postgres(db):
        try:
            from gateway.store.postgres.backend import open_postgres
        except ImportError:
            raise StoreError(
                "--db names a PostgreSQL database, but psycopg is not installed:"
                " install agent-gateway[postgres]."
            ) from None

        return await open_postgres(db, durability=durability, read_only=read_only)
    from gateway.store.sqlite.backend import open_sqlite

    return await open_sqlite(db, durability=durability, read_only=read_only)
