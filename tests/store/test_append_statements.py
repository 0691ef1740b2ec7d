"""What an event's append costs the SQLite writer, counted: one update of its session (its
counters, bytes, preview and first title together), and a delete of a streamed text only
where the event is that text's message (``gateway.store.sqlite.streamed``), while every
promise holds: a streamed text goes with its message, after a restart too and after a
batch that failed; the quota's bytes are the rows' UTF-8 bytes.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from google.adk.sessions import Session

from gateway.store import SessionService
from gateway.store.codec import Damage
from gateway.store.sqlite.backend import SqliteBackend
from gateway.store.sqlite.transaction import commit
from gateway.store.writes import SaveStreamedText, SetAside
from tests.support.adk_events import agent_says, user_says
from tests.support.backends import APP, reopened, rows

pytestmark = pytest.mark.unit


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "threads.db")


@pytest.fixture
async def store(path: str) -> AsyncIterator[SessionService]:
    service = await reopened(path)
    yield service
    await service.close()


def backend_of(store: SessionService) -> SqliteBackend:
    backend = store._backend
    assert isinstance(backend, SqliteBackend)
    return backend


@contextlib.asynccontextmanager
async def traced(store: SessionService) -> AsyncIterator[list[str]]:
    """The statements the store's writer runs within the block."""
    seen: list[str] = []
    db = backend_of(store).db
    await db.run(lambda raw: raw.set_trace_callback(seen.append))
    try:
        yield seen
    finally:
        await store.flush()
        await db.run(lambda raw: raw.set_trace_callback(None))


def counted(seen: list[str], start: str) -> int:
    """The statements run that begin with ``start``. The trace shows a trigger's run as the
    text of the statement that fired it again, right after it: those are not counted."""
    run = [s for n, s in enumerate(seen) if n == 0 or s != seen[n - 1]]
    return sum(statement.startswith(start) for statement in run)


async def new_thread(store: SessionService, thread: str = "t") -> Session:
    return await store.create_session(app_name=APP, user_id="u", session_id=thread)


async def stream(store: SessionService, message_id: str, text: str, thread: str = "t") -> None:
    await store.save_streamed_text(
        app_name=APP,
        user_id="u",
        session_id=thread,
        invocation_id="inv",
        message_id=message_id,
        author="agent",
        text=text,
    )


def streamed(path: str) -> list[tuple[str, str]]:
    return [(m, t) for m, t in rows(path, "SELECT message_id, text FROM streamed_texts")]


async def test_only_the_streamed_messages_own_event_deletes_its_text(
    path: str, store: SessionService
) -> None:
    session = await new_thread(store)
    reply = agent_says("안녕하세요, 저는 업무 도우미입니다.")
    async with traced(store) as seen:
        await store.append_event(session, user_says("자기소개 해 주세요", messageId="m1"))
        await stream(store, reply.id, "안녕하세요, ")
        await store.append_event(session, agent_says("(생각 중)"))  # not the streamed one
        assert streamed(path) == [(reply.id, "안녕하세요, ")]
        await store.append_event(session, reply)
        await store.append_event(session, user_says("고마워요", messageId="m2"))
    assert streamed(path) == []
    assert counted(seen, "DELETE FROM streamed_texts") == 1  # 4 appends, one streamed


async def test_an_append_updates_its_session_once(path: str, store: SessionService) -> None:
    """The session's revision, run, bytes, preview and first title in one statement."""
    session = await new_thread(store)
    async with traced(store) as seen:
        await store.append_event(session, user_says("업무 요청 목록 화면 열어줘", messageId="m1"))
        await store.append_event(session, agent_says("열었습니다"))
    assert counted(seen, "UPDATE sessions") == 2
    [(title, source, preview)] = rows(path, "SELECT title, title_source, preview FROM sessions")
    assert (title, source, preview) == ("업무 요청 목록 화면 열어줘", "first", "열었습니다")


async def test_a_text_a_crash_left_is_deleted_by_its_message_after_a_restart(path: str) -> None:
    first = await reopened(path)
    session = await new_thread(first)
    reply = agent_says("안녕하세요, 저는 업무 도우미입니다.")
    await stream(first, reply.id, "안녕하세요, ")
    await first.close()  # the process stops before the message's event
    again = await reopened(path)
    try:
        session = await again.get_session(app_name=APP, user_id="u", session_id="t")
        assert session is not None and streamed(path) == [(reply.id, "안녕하세요, ")]
        await again.append_event(session, reply)
        assert streamed(path) == []
    finally:
        await again.close()


@contextlib.contextmanager
def quarantine_hidden(raw: sqlite3.Connection) -> Iterator[None]:
    """A write of a quarantine fails on the database itself while in the block."""
    raw.execute("ALTER TABLE quarantine RENAME TO hidden")
    try:
        yield
    finally:
        raw.execute("ALTER TABLE hidden RENAME TO quarantine")


async def test_a_batch_that_failed_leaves_nothing_believed_of_what_it_undid(
    path: str, store: SessionService
) -> None:
    session = await new_thread(store)
    reply = agent_says("안녕하세요")
    await stream(store, reply.id, "안녕")
    # A newer message's text, saved in a batch whose next write fails on the database: the
    # whole batch is rolled back, and the row still names the reply.
    batch = [
        SaveStreamedText(APP, "u", "t", "inv", "newer", "agent", "다음", 0.0),
        SetAside(APP, "u", "t", Damage(None, "state", "test"), 0.0),
    ]

    def failing(raw: sqlite3.Connection) -> None:
        with quarantine_hidden(raw):
            commit(raw, batch)

    with pytest.raises(sqlite3.OperationalError):
        await backend_of(store).db.run(failing)
    assert streamed(path) == [(reply.id, "안녕")]
    await store.append_event(session, reply)
    assert streamed(path) == []


async def test_the_quota_counts_the_bytes_the_rows_hold(path: str, store: SessionService) -> None:
    """Counted from the values as they are bound, not read back from the row: UTF-8 bytes,
    Hangul three each, as SQLite's ``length(CAST(... AS BLOB))`` counts them."""
    session = await new_thread(store)
    for event in (user_says("안녕하세요 👋", messageId="m1"), agent_says("hello"), agent_says("")):
        await store.append_event(session, event)
    [(kept, summed)] = rows(
        path,
        "SELECT stored_bytes, (SELECT SUM(length(CAST(data AS BLOB))"
        " + COALESCE(length(CAST(messages AS BLOB)), 0)) FROM events) FROM sessions",
    )
    assert kept == summed
    assert rows(path, "SELECT stored_bytes FROM user_usage") == [(summed,)]
    [(characters,)] = rows(
        path, "SELECT SUM(length(data) + COALESCE(length(messages), 0)) FROM events"
    )
    assert summed > characters  # the Korean text counts in bytes, not characters
