"""A run's input goes ahead of its commit; everything after it is stored after it.

``SessionService.input_ahead``: ADK's runner stores a run's input (the user's message, the
browser's answer) before it calls the model, and the store used to return only once that
commit was done, so under load the model was called a commit or two after the input was
read (docs/first-event.md). Within the block the input's append returns once queued; the
session shows it at once, the next append carries the revision it makes, and the store
commits in order, so nothing after the input is ever stored without it. Here another
connection holds the file's write lock, so the input's commit waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.adk.errors._stale_session_error import StaleSessionError

from gateway.store import SessionService
from gateway.store.errors import CommitFailedError
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP
from tests.support.budgets import scaled
from tests.support.held_store import file_store, write_lock_held

pytestmark = pytest.mark.unit


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionService]:
    async with file_store(str(tmp_path / "threads.db")) as service:
        yield service


async def stored_texts(store: SessionService) -> list[str]:
    return texts(await store.get_session(app_name=APP, user_id="u", session_id="t"))


async def test_the_input_returns_queued_and_what_follows_is_stored_after_it(
    store: SessionService,
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    commits: list[asyncio.Future[object]] = []
    with write_lock_held(store.path):
        with store.input_ahead(APP, "u", "t", commits.append):
            # Returns while its commit waits for the lock: the model could be called now.
            await asyncio.wait_for(store.append_event(session, user_says("question")), scaled(2))
            (commit,) = commits
            assert not commit.done()
            assert texts(session) == ["question"]
            reply = asyncio.ensure_future(store.append_event(session, agent_says("answer")))
            await asyncio.sleep(0)
            assert not reply.done()
        assert await stored_texts(store) == []  # the reader sees only what is committed
    await reply
    assert commit.done() and commit.exception() is None
    assert await stored_texts(store) == ["question", "answer"]
    # The session's revision is the store's: it appends on as any loaded copy does.
    await store.append_event(session, user_says("more"))
    assert await stored_texts(store) == ["question", "answer", "more"]


async def test_only_the_first_append_goes_ahead_and_only_if_it_is_the_users(
    store: SessionService,
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    commits: list[asyncio.Future[object]] = []
    with store.input_ahead(APP, "u", "t", commits.append):
        await store.append_event(session, agent_says("a resumed run's first event"))
        await store.append_event(session, user_says("a later user event"))
    assert commits == []  # both were committed before they returned
    assert await stored_texts(store) == ["a resumed run's first event", "a later user event"]


async def test_an_input_whose_commit_failed_is_reported_and_nothing_after_it_is_stored(
    store: SessionService,
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    # The writer gives up on a lock after 0.1 s, not the file's 5 s.
    writer = store._backend.db  # type: ignore[union-attr]
    await writer.run(lambda db: db.execute("PRAGMA busy_timeout = 100"))
    commits: list[asyncio.Future[object]] = []
    with write_lock_held(store.path):
        with store.input_ahead(APP, "u", "t", commits.append):
            await store.append_event(session, user_says("question"))
        (commit,) = commits
        with pytest.raises(CommitFailedError):
            await asyncio.wait_for(asyncio.shield(commit), scaled(5))
    # The session counted on the input: what comes after it is refused, not stored alone.
    with pytest.raises(StaleSessionError):
        await store.append_event(session, agent_says("answer"))
    assert await stored_texts(store) == []
