"""The audit log's tables in the gateway's SQLite file (``gateway.audit`` is the logic).

The audit has its own aiosqlite connection to the store's file (WAL), so recording never
queues behind the store's commits, and writes as durably as the store (``durability``);
the two take turns for the file's write lock, which a batch of the audit meeting it
reports as ``BusyError`` for the audit to wait out. A ":memory:" gateway keeps its audit
in a memory database of its own, written on the loop as the store's is (``Database``): a
hop to aiosqlite's thread for each batch cost more CPU than its inserts.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from gateway.config import in_memory
from gateway.store.errors import BusyError, StoreError
from gateway.store.sqlite.connection import SYNCHRONOUS
from gateway.store.sqlite.database import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    arguments TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    duration_ms REAL,
    executor TEXT NOT NULL CHECK (executor IN ('server', 'client'))
);
CREATE INDEX IF NOT EXISTS audit_by_thread ON audit (thread_id, at);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit (user_id, at);
CREATE TABLE IF NOT EXISTS access (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    user_id TEXT NOT NULL,
    org TEXT,
    via TEXT NOT NULL,
    client TEXT NOT NULL,
    door TEXT NOT NULL,
    action TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS access_by_thread ON access (thread_id, at);
CREATE INDEX IF NOT EXISTS access_by_user ON access (user_id, at);
CREATE INDEX IF NOT EXISTS access_by_client ON access (client, at);
"""

CALL_COLUMNS = (
    "at, user_id, thread_id, run_id, tool, call_id, arguments, outcome, detail, duration_ms,"
    " executor"
)
ACCESS_COLUMNS = "at, user_id, org, via, client, door, action, thread_id, target, outcome, detail"
_INSERT = f"INSERT INTO audit ({CALL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_ACCESS = f"INSERT INTO access ({ACCESS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

Row = tuple[Any, ...]


class SqliteAuditTables:
    """The ``audit`` (tool calls) and ``access`` (door actions) tables of a file."""

    def __init__(self, path: str, *, read_only: bool = False, durability: str = "normal") -> None:
        self.path = path
        self.read_only = read_only
        # The store's: SQLite's default, FULL, made each batch sync the file's WAL (~5 ms on
        # a disk, with the file's write lock held), where the store's commits of the
        # threads themselves, at NORMAL, do not.
        self.synchronous = SYNCHRONOUS[durability]
        self._conn: aiosqlite.Connection | None = None

    async def open(self) -> None:
        """Connects; a writer creates the tables. Raises StoreError if there is nothing to read."""
        if self.read_only:
            if in_memory(self.path):
                raise StoreError("an in-memory gateway keeps no audit to read; pass --db <file>")
            if not os.path.exists(self.path):
                raise StoreError(f"{self.path} does not exist; pass the --db of the gateway")
            uri = Path(self.path).absolute().as_uri() + "?mode=ro"
            conn = aiosqlite.connect(uri, uri=True)
        else:
            # A memory database is written on the loop's thread (``_db``).
            conn = aiosqlite.connect(self.path, check_same_thread=not in_memory(self.path))
        # Daemon, so a process that forgets close() still exits; close() flushes first.
        conn._thread.daemon = True
        await conn
        if not self.read_only:
            if not in_memory(self.path):
                await conn.execute("PRAGMA journal_mode = WAL")
                await conn.execute(f"PRAGMA synchronous = {self.synchronous}")
                # The session store writes to the same file; wait for its lock, do not fail.
                await conn.execute("PRAGMA busy_timeout = 5000")
            await conn.executescript(_SCHEMA)
            await conn.commit()
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    async def insert(self, calls: list[Row], actions: list[Row]) -> None:
        """Writes a batch in one transaction, or nothing; BusyError if the file is locked."""
        try:
            # One trip to the database thread: the lock is never held across the busy loop.
            await self._db().run(lambda db: _insert_batch(db, calls, actions))
        except sqlite3.Error as error:
            if _locked(error):
                raise BusyError(f"{self.path} is locked by another writer") from error
            raise

    async def tool_calls(self, thread: str | None, user: str | None) -> list[Row]:
        where, values = _where(thread_id=thread, user_id=user)
        return await self._select(
            f"SELECT {CALL_COLUMNS} FROM audit {where} ORDER BY at, id", values
        )

    async def door_actions(
        self, thread: str | None, user: str | None, client: str | None
    ) -> list[Row]:
        where, values = _where(thread_id=thread, user_id=user, client=client)
        return await self._select(
            f"SELECT {ACCESS_COLUMNS} FROM access {where} ORDER BY at, id", values
        )

    async def _select(self, query: str, values: list[str]) -> list[Row]:
        try:
            async with self._db().conn.execute(query, values) as cursor:
                return [tuple(row) for row in await cursor.fetchall()]
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return []  # a gateway that never recorded one, or one from before the table
            raise StoreError(f"cannot read the audit in {self.path}: {error}") from error

    def _db(self) -> Database:
        if self._conn is None:
            raise StoreError("the audit log is not open")
        return Database(self._conn, inline=in_memory(self.path))


def _insert_batch(db: sqlite3.Connection, calls: list[Row], actions: list[Row]) -> None:
    """Runs on the database thread: the batch's inserts and commit, or nothing."""
    try:
        db.executemany(_INSERT, calls)
        db.executemany(_INSERT_ACCESS, actions)
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _locked(error: sqlite3.Error) -> bool:
    """Whether SQLite refused for another writer's lock, which goes away by itself."""
    primary = getattr(error, "sqlite_errorcode", 0) & 0xFF  # extended codes keep it low
    return primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _where(**columns: str | None) -> tuple[str, list[str]]:
    """A WHERE clause matching every column given a value."""
    given = {column: value for column, value in columns.items() if value is not None}
    clause = " AND ".join(f"{column} = ?" for column in given)
    return (f"WHERE {clause}" if clause else ""), list(given.values())
