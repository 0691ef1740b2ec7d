"""The SQLite backend as the store sees it (``gateway.store.backend.Backend``).

One file and one writing process: ``open_sqlite`` takes the file's lock (``lock``) before
it connects, and ``close`` lets go of it. The writer's connection commits; a file the
store writes is read through a second connection, the reader (``connection``), so that a
read never queues behind a commit in the writer's thread. Each read there is one
transaction: its statements see one moment, as they did when the writer's thread ran
them between commits. A short read a run waits on (``read``'s ``now``: the thread a claim
opens) runs on a third connection, on the loop's thread, at once: no hop to the reader's
thread and back. A file opened read-only, or a database in memory, has the one
connection for both.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from gateway.config import in_memory
from gateway.store.backend import Reads
from gateway.store.messages import EventMessages
from gateway.store.sqlite import reads
from gateway.store.sqlite.connection import (
    connect,
    connect_on_loop,
    connect_reader,
    disconnect,
)
from gateway.store.sqlite.database import Database
from gateway.store.sqlite.lock import lock_for_writing
from gateway.store.sqlite.transaction import commit
from gateway.store.writes import Write

T = TypeVar("T")


class SqliteBackend:
    reads: Reads = reads
    shared = False  # the file's lock says so

    def __init__(
        self,
        db: Database,
        lock: int | None,
        reader: Database | None = None,
        on_loop: sqlite3.Connection | None = None,
    ) -> None:
        self.db = db
        self._lock = lock  # the descriptor of the file's lock, while open
        self._reader = reader
        self._on_loop = on_loop  # ``connect_on_loop``: the reads ``now`` asks for

    async def read(self, fn: Callable[[Any], T], *, now: bool = False) -> T:
        if self._reader is None:
            return await self.db.run(fn)
        if now and self._on_loop is not None:
            try:
                return in_one_snapshot(fn, self._on_loop)
            except sqlite3.OperationalError:
                pass  # not at once (busy): the reader's thread may wait, the loop may not
        return await self._reader.run(partial(in_one_snapshot, fn))

    async def commit(self, writes: Sequence[Write]) -> list[object]:
        return await self.db.run(partial(commit, writes=writes))

    async def sole_writer(self) -> bool:
        return True  # the file's lock lets no other process write it

    async def close(self, *, writable: bool) -> None:
        try:
            if self._on_loop is not None:
                on_loop, self._on_loop = self._on_loop, None
                on_loop.close()
            if self._reader is not None:
                reader, self._reader = self._reader, None
                await disconnect(reader, optimize=False)
            await disconnect(self.db, optimize=writable)
        finally:
            _unlock(self._lock)
            self._lock = None


async def open_sqlite(
    path: str, *, durability: str, read_only: bool, messages: EventMessages
) -> SqliteBackend:
    memory_only = in_memory(path)
    lock = lock_for_writing(path) if not read_only and not memory_only else None
    try:
        db = await connect(
            path,
            durability=durability,
            read_only=read_only,
            memory_only=memory_only,
            messages=messages,
        )
    except BaseException:
        _unlock(lock)
        raise
    reader = on_loop = None
    if not read_only and not memory_only:
        try:
            reader = await connect_reader(path)
            on_loop = connect_on_loop(path)
        except BaseException:
            if reader is not None:
                await disconnect(reader, optimize=False)
            await disconnect(db, optimize=False)
            _unlock(lock)
            raise
    return SqliteBackend(db, lock, reader, on_loop)


def in_one_snapshot(fn: Callable[[sqlite3.Connection], T], db: sqlite3.Connection) -> T:
    """``fn(db)`` in one read transaction, which sees the commits finished before it began."""
    db.execute("BEGIN")
    try:
        return fn(db)
    finally:
        if db.in_transaction:  # a read changes nothing: COMMIT and ROLLBACK are the same
            db.execute("COMMIT")


def _unlock(lock: int | None) -> None:
    if lock is not None:
        os.close(lock)  # closing the descriptor releases the flock
