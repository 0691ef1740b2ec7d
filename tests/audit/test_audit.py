"""The audit log: what is recorded for each tool call, where, and how it is read back."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.adk.hosting import Hosted, prepare
from gateway.audit import (
    AccessRecord,
    AuditError,
    AuditLog,
    AuditPlugin,
    print_audit,
    read_access,
    read_audit,
)
from gateway.audit import log as audit_log
from gateway.audit.log import RefusalBudget
from gateway.audit.records import outcome_of
from gateway.context import RUN_METADATA_KEY
from gateway.examples.navigator.agent import build_agent, load_catalog
from gateway.examples.navigator.policy import build_before_tool_callback
from gateway.examples.navigator.screens import catalog as screen_catalog
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.store.postgres.audit import PostgresAuditTables
from gateway.store.postgres.cursors import KeptCursors
from gateway.store.sqlite.audit import SqliteAuditTables
from gateway.tools.client import CLIENT_TOOLS_KEY, ClientToolset
from tests.support.audit import record
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.servers import running_gateway
from tests.support.stores import session_store

pytestmark = pytest.mark.unit


@pytest.fixture
async def audit() -> AsyncIterator[AuditLog]:
    log = AuditLog(":memory:")
    await log.open()
    yield log
    await log.close()


# --- the log -------------------------------------------------------------------------------


async def test_records_come_back_by_thread_and_by_user(audit: AuditLog) -> None:
    audit.record(record("t1", "demo"))
    audit.record(record("t2", "demo", tool="navigateToScreen"))
    audit.record(record("t3", "guest"))
    assert [r.thread_id for r in await audit.query(thread="t2")] == ["t2"]
    assert [r.thread_id for r in await audit.query(user="demo")] == ["t1", "t2"]
    assert await audit.query(thread="t1", user="guest") == []
    assert (await audit.query(thread="t1"))[0] == record("t1", "demo")


async def test_recording_does_not_wait_for_the_disk_and_writes_in_batches(
    audit: AuditLog,
) -> None:
    for number in range(500):
        audit.record(record(f"t{number}"))
    # Nothing awaited yet: every record is still queued for the writer.
    assert audit.commits == 0
    await audit.flush()
    assert len(await audit.query(user="demo")) == 500
    assert audit.commits < 500


async def test_records_that_come_while_a_batch_gathers_go_in_it(
    audit: AuditLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer takes a record, then waits for more to join it: records that came a few
    at a time (a story's, under load) were a transaction each, on PostgreSQL a statement
    and its round trip. A reader does not wait for the gathering (``flush`` cuts it
    short), so a window that never ends by itself still gets everything written."""
    monkeypatch.setattr(audit_log, "GATHER_SECONDS", 3600.0)
    audit.record(record("t0"))
    while audit._queue.qsize():  # the writer has taken it, alone
        await asyncio.sleep(0)
    for number in range(1, 10):
        audit.record(record(f"t{number}"))
        await asyncio.sleep(0)
    await asyncio.wait_for(audit.flush(), scaled(30))
    assert [r.thread_id for r in await audit.query()] == [f"t{n}" for n in range(10)]
    assert audit.commits == 1


async def test_closing_the_log_writes_what_gathers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_log, "GATHER_SECONDS", 3600.0)
    path = str(tmp_path / "g.db")
    store = session_store(path)
    await store.open()
    audit = AuditLog(path)
    await audit.open()
    try:
        audit.record(record("t1"))
        while audit._queue.qsize():
            await asyncio.sleep(0)
        await asyncio.wait_for(audit.close(), scaled(30))
        assert [r.thread_id for r in await read_audit(path)] == ["t1"]
    finally:
        await audit.close()
        await store.close()


async def test_a_file_audit_writes_as_durably_as_the_store(tmp_path: Path) -> None:
    """SQLite's default, FULL, synced the file's WAL at each batch (~5 ms on a disk, the
    write lock held meanwhile) where the store, at ``normal``, syncs only its checkpoints."""
    path = str(tmp_path / "g.db")
    for durability, synchronous in (("normal", 1), ("full", 2)):
        store = session_store(path, durability=durability)
        await store.open()
        audit = AuditLog(path, durability=durability)
        await audit.open()
        try:
            tables = cast(SqliteAuditTables, audit._tables)
            said = await tables._db().run(lambda db: db.execute("PRAGMA synchronous").fetchone())
            assert said == (synchronous,), durability
            audit.record(record("t1"))
            assert [r.thread_id for r in await audit.query()] == ["t1"] * synchronous
        finally:
            await audit.close()
            await store.close()


