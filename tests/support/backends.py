"""The store's two backends, for the tests every backend must pass (the store's contract).

The ``db`` fixture (``tests/conftest.py``) runs such a test twice: on a SQLite file of its
own and on a fresh PostgreSQL database. ``rows`` looks at what is stored from outside, over
a connection of its own, as an operator would: SQL both databases read alike;
``record_reads`` counts what the store reads from its database; ``logged`` waits for a
frame a client was sent ahead of its commit. ``reopened`` opens a store
on a database again, as a restarted gateway does.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

import psycopg
import pytest

from gateway.store import SessionService
from gateway.store.urls import is_postgres
from tests.support.budgets import eventually
from tests.support.counting import Call, counting
from tests.support.stores import session_store

# The PostgreSQL half of a test on both starts a server: it is ``process`` (``tiers``).
BACKENDS = ("sqlite", pytest.param("postgres", marks=pytest.mark.process))

# The app whose threads a store test keeps.
APP = "gateway"


async def reopened(path: str, **options: Any) -> SessionService:
    service = session_store(path, **options)
    await service.open()
    return service


def rows(db: str, sql: str) -> list[tuple[Any, ...]]:
    """What ``sql`` reads from the store ``db``, over a connection of its own."""
    if is_postgres(db):
        with psycopg.connect(db) as conn:
            return conn.execute(sql.encode()).fetchall()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


async def logged(db: str, thread: str, seq: int) -> None:
    """Waits until the thread's log holds its frame ``seq``. Streamed text goes out ahead of
    its commit (docs/durability.md): a test that kills the gateway and means the text it saw
    to survive waits for it first."""
    sql = (
        "SELECT COALESCE(MAX(f.seq), 0) FROM frames f JOIN sessions s ON f.session_pk = s.pk"
        f" WHERE s.id = '{thread}'"
    )
    await eventually(lambda: rows(db, sql)[0][0] >= seq, 10, what=f"frame {seq} is not stored")


def record_reads(monkeypatch: pytest.MonkeyPatch, store: SessionService) -> list[Call]:
    """The store's reads from now on (each call's one argument: the function run in its
    database thread)."""
    return counting(monkeypatch, store, "_read")
