"""Where the audit's records are kept: the ``audit`` (tool calls) and ``access`` (door
actions) tables of the gateway's database, behind one small seam (``AuditTables``).

Each backend has its SQL below the store, over a connection of its own: the SQLite file
(``gateway.store.sqlite.audit``; a ":memory:" gateway keeps its audit in memory), or the
PostgreSQL database every process of a cluster records into
(``gateway.store.postgres.audit``), so one ``agent-gateway audit`` sees them all. The
``--db`` value picks which (``audit_tables``).
"""

from __future__ import annotations

from typing import Any, Protocol

from gateway.store.sqlite.audit import SqliteAuditTables
from gateway.store.urls import is_postgres


class AuditError(Exception):
    """The audit cannot be read; the message says what to do."""


# One record as the INSERT binds it.
Row = tuple[Any, ...]


class AuditTables(Protocol):
    """Where the records are kept: the two tables of one database (each backend's SQL)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def insert(self, calls: list[Row], actions: list[Row]) -> None:
        """Writes a batch in one transaction, or nothing; BusyError: try again soon."""
        ...

    async def tool_calls(self, thread: str | None, user: str | None) -> list[Row]: ...

    async def door_actions(
        self, thread: str | None, user: str | None, client: str | None
    ) -> list[Row]: ...


def audit_tables(db: str, *, read_only: bool = False, durability: str = "normal") -> AuditTables:
    """The audit's tables in the database a ``--db`` value names, written as durably as the
    store is (``GATEWAY_DURABILITY``), on a SQLite file or on PostgreSQL."""
    if is_postgres(db):
        from gateway.store.postgres.audit import PostgresAuditTables

        return PostgresAuditTables(db, read_only=read_only, durability=durability)
    return SqliteAuditTables(db, read_only=read_only, durability=durability)
