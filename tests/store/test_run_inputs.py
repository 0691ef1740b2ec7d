"""A run's stored input is found by its runId, through an index (``run_start.stored_run``):
an input sent again with a runId its thread ran is not run twice (``gateway.hub.dedupe``),
after a restart and on another process of a cluster too. The read is one indexed lookup,
whatever the thread's length, and a damaged row still stores (the quarantine finds it)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from google.adk.events import Event
from google.genai import types

from gateway.store import SessionService
from gateway.store.postgres import reads as postgres_reads
from gateway.store.run_start import StoredRun
from gateway.store.sqlite import reads as sqlite_reads
from tests.support.backends import APP, reopened
from tests.support.damage import APP as DEMO
from tests.support.damage import BAD_EVENT_DATA, plant_event
from tests.support.postgres import Postgres

pytestmark = pytest.mark.unit


def stamped(run_id: str, author: str, text: str, **marks: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id=f"inv-{run_id}",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        custom_metadata={"agui": {"runId": run_id, **marks}},
    )


async def stored_thread(db: str, app: str = APP) -> SessionService:
    store = await reopened(db)
    session = await store.create_session(app_name=app, user_id="u", session_id="t")
    for event in (
        stamped("run-1", "user", "안녕", messageId="msg-1"),
        stamped("run-1", "agent", "안녕하세요"),
        stamped("run-2", "user", "answers"),  # no messageId: answers, not a message
        stamped("run-2", "agent", "done"),
    ):
        await store.append_event(session, event)
    return store


async def test_a_run_is_found_by_its_id_and_says_its_message(db: str) -> None:
    store = await stored_thread(db)
    try:
        first = await store.run_input(APP, "u", "t", "run-1")
        assert isinstance(first, StoredRun) and first.message_id == "msg-1"
        second = await store.run_input(APP, "u", "t", "run-2")
        assert second is not None and second.message_id is None and second.seq > first.seq
        assert await store.run_input(APP, "u", "t", "run-3") is None
        # Another user's thread of that id, or another thread, has run nothing.
        assert await store.run_input(APP, "v", "t", "run-1") is None
        assert await store.run_input(APP, "u", "other", "run-1") is None
    finally:
        await store.close()
    store = await reopened(db)  # as a restarted gateway finds it
    try:
        found = await store.run_input(APP, "u", "t", "run-1")
        assert found is not None and found.message_id == "msg-1"
    finally:
        await store.close()


async def test_a_damaged_row_a_user_wrote_still_stores_and_is_not_found(db: str) -> None:
    await (await stored_thread(db, DEMO)).close()
    # The index reads the stamp of a row the gateway did not write: it must not fail it.
    plant_event(db, "t", BAD_EVENT_DATA["invalid JSON"])
    store = await reopened(db)
    try:
        assert await store.run_input(DEMO, "u", "t", "run-x") is None
        found = await store.run_input(DEMO, "u", "t", "run-1")
        assert found is not None and found.message_id == "msg-1"
    finally:
        await store.close()


class Explained:
    """A connection that also asks its database how it would run each statement."""

    def __init__(self, db: Any, explain: str) -> None:
        self.db, self.explain = db, explain
        self.plans: list[str] = []

    def execute(self, sql: str, params: Any = ()) -> Any:
        plan = self.db.execute(self.explain + sql, params).fetchall()
        self.plans.append(" ".join(str(column) for row in plan for column in row))
        return self.db.execute(sql, params)


async def test_sqlite_finds_a_run_through_its_index(tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")
    await (await stored_thread(path)).close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        explained = Explained(db, "EXPLAIN QUERY PLAN ")
        rows = sqlite_reads.run_rows(
            explained, app_name=APP, user_id="u", session_id="t", run_id="run-1"
        )
    assert [seq for seq, _ in rows] and "events_by_run" in explained.plans[0], explained.plans


@pytest.mark.process
async def test_postgres_finds_a_run_through_its_index(postgres: Postgres) -> None:
    url = postgres.fresh_database()
    await (await stored_thread(url)).close()
    with psycopg.connect(url) as db:
        db.execute("SET enable_seqscan = off")  # a table this small is read whole otherwise
        explained = Explained(db, "EXPLAIN ")
        rows = postgres_reads.run_rows(
            explained, app_name=APP, user_id="u", session_id="t", run_id="run-1"
        )
    assert [seq for seq, _ in rows] and "events_by_run" in explained.plans[0], explained.plans
