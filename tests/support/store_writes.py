"""Writes of the store's, built for tests of a backend's statements (``gateway.store.writes``):
one thread's creation, an event's append, a streamed text saved."""

from __future__ import annotations

import json

from gateway.store.progress import RunProgress
from gateway.store.thread_index import indexed_text
from gateway.store.writes import NO_DELTAS, AppendEvent, CreateSession, SaveStreamedText

APP, USER = "app", "u"


def created(thread: str) -> CreateSession:
    return CreateSession(APP, USER, thread, NO_DELTAS, 1.0)


def appended(
    thread: str, revision: int, event: str, messages: list[dict[str, str]] | None = None
) -> AppendEvent:
    stored = json.dumps(messages) if messages is not None else None
    return AppendEvent(
        app_name=APP,
        user_id=USER,
        session_id=thread,
        loaded_revision=revision,
        loaded_update_time=1.0,
        event_id=event,
        invocation_id="i1",
        author="user",
        timestamp=2.0,
        data="{}",
        messages=stored,
        deltas=NO_DELTAS,
        progress=RunProgress((), (), None),
        indexed=indexed_text(stored),
    )


def streamed(thread: str, text: str, message: str = "m1") -> SaveStreamedText:
    return SaveStreamedText(APP, USER, thread, "i1", message, "agent", text, 2.0)
