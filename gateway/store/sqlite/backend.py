"""The SQLite backend as the store sees it (``gateway.store.backend.Backend``).

One file, one long-lived connection for reads and writes alike, and one writing process:
``open_sqlite`` takes the file's lock (``lock``) before it connects, and ``close`` lets go
of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from gateway.config import in_memory
from gateway.store.backend import Reads
from gateway.store.messages import EventMessages
from gateway.store.sqlite import reads
from gateway.store.sqlite.connection import connect, disconnect
from gateway.store.sqlite.database import Database
from gateway.store.sqlite.lock import lock_for_writing
from gateway.store.sqlite.transaction import commit
from gateway.store.writes import Write

T = TypeVar("T")


class SqliteBackend:
    reads: Reads = reads
    shared = False  # the file's lock says so

    def __init__(self, db: Database, lock: int | None) -> None:
        self.db = db
        self._lock = lock  # the descriptor of the file's lock, while open

    async def read(self, fn: Callable[[Any], T]) -> T:
        return await self.db.run(fn)

    async def commit(self, writes: Sequence[Write]) -> list[object]:
        return await self.db.run(partial(commit, writes=writes))

    async def sole_writer(self) -> bool:
        return True  # the file's lock lets no other process write it

    async def close(self, *, writable: bool) -> None:
        try:
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
    return SqliteBackend(db, lock)


def _unlock(lock: int | None) -> None:
    if lock is not None:
        os.close(lock)  # closing the descriptor releases the flock
