"""A known thread is read at once, on the loop: a run's claim waits for no other thread.

The claim of a thread the hub has in hand (``open_thread(known=True)``: a browser's answer,
the next message) read it through the reader's thread, and under load the two wake-ups of
that hop (the reader's thread getting a core, then the loop taking its answer in a turn
of its own) were most of the claim (docs/first-event.md). A SQLite file now has a third
connection, on the loop's thread, for such reads (``SqliteBackend.read``'s ``now``); one
it cannot take at once goes to the reader's thread, so the loop never waits for a lock.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gateway.store import SessionService
from gateway.store.sqlite.backend import SqliteBackend
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP
from tests.support.held_store import file_store, write_lock_held

pytestmark = pytest.mark.unit

T = TypeVar("T")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionService]:
    async with file_store(str(tmp_path / "threads.db")) as service:
        yield service


def without_a_turn(coroutine: Coroutine[Any, Any, T]) -> T:
    """What ``coroutine`` returns, which it must do without once giving the loop a turn."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise AssertionError("it waited for a turn of the loop")


async def a_thread(store: SessionService, thread: str) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id=thread)
    await store.append_event(session, user_says("hello"))
    await store.append_event(session, agent_says("hi"))


async def test_a_known_thread_opens_without_waiting_for_another_thread(
    store: SessionService,
) -> None:
    await a_thread(store, "t")
    before = await store.open_thread(APP, "u", "t")
    # The writer holds the file (a commit in progress): a read under WAL does not wait.
    with write_lock_held(store.path):
        opened = without_a_turn(store.open_thread(APP, "u", "t", known=True))
    assert opened.owner == "u" and not opened.created and opened.session is not None
    assert texts(opened.session) == ["hello", "hi"]
    assert before.session is not None
    assert opened.session._storage_update_marker == before.session._storage_update_marker
    assert (opened.usage, opened.log_head) == (before.usage, before.log_head)
    # It sees every commit finished before it.
    await store.append_event(opened.session, user_says("next"))
    again = without_a_turn(store.open_thread(APP, "u", "t", known=True))
    assert again.session is not None and texts(again.session) == ["hello", "hi", "next"]


async def test_other_reads_still_go_to_the_readers_thread(store: SessionService) -> None:
    await a_thread(store, "t")
    backend = store._backend
    assert isinstance(backend, SqliteBackend)
    loop_thread = threading.current_thread()
    ran_on: list[threading.Thread] = []

    def read(db: sqlite3.Connection) -> int:
        ran_on.append(threading.current_thread())
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])

    assert await backend.read(read) == 2
    assert await backend.read(read, now=True) == 2
    assert ran_on[0] is not loop_thread and ran_on[1] is loop_thread


async def test_a_read_not_taken_at_once_goes_to_the_readers_thread(
    store: SessionService,
) -> None:
    await a_thread(store, "t")
    backend = store._backend
    assert isinstance(backend, SqliteBackend)
    loop_thread = threading.current_thread()
    tried: list[threading.Thread] = []

    def busy_on_the_loop(db: sqlite3.Connection) -> int:
        tried.append(threading.current_thread())
        if threading.current_thread() is loop_thread:  # as a lock SQLite cannot take at once
            raise sqlite3.OperationalError("database is locked")
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])

    read = asyncio.ensure_future(backend.read(busy_on_the_loop, now=True))
    assert await read == 2
    assert tried[0] is loop_thread and tried[1] is not loop_thread
    # The loop's connection is left out of any transaction: the next read runs there.
    assert await backend.read(lambda _: threading.current_thread(), now=True) is loop_thread