@pytest.mark.server
async def test_a_gateways_audit_takes_its_durability(tmp_path: Path) -> None:
    path = str(tmp_path / "g.db")
    async with running_gateway(db=path, durability="full") as gateway:
        assert gateway.app.hub is not None and gateway.app.hub.audit is not None
        tables = cast(SqliteAuditTables, gateway.app.hub.audit._tables)
        said = await tables._db().run(lambda db: db.execute("PRAGMA synchronous").fetchone())
        assert said == (2,)


async def test_only_a_file_audit_leaves_the_loop_for_its_sql(tmp_path: Path) -> None:
    """A file may wait on the disk, so its batches run in aiosqlite's thread; an in-memory
    audit's run on the loop, as the store's do, since a hop costs more than its inserts."""
    for path, in_loop_thread in ((":memory:", True), (str(tmp_path / "g.db"), False)):
        tables = SqliteAuditTables(path)
        await tables.open()
        try:
            sql_thread = await tables._db().run(lambda db: threading.get_ident())
            await tables.insert([record("t1").as_row()], [])
            assert [row[2] for row in await tables.tool_calls("t1", None)] == ["t1"]
            assert (sql_thread == threading.get_ident()) is in_loop_thread, path
        finally:
            await tables.close()


async def test_a_browser_answer_is_recorded_as_a_client_call(audit: AuditLog) -> None:
    audit.note_sent("c1")
    audit.record_client_result(
        "demo",
        "t1",
        "r2",
        "navigateToScreen",
        "c1",
        {"screenId": "MNU-3120"},
        {"status": "navigated", "message": "업무 요청 목록으로 이동했습니다."},
    )
    audit.record_client_result(
        "demo", "t1", "r3", "navigateToScreen", "c2", {}, "no_result", duration_ms=120_000
    )
    # Oldest first by when the call started: the one that waited two minutes comes first.
    second, first = await audit.query(thread="t1")
    assert (first.executor, first.outcome, first.call_id) == ("client", "navigated", "c1")
    assert first.detail == "업무 요청 목록으로 이동했습니다."
    # Timed from when the call went to the browser, since the hub gave no duration.
    assert first.duration_ms is not None and first.duration_ms >= 0
    assert (second.outcome, second.duration_ms) == ("no_result", 120_000)


def test_outcomes_read_the_status_or_the_error_of_a_result() -> None:
    assert outcome_of({"screens": []}) == ("ok", None)
    assert outcome_of({"error": "search is down"}) == ("error", "search is down")
    refused = {"status": "denied", "reason": "screen_not_available", "message": "..."}
    assert outcome_of(refused) == ("denied", "screen_not_available")
    assert outcome_of("text") == ("ok", None)


async def test_a_closed_log_drops_records_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    log = AuditLog(":memory:")
    await log.open()
    await log.close()
    log.record(record())
    assert "audit closed" in caplog.text


# --- the gateway's database file -----------------------------------------------------------


async def test_the_audit_lives_beside_the_sessions_and_the_cli_prints_it(db: str) -> None:
    path = db
    store = session_store(path)
    await store.open()  # first: the store refuses a new database that has other tables
    audit = AuditLog(path)
    await audit.open()
    audit.record(record("t1", "demo"))
    audit.record(record("t2", "guest", tool="navigateToScreen"))
    await audit.flush()
    # Readable while the gateway still has the database open.
    assert [r.thread_id for r in await read_audit(path, user="guest")] == ["t2"]
    await audit.close()
    await store.close()

    reopened = session_store(path)
    await reopened.open()  # the store still accepts its database with the audit in it
    await reopened.close()
    out = io.StringIO()
    assert await print_audit(path, thread="t1", out=out) == 1
    line = out.getvalue()
    assert line.startswith("2023-11-14T22:13:20.000Z  user=demo  thread=t1  run=r1  find_screen")
    assert '  server  ok  0 ms  {"query":"요청 목록"}' in line
    out = io.StringIO()
    assert await print_audit(path, thread="nope", out=out) == 0
    assert out.getvalue() == "nothing recorded for thread 'nope'\n"


