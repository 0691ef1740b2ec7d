"""A stored value that cannot be decoded sets its one thread aside and harms nothing else.

Issue 11: a tool result nested ~200 deep was stored but could not be read back, and the
failed read left a cursor open on the store's only connection: every later write failed
with "database is locked". Here the store reads every row before decoding any; a thread
with an undecodable row is quarantined (one log line, on record for operators), and other
threads, start-up, crash recovery and the writer go on. The rows are planted straight into
the database, as old data or a bug would have left them; the quarantine is the store's
contract, so it runs on both backends (the wedge is SQLite's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sqlite3
import types as pytypes
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.sessions import Session

from gateway import store as store_module
from gateway.store import (
    CommitFailedError,
    QuarantinedThreadError,
    SessionService,
)
from gateway.store.cut_off import NOTES, Ending
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import reopened
from tests.support.damage import (
    APP,
    BAD_EVENT_DATA,
    BAD_MESSAGES,
    close_read,
    commit_from_outside,
    hold_a_read_open,
    plant_event,
    plant_messages,
)
from tests.support.schema_v1 import write_v1

pytestmark = pytest.mark.unit

# Every module of the store: a frame of any of them kept alive by a cycle holds a batch.
STORE_CODE = Path(store_module.__file__).parent


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


@contextlib.asynccontextmanager
async def opened(path: str) -> AsyncIterator[SessionService]:
    service = await reopened(path)
    try:
        yield service
    finally:
        await service.close()


async def a_thread(store: SessionService, thread: str, turns: int = 2, user: str = "u") -> Session:
    session = await store.create_session(app_name=APP, user_id=user, session_id=thread)
    for turn in range(turns):
        await store.append_event(session, user_says(f"question {turn}"))
        await store.append_event(session, agent_says(f"answer {turn}"))
    return session


async def load(store: SessionService, thread: str, user: str = "u") -> Session | None:
    return await store.get_session(app_name=APP, user_id=user, session_id=thread)


# --- the wedge, and why reads now finish before anything is decoded ---------------------


async def test_a_read_left_open_no_longer_fails_the_writers_commits(db_path: str) -> None:
    """The mechanism of issue 11's outage, on a file store: a read left open on the one
    connection kept a stale snapshot there, and every later commit failed as "locked".
    Reads now run on a connection of their own, so the writer commits on regardless."""
    async with opened(db_path) as store:
        session = await a_thread(store, "t")
        cursor = await hold_a_read_open(store)
        await asyncio.to_thread(commit_from_outside, db_path)
        await store.append_event(session, user_says("again"))
        assert store.can_commit
        await close_read(store, cursor)
        session = await load(store, "t")
        assert session is not None and texts(session)[-1] == "again"


async def test_a_failed_decode_leaves_no_read_open_and_other_threads_write_on(
    db_path: str,
) -> None:
    async with opened(db_path) as store:
        await a_thread(store, "bad", turns=1)
        others = [await a_thread(store, f"other-{n}", turns=1) for n in range(5)]
        # Rows after the bad one: a decode inside the cursor would have left it open.
        plant_event(db_path, "bad", BAD_EVENT_DATA["nested 300 deep"])
        plant_event(db_path, "bad", user_says("after").model_dump_json())
        failures = []
        try:
            await load(store, "bad")
        except QuarantinedThreadError as error:
            failures.append(error)  # kept, as a reference cycle would keep it
        assert failures, "the bad thread was read without complaint"
        await asyncio.to_thread(commit_from_outside, db_path)

        await asyncio.gather(*(store.append_event(s, user_says("more")) for s in others))
        for n in range(5):
            assert texts(await load(store, f"other-{n}"))[-1] == "more"
        assert store.can_commit


# --- quarantine --------------------------------------------------------------------------

PLANTED = [("data", kind) for kind in BAD_EVENT_DATA] + [("messages", k) for k in BAD_MESSAGES]


@pytest.mark.parametrize(("column", "kind"), PLANTED, ids=[f"{c}: {k}" for c, k in PLANTED])
async def test_an_undecodable_row_quarantines_its_thread_alone(
    db: str, caplog: pytest.LogCaptureFixture, column: str, kind: str
) -> None:
    async with opened(db) as store:
        await a_thread(store, "bad")
        await a_thread(store, "good")
    if column == "data":
        seq = plant_event(db, "bad", BAD_EVENT_DATA[kind])
    else:
        seq = plant_messages(db, "bad", BAD_MESSAGES[kind])

    async with opened(db) as store:
        caplog.clear()
        with (
            caplog.at_level(logging.WARNING, "gateway.store"),
            pytest.raises(QuarantinedThreadError) as raised,
        ):
            if column == "data":
                await load(store, "bad")
            else:
                await store.thread_messages(APP, "u", "bad")
        quarantine = raised.value.quarantine
        assert (quarantine.thread_id, quarantine.seq, quarantine.column) == ("bad", seq, column)
        (line,) = caplog.messages
        assert "'bad'" in line and f"event row {seq} ({column})" in line
        assert texts(await load(store, "good"))[-1] == "answer 1"
        assert len((await store.thread_messages(APP, "u", "good"))[0]) == 4
        listed = await store.list_sessions(app_name=APP, user_id="u")
        assert [session.id for session in listed.sessions] == ["good"]

    async with opened(db) as store:
        # On record: refused at once on every path, with no decoding and no new log line.
        caplog.clear()
        with caplog.at_level(logging.WARNING, "gateway.store"):
            for read in (load(store, "bad"), store.thread_messages(APP, "u", "bad")):
                with pytest.raises(QuarantinedThreadError) as again:
                    await read
                assert again.value.quarantine == quarantine
            with pytest.raises(QuarantinedThreadError):
                await store.open_thread(APP, "u", "bad")
        assert caplog.messages == []
        (summary,) = await store.threads(APP, quarantined_only=True)
        assert summary.thread_id == "bad" and summary.quarantine == quarantine


async def test_a_thread_is_not_quarantined_for_what_another_user_asks(db: str) -> None:
    async with opened(db) as store:
        await a_thread(store, "bad", user="alice")
        plant_event(db, "bad", BAD_EVENT_DATA["invalid JSON"])
        opened_by_bob = await store.open_thread(APP, "bob", "bad")
        assert opened_by_bob.owner == "alice" and opened_by_bob.session is None
        assert await store.threads(APP, quarantined_only=True) == []


async def test_a_read_only_store_reports_a_damaged_thread_and_records_nothing(
    db: str,
) -> None:
    async with opened(db) as store:
        await a_thread(store, "bad")
    plant_messages(db, "bad", BAD_MESSAGES["invalid JSON"])
    operator = await reopened(db, read_only=True)
    try:
        with pytest.raises(QuarantinedThreadError):
            await operator.thread_messages(APP, "u", "bad")
    finally:
        await operator.close()
    async with opened(db) as store:
        assert await store.threads(APP, quarantined_only=True) == []


async def test_deleting_a_quarantined_thread_frees_its_id(db: str) -> None:
    async with opened(db) as store:
        await a_thread(store, "bad")
        plant_event(db, "bad", BAD_EVENT_DATA["a field of the wrong type"])
        with pytest.raises(QuarantinedThreadError):
            await load(store, "bad")
        await store.delete_session(app_name=APP, user_id="u", session_id="bad")
        await a_thread(store, "bad")
        assert texts(await load(store, "bad")) == [
            "question 0",
            "answer 0",
            "question 1",
            "answer 1",
        ]


async def test_crash_recovery_skips_a_quarantined_thread_and_closes_the_others(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with opened(db) as store:
        for thread in ("cut-1", "bad", "cut-2"):
            session = await store.create_session(app_name=APP, user_id="u", session_id=thread)
            await store.append_event(session, user_says("tell me a long story"))
    plant_event(db, "bad", BAD_EVENT_DATA["nested 300 deep"], run_open=True)

    async with opened(db) as store:
        with caplog.at_level(logging.WARNING, "gateway.store"):
            assert await store.close_interrupted(APP) == 2
        skipped = "thread 'bad' stays open, since the thread is quarantined"
        assert any(skipped in line for line in caplog.messages), caplog.messages
        for thread in ("cut-1", "cut-2"):
            assert texts(await load(store, thread))[-1] == NOTES[Ending.INTERRUPTED]
    async with opened(db) as store:  # and the next start-up is no different
        assert await store.close_interrupted(APP) == 0


async def test_an_old_file_with_an_undecodable_row_migrates_and_sets_the_thread_aside(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    threads = {"good": [user_says("hi"), agent_says("hello")], "bad": [user_says("x")]}
    write_v1(db_path, threads, app=APP)
    with contextlib.closing(sqlite3.connect(db_path)) as db, db:
        db.execute(
            "INSERT INTO events (session_pk, id, invocation_id, author, timestamp, data)"
            " VALUES (2, 'e-bad', 'inv', 'user', 3.0, ?)",
            (BAD_EVENT_DATA["invalid JSON"],),
        )
    with caplog.at_level(logging.WARNING, "gateway.store"):
        store = await reopened(db_path)
    try:
        assert any("'bad'" in line and "(data)" in line for line in caplog.messages)
        assert texts(await load(store, "good")) == ["hi", "hello"]
        with pytest.raises(QuarantinedThreadError):
            await load(store, "bad")
    finally:
        await store.close()


# --- a failure frees what it held, without waiting for a full collection -----------------


async def test_failures_free_what_they_held_without_a_collection(db_path: str) -> None:
    """With gc off, as ``gc.freeze()`` and few allocations make it, nothing waits for it."""
    async with opened(db_path) as store:
        await a_thread(store, "bad", turns=1)
        fresh = await a_thread(store, "t", turns=1)
        plant_event(db_path, "bad", BAD_EVENT_DATA["nested 300 deep"])
        stale = await load(store, "t")
        await store.append_event(fresh, user_says("moves the thread on"))
        assert stale is not None
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            held = [weakref.ref(stale)]
            # A write that fails alone in a shared commit, a commit that fails, a bad row.
            other = await load(store, "t")
            assert other is not None
            outcomes = await asyncio.gather(
                store.append_event(stale, user_says("stale")),
                store.append_event(other, user_says("fine")),
                return_exceptions=True,
            )
            assert isinstance(outcomes[0], StaleSessionError)
            del outcomes, stale
            cursor = await hold_a_read_open(store)
            await asyncio.to_thread(commit_from_outside, db_path)
            held.append(weakref.ref(other))
            with contextlib.suppress(CommitFailedError):
                await store.append_event(other, user_says("not stored"))
            del other
            await close_read(store, cursor)
            with contextlib.suppress(QuarantinedThreadError):
                await load(store, "bad")
            await load(store, "t")  # the database thread moves on to other work
            assert [ref() for ref in held] == [None, None]
            gc.collect()
            cycles = [
                obj
                for obj in gc.garbage
                if isinstance(obj, pytypes.FrameType)
                and Path(obj.f_code.co_filename).is_relative_to(STORE_CODE)
            ]
            assert cycles == [], [frame.f_code.co_name for frame in cycles]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
