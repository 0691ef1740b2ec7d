"""The writer's and the cluster's connections keep a cursor a statement, so a statement run
again finds its parameters' dumpers instead of looking them up (a third of a small write's
client CPU); a statement's rows are still its own, whatever ran in between."""

from __future__ import annotations

import itertools
from typing import Any

import psycopg
import pytest
from psycopg.abc import Buffer
from psycopg.adapt import Dumper

from gateway.cluster.postgres import PostgresCluster
from gateway.store.postgres import cursors
from gateway.store.postgres.backend import open_postgres
from gateway.store.postgres.cursors import AsyncKeptCursors, KeptCursors
from tests.support.postgres import Postgres

pytestmark = pytest.mark.process


class Marker:
    """A parameter whose dumper counts how many times one was made."""

    made = itertools.count()


class _CountedDumper(Dumper):
    oid = psycopg.adapters.types["text"].oid

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        next(Marker.made)

    def dump(self, obj: Any) -> Buffer:
        return b"marked"


def _dumpers_made(run: Any) -> int:
    before = next(Marker.made)
    run()
    return next(Marker.made) - before - 1


def test_a_statement_run_again_finds_its_dumpers(postgres: Postgres) -> None:
    url = postgres.fresh_database()
    query = "SELECT %s::text, %s::int"
    for connection_class, made in ((psycopg.Connection, 3), (KeptCursors, 1)):
        with connection_class.connect(url, autocommit=True) as conn:
            conn.adapters.register_dumper(Marker, _CountedDumper)

            def thrice(conn: psycopg.Connection[Any] = conn) -> None:
                for n in range(3):
                    assert conn.execute(query, (Marker(), n)).fetchone() == ("marked", n)

            assert _dumpers_made(thrice) == made, connection_class


def test_each_statement_keeps_its_own_rows(postgres: Postgres) -> None:
    with KeptCursors.connect(postgres.fresh_database(), autocommit=True) as conn:
        first = conn.execute("SELECT generate_series(1, %s)", (3,))
        second = conn.execute("SELECT 'x' || %s", ("y",))
        assert second.fetchall() == [("xy",)]
        assert first.fetchall() == [(1,), (2,), (3,)]
        # Past the texts kept, cursors are let go of and kept anew: nothing is lost.
        for n in range(cursors.KEPT + 2):
            assert conn.execute(f"SELECT {n} + %s", (1,)).fetchone() == (n + 1,)
        assert len(conn._kept) <= cursors.KEPT


async def test_the_async_connection_keeps_them_too(postgres: Postgres) -> None:
    url = postgres.fresh_database()
    async with await AsyncKeptCursors.connect(url, autocommit=True) as conn:
        conn.adapters.register_dumper(Marker, _CountedDumper)
        before = next(Marker.made)
        for n in range(3):
            cursor = await conn.execute("SELECT %s::text, %s::int", (Marker(), n))
            assert await cursor.fetchone() == ("marked", n)
        assert next(Marker.made) - before - 1 == 1


async def test_the_stores_writer_keeps_cursors_and_its_reader_does_not(
    postgres: Postgres,
) -> None:
    """A read's rows (a history page) would stay in a kept cursor until the next such read."""
    backend = await open_postgres(postgres.fresh_database(), durability="normal", read_only=False)
    try:
        assert backend._writer is not None
        assert await backend._writer.run(lambda db: isinstance(db, KeptCursors))
        assert not await backend.read(lambda db: isinstance(db, KeptCursors))
    finally:
        await backend.close(writable=True)


async def test_the_clusters_working_connection_keeps_cursors(postgres: Postgres) -> None:
    """It takes and releases a lease a run, each one of a few statements."""
    cluster = PostgresCluster(await postgres.fresh_cluster_database())
    try:
        assert await cluster._work(lambda conn: _is_kept(conn))
    finally:
        await cluster.close()


async def _is_kept(conn: Any) -> bool:
    return isinstance(conn, AsyncKeptCursors)