@pytest.mark.process
async def test_every_process_of_a_cluster_records_into_one_audit(postgres: Postgres) -> None:
    url = postgres.fresh_database()
    stores = [session_store(url), session_store(url)]
    audits = [AuditLog(url), AuditLog(url)]
    for store, audit in zip(stores, audits, strict=True):
        await store.open()
        await audit.open()
    audits[0].record(record("t1", "demo"))
    audits[1].record(record("t2", "demo", tool="navigateToScreen"))
    audits[1].record_access(access(1_700_000_001.0, "demo", "cancel"))
    for store, audit in zip(stores, audits, strict=True):
        await audit.close()
        await store.close()
    # Two writers commit on their own: which of the two rows is first is theirs to race.
    assert sorted(r.thread_id for r in await read_audit(url, user="demo")) == ["t1", "t2"]
    assert [a.action for a in await read_access(url)] == ["cancel"]
    out = io.StringIO()
    assert await print_audit(url, out=out) == 3
    assert "navigateToScreen" in out.getvalue()


@pytest.mark.process
async def test_a_postgres_audit_writes_as_durably_as_the_store(postgres: Postgres) -> None:
    """The server's default, ``synchronous_commit`` on, made each audit batch wait for a
    flush of the WAL that the store's own commits, at ``normal``, do not wait for."""
    url = postgres.fresh_database()
    for durability, synchronous in (("normal", "off"), ("full", "on")):
        audit = AuditLog(url, durability=durability)
        await audit.open()
        try:
            tables = cast(PostgresAuditTables, audit._tables)
            said = await tables._conn.run(
                lambda db: db.execute("SHOW synchronous_commit").fetchone()
            )
            assert said == (synchronous,), durability
        finally:
            await audit.close()


@pytest.mark.process
async def test_a_batch_goes_into_both_tables_whole_whatever_its_values(postgres: Postgres) -> None:
    """One statement a batch, a column an array: a NUL a client sent, a missing value and
    a batch of one table only all come back as recorded."""
    url = postgres.fresh_database()
    store = session_store(url)
    await store.open()
    tables = PostgresAuditTables(url)
    await tables.open()
    try:
        odd = dataclasses.replace(
            record("t2", "demo"), tool="a\x00b", duration_ms=None, detail="안녕"
        )
        calls = [record("t1", "demo").as_row(), odd.as_row()]
        actions = [
            access(1_700_000_001.0, "", "cancel").as_row(),
            access(2.0, "demo", "x").as_row(),
        ]
        await tables.insert(calls, actions)
        await tables.insert([], [access(3.0, "demo", "approval").as_row()])
        await tables.insert([record("t3", "demo").as_row()], [])
        found = await tables.tool_calls(None, None)
        assert [row[2] for row in found] == ["t1", "t2", "t3"]
        assert found[1][4] == "a\ufffdb" and found[1][8:] == ("안녕", None, "server")
        recorded = [*actions, access(3.0, "demo", "approval").as_row()]
        by_time = sorted(recorded, key=lambda row: row[0])  # read back oldest first
        assert await tables.door_actions(None, None, None) == by_time
    finally:
        await tables.close()
        await store.close()


