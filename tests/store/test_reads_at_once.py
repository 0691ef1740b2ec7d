"""A known thread is read at once, on the loop: a run's claim waits for no other thread.

The claim of a thread the hub has in hand (``open_thread(known=True)``: a browser's answer,
the next message) read it through the reader's thread, and under load the two wake-ups of
that hop (the reader's thread getting a core, then the loop taking its answer in a turn
of its own) were most of the claim (docs/first-event.md). A SQLite file now has a third
connection, on the loop's thread, for such reads (``SqliteBackend.read``'s ``now``); one
it cannot take at once goes to the reader's thread, so the loop never waits for a lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store import SessionService
from gateway.store.sqlite.backend import SqliteBackend
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP
from tests.support.held_store import file_store, write_lock_held
from tests.support.turns import without_a_turn

pytestmark = pytest.mark.unit


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionService]:
    async with file_store(str(tmp_path / "threads.db")) as service:
        yield service


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


class CountingEvents:
    """A read of how many events the file holds, that keeps the thread each try ran on;
    ``busy_on_the_loop``: a try on the loop's thread fails as a lock SQLite cannot take at
    once would."""

    def __init__(self, *, busy_on_the_loop: bool = False) -> None:
        self.loop_thread = threading.current_thread()
        self.busy_on_the_loop = busy_on_the_loop
        self.ran_on: list[threading.Thread] = []

    def __call__(self, db: sqlite3.Connection) -> int:
        self.ran_on.append(threading.current_thread())
        if self.busy_on_the_loop and threading.current_thread() is self.loop_thread:
            raise sqlite3.OperationalError("database is locked")
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])

    def on_the_loop(self) -> list[bool]:
        return [thread is self.loop_thread for thread in self.ran_on]


def sqlite_backend(store: SessionService) -> SqliteBackend:
    backend = store._backend
    assert isinstance(backend, SqliteBackend)
    return backend


async def test_other_reads_still_go_to_the_readers_thread(store: SessionService) -> None:
    await a_thread(store, "t")
    backend, read = sqlite_backend(store), CountingEvents()
    assert await backend.read(read) == 2
    assert await backend.read(read, now=True) == 2
    assert read.on_the_loop() == [False, True]


async def test_a_read_not_taken_at_once_goes_to_the_readers_thread(
    store: SessionService,
) -> None:
    await a_thread(store, "t")
    backend, busy = sqlite_backend(store), CountingEvents(busy_on_the_loop=True)
    assert await backend.read(busy, now=True) == 2
    assert busy.on_the_loop() == [True, False]
    # The loop's connection is left out of any transaction: the next read runs there.
    read = CountingEvents()
    assert await backend.read(read, now=True) == 2
    assert read.on_the_loop() == [True]
