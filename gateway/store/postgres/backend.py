"""The PostgreSQL backend as the store sees it (``gateway.store.backend.Backend``).

Two connections, each driven from a thread of its own (``connection``): the writer's,
for the group commit's batches, and the reader's, for everything else. A commit is a
round trip per statement, a few milliseconds for a batch; with one connection a
snapshot or a history page would queue behind it, while PostgreSQL lets a read see a
consistent snapshot beside a commit in progress. Every read sees one moment, whatever
other processes commit: a read of one statement by itself, on the reader's autocommit
connection, any other in a read-only transaction at REPEATABLE READ (``snapshot``). Each
statement is prepared by psycopg after its first few uses on a connection (its
``prepare_threshold``), so it is parsed and planned once, not at every use.

Every gateway process's writer holds a shared advisory lock on the database for as long as
its connection lives (a killed process's goes with its connection), so ``sole_writer`` can
count the gateways writing the database: a gateway that starts alone closes every run a
crash left open, as on SQLite; one that starts beside others leaves their runs alone.

``durability`` picks ``synchronous_commit``: ``normal`` (off) survives a crash of any
gateway process, since a commit is the server's once it returns, but a crash of the
database server may lose its last fraction of a second; ``full`` (on) waits for the
server's disk too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import psycopg
from psycopg import IsolationLevel

from gateway.store.backend import Reads
from gateway.store.errors import StoreError
from gateway.store.postgres import reads
from gateway.store.postgres.connection import SYNCHRONOUS_COMMIT, Connection, said
from gateway.store.postgres.schema import prepare
from gateway.store.postgres.snapshot import in_one_snapshot
from gateway.store.postgres.transaction import ConnectionDropped, commit
from gateway.store.urls import described
from gateway.store.writes import Write

T = TypeVar("T")

# The advisory lock (two int4 keys) every live gateway's writer holds shared.
_WRITER_LOCK = (0x61677721, 1)
# A writer never waits between two statements of a batch for long. One that does was
# stopped mid-transaction (a frozen process): its row locks, the leases' among them, would
# keep the process taking its threads over waiting; the server ends its session instead.
_IDLE_IN_TRANSACTION_MS = 2000


class PostgresBackend:
    reads: Reads = reads
    shared = True  # any number of gateway processes may write the database

    def __init__(self, url: str, reader: Connection, writer: Connection | None) -> None:
        self.where = described(url)
        self._reader = reader
        self._writer = writer

    async def read(self, fn: Callable[[Any], T], *, now: bool = False) -> T:
        # ``now`` changes nothing here: every read is a round trip to the server.
        read = partial(in_one_snapshot, fn)
        try:
            return await self._reader.run(read)
        except psycopg.OperationalError as error:
            if not self._reader.dropped:
                raise StoreError(
                    f"the session store {self.where} cannot be read:"
                    f" {said(error, self._reader.url)}"
                ) from None
        # A read changes nothing, so it is simply tried again, on a new connection.
        try:
            return await self._reader.run(read)
        except psycopg.OperationalError as error:
            raise StoreError(
                f"the session store {self.where} cannot be read: {said(error, self._reader.url)}"
            ) from None

    async def commit(self, writes: Sequence[Write]) -> list[object]:
        if self._writer is None:
            raise StoreError("the session store is read-only")
        batch = partial(commit, writes=writes)
        try:
            return await self._writer.run(batch)
        except ConnectionDropped:
            pass  # nothing of it was stored: once more, on a new connection
        try:
            return await self._writer.run(batch)
        except ConnectionDropped as dropped:
            raise StoreError(f"the connection to {self.where} was lost") from dropped.__cause__

    async def sole_writer(self) -> bool:
        (writers,) = await self.read(
            lambda db: db.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " AND classid = %s AND objid = %s AND objsubid = 2",
                _WRITER_LOCK,
            ).fetchone()
        )
        return bool(writers <= 1)

    async def close(self, *, writable: bool) -> None:
        await self._reader.close()
        if self._writer is not None:
            await self._writer.close()


async def open_postgres(url: str, *, durability: str, read_only: bool) -> PostgresBackend:
    """Connects, checks the database is ours and creates its schema if it is new."""
    where = described(url)

    def reader_settings(conn: psycopg.Connection) -> None:
        # A read's transaction, if it needs one, is REPEATABLE READ; every statement of the
        # reader's, in a transaction or not, is read-only.
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        conn.execute("SET default_transaction_read_only = on")

    def writer_settings(conn: psycopg.Connection) -> None:
        conn.execute(
            "SELECT set_config('synchronous_commit', %s, false),"
            " set_config('idle_in_transaction_session_timeout', %s, false)",
            (SYNCHRONOUS_COMMIT[durability], str(_IDLE_IN_TRANSACTION_MS)),
        )
        # Held by this connection until it ends: this process writes the database.
        conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", _WRITER_LOCK)
        conn.commit()

    writer = None
    if not read_only:
        writer = Connection(url, name="store-writer", configure=writer_settings, keep_cursors=True)
        await writer.open()
    reader = Connection(url, name="store-reader", configure=reader_settings, autocommit=True)
    try:
        if writer is not None:
            await _prepared(writer, where, read_only=False)
        await reader.open()
        if read_only:
            await _prepared(reader, where, read_only=True)
    except BaseException:
        await reader.close()
        if writer is not None:
            await writer.close()
        raise
    return PostgresBackend(url, reader, writer)


async def _prepared(conn: Connection, where: str, *, read_only: bool) -> None:
    def check(db: psycopg.Connection) -> None:
        try:
            prepare(db, where=where, read_only=read_only)
        except BaseException:
            if not db.closed:
                db.rollback()
            raise

    try:
        await conn.run(check)
    except psycopg.Error as error:
        raise StoreError(
            f"{where} is not a usable session store ({said(error, conn.url)})."
        ) from None
