"""One transaction for a batch of writes, each write undone alone if it fails.

A write that fails for its own reasons (a stale session, a duplicate) is undone alone and
its error returned; a write that fails because of the database (locked,
read-only, full, broken) fails the whole batch. Writes seldom fail alone, so a batch is
applied as one plain transaction first, and only when a write of it fails alone is it
applied again with a savepoint around each write (``commit``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from gateway.store.sqlite import writes as sql
from gateway.store.sqlite.streamed import unknown
from gateway.store.writes import Failed, Write, apply


def commit(db: sqlite3.Connection, writes: Sequence[Write]) -> list[object]:
    """Applies writes in one transaction; a write that fails is undone alone and returned.

    A batch is first applied without a savepoint per write: writes rarely fail alone, and
    a savepoint and its release cost two statements a write, about as much as a frame's
    insert. If one does fail, the batch is rolled back and applied again, each write in a
    savepoint of its own (a write's SQL decides from what it reads, so it does the same).
    """
    if len(writes) > 1:
        try:
            return _applied(db, writes, isolate=False)
        except _FailedAlone:
            pass
    return _applied(db, writes, isolate=True)


class _FailedAlone(Exception):
    """A write of a batch applied without savepoints failed for its own reasons."""


def _applied(db: sqlite3.Connection, writes: Sequence[Write], *, isolate: bool) -> list[object]:
    results: list[object] = []
    # A lone write needs no savepoint: if it fails, the whole transaction is its own.
    savepoints = isolate and len(writes) > 1
    db.execute("BEGIN IMMEDIATE")
    try:
        for write in writes:
            if savepoints:
                db.execute("SAVEPOINT write")
            try:
                results.append(apply(sql, db, write))
            except Exception as error:
                if _cannot_commit(error):
                    raise  # not this write's fault: the whole batch fails
                if not isolate:
                    raise _FailedAlone from None
                unknown(db)  # what the write did to the streamed texts is undone
                if savepoints:
                    db.execute("ROLLBACK TO write")
                else:
                    db.execute("ROLLBACK")
                    return [Failed(error)]
                results.append(Failed(error))
            if savepoints:
                db.execute("RELEASE write")
        db.execute("COMMIT")
    except BaseException:
        unknown(db)  # the batch's saves and deletes of streamed texts are undone
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return results


def _cannot_commit(error: Exception) -> bool:
    """Whether a write failed because of the database (locked, read-only, full, broken)."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError
