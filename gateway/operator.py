"""Operator commands over a session store: list a user's threads, export one thread.

They open the database read-only, so they are safe beside a running gateway and never
create or migrate a database by accident.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from gateway.history import Message
from gateway.store import SessionService


class ThreadNotFoundError(LookupError):
    """No thread with this id in this app of this database."""


async def list_threads(db_path: str, user: str, app_name: str = "gateway") -> list[dict[str, Any]]:
    """The user's threads, least recently updated first (the last is the latest)."""
    async with _opened(db_path) as store:
        listing = await store.list_sessions(app_name=app_name, user_id=user)
    return [
        {"threadId": session.id, "userId": session.user_id, "updatedAt": session.last_update_time}
        for session in listing.sessions
    ]


async def export_thread(db_path: str, thread_id: str, app_name: str = "gateway") -> list[Message]:
    """The whole thread as AG-UI messages, with the ids its clients saw."""
    async with _opened(db_path) as store:
        owner = await store.thread_owner(app_name, thread_id)
        if owner is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r} in app {app_name!r} of {db_path}")
        messages, _ = await store.thread_messages(app_name, owner, thread_id)
    return messages


@asynccontextmanager
async def _opened(db_path: str) -> AsyncIterator[SessionService]:
    store = SessionService(db_path, read_only=True)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
