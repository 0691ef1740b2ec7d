"""The store's two backends, for the tests every backend must pass (the store's contract).

The ``db`` fixture (``tests/conftest.py``) runs such a test twice: on a SQLite file of its
own and on a fresh PostgreSQL database. ``rows`` looks at what is stored from outside, over
a connection of its own, as an operator would: SQL both databases read alike.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

import psycopg

from gateway.store.urls import is_postgres

BACKENDS = ("sqlite", "postgres")


def rows(db: str, sql: str) -> list[tuple[Any, ...]]:
    """What ``sql`` reads from the store ``db``, over a connection of its own."""
    if is_postgres(db):
        with psycopg.connect(db) as conn:
            return conn.execute(sql.encode()).fetchall()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()
