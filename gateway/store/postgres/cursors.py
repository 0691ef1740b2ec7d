"""Connections that keep a cursor a statement, so a statement run again finds its
parameters' adapters ready.

psycopg adapts a statement's parameters with a transformer that looks up a dumper for each
type it meets, and keeps it only while one cursor runs the same query again;
``Connection.execute`` opens a new cursor every call, so every statement built its
transformer anew. For an append's 24 parameters that was ~35 of ~110 µs of the client's
CPU a statement (measured here), on every write of every story. These connections run
each statement text on a cursor of its own, kept: from its second run on, its dumpers are
found, not looked up.

A kept cursor holds its last results until the statement runs again, so a caller reads a
statement's rows before running the same statement again (every caller here reads them at
once). Used for the writer's and the cluster's connections, whose results are a few rows:
a read's rows (a history page) would stay in memory until the next such read, so the
reader opens a cursor a statement, as psycopg does. Statements whose text is made at each
call would each keep a cursor: past ``KEPT`` texts the kept cursors are let go of, and
kept again from their next run.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.abc import Params, QueryNoTemplate
from psycopg.rows import TupleRow

# Statement texts a connection keeps a cursor for at most (the store runs a few dozen).
KEPT = 128


class KeptCursors(psycopg.Connection[TupleRow]):
    """A connection that runs each statement text on a cursor it keeps."""

    _kept: dict[str, psycopg.Cursor[TupleRow]]

    def execute(  # type: ignore[override]
        self,
        query: QueryNoTemplate,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool = False,
    ) -> psycopg.Cursor[TupleRow]:
        if binary or not isinstance(query, str):
            return super().execute(query, params, prepare=prepare, binary=binary)
        kept = _kept(self)
        cursor = kept.get(query)
        if cursor is None or cursor.closed:
            cursor = kept[query] = self.cursor()
        try:
            return cursor.execute(query, params, prepare=prepare)
        except psycopg.Error as error:
            raise error.with_traceback(None) from None  # as psycopg's own execute does


class AsyncKeptCursors(psycopg.AsyncConnection[TupleRow]):
    """``KeptCursors`` for an asyncio connection."""

    _kept: dict[str, psycopg.AsyncCursor[TupleRow]]

    async def execute(  # type: ignore[override]
        self,
        query: QueryNoTemplate,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool = False,
    ) -> psycopg.AsyncCursor[TupleRow]:
        if binary or not isinstance(query, str):
            return await super().execute(query, params, prepare=prepare, binary=binary)
        kept = _kept(self)
        cursor = kept.get(query)
        if cursor is None or cursor.closed:
            cursor = kept[query] = self.cursor()
        try:
            return await cursor.execute(query, params, prepare=prepare)
        except psycopg.Error as error:
            raise error.with_traceback(None) from None


def _kept(conn: Any) -> dict[str, Any]:
    """The connection's kept cursors, by statement text; emptied once ``KEPT`` are kept."""
    kept: dict[str, Any] | None = getattr(conn, "_kept", None)
    if kept is None or len(kept) >= KEPT:
        kept = conn._kept = {}
    return kept
