"""One transaction for a batch of writes, each write undone alone if it fails.

A write that fails for its own reasons (a stale session, a duplicate) is undone alone and
its error returned; a write that fails because of the database (locked,
read-only, full, broken) fails the whole batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from gateway.store.sqlite import writes as sql
from gateway.store.writes import Failed, Write, apply


def commit(db: sqlite3.Connection, writes: Sequence[Write]) -> list[object]:
    """Applies writes in one transaction; a write that fails is undone alone and returned."""
    results: list[object] = []
    # A lone write needs no savepoint: if it fails, the whole transaction is its own.
    isolate = len(writes) > 1
    db.execute("BEGIN IMMEDIATE")
    try:
        for write in writes:
            if isolate:
                db.execute("SAVEPOINT write")
            try:
                results.append(apply(sql, db, write))
            except Exception as error:
                if _cannot_commit(error):
                    raise  # not this write's fault: the whole batch fails
                if isolate:
                    db.execute("ROLLBACK TO write")
                else:
                    db.execute("ROLLBACK")
                    return [Failed(error)]
                results.append(Failed(error))
            if isolate:
                db.execute("RELEASE write")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return results


def _cannot_commit(error: Exception) -> bool:
    """Whether a write failed because of the database (locked, read-only, full, broken)."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError
