"""Operator commands over a session store: list threads, export one thread.

They open the database read-only, so they are safe beside a running gateway and never
create or migrate a database by accident.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from gateway.store import SessionService, ThreadSummary
from gateway.store.messages import Message
from gateway.store.urls import described
from gateway.translate.history import event_messages


class ThreadNotFoundError(LookupError):
    """No thread with this id in this app of this database."""


class AppNotFoundError(LookupError):
    """The database has no threads of this App, or several Apps and none was named."""


async def list_threads(
    db_path: str, user: str | None, app_name: str | None = None, *, quarantined: bool = False
) -> list[dict[str, Any]]:
    """A user's threads (everyone's if None), least recently updated first (the last is the latest).

    ``app_name`` may be left out when the database holds one App's threads.
    ``quarantined`` keeps only the threads the gateway set aside, each with why.
    """
    async with _opened(db_path) as store:
        app_name = await _app(store, app_name, db_path)
        threads = await store.threads(app_name, user_id=user, quarantined_only=quarantined)
    return [_summary(thread) for thread in threads]


def _summary(thread: ThreadSummary) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "threadId": thread.thread_id,
        "userId": thread.user_id,
        "updatedAt": thread.updated_at,
    }
    if (quarantine := thread.quarantine) is not None:
        summary["quarantined"] = {
            "since": quarantine.at,
            "eventRow": quarantine.seq,
            "column": quarantine.column,
            "reason": quarantine.reason,
        }
    return summary


async def export_thread(db_path: str, thread_id: str, app_name: str | None = None) -> list[Message]:
    """The whole thread as AG-UI messages, with the ids its clients saw.

    A quarantined thread raises ``QuarantinedThreadError``, which says which row is bad.
    """
    async with _opened(db_path) as store:
        app_name = await _app(store, app_name, db_path)
        owner = await store.thread_owner(app_name, thread_id)
        if owner is None:
            raise ThreadNotFoundError(
                f"no thread {thread_id!r} in app {app_name!r} of {described(db_path)}"
            )
        messages, _ = await store.thread_messages(app_name, owner, thread_id)
    return messages


async def _app(store: SessionService, app_name: str | None, db_path: str) -> str:
    """The App to read: the one named, or the only one the database has threads of."""
    apps = await store.apps()
    if app_name is not None:
        return app_name
    if len(apps) == 1:
        return apps[0]
    if not apps:
        raise AppNotFoundError(f"{described(db_path)} has no threads yet")
    raise AppNotFoundError(
        f"{described(db_path)} has threads of several Apps ({', '.join(apps)});"
        " choose one with --app"
    )


@asynccontextmanager
async def _opened(db_path: str) -> AsyncIterator[SessionService]:
    store = SessionService(db_path, messages=event_messages, read_only=True)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