@pytest.mark.process
async def test_a_postgres_audit_batch_reuses_its_statement_s_cursor(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sent as bytes, each batch's statement opened a cursor of its own, which looked up
    the dumpers of its 22 arrays anew; as text, the connection keeps one (``cursors``)."""
    url = postgres.fresh_database()
    store = session_store(url)
    await store.open()
    tables = PostgresAuditTables(url)
    await tables.open()
    opened = 0
    cursor = KeptCursors.cursor

    def counted(self: KeptCursors, *args: Any, **kwargs: Any) -> Any:
        nonlocal opened
        opened += 1
        return cursor(self, *args, **kwargs)

    monkeypatch.setattr(KeptCursors, "cursor", counted)
    try:
        for number in range(5):
            await tables.insert([record(f"t{number}").as_row()], [])
        assert opened == 1
        assert len(await tables.tool_calls(None, None)) == 5
    finally:
        await tables.close()
        await store.close()


def access(
    at: float, user: str, action: str, outcome: str = "ok", client: str = "10.0.0.7"
) -> AccessRecord:
    return AccessRecord(
        at=at,
        user_id=user,
        org="acme" if user else None,
        via="bearer" if user else "-",
        client=client,
        door="ws",
        action=action,
        thread_id="t1",
        target="adk-1" if action == "approval" else "",
        outcome=outcome,
        detail="approved" if action == "approval" else None,
    )


# The audit table as the gateway made it before door actions were recorded.
_FIRST_SCHEMA = """
CREATE TABLE audit (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT NOT NULL, arguments TEXT NOT NULL,
    outcome TEXT NOT NULL, detail TEXT, duration_ms REAL,
    executor TEXT NOT NULL CHECK (executor IN ('server', 'client'))
);
CREATE INDEX audit_by_thread ON audit (thread_id, at);
CREATE INDEX audit_by_user ON audit (user_id, at);
INSERT INTO audit VALUES (1, 1700000000.0, 'demo', 't1', 'r1', 'find_screen', 'call-1',
    '{}', 'ok', NULL, 0.4, 'server');
"""


async def test_a_file_from_before_door_actions_keeps_its_rows_and_gains_them(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "gateway.db")
    store = session_store(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as old:
        old.executescript(_FIRST_SCHEMA)
    # The operator command reads the old file as it is, before any gateway reopened it.
    assert [r.call_id for r in await read_audit(path)] == ["call-1"]
    assert await read_access(path) == []

    audit = AuditLog(path)
    await audit.open()
    audit.record_access(access(1_700_000_001.0, "demo", "approval"))
    audit.record(record("t1", "demo", tool="approveWorkRequest"))
    audit.record_access(access(1_700_000_002.0, "", "connect", "UNAUTHORIZED", "10.0.0.9"))
    await audit.close()

    assert [r.call_id for r in await read_audit(path, thread="t1")] == [
        "call-1",
        "call-t1-approveWorkRequest",
    ]
    out = io.StringIO()
    assert await print_audit(path, thread="t1", out=out) == 4
    lines = out.getvalue().splitlines()
    assert "find_screen" in lines[0] and "approveWorkRequest" in lines[1]
    assert lines[2] == (
        "2023-11-14T22:13:21.000Z  user=demo via=bearer org=acme  client=10.0.0.7  "
        "thread=t1  ws approval adk-1  ok (approved)"
    )
    assert lines[3].endswith("user=- via=-  client=10.0.0.9  thread=t1  ws connect  UNAUTHORIZED")
    # What was done from one address: its door actions only.
    out = io.StringIO()
    assert await print_audit(path, client="10.0.0.9", out=out) == 1


async def test_a_flood_of_refusals_is_recorded_only_up_to_a_rate(
    audit: AuditLog, caplog: pytest.LogCaptureFixture
) -> None:
    for number in range(500):
        audit.record_access(access(float(number), "", "connect", "UNAUTHORIZED"))
    # Denials by an identified user are never dropped.
    audit.record_access(access(600.0, "guest", "reattach", "ACCESS_DENIED"))
    rows = await audit.query_access()
    refused = [r for r in rows if r.outcome == "UNAUTHORIZED"]
    assert 100 <= len(refused) < 110
    assert rows[-1].outcome == "ACCESS_DENIED"
    # What was dropped is said in one line, not one a refusal.
    reports = [r for r in caplog.records if "refused attempts were not recorded" in r.message]
    assert len(reports) == 1


def test_the_refusal_budget_refills_and_reports_drops_at_most_every_ten_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    budget = RefusalBudget(lambda: now[0])
    assert sum(budget.admit() for _ in range(300)) == 100
    now[0] = 5.0  # 5 s at 20/s: 100 more, and the drops wait for their report
    assert sum(budget.admit() for _ in range(300)) == 100
    now[0] = 10.5
    budget.admit()
    reports = [r.getMessage() for r in caplog.records]
    assert reports == [
        "audit: 1 refused attempts were not recorded (over 20/s)",
        "audit: 399 refused attempts were not recorded (over 20/s)",
    ]


async def test_reading_fails_with_a_sentence_when_there_is_nothing_to_read(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="does not exist"):
        await read_audit(str(tmp_path / "missing.db"))
    with pytest.raises(AuditError, match="in-memory"):
        await read_audit(":memory:")
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    assert await read_audit(str(empty), thread="t1") == []


# --- the plugin in a real ADK run ----------------------------------------------------------


def make_runner(audit: AuditLog) -> Runner:
    catalog = load_catalog()
    agent = build_agent(ScriptedLlm(), catalog)
    agent.before_tool_callback = build_before_tool_callback(screen_catalog.load())
    hosted = Hosted(agent, catalog=catalog)
    app = prepare(hosted, ClientToolset(catalog), [AuditPlugin(audit)])
    return Runner(app=app, session_service=InMemorySessionService(), auto_create_session=True)


async def open_screen(runner: Runner, thread: str, surface: str) -> None:
    metadata = {
        "runId": f"run-{thread}",
        "context": {"surface": surface},
        CLIENT_TOOLS_KEY: ["navigateToScreen"],
    }
    message = types.Content(role="user", parts=[types.Part(text="업무 요청 목록 화면 열어줘")])
    async for _ in runner.run_async(
        user_id="demo",
        session_id=thread,
        new_message=message,
        run_config=RunConfig(custom_metadata={RUN_METADATA_KEY: metadata}),
    ):
        pass


async def test_a_server_tool_is_recorded_when_it_returns_and_a_browser_call_when_answered(
    audit: AuditLog,
) -> None:
    await open_screen(make_runner(audit), "t-panel", "side-panel")

    [search] = await audit.query(thread="t-panel")
    assert (search.tool, search.executor, search.outcome) == ("find_screen", "server", "ok")
    assert (search.user_id, search.run_id) == ("demo", "run-t-panel")
    assert search.arguments == {"query": "업무 요청 목록"}
    assert search.duration_ms is not None and search.duration_ms >= 0

    # The navigation went to the browser; the hub records it when the browser answers.
    audit.record_client_result(
        "demo", "t-panel", "run-2", "navigateToScreen", "c1", {}, {"status": "navigated"}
    )
    navigation = (await audit.query(thread="t-panel"))[-1]
    assert (navigation.executor, navigation.outcome) == ("client", "navigated")


async def test_a_refused_navigation_is_recorded_as_answered_by_the_server(
    audit: AuditLog,
) -> None:
    await open_screen(make_runner(audit), "t-modal", "modal")

    search, navigation = await audit.query(thread="t-modal")
    assert (search.tool, navigation.tool) == ("find_screen", "navigateToScreen")
    assert (navigation.executor, navigation.outcome, navigation.detail) == (
        "server",
        "not_allowed_here",
        "surface",
    )
    assert navigation.arguments["screenId"] == "MNU-3120"


def fake_context(**fields: Any) -> ToolContext:
    defaults: dict[str, Any] = {
        "function_call_id": "c9",
        "user_id": "demo",
        "session": SimpleNamespace(id="t-fake"),
        "run_config": None,
        "invocation_id": "inv-1",
        "tool_confirmation": None,
        "actions": SimpleNamespace(requested_tool_confirmations={}),
    }
    return cast(ToolContext, SimpleNamespace(**{**defaults, **fields}))


async def test_errors_approvals_and_rejections_have_their_own_outcomes(audit: AuditLog) -> None:
    plugin = AuditPlugin(audit)
    tool = BaseTool(name="approveWorkRequest", description="approve")
    args = {"requestId": "R-1042"}

    await plugin.on_tool_error_callback(
        tool=tool, tool_args=args, tool_context=fake_context(), error=ValueError("boom")
    )
    waiting = fake_context(actions=SimpleNamespace(requested_tool_confirmations={"c9": True}))
    held = {"error": "This tool call requires confirmation, please approve or reject."}
    await plugin.after_tool_callback(tool=tool, tool_args=args, tool_context=waiting, result=held)
    rejected = fake_context(tool_confirmation=SimpleNamespace(confirmed=False))
    await plugin.after_tool_callback(
        tool=tool, tool_args=args, tool_context=rejected, result={"error": "rejected"}
    )
    approved = fake_context(tool_confirmation=SimpleNamespace(confirmed=True))
    await plugin.after_tool_callback(
        tool=tool, tool_args=args, tool_context=approved, result={"status": "approved"}
    )

    outcomes = [(r.outcome, r.detail) for r in await audit.query(thread="t-fake")]
    assert outcomes == [
        ("error", "ValueError: boom"),
        ("awaiting_approval", None),
        ("rejected", None),
        ("approved", None),
    ]
    assert {r.run_id for r in await audit.query(thread="t-fake")} == {"inv-1"}
