"""Stored values a gateway cannot read back, planted straight into a store's database.

Each stands for old data or a bug: the gateway never writes such a row itself, so tests put
them there behind its back, as an operator's stray edit or an older release would have.
Also here: the wedge of issue 11 (a read left open on the store's connection, then a commit
by another connection), which makes every commit of the store fail until the read ends.
``assert_quarantined`` is what the owner of such a thread must be told instead.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any

import psycopg
from google.adk.events import Event
from google.genai import types

from gateway.examples.navigator.agent import APP_NAME
from gateway.store import SessionService
from gateway.store.urls import is_postgres

APP = APP_NAME  # the demo App's, whose threads the gateway keeps


def nested(depth: int, leaf: Any = "navigated") -> Any:
    """A JSON value ``depth`` objects deep: what a browser answered in issue 11."""
    value: Any = {"status": leaf}
    for _ in range(depth):
        value = {"detail": value}
    return value


def _answer_data(response: Any) -> dict[str, Any]:
    """A stored function response event, as ADK dumps one, answering ``navigateToScreen``."""
    event = Event(
        invocation_id="inv-planted",
        author="user",
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="call-planted", name="navigateToScreen", response={"status": "x"}
                    )
                )
            ],
        ),
    )
    data: dict[str, Any] = json.loads(event.model_dump_json(exclude_none=True, by_alias=True))
    data["content"]["parts"][0]["functionResponse"]["response"] = response
    return data


def _wrong_type() -> str:
    data = _answer_data({"status": "navigated"})
    data["timestamp"] = "yesterday"
    return json.dumps(data)


# Event rows that cannot be decoded, by what is wrong with them.
BAD_EVENT_DATA: dict[str, str] = {
    "nested 300 deep": json.dumps(_answer_data(nested(300))),
    "invalid JSON": '{"id": "e-bad", "author": "user", "content": {"parts": [',
    "a field of the wrong type": _wrong_type(),
}
# Messages columns that cannot be decoded, beside event data that can.
BAD_MESSAGES: dict[str, str] = {
    "invalid JSON": "[{",
    "not a list of messages": '{"id": "m", "role": "user"}',
    "a message without a role": '[{"id": "m", "content": "hi"}]',
}


def plant_event(
    db: str, thread_id: str, data: str, *, messages: str | None = None, run_open: bool = False
) -> int:
    """Appends an event row to the thread; returns its seq. ``run_open``: a run owes a reply.

    ``db`` is a SQLite file or a PostgreSQL URL (``tests.support.backends``).
    """
    if is_postgres(db):
        with psycopg.connect(db) as conn:  # commits as the block ends
            (pk,) = conn.execute(
                "SELECT pk FROM sessions WHERE app_name = %s AND id = %s", (APP, thread_id)
            ).fetchone() or (None,)
            (seq,) = conn.execute(
                "INSERT INTO events"
                " (session_pk, id, invocation_id, author, timestamp, data, messages)"
                " VALUES (%s, 'e-planted', 'inv-planted', 'user', 1e10, %s, %s) RETURNING seq",
                (pk, data, messages),
            ).fetchone() or (0,)
            if run_open:
                conn.execute("UPDATE sessions SET run_open = true WHERE pk = %s", (pk,))
            return int(seq)
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn, conn:
        (pk,) = conn.execute(
            "SELECT pk FROM sessions WHERE app_name = ? AND id = ?", (APP, thread_id)
        ).fetchone()
        cursor = conn.execute(
            "INSERT INTO events (session_pk, id, invocation_id, author, timestamp, data, messages)"
            " VALUES (?, 'e-planted', 'inv-planted', 'user', 1e10, ?, ?)",
            (pk, data, messages),
        )
        if run_open:
            conn.execute("UPDATE sessions SET run_open = 1 WHERE pk = ?", (pk,))
        return int(cursor.lastrowid or 0)


def plant_messages(path: str, thread_id: str, messages: str) -> int:
    """Appends an event row whose data is sound but whose messages column is not."""
    sound = json.dumps(_answer_data({"status": "navigated"}))
    return plant_event(path, thread_id, sound, messages=messages)


def commit_from_outside(path: str) -> None:
    """A commit by another connection to the file, as the audit log makes all the time."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        (count,) = db.execute("PRAGMA user_version").fetchone()
        db.execute(f"PRAGMA user_version = {count + 1}")


async def hold_a_read_open(store: SessionService) -> sqlite3.Cursor:
    """What a decode that fails inside a cursor left behind: a read statement half done."""

    def start(raw: sqlite3.Connection) -> sqlite3.Cursor:
        cursor = raw.execute("SELECT seq FROM events ORDER BY seq")
        cursor.fetchone()  # more rows follow, so the statement stays open
        return cursor

    return await store._read(start)  # the store's reader: a connection of its own


async def close_read(store: SessionService, cursor: sqlite3.Cursor) -> None:
    await store._read(lambda _: cursor.close())


# Words of internal exceptions that must never reach a client.
INTERNAL_WORDS = ("Error", "Traceback", "pydantic", "recursion", "sqlite", "row", "seq")


def assert_quarantined(event: dict[str, Any], thread: str) -> None:
    assert event["type"] == "RUN_ERROR" and event["code"] == "INTERNAL_ERROR", event
    assert repr(thread) in event["message"] and "Start a new thread" in event["message"]
    assert not any(word in event["message"] for word in INTERNAL_WORDS), event["message"]
