"""The audit log's tables in the gateway's PostgreSQL database (``gateway.audit`` is the logic).

Every gateway process records into the same two tables, created with the store's schema
(``schema``), so one ``agent-gateway audit`` sees what every process did. The audit has a
connection of its own (``connection``), so recording never queues behind the store's
commits. A batch that finds its connection dropped reports ``BusyError``: the audit waits
and tries again on a new connection, as it waits out a locked SQLite file.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors

from gateway.store.errors import BusyError, StoreError
from gateway.store.postgres.connection import Connection, said
from gateway.store.urls import described

Row = tuple[Any, ...]

# In the order of ``AuditRecord.as_row`` and ``AccessRecord.as_row``.
CALL_COLUMNS = (
    "at, user_id, thread_id, run_id, tool, call_id, arguments, outcome, detail, duration_ms,"
    " executor"
)
ACCESS_COLUMNS = "at, user_id, org, via, client, door, action, thread_id, target, outcome, detail"

_INSERT = f"INSERT INTO audit ({CALL_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})"
_INSERT_ACCESS = f"INSERT INTO access ({ACCESS_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})"


class PostgresAuditTables:
    """The ``audit`` (tool calls) and ``access`` (door actions) tables of a database."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.where = described(url)
        self._conn = Connection(url, name="audit", configure=lambda _: None)

    async def open(self) -> None:
        await self._conn.open()

    async def close(self) -> None:
        await self._conn.close()

    async def insert(self, calls: list[Row], actions: list[Row]) -> None:
        try:
            await self._conn.run(lambda db: _insert_batch(db, calls, actions))
        except psycopg.OperationalError as error:
            if self._conn.dropped:
                raise BusyError(f"the connection to {self.where} was lost") from error
            raise

    async def tool_calls(self, thread: str | None, user: str | None) -> list[Row]:
        return await self._select(
            f"SELECT {CALL_COLUMNS} FROM audit WHERE (%(thread)s::text IS NULL"
            " OR thread_id = %(thread)s) AND (%(user)s::text IS NULL OR user_id = %(user)s)"
            " ORDER BY at, id",
            {"thread": thread, "user": user},
        )

    async def door_actions(
        self, thread: str | None, user: str | None, client: str | None
    ) -> list[Row]:
        return await self._select(
            f"SELECT {ACCESS_COLUMNS} FROM access WHERE (%(thread)s::text IS NULL"
            " OR thread_id = %(thread)s) AND (%(user)s::text IS NULL OR user_id = %(user)s)"
            " AND (%(client)s::text IS NULL OR client = %(client)s) ORDER BY at, id",
            {"thread": thread, "user": user, "client": client},
        )

    async def _select(self, query: str, values: dict[str, str | None]) -> list[Row]:
        def select(db: psycopg.Connection) -> list[Row]:
            try:
                return db.execute(query.encode(), values).fetchall()
            finally:
                if not db.closed:
                    db.rollback()

        try:
            return await self._conn.run(select)
        except errors.UndefinedTable:
            return []  # no gateway has opened this database yet
        except psycopg.Error as error:
            raise StoreError(
                f"cannot read the audit in {self.where}: {said(error, self._conn.url)}"
            ) from None


def _insert_batch(db: psycopg.Connection, calls: list[Row], actions: list[Row]) -> None:
    """Runs on the connection's thread: the batch's inserts and commit, or nothing."""
    try:
        with db.cursor() as cursor:
            if calls:
                cursor.executemany(_INSERT.encode(), calls)
            if actions:
                cursor.executemany(_INSERT_ACCESS.encode(), actions)
        db.commit()
    except BaseException:
        if not db.closed:
            db.rollback()
        raise
