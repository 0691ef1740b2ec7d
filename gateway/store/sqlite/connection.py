"""The store's long-lived SQLite connections: opened, checked, migrated, closed.

The writer's connection, in WAL mode: every write batch of a file, and every read of a
file opened read-only, is one call into aiosqlite's worker thread, not one per SQL
statement; an in-memory database, which never waits on a disk, runs on the loop instead
(``Database``). ``durability`` picks ``synchronous``: ``normal`` survives a process crash,
``full`` also survives power loss.

A file the store writes also gets a reader (``connect_reader``): a second connection, on
a thread of its own, for every read. WAL lets a reader run beside the writer, so a read
(a thread opened for a run, a reattach's frames) no longer waits in the writer's thread
for the commit in progress to finish; each read sees the commits finished before it
(``backend.SqliteBackend.read``); and a third (``connect_on_loop``), on the loop's own
thread, for the short reads a run waits on.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from functools import partial
from pathlib import Path

import aiosqlite

from gateway.store.errors import StoreError
from gateway.store.messages import EventMessages
from gateway.store.sqlite.database import Database
from gateway.store.sqlite.schema import prepare
from gateway.store.sqlite.streamed import WriterConnection
from gateway.store.sqlite.writable import unwritable_message, why_unwritable

SYNCHRONOUS: dict[str, str] = {"normal": "NORMAL", "full": "FULL"}


async def connect(
    path: str, *, durability: str, read_only: bool, memory_only: bool, messages: EventMessages
) -> Database:
    """Connects, checks the file and migrates it (recomputing what rows keep with the
    store's projection ``messages``); raises StoreError if it is unusable."""
    target, uri = path, False
    if read_only and not memory_only:
        if not os.path.exists(path):
            raise StoreError(f"{path} does not exist")
        target, uri = Path(path).absolute().as_uri() + "?mode=ro", True
    # An in-memory database is used on the loop's thread (see Database).
    # The writer's connection knows which threads hold a streamed text (``streamed``).
    conn = aiosqlite.connect(
        target,
        uri=uri,
        isolation_level=None,
        check_same_thread=not memory_only,
        factory=WriterConnection,
    )
    db = Database(conn, inline=memory_only)
    # Daemon, so a process that forgets close() still exits; the store's close() flushes first.
    conn._thread.daemon = True
    try:
        await conn
    except sqlite3.Error as error:
        if not read_only and not memory_only and (cause := why_unwritable(path)):
            raise StoreError(unwritable_message(path, cause)) from error
        raise StoreError(f"cannot open the session store {path}: {error}") from error
    try:
        await db.run(
            partial(
                prepare,
                path=path,
                synchronous=SYNCHRONOUS[durability],
                read_only=read_only,
                in_memory=memory_only,
                messages=messages,
            ),
        )
    except BaseException as error:
        await conn.close()
        if isinstance(error, sqlite3.DatabaseError):
            # A file it may not write is not damaged: say why, not "restore it from a backup".
            cause = None if read_only or memory_only else why_unwritable(path)
            if cause:
                raise StoreError(unwritable_message(path, cause)) from error
            raise StoreError(
                f"{path} is not a usable session store ({error}). It was left as it"
                " is: restore it from a backup, or move it aside to start a new one."
            ) from error
        raise
    return db


async def connect_reader(path: str) -> Database:
    """A second connection to a file the writer has opened and migrated, for reads only."""
    conn = aiosqlite.connect(path, isolation_level=None)
    conn._thread.daemon = True  # as the writer's
    try:
        await conn
    except sqlite3.Error as error:
        raise StoreError(f"cannot open the session store {path} for reading: {error}") from error
    try:
        await conn.execute("PRAGMA query_only = 1")  # a slip of code cannot write through it
    except BaseException:
        await conn.close()
        raise
    return Database(conn, inline=False)


def connect_on_loop(path: str) -> sqlite3.Connection:
    """A third connection to a file the writer has opened, for the short reads a run waits
    on, made and used on the loop's thread (``backend.SqliteBackend.read``'s ``now``).

    A read handed to the reader's thread waits for that thread to get a core and the GIL,
    then for the loop to take its answer in a turn of its own: two wake-ups, which on a
    loaded machine took far longer than the read (docs/first-event.md). A read of a file
    whose pages the process keeps warm, under WAL, never waits for the writer; so the
    connection waits for no lock either (``timeout=0``): a read it cannot take at once
    raises, and goes to the reader's thread instead.
    """
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=0)
        conn.execute("PRAGMA query_only = 1")  # as the reader: no slip of code writes here
    except sqlite3.Error as error:
        raise StoreError(f"cannot open the session store {path} for reading: {error}") from error
    return conn


async def disconnect(db: Database, *, optimize: bool) -> None:
    """Closes the connection; ``optimize`` first lets SQLite update its query statistics."""
    if optimize:
        with contextlib.suppress(sqlite3.Error):
            await db.run(lambda raw: raw.execute("PRAGMA optimize"))
    await db.conn.close()
