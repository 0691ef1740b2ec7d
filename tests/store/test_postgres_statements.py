"""What a batch of writes costs on PostgreSQL, in statements: each is a round trip, and the
gateway's CPU a story grows with their number (issue 32).

A batch commits its writes without savepoints; only a batch in which a write failed is
undone and applied again with each write at a savepoint, so the failure stays its own. An
append is two statements, a thread's frames one, whatever their number.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from psycopg.rows import TupleRow

from gateway.store.frames import LoggedFrame
from gateway.store.postgres.transaction import commit
from gateway.store.progress import RunProgress
from gateway.store.writes import (
    NO_DELTAS,
    AppendEvent,
    AppendFrames,
    CreateSession,
    Failed,
    TrimFrames,
)
from tests.support.postgres import Postgres

pytestmark = pytest.mark.process

APP, USER = "app", "u"


class Counted(psycopg.Connection[TupleRow]):
    """A connection that keeps the statements sent through it (BEGIN and COMMIT, which
    psycopg sends itself, are not among them)."""

    sent: list[str]

    def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
        self.sent.append(str(query).split(None, 1)[0])
        return super().execute(query, params, **options)


@pytest.fixture
def db(postgres: Postgres) -> Iterator[Counted]:
    with Counted.connect(postgres.fresh_database()) as conn:
        conn.sent = []
        yield conn


def created(thread: str) -> CreateSession:
    return CreateSession(APP, USER, thread, NO_DELTAS, 1.0)


def appended(thread: str, revision: int, event: str) -> AppendEvent:
    return AppendEvent(
        app_name=APP,
        user_id=USER,
        session_id=thread,
        loaded_revision=revision,
        loaded_update_time=1.0,
        event_id=event,
        invocation_id="i1",
        author="user",
        timestamp=2.0,
        data="{}",
        messages=None,
        deltas=NO_DELTAS,
        progress=RunProgress((), (), None),
    )


def framed(thread: str, *seqs: int) -> AppendFrames:
    return AppendFrames(APP, USER, thread, tuple(LoggedFrame(seq, b"{}") for seq in seqs))


def test_a_batch_that_succeeds_takes_no_savepoint_and_an_append_is_two_statements(
    db: Counted,
) -> None:
    commit(db, [created("t1"), created("t2")])
    db.sent.clear()
    results = commit(db, [appended("t1", 0, "e1"), appended("t2", 0, "e2")])
    assert results == [1, 1]
    assert "SAVEPOINT" not in db.sent
    assert len(db.sent) == 4
    stored = db.execute("SELECT count(*) FROM events").fetchone()
    assert stored == (2,)


def test_frames_are_one_statement_whatever_their_number(db: Counted) -> None:
    commit(db, [created("t1")])
    db.sent.clear()
    assert commit(db, [framed("t1", 1, 2, 3, 4, 5)]) == [5]
    assert len(db.sent) == 1
    commit(db, [TrimFrames(APP, USER, "t1", max_bytes=4)])
    assert db.execute("SELECT seq FROM frames ORDER BY seq").fetchall() == [(4,), (5,)]
    failed = commit(db, [framed("nowhere", 1)])
    assert isinstance(failed[0], Failed)


def test_a_write_that_fails_is_undone_alone_and_the_rest_of_its_batch_commits(
    db: Counted,
) -> None:
    commit(db, [created("t1"), created("t2")])
    db.sent.clear()
    # A stale append between two good ones: the batch is applied again, with savepoints.
    results = commit(
        db, [appended("t1", 0, "e1"), appended("t2", 5, "stale"), appended("t2", 0, "e2")]
    )
    assert results[0] == 1 and results[2] == 1
    assert isinstance(results[1], Failed) and isinstance(results[1].error, StaleSessionError)
    assert db.sent.count("SAVEPOINT") == 3
    stored = db.execute("SELECT id FROM events ORDER BY seq").fetchall()
    assert stored == [("e1",), ("e2",)]
    # A frame number the log holds already fails that write alone, too.
    results = commit(db, [framed("t1", 1), framed("t1", 1), framed("t2", 1)])
    assert results[0] == 1 and isinstance(results[1], Failed) and results[2] == 1
