"""The thread door's verbs: a user's threads listed, searched, read, changed, deleted.

Theory of operation. The store keeps what a listing shows (``gateway.store.thread_index``);
this module makes the door's ``ThreadSummary`` of each row: the times as ISO-8601, the
metadata as an object, and the thread's state, which is the store's (a run open, calls
open) with what only this process knows on top (a run it is running now). What a thread
waits on is told by its open calls: an approval (ADK's confirmation call), one of the
agent's own long-running tools (a ``tool_result``), else a browser's tool. A thread that
is not the caller's does not exist for them: every verb answers THREAD_NOT_FOUND alike.

Every change made here is told to the user's connections (``gateway.hub.thread_news``). A
delete stops the thread's run first (``erase``, the hub's), then erases the stored thread
and its artifacts; the door audits it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from gateway.adk.engine import CONFIRMATION_CALL, Engine
from gateway.hub.refusals import store_unavailable
from gateway.hub.thread_news import ThreadNews
from gateway.store import StoreError
from gateway.store.thread_index import ThreadFilter, ThreadPatch, ThreadRow
from gateway.wire import threads as t

log = logging.getLogger(__name__)

T = TypeVar("T")


class ThreadList:
    """A user's threads as the thread door shows them."""

    def __init__(
        self,
        engine: Engine,
        news: ThreadNews,
        *,
        running: Callable[[str], bool],
        erase: Callable[[str, str], Awaitable[None]],
    ) -> None:
        self.engine = engine
        self.news = news
        # Whether this process runs a run of the thread now.
        self.running = running
        # Stops the thread's run, if any, and forgets it in memory (the hub's).
        self.erase = erase

    async def page(
        self, user_id: str, listing: ThreadFilter
    ) -> tuple[list[t.ThreadSummary], str | None]:
        """A page of the user's threads and the cursor of the next (None: the last page)."""
        rows = await self._store(
            self.engine.sessions.thread_rows(self.engine.app_name, user_id, _one_more(listing))
        )
        more = len(rows) > listing.limit
        rows = rows[: listing.limit]
        cursor = rows[-1].cursor.encode() if more and rows else None
        return [self.summary(row) for row in rows], cursor

    async def one(self, user_id: str, thread_id: str) -> t.ThreadSummary:
        row = await self._store(
            self.engine.sessions.thread_row(self.engine.app_name, user_id, thread_id)
        )
        if row is None:
            raise t.not_found(thread_id)
        return self.summary(row)

    async def summaries(self, user_id: str, thread_ids: list[str]) -> dict[str, t.ThreadSummary]:
        """Those of ``thread_ids`` the user still has, by id (for ``thread_news``)."""
        found = {}
        for thread_id in thread_ids:
            row = await self.engine.sessions.thread_row(self.engine.app_name, user_id, thread_id)
            if row is not None:
                found[thread_id] = self.summary(row)
        return found

    async def edit(self, user_id: str, thread_id: str, edit: t.ThreadEdit) -> t.ThreadSummary:
        metadata = (
            msgspec.json.encode(edit.metadata).decode() if edit.metadata is not None else None
        )
        patch = ThreadPatch(edit.title, edit.archived, edit.pinned, metadata)
        row = await self._store(
            self.engine.sessions.patch_thread(self.engine.app_name, user_id, thread_id, patch)
        )
        if row is None:
            raise t.not_found(thread_id)
        log.info("thread %s of %s edited: %s", thread_id, user_id, _named(edit))
        self.news.changed(user_id, thread_id, "updated")
        return self.summary(row)

    async def delete(self, user_id: str, thread_id: str) -> None:
        """Stops the thread's run, then erases it: events, state, log, open calls, artifacts."""
        await self.one(user_id, thread_id)
        await self.erase(user_id, thread_id)
        await self._forget_artifacts(user_id, thread_id)
        await self._store(self.engine.forget_thread(user_id, thread_id))
        log.info("thread %s of %s deleted", thread_id, user_id)
        self.news.changed(user_id, thread_id, "deleted")

    async def messages(self, user_id: str, thread_id: str) -> list[dict[str, Any]]:
        """Every stored message of the thread, oldest first (for an export)."""
        page = await self._store(self.engine.thread_page(user_id, thread_id, max_bytes=None))
        return page.messages

    def summary(self, row: ThreadRow) -> t.ThreadSummary:
        waiting = self._waiting_on(row.waiting_on)
        state: t.State = (
            "running"
            if row.run_open or self.running(row.thread_id)
            else "waiting"
            if waiting
            else "idle"
        )
        return t.ThreadSummary(
            thread_id=row.thread_id,
            title=row.title,
            created_at=t.iso(row.created_at),
            last_activity_at=t.iso(row.last_activity_at),
            preview=row.preview,
            state=state,
            waiting_on=waiting if state == "waiting" else None,
            pinned=row.pinned,
            archived=row.archived,
            metadata=_metadata(row.metadata),
        )

    def _waiting_on(self, calls: tuple[str, ...]) -> t.WaitingOn | None:
        if not calls:
            return None
        if CONFIRMATION_CALL in calls:
            return "approval"
        if all(name in self.engine.server_tools for name in calls):
            return "tool_result"
        return "browser_action"

    async def _forget_artifacts(self, user_id: str, thread_id: str) -> None:
        artifacts = self.engine.services.artifacts
        if artifacts is None:
            return
        app = self.engine.app_name
        keys = await artifacts.list_artifact_keys(
            app_name=app, user_id=user_id, session_id=thread_id
        )
        for key in keys:
            if key.startswith("user:"):
                continue  # the user's, shared by all their threads
            await artifacts.delete_artifact(
                app_name=app, user_id=user_id, session_id=thread_id, filename=key
            )

    async def _store(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except StoreError:
            raise store_unavailable() from None


def _one_more(listing: ThreadFilter) -> ThreadFilter:
    """The same listing, one row longer: whether a next page exists, without a count."""
    return ThreadFilter(listing.archived, listing.terms, listing.after, listing.limit + 1)


def _metadata(text: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _named(edit: t.ThreadEdit) -> str:
    return ", ".join(
        name
        for name in ("title", "archived", "pinned", "metadata")
        if getattr(edit, name) is not None
    )
