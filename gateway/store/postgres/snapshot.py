"""How a read sees one moment of the database: its own transaction, or its one statement.

A read of several statements runs in a read-only transaction at REPEATABLE READ, so its
statements see one snapshot even while other processes commit: a session's row and its
events always agree. A read of one statement sees one snapshot anyway, whatever the
isolation, so it runs alone on the reader's autocommit connection: one round trip, where
BEGIN, the statement and COMMIT took three (psycopg sends each on its own). Only a read
marked ``one_statement`` runs so; any other read gets its transaction, so a read that
grows a second statement and is not unmarked still sees one moment.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import psycopg

T = TypeVar("T")
R = TypeVar("R", bound=Callable[..., Any])

_MARK = "_gateway_one_statement"


def one_statement(read: R) -> R:
    """Marks a read made of exactly one statement (it needs no transaction of its own)."""
    setattr(read, _MARK, True)
    return read


def in_one_snapshot(fn: Callable[[psycopg.Connection], T], db: psycopg.Connection) -> T:
    """``fn(db)`` seeing one moment, on an autocommit connection."""
    read = fn.func if isinstance(fn, partial) else fn  # the store binds a read's arguments
    if getattr(read, _MARK, False):
        return fn(db)
    # A COMMIT at the end, not a ROLLBACK: psycopg forgets its prepared statements at every
    # rollback, so the reads' statements would be parsed and planned anew each time
    # instead of prepared after a few uses. Only a read that raises ends in a ROLLBACK.
    with db.transaction():
        return fn(db)
