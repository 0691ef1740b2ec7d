"""The audit log's tables in the gateway's PostgreSQL database (``gateway.audit`` is the logic).

Every gateway process records into the same two tables, created with the store's schema
(``schema``), so one ``agent-gateway audit`` sees what every process did. The audit has a
connection of its own (``connection``), so recording never queues behind the store's
commits, and writes as durably as the store (``durability``: a record waits for the
server's disk only under ``full``, as the store's commits do). A batch that finds its
connection dropped reports ``BusyError``: the audit waits and tries again on a new
connection, as it waits out a locked SQLite file.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors

from gateway.store.errors import BusyError, StoreError
from gateway.store.postgres.connection import SYNCHRONOUS_COMMIT, Connection, said
from gateway.store.postgres.json_rows import document
from gateway.store.urls import described

Row = tuple[Any, ...]

# In the order of ``AuditRecord.as_row`` and ``AccessRecord.as_row``.
CALL_COLUMNS = (
    "at, user_id, thread_id, run_id, tool, call_id, arguments, outcome, detail, duration_ms,"
    " executor"
)
ACCESS_COLUMNS = "at, user_id, org, via, client, door, action, thread_id, target, outcome, detail"

# Each column's type, in the same order: a batch's rows go in as one JSON array of rows,
# each an array of its values (``json_rows``): as an array a column, psycopg dumped each
# of a batch's values in Python.
_CALL_TYPES = ("float8", *["text"] * 8, "float8", "text")
_ACCESS_TYPES = ("float8", *["text"] * 10)


def _unnested(types: tuple[str, ...]) -> str:
    """The rows of a JSON array of rows (a ``%s`` placeholder), their values of these types."""
    values = ", ".join(f"(r->>{number})::{kind}" for number, kind in enumerate(types))
    return f"SELECT {values} FROM json_array_elements(%s::json) AS r"


# A batch of both tables in one statement, so one round trip and its own transaction
# (autocommit), where BEGIN, a pipeline of inserts a row and COMMIT took a round trip each.
_INSERT = (
    f"WITH calls AS (INSERT INTO audit ({CALL_COLUMNS}) {_unnested(_CALL_TYPES)})"
    f" INSERT INTO access ({ACCESS_COLUMNS}) {_unnested(_ACCESS_TYPES)}"
)


class PostgresAuditTables:
    """The ``audit`` (tool calls) and ``access`` (door actions) tables of a database."""

    def __init__(self, url: str, *, read_only: bool = False, durability: str = "normal") -> None:
        self.where = described(url)
        synchronous = SYNCHRONOUS_COMMIT[durability]

        def configure(conn: psycopg.Connection) -> None:
            # Left on (the server's default), each batch waited for a WAL flush the store's
            # own commits, at ``normal``, do not wait for.
            conn.execute("SELECT set_config('synchronous_commit', %s, false)", (synchronous,))

        self._conn = Connection(
            url, name="audit", configure=configure, autocommit=True, keep_cursors=True
        )

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
            return db.execute(query.encode(), values).fetchall()

        try:
            return await self._conn.run(select)
        except errors.UndefinedTable:
            return []  # no gateway has opened this database yet
        except psycopg.Error as error:
            raise StoreError(
                f"cannot read the audit in {self.where}: {said(error, self._conn.url)}"
            ) from None


def _insert_batch(db: psycopg.Connection, calls: list[Row], actions: list[Row]) -> None:
    """Runs on the connection's thread: the batch, all of it or nothing (one statement)."""
    # The text, not its bytes: the connection keeps a cursor a text (``cursors``), where
    # bytes made a cursor at every batch.
    db.execute(_INSERT, (document(calls), document(actions)))
