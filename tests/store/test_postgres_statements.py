"""What a batch of writes costs on PostgreSQL, in statements: each is a round trip, and the
gateway's CPU a story grows with their number (issue 32).

A batch commits its writes without savepoints; only a batch in which a write failed is
undone and applied again with each write at a savepoint, so the failure stays its own. An
append is one statement, what it adds to the thread index and its open calls included (two
when it merges session state); the frames of a batch's threads and their streamed texts
one, whatever their number, their cluster notices included, and their trims one. A
session loads in one statement, a page of messages in one, a thread opens in two (a new
one too), and a thread known to be there reads in one (beside the writer). A read of one
statement runs without a transaction of its own, any other in one snapshot, and a read's
statements are prepared (parsed and planned once) after a few uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial
from typing import Any, cast

import psycopg
import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from psycopg.rows import TupleRow

from gateway.store.errors import FencedError
from gateway.store.frames import LoggedFrame
from gateway.store.leases import Fence
from gateway.store.postgres.backend import open_postgres
from gateway.store.postgres.notify import CHANNEL, committed
from gateway.store.postgres.reads import (
    load_session,
    read_thread,
    thread_messages,
    thread_owner,
)
from gateway.store.postgres.snapshot import in_one_snapshot, one_statement
from gateway.store.postgres.thread_index import thread_row, thread_rows
from gateway.store.postgres.transaction import commit
from gateway.store.postgres.writes import create_if_unused
from gateway.store.progress import RunProgress
from gateway.store.thread_index import ThreadFilter, search_terms
from gateway.store.threads import OpenedThread, Usage
from gateway.store.writes import (
    NO_DELTAS,
    AppendFrames,
    CreateSession,
    Failed,
    Fenced,
    OpenThread,
    ReleaseLeases,
    TrimFrames,
    Write,
)
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.store_writes import APP, USER, appended, created, streamed

pytestmark = pytest.mark.process


class Counted(psycopg.Connection[TupleRow]):
    """A connection that keeps the statements sent through it (BEGIN and COMMIT, which
    psycopg sends itself, are not among them, but a transaction opened is)."""

    sent: list[str]

    def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
        self.sent.append(str(query).split(None, 1)[0])
        return super().execute(query, params, **options)

    def transaction(self, *args: Any, **kwargs: Any) -> Any:
        self.sent.append("BEGIN")
        return super().transaction(*args, **kwargs)


@pytest.fixture
def db(postgres: Postgres) -> Iterator[Counted]:
    with Counted.connect(postgres.fresh_database()) as conn:
        conn.sent = []
        yield conn


def framed(thread: str, *seqs: int) -> AppendFrames:
    return AppendFrames(APP, USER, thread, tuple(LoggedFrame(seq, b"{}") for seq in seqs))


def test_a_batch_that_succeeds_takes_no_savepoint_and_an_append_is_one_statement(
    db: Counted,
) -> None:
    commit(db, [created("t1"), created("t2")])
    db.sent.clear()
    results = commit(db, [appended("t1", 0, "e1"), appended("t2", 0, "e2")])
    assert results == [1, 1]
    assert "SAVEPOINT" not in db.sent
    assert len(db.sent) == 2
    stored = db.execute("SELECT count(*) FROM events").fetchone()
    assert stored == (2,)


def test_an_appends_one_statement_opens_and_closes_its_calls_and_moves_the_run(
    db: Counted,
) -> None:
    commit(db, [created("t1")])
    db.sent.clear()
    calling = dataclasses.replace(
        appended("t1", 0, "e1"),
        invocation_id="i2",
        progress=RunProgress((("c1", "find", False), ("c2", "go", True)), (), True),
    )
    answering = dataclasses.replace(
        appended("t1", 1, "e2"), invocation_id="i2", progress=RunProgress((), ("c1",), False)
    )
    assert commit(db, [calling]) == [1] and commit(db, [answering]) == [2]
    assert len(db.sent) == 2
    start, run_open = db.execute("SELECT invocation_seq, run_open FROM sessions").fetchone()
    first = db.execute("SELECT min(seq) FROM events").fetchone()
    assert (start, run_open) == (first[0], False)  # the run began at its first event
    open_calls = db.execute(
        "SELECT call_id, name, seq, invocation_seq, long_running FROM open_calls"
    ).fetchall()
    assert open_calls == [("c2", "go", first[0], first[0], True)]
    # An event that names a call twice has its calls applied in turn, after the statement.
    db.sent.clear()
    twice = dataclasses.replace(
        appended("t1", 2, "e3"), progress=RunProgress((("c3", "find", False),), ("c3",), None)
    )
    assert commit(db, [twice]) == [3]
    assert db.sent == ["WITH", "DELETE"]  # and the call's insert (``executemany``)
    assert db.execute("SELECT count(*) FROM open_calls WHERE call_id = 'c3'").fetchone() == (1,)


def test_an_append_that_merges_state_is_two_statements_and_stale_copies_are_refused(
    db: Counted,
) -> None:
    commit(db, [created("t1")])
    db.sent.clear()
    merging = dataclasses.replace(
        appended("t1", 0, "e1"), deltas={**NO_DELTAS, "session": {"step": 2}}
    )
    assert commit(db, [merging]) == [1]
    assert len(db.sent) == 2
    assert db.execute("SELECT state FROM sessions").fetchone() == ('{"step":2}',)
    # A copy loaded before the last append (by revision, or by time for one this store did
    # not load) is refused, its event not stored; a thread that is not there, too.
    by_time = dataclasses.replace(appended("t1", 0, "late"), loaded_revision=None)
    for stale in (appended("t1", 0, "old"), by_time):
        (failed,) = commit(db, [stale])
        assert isinstance(failed, Failed) and isinstance(failed.error, StaleSessionError)
    in_time = dataclasses.replace(
        appended("t1", 0, "e2"), loaded_revision=None, loaded_update_time=2.0
    )
    assert commit(db, [in_time]) == [2]
    (missing,) = commit(db, [appended("nowhere", 0, "e1")])
    assert isinstance(missing, Failed)
    assert db.execute("SELECT id FROM events ORDER BY seq").fetchall() == [("e1",), ("e2",)]


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


def test_an_append_indexes_its_words_preview_and_first_title_in_its_one_statement(
    db: Counted,
) -> None:
    commit(db, [created("t1")])
    db.sent.clear()
    asked = [{"role": "user", "content": "업무 요청 목록 화면 열어줘"}]
    answered = [{"role": "assistant", "content": "이동했습니다 MNU-3120"}]
    assert commit(db, [appended("t1", 0, "e1", asked)]) == [1]
    assert commit(db, [appended("t1", 1, "e2", answered)]) == [2]
    assert len(db.sent) == 2
    row = thread_row(db, app_name=APP, user_id=USER, session_id="t1")
    assert row is not None
    assert (row.title, row.preview) == ("업무 요청 목록 화면 열어줘", "이동했습니다 MNU-3120")
    assert row.titled_by == "first"
    # A later user message does not retitle the thread; every event's words are found.
    assert commit(db, [appended("t1", 2, "e3", [{"role": "user", "content": "다른 질문"}])])
    again = thread_row(db, app_name=APP, user_id=USER, session_id="t1")
    assert again is not None and again.title == row.title
    for query in ("목록", "MNU 3120", "다른"):
        found = thread_rows(
            db, app_name=APP, user_id=USER, listing=ThreadFilter(terms=tuple(search_terms(query)))
        )
        assert [r.thread_id for r in found] == ["t1"], query


def test_a_session_loads_in_one_statement_and_a_page_of_messages_in_one(db: Counted) -> None:
    commit(db, [created("t1")])
    said = [{"role": "user", "content": "hello"}]
    for revision in range(4):
        commit(db, [appended("t1", revision, f"e{revision}", said)])
    db.sent.clear()
    whole = load_session(db, app_name=APP, user_id=USER, session_id="t1", window=None, after=None)
    windowed = load_session(db, app_name=APP, user_id=USER, session_id="t1", window=2, after=None)
    assert whole is not None and windowed is not None
    assert [seq for seq, _ in windowed.events] == [seq for seq, _ in whole.events][-2:]
    assert len(db.sent) == 2
    db.sent.clear()
    page = thread_messages(db, app_name=APP, user_id=USER, session_id="t1", max_bytes=10**6)
    assert page is not None and page.latest == "e3" and len(page.rows) == 4
    assert page.earlier is None
    assert len(db.sent) == 1


def test_the_frames_of_a_batchs_threads_are_one_statement_and_each_thread_is_told(
    db: Counted, postgres: Postgres
) -> None:
    commit(db, [created("t1"), created("t2"), created("t3")])
    db.sent.clear()
    listener = psycopg.connect(db.info.dsn, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    try:
        batch = [framed("t1", 1, 2), appended("t3", 0, "e1"), framed("t2", 1), framed("t3", 1)]
        assert commit(db, batch) == [2, 1, 1, 1]
        assert db.sent.count("WITH") == 2  # the append, and the frames
        assert len(db.sent) == 2
        told = {notice.payload for notice in listener.notifies(timeout=scaled(5), stop_after=3)}
        assert told == {committed("t1", 2), committed("t2", 1), committed("t3", 1)}
    finally:
        listener.close()


def test_a_runs_frames_between_its_events_are_one_statement_and_one_notice(
    db: Counted, postgres: Postgres
) -> None:
    """A run's frames and events come in turns; an event neither reads nor changes the log,
    so the frames wait past it and the batch's go in one statement, its thread told once."""
    commit(db, [created("t1"), created("t2")])
    db.sent.clear()
    listener = psycopg.connect(db.info.dsn, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    try:
        batch = [
            framed("t1", 1, 2),
            appended("t1", 0, "e1"),
            framed("t1", 3),
            framed("t2", 1),
            appended("t1", 1, "e2"),
            framed("t1", 4),
        ]
        assert commit(db, batch) == [2, 1, 3, 1, 2, 4]
        assert db.sent == ["WITH", "WITH", "WITH"]  # the two events, then every frame
        told = [n.payload for n in listener.notifies(timeout=scaled(5), stop_after=2)]
        assert sorted(told) == sorted([committed("t1", 4), committed("t2", 1)])
        assert [n.payload for n in listener.notifies(timeout=0.2)] == []  # and nothing else
    finally:
        listener.close()
    logged = "SELECT s.id, f.seq FROM frames f JOIN sessions s ON s.pk = f.session_pk"
    assert sorted(db.execute(logged).fetchall()) == [("t1", n) for n in (1, 2, 3, 4)] + [("t2", 1)]
    # What does read the log still finds the frames before it: a trim, an opening's head.
    db.sent.clear()
    trim = TrimFrames(APP, USER, "t1", max_bytes=4)  # two frames of two bytes
    assert commit(db, [framed("t1", 5), appended("t1", 2, "e3"), trim]) == [5, 3, None]
    assert db.sent == ["WITH", "WITH", "WITH"]  # the event, the frames, the trim
    assert db.execute(logged + " WHERE s.id = 't1'").fetchall() == [("t1", 4), ("t1", 5)]


def test_a_trim_goes_after_the_batchs_frames_and_splits_them_no_more(db: Counted) -> None:
    """A trim keeps the newest frames that fit: applied after the frames that came after
    it as well, it keeps what it would have, or less, and the log still knows its head."""
    commit(db, [created("t1"), created("t2")])
    db.sent.clear()
    trim = TrimFrames(APP, USER, "t1", max_bytes=4)  # two frames of two bytes
    batch = [framed("t1", 1, 2, 3), trim, framed("t1", 4, 5), framed("t2", 1)]
    assert commit(db, batch) == [3, None, 5, 1]
    assert db.sent == ["WITH", "WITH"]  # the frames, then the trim
    logged = "SELECT s.id, f.seq FROM frames f JOIN sessions s ON s.pk = f.session_pk"
    assert sorted(db.execute(logged).fetchall()) == [("t1", 4), ("t1", 5), ("t2", 1)]
    # A write that reads the log finds it trimmed: the opening's head, after both.
    db.sent.clear()
    batch = [framed("t1", 6), TrimFrames(APP, USER, "t1", max_bytes=2)]
    opened = commit(db, [*batch, OpenThread(APP, USER, "t1", window=10, now=1.0)])
    assert opened[2][2] == 6 and db.sent[:2] == ["WITH", "WITH"]
    assert db.execute(logged + " WHERE s.id = 't1'").fetchall() == [("t1", 6)]


def test_the_trims_of_a_batchs_threads_are_one_statement(db: Counted) -> None:
    """A run's end trims its thread's log; a batch holds the ends of many runs, and their
    trims go in one statement. Two trims of one log keep what the smaller keeps."""
    commit(db, [created("t1"), created("t2"), created("t3")])
    commit(db, [framed("t1", 1, 2, 3), framed("t2", 1, 2, 3), framed("t3", 1, 2)])
    db.sent.clear()
    trims = [
        TrimFrames(APP, USER, "t1", max_bytes=4),  # two frames of two bytes
        TrimFrames(APP, USER, "t2", max_bytes=1),  # none fits: the newest stays
        TrimFrames(APP, USER, "t3", max_bytes=100),  # all fit
        TrimFrames(APP, USER, "t1", max_bytes=2),  # the smaller of t1's: one frame
        TrimFrames(APP, USER, "gone", max_bytes=2),  # no such thread: nothing to trim
    ]
    assert commit(db, trims) == [None] * 5
    assert db.sent == ["WITH"]
    logged = "SELECT s.id, f.seq FROM frames f JOIN sessions s ON s.pk = f.session_pk"
    assert sorted(db.execute(logged).fetchall()) == [("t1", 3), ("t2", 3), ("t3", 1), ("t3", 2)]


async def test_a_batchs_releases_are_one_statement_after_its_frames(postgres: Postgres) -> None:
    """The cluster lets go of a run's lease in the commit of its last frames: a batch's
    releases (and thread changes told) go in one statement, after the rest, which locks
    them itself, in thread order."""
    with Counted.connect(await postgres.fresh_cluster_database()) as db:
        db.sent = []
        commit(db, [created("t1"), created("t2")])
        db.execute(
            "INSERT INTO gateway_leases (thread_id, holder, user_id, run_id, expires_at)"
            " SELECT t, h, 'u', 'r', now() + interval '1 minute'"
            " FROM unnest(ARRAY['t1', 't2', 't3'], ARRAY['n', 'n', 'other']) AS l (t, h)"
        )
        db.commit()
        db.sent.clear()
        batch = [
            framed("t1", 1),
            ReleaseLeases("n", (("t1", None),)),
            framed("t2", 1),
            ReleaseLeases("n", (("t2", None), ("t3", None))),  # t3 is not n's to let go of
            ReleaseLeases("n", (), ('{"type":"released","thread":"x"}',)),
        ]
        assert commit(db, batch) == [1, ["t1"], 1, ["t2"], []]
        assert db.sent == ["WITH", "WITH"]  # the frames, the releases
        held = db.execute("SELECT thread_id, holder FROM gateway_leases").fetchall()
        assert held == [("t3", "other")]


def leased(db: Counted, threads: list[str], wanted: tuple[str, ...] = ()) -> dict[str, int]:
    """The threads' leases, held by the process ``n`` (those of ``wanted`` waited for
    elsewhere), committed; each one's epoch."""
    epochs = db.execute(
        "INSERT INTO gateway_leases (thread_id, holder, user_id, run_id, expires_at, wanted)"
        " SELECT t, 'n', 'u', 'r', now() + interval '1 minute', t = ANY(%s)"
        " FROM unnest(%s::text[]) AS t RETURNING thread_id, epoch",
        (list(wanted), threads),
    ).fetchall()
    db.commit()
    return {str(thread): int(epoch) for thread, epoch in epochs}


async def test_a_runs_end_trims_and_lets_go_of_its_lease_in_one_statement(
    postgres: Postgres,
) -> None:
    """A run's end trims its log and lets go of its lease in the commit of its last
    frames: the batch's trims and releases are one statement, after its frames. A trim
    under the lease it lets go of is applied (the statement checks the fence as the lease
    was when it began); one under a lease no longer its thread's is refused alone."""
    with Counted.connect(await postgres.fresh_cluster_database()) as db:
        db.sent = []
        commit(db, [created("t1"), created("t2")])
        epochs = leased(db, ["t1", "t2"], wanted=("t1",))
        listener = psycopg.connect(db.info.dsn, autocommit=True)
        listener.execute(f"LISTEN {CHANNEL}")
        # A live process of an earlier version (no channel of its own, no users named), to
        # which thread changes are told on the cluster's channel: the watchers' way is
        # tests/cluster/test_watchers.py's.
        listener.execute(
            "INSERT INTO gateway_nodes (node_id, pid, backend_start) SELECT 'm', pid,"
            " backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        held, lost = Fence("t1", epochs["t1"]), Fence("t2", epochs["t2"] - 1000)
        db.sent.clear()
        try:
            batch: list[Write] = [
                Fenced(held, framed("t1", 1, 2, 3)),
                Fenced(held, TrimFrames(APP, USER, "t1", max_bytes=2)),  # one frame fits
                ReleaseLeases("n", (("t1", "t1 is free"),)),
                Fenced(lost, TrimFrames(APP, USER, "t2", max_bytes=0)),
                ReleaseLeases("n", (("t2", "t2 is free"),), ("told",)),
            ]
            results = commit(db, batch)
            assert db.sent == ["WITH", "WITH"]  # the frames; the trims and the releases
            assert results[:3] == [3, None, ["t1"]] and results[4] == ["t2"]
            assert isinstance(cast(Failed, results[3]).error, FencedError)
            told = {n.payload for n in listener.notifies(timeout=scaled(5), stop_after=3)}
            committed = '{"type":"committed","thread":"t1","seq":3}'  # t1's frames, to m
            assert told == {committed, "t1 is free", "told"}  # t1's was wanted, t2's was not
        finally:
            listener.close()
        logged = "SELECT s.id, f.seq FROM frames f JOIN sessions s ON s.pk = f.session_pk"
        assert db.execute(logged).fetchall() == [("t1", 3)]
        assert db.execute("SELECT count(*) FROM gateway_leases").fetchone() == (0,)


async def test_a_runs_writes_check_their_leases_in_their_own_statements(
    postgres: Postgres,
) -> None:
    """An event, frames, a streamed text and a trim made under threads' leases (``Fenced``)
    carry the check in their own statements: a batch of them costs no statement for its
    leases, where reading and locking them took one a batch. One under a lease no longer
    its thread's is refused (``FencedError``), changes nothing and costs no savepoint; the
    rest of the batch commits."""
    with Counted.connect(await postgres.fresh_cluster_database()) as db:
        db.sent = []
        commit(db, [created("t1"), created("t2")])
        epochs = leased(db, ["t1", "t2"])
        held = {thread: Fence(thread, epoch) for thread, epoch in epochs.items()}
        lost = Fence("t2", epochs["t2"] - 1000)  # a lease t2 had before: not its own now
        db.sent.clear()
        batch: list[Write] = [
            Fenced(held["t1"], appended("t1", 0, "e1")),
            Fenced(held["t1"], framed("t1", 1, 2)),
            Fenced(held["t1"], streamed("t1", "a")),
            Fenced(lost, appended("t2", 0, "e2")),
            Fenced(lost, framed("t2", 1)),
            Fenced(lost, streamed("t2", "b")),
            Fenced(held["t2"], framed("t2", 1)),
            Fenced(held["t1"], TrimFrames(APP, USER, "t1", max_bytes=2)),
            Fenced(lost, TrimFrames(APP, USER, "t2", max_bytes=0)),
        ]
        results = commit(db, batch)
        assert db.sent == ["WITH", "WITH", "WITH", "WITH"]  # 2 events, frames and texts,
        # trims: no statement for the leases, no savepoint
        refused = [n for n, result in enumerate(results) if isinstance(result, Failed)]
        assert refused == [3, 4, 5, 8]
        assert all(isinstance(results[n], Failed) for n in refused)
        assert all(isinstance(cast(Failed, results[n]).error, FencedError) for n in refused)
        assert [results[n] for n in (0, 1, 2, 6, 7)] == [1, 2, None, 1, None]
        assert db.execute("SELECT id FROM events").fetchall() == [("e1",)]
        texts = "SELECT s.id, t.text FROM streamed_texts t JOIN sessions s ON s.pk = t.session_pk"
        assert db.execute(texts).fetchall() == [("t1", "a")]
        logged = "SELECT s.id, f.seq FROM frames f JOIN sessions s ON s.pk = f.session_pk"
        assert sorted(db.execute(logged).fetchall()) == [("t1", 2), ("t2", 1)]


def test_the_streamed_texts_of_a_batchs_threads_are_one_statement_with_its_frames(
    db: Counted, postgres: Postgres
) -> None:
    """Most of a run's batches hold frames and streamed texts: neither reads what the other
    writes, so they go in one statement, the frames' notices sent by it too."""
    commit(db, [created("t1"), created("t2"), created("t3")])
    db.sent.clear()
    listener = psycopg.connect(db.info.dsn, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    try:
        batch = [streamed("t1", "a"), framed("t1", 1), streamed("t2", "b"), streamed("t3", "c")]
        assert commit(db, batch) == [None, 1, None, None]
        assert db.sent == ["WITH"]  # the frames and the texts
        told = [n.payload for n in listener.notifies(timeout=scaled(5), stop_after=1)]
        assert told == [committed("t1", 1)]
    finally:
        listener.close()
    texts = "SELECT s.id, t.text FROM streamed_texts t JOIN sessions s ON s.pk = t.session_pk"
    assert sorted(db.execute(texts).fetchall()) == [("t1", "a"), ("t2", "b"), ("t3", "c")]
    # A thread's second text goes after its first (the later stays); the event that ends
    # the message finds its text there and takes it away; a thread not there fails alone.
    db.sent.clear()
    ended = dataclasses.replace(appended("t2", 0, "m1"), author="agent")
    batch = [streamed("t1", "ab"), streamed("t1", "abc"), streamed("t2", "bc"), ended]
    assert commit(db, batch) == [None, None, None, 1]
    assert db.sent == ["WITH", "WITH", "WITH"]  # t1's first text; its second and t2's; the end
    assert sorted(db.execute(texts).fetchall()) == [("t1", "abc"), ("t3", "c")]
    results = commit(db, [streamed("t3", "cd"), streamed("nowhere", "x")])
    assert results[0] is None and isinstance(results[1], Failed)
    # One with frames too: the text of a thread not there fails alone, the frames go in.
    results = commit(db, [framed("t1", 2), streamed("nowhere", "x"), streamed("t3", "cde")])
    assert results[0] == 2 and isinstance(results[1], Failed) and results[2] is None
    assert ("t3", "cde") in db.execute(texts).fetchall()
    assert db.execute("SELECT count(*) FROM frames").fetchone() == (2,)


def test_frames_held_back_are_there_for_a_later_write_of_their_thread(db: Counted) -> None:
    commit(db, [created("t1"), created("t2")])
    # The trim comes after t1's frames, and t2's frames wait for no one.
    trim = TrimFrames(APP, USER, "t1", max_bytes=2)  # one frame of two bytes
    assert commit(db, [framed("t1", 1, 2, 3), framed("t2", 1), trim]) == [3, 1, None]
    assert db.execute("SELECT seq FROM frames ORDER BY session_pk, seq").fetchall() == [
        (3,),
        (1,),
    ]
    # Frames of a thread that is not there fail alone; the batch's others are stored.
    results = commit(db, [framed("t2", 2), framed("nowhere", 1), framed("t1", 4)])
    assert results[0] == 2 and isinstance(results[1], Failed) and results[2] == 4


async def test_a_reads_statements_are_prepared_after_a_few_uses(postgres: Postgres) -> None:
    backend = await open_postgres(postgres.fresh_database(), durability="normal", read_only=False)
    try:
        for _ in range(8):
            assert await backend.read(partial(thread_owner, app_name=APP, session_id="t")) is None
        prepared = await backend.read(
            lambda db: db.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ("SELECT user_id FROM sessions%",),
            ).fetchone()
        )
        assert prepared == (1,)
    finally:
        await backend.close(writable=True)


def test_opening_a_thread_is_two_statements_and_a_new_one_two(db: Counted) -> None:
    commit(db, [created("t0")])
    db.sent.clear()
    (opened,) = commit(db, [OpenThread(APP, USER, "t1", window=10, now=1.0)])
    assert isinstance(opened, OpenedThread) and opened.created
    assert opened.usage == Usage(threads=2, stored_bytes=0)  # the new thread counted in
    assert len(db.sent) == 2
    commit(db, [framed("t1", 1, 2), appended("t1", 0, "e1")])
    db.sent.clear()
    (reopened,) = commit(db, [OpenThread(APP, USER, "t1", window=10, now=1.0)])
    stored, usage, head = reopened
    assert (stored.session_id, [event for _, event in stored.events], head) == ("t1", ["{}"], 2)
    assert usage.threads == 2 and usage.stored_bytes > 0
    assert len(db.sent) == 2
    # Another user learns whose the thread is, and nothing of it.
    (refused,) = commit(db, [OpenThread(APP, "intruder", "t1", window=10, now=1.0)])
    assert (refused.owner, refused.session, refused.created) == (USER, None, False)


def test_a_known_threads_read_is_one_statement_and_gives_what_opening_it_gives(
    postgres: Postgres,
) -> None:
    """The read beside the writer (``open_thread(known=True)``) is one round trip with no
    transaction around it, where BEGIN, the session, the usage, the log's head and COMMIT
    took five; it gives what the writer's opening gives."""
    with Counted.connect(postgres.fresh_database(), autocommit=True) as db:
        db.sent = []
        commit(db, [created("t0"), CreateSession(APP, "other", "theirs", NO_DELTAS, 1.0)])
        commit(db, [OpenThread(APP, USER, "t1", window=2, now=1.0)])
        said = [{"role": "user", "content": "hello"}]
        for revision in range(3):
            commit(db, [framed("t1", revision + 1), appended("t1", revision, f"e{revision}", said)])
        (opened,) = commit(db, [OpenThread(APP, USER, "t1", window=2, now=1.0)])
        db.sent.clear()
        thread = {"app_name": APP, "user_id": USER, "session_id": "t1", "window": 2}
        found = in_one_snapshot(partial(read_thread, **thread), db)
        assert db.sent == ["SELECT"]
        assert found == opened
        stored, usage, head = found
        assert (len(stored.events), usage.threads, head) == (2, 2, 3)
        assert usage.stored_bytes > 0
        # No events for a window of none; nothing of another user's thread, or of none.
        none = read_thread(db, **{**thread, "window": 0})
        assert none is not None and none[0].events == [] and none[1:] == (usage, head)
        assert read_thread(db, **{**thread, "session_id": "theirs"}) is None
        assert read_thread(db, **{**thread, "session_id": "nowhere"}) is None


async def test_a_read_of_one_statement_runs_alone_and_any_other_in_one_read_only_snapshot(
    postgres: Postgres,
) -> None:
    backend = await open_postgres(postgres.fresh_database(), durability="normal", read_only=False)

    def seen(db: psycopg.Connection) -> tuple[str, str, str]:
        isolation = db.execute("SHOW transaction_isolation").fetchone()
        read_only = db.execute("SHOW transaction_read_only").fetchone()
        assert isolation is not None and read_only is not None
        return db.info.transaction_status.name, isolation[0], read_only[0]

    try:
        assert await backend.read(seen) == ("INTRANS", "repeatable read", "on")
        alone = one_statement(lambda db: seen(db))  # marking a function marks it for good
        assert await backend.read(alone) == ("IDLE", "read committed", "on")
        # Bound to its arguments as the store calls it, a marked read still runs alone.
        assert await backend.read(partial(alone)) == ("IDLE", "read committed", "on")
        # Nothing the reader runs can write, in a transaction or not.
        for write in (partial, one_statement):
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                await backend.read(write(lambda db: db.execute("UPDATE probes SET count = 1")))
        # A read that fails leaves the reader as it was, for the next read.
        assert await backend.read(seen) == ("INTRANS", "repeatable read", "on")
    finally:
        await backend.close(writable=True)


def test_a_new_threads_creation_creates_nothing_once_anyone_has_its_id(db: Counted) -> None:
    """Another process may create the thread between the opening's first statement, which
    found no owner, and its creation: the creation sees it and leaves it alone."""
    commit(db, [CreateSession(APP, "other", "t1", NO_DELTAS, 1.0)])
    db.execute("INSERT INTO user_states VALUES (%s, %s, %s, 1.0)", (APP, USER, '{"tz":"KST"}'))
    creation = OpenThread(APP, USER, "t1", window=10, now=2.0).creation()
    assert create_if_unused(db, creation) is None
    fresh = dataclasses.replace(creation, session_id="t2")
    assert create_if_unused(db, fresh) == {"user:tz": "KST"}
    owners = db.execute("SELECT id, user_id FROM sessions ORDER BY id").fetchall()
    assert owners == [("t1", "other"), ("t2", USER)]
