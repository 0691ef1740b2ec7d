"""Reads run beside the writer: a read never waits for a commit in progress.

A SQLite file is read through a connection of its own (``sqlite.backend``), so a read, and
the opening of a thread the hub already has in hand (``open_thread(known=True)``), is
answered while the writer's commit waits, where it used to queue behind it in the one
connection's thread: under load, the read of the thread a browser's answer continues
waited for the commit in progress and the next one before the model could be called
(docs/first-event.md). Here another connection holds the file's write lock, so the
writer's commit waits for it, and the read must come back before that commit does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store import SessionService
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP
from tests.support.budgets import eventually, scaled
from tests.support.held_store import file_store, write_lock_held

pytestmark = pytest.mark.unit


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionService]:
    async with file_store(str(tmp_path / "threads.db")) as service:
        yield service


async def commit_waiting(store: SessionService, write: asyncio.Future[object]) -> None:
    """Returns once the writer has taken ``write`` into its commit, which waits for the lock."""
    assert store._writes.writer is not None
    writer = store._writes.writer
    await eventually(
        lambda: not writer._idle.is_set() and writer.queued() == 0,
        2,
        what="the writer took the append into a commit",
    )
    # Taken means handed to the database's thread: a read there would queue behind it.
    assert not write.done()


async def a_thread(store: SessionService, thread: str, user: str = "u") -> None:
    session = await store.create_session(app_name=APP, user_id=user, session_id=thread)
    await store.append_event(session, user_says("hello"))
    await store.append_event(session, agent_says("hi"))


async def test_a_read_comes_back_while_a_commit_waits(store: SessionService) -> None:
    await a_thread(store, "t")
    session = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert session is not None
    with write_lock_held(store.path):
        append = asyncio.ensure_future(store.append_event(session, user_says("more")))
        await commit_waiting(store, append)
        read = await asyncio.wait_for(
            store.get_session(app_name=APP, user_id="u", session_id="t"), scaled(2)
        )
        assert not append.done(), "the read waited for the commit"
        # It sees the commits finished before it, not the one still waiting.
        assert texts(read) == ["hello", "hi"]
    await append
    assert texts(await store.get_session(app_name=APP, user_id="u", session_id="t")) == [
        "hello",
        "hi",
        "more",
    ]


async def test_a_known_thread_opens_while_a_commit_waits(store: SessionService) -> None:
    await a_thread(store, "t")
    await a_thread(store, "busy")
    busy = await store.get_session(app_name=APP, user_id="u", session_id="busy")
    assert busy is not None
    before = await store.open_thread(APP, "u", "t")
    with write_lock_held(store.path):
        append = asyncio.ensure_future(store.append_event(busy, user_says("more")))
        await commit_waiting(store, append)
        opened = await asyncio.wait_for(store.open_thread(APP, "u", "t", known=True), scaled(2))
        assert not append.done(), "the thread's opening waited for the commit"
    await append
    assert opened.owner == "u" and not opened.created and opened.session is not None
    assert texts(opened.session) == ["hello", "hi"]
    # As the writer opens it: the same revision to append at, usage and log head.
    assert before.session is not None
    assert opened.session._storage_update_marker == before.session._storage_update_marker
    assert opened.usage == before.usage
    assert opened.log_head == before.log_head
    await store.append_event(opened.session, user_says("next"))


async def test_a_known_thread_not_found_so_is_opened_through_the_writer(
    store: SessionService,
) -> None:
    await a_thread(store, "theirs", user="other")
    # Gone (another tab deleted it): created again for the asker.
    created = await store.open_thread(APP, "u", "gone", known=True)
    assert created.created and created.owner == "u"
    # Another user's: its owner, and no session.
    refused = await store.open_thread(APP, "u", "theirs", known=True)
    assert refused.owner == "other" and refused.session is None
