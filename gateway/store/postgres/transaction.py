"""One transaction for a batch of writes, each write undone alone if it fails.

As ``sqlite.transaction``: a write that fails for its own reasons (a stale session, a
duplicate, a value PostgreSQL refuses) is undone alone at its savepoint and its error
returned; a failure of the database (the connection lost, the disk full, a read-only
server) fails the whole batch. Two processes whose batches lock the same rows in
opposite orders can deadlock; PostgreSQL then aborts one batch, which is tried again.
A connection found dropped before the batch's COMMIT was sent (the server restarted, a
proxy closed it while idle) committed nothing of it: ``ConnectionDropped`` says so, and
the backend tries the batch again once on a new connection.

A batch with writes under threads' leases (``Fenced``) first reads and locks those leases,
one statement for the batch (``writes.lease_epochs``), outside any write's savepoint so the
locks hold to the commit; each fenced write is then applied only if its epoch is current,
and fails alone (``FencedError``) if not.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import errors

from gateway.store.postgres import writes as sql
from gateway.store.writes import Failed, Write, apply, fenced_threads, unfenced

# How many times a batch aborted by a deadlock (or a serialization failure) is tried.
_ATTEMPTS = 5


class ConnectionDropped(Exception):
    """The connection was found lost before the batch's COMMIT: nothing of it is stored."""


def commit(db: psycopg.Connection, writes: Sequence[Write]) -> list[object]:
    """Applies writes in one transaction; a write that fails is undone alone and returned."""
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return _commit_once(db, writes)
        except errors.TransactionRollback:
            if attempt == _ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _commit_once(db: psycopg.Connection, writes: Sequence[Write]) -> list[object]:
    results: list[object] = []
    # A lone write needs no savepoint: if it fails, the whole transaction is its own.
    isolate = len(writes) > 1
    try:
        epochs = sql.lease_epochs(db, fenced_threads(writes))
        for write in writes:
            if isolate:
                db.execute("SAVEPOINT write")
            try:
                results.append(apply(sql, db, unfenced(write, epochs)))
            except Exception as error:
                if _cannot_commit(error):
                    raise  # not this write's fault: the whole batch fails
                if isolate:
                    db.execute("ROLLBACK TO SAVEPOINT write")
                else:
                    db.rollback()
                    return [Failed(error)]
                results.append(Failed(error))
            if isolate:
                db.execute("RELEASE SAVEPOINT write")
    except psycopg.OperationalError as error:
        if db.closed:
            raise ConnectionDropped() from error
        db.rollback()
        raise
    except BaseException:
        if not db.closed:
            db.rollback()
        raise
    try:
        db.commit()  # if the connection drops now, the batch may or may not be stored
    except BaseException:
        if not db.closed:
            db.rollback()
        raise
    return results


def _cannot_commit(error: Exception) -> bool:
    """Whether a write failed because of the database, not because of what it holds."""
    return isinstance(error, psycopg.Error) and not isinstance(
        error, psycopg.DataError | psycopg.IntegrityError
    )
