"""A batch of writes is one SQLite transaction (``gateway.store.sqlite.transaction``): a
batch whose writes all succeed is applied with no savepoint a write; one whose write fails
for its own reasons is applied again with them, so that write alone is undone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.store.frames import LoggedFrame
from gateway.store.sqlite.transaction import commit
from gateway.store.writes import AppendFrames, Failed
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = "app"


def logged(*seqs: int) -> AppendFrames:
    frames = tuple(LoggedFrame(seq, b"{}", None, None) for seq in seqs)
    return AppendFrames(APP, "u", "t", frames)


@pytest.fixture
async def database(tmp_path: Path) -> sqlite3.Connection:
    path = str(tmp_path / "threads.db")
    store = session_store(path)
    await store.open()
    await store.create_session(app_name=APP, user_id="u", session_id="t")
    await store.close()
    return sqlite3.connect(path, isolation_level=None)


def test_a_batch_that_succeeds_takes_no_savepoint_a_write(database: sqlite3.Connection) -> None:
    statements: list[str] = []
    database.set_trace_callback(statements.append)
    assert commit(database, [logged(1, 2), logged(3)]) == [2, 3]
    assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT"
    assert not [statement for statement in statements if "SAVEPOINT" in statement]
    assert database.execute("SELECT seq FROM frames ORDER BY seq").fetchall() == [(1,), (2,), (3,)]


def test_a_write_that_fails_alone_is_undone_alone(database: sqlite3.Connection) -> None:
    commit(database, [logged(1)])
    statements: list[str] = []
    database.set_trace_callback(statements.append)
    taken, twice, after = commit(database, [logged(2), logged(1), logged(3)])
    assert (taken, after) == (2, 3)
    assert isinstance(twice, Failed) and isinstance(twice.error, sqlite3.IntegrityError)
    assert database.execute("SELECT seq FROM frames ORDER BY seq").fetchall() == [(1,), (2,), (3,)]
    # Tried without savepoints first, then again with one a write.
    assert statements.count("BEGIN IMMEDIATE") == 2
    assert statements.count("SAVEPOINT write") == 3
    assert not database.in_transaction
