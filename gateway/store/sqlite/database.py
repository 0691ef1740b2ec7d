"""One aiosqlite connection whose SQL runs a batch at a time, where it costs least.

aiosqlite runs every statement as its own trip to the connection's worker thread. A store
that commits many writes together, or a read of several statements, wants one trip for the
whole batch: ``Database.run`` takes a function of the raw ``sqlite3.Connection`` and runs it
there, in one go. (aiosqlite has no public call for this; its private ``_execute`` is what
its own methods use.)

Both users of a SQLite file run their SQL this way, each over a connection of its own:
the store (``connection`` opens it, ``backend`` reads and commits through it) and the
audit's tables (``audit``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

import aiosqlite

T = TypeVar("T")


class Database:
    """Where SQL runs: aiosqlite's worker thread, or the loop for an in-memory store.

    A file's reads and commits may wait on the disk (a checkpoint, an fsync with durability
    'full'), so each batch or load is one call into aiosqlite's thread: one hop, not one per
    statement, which would cap group commit far below what SQLite sustains.

    An in-memory database never waits on anything, so the store runs it inline (its
    connection is opened with ``check_same_thread=False``). There a hop costs
    far more than the statements it carries: a wake-up of the thread and of the loop, and
    the GIL handed back and forth with the busy loop at every statement (about 0.3 ms of
    CPU per hop under load, four hops a run, against tens of microseconds of SQL).
    """

    def __init__(self, conn: aiosqlite.Connection, *, inline: bool) -> None:
        self.conn = conn
        self.inline = inline

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)``, on the connection's thread unless ``inline``."""
        raw: sqlite3.Connection = self.conn._conn
        if self.inline:
            return fn(raw)
        execute = cast(Callable[..., Awaitable[T]], self.conn._execute)
        return await execute(fn, raw)
