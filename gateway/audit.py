"""The audit log: every tool call, whose it was, what came of it, and who executed it.

Rows go to an ``audit`` table in the gateway's SQLite file over their own aiosqlite
connection (WAL; a ":memory:" gateway keeps its audit in memory). Recording is a
``put_nowait``: one background task writes whatever is queued in one transaction, so a
run never waits for the disk, and a failed write is logged, never raised into a run.

Who records what:

- ``AuditPlugin`` (an ADK plugin) records each server tool when it returns, timed from
  its before-tool callback; also a client call the gateway answered itself (a refusal of
  the navigation policy: executor "server", since no browser ran it), a call held for a
  person's approval ("awaiting_approval") and one the person rejected ("rejected").
- A client call passed on to the browser is recorded when the browser's answer arrives:
  the hub calls ``AuditLog.record_client_result``.

Open the log after the session store: the store refuses a new file that already has
tables of someone else's, and an audit table created first would be one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TextIO

import aiosqlite
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.config import in_memory
from gateway.tools.adk import RUN_METADATA_KEY

log = logging.getLogger(__name__)

Executor = Literal["server", "client"]

# Client calls whose send time is kept for timing the browser's answer; older ones go.
SENT_CALLS_KEPT = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    arguments TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    duration_ms REAL,
    executor TEXT NOT NULL CHECK (executor IN ('server', 'client'))
);
CREATE INDEX IF NOT EXISTS audit_by_thread ON audit (thread_id, at);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit (user_id, at);
"""

_COLUMNS = (
    "at, user_id, thread_id, run_id, tool, call_id, arguments, outcome, detail, duration_ms,"
    " executor"
)
_INSERT = f"INSERT INTO audit ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class AuditError(Exception):
    """The audit cannot be read; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One tool call. ``at`` is when it started, in Unix seconds."""

    at: float
    user_id: str
    thread_id: str
    run_id: str
    tool: str
    call_id: str
    arguments: dict[str, Any]
    outcome: str
    detail: str | None
    duration_ms: float | None
    executor: Executor

    def as_row(self) -> tuple[Any, ...]:
        arguments = json.dumps(self.arguments, ensure_ascii=False, default=str)
        return (
            self.at,
            self.user_id,
            self.thread_id,
            self.run_id,
            self.tool,
            self.call_id,
            arguments,
            self.outcome,
            self.detail,
            self.duration_ms,
            self.executor,
        )

    @classmethod
    def from_row(cls, row: sqlite3.Row | tuple[Any, ...]) -> AuditRecord:
        at, user, thread, run, tool, call_id, arguments, outcome, detail, ms, executor = row
        return cls(
            at=at,
            user_id=user,
            thread_id=thread,
            run_id=run,
            tool=tool,
            call_id=call_id,
            arguments=json.loads(arguments),
            outcome=outcome,
            detail=detail,
            duration_ms=ms,
            executor=executor,
        )

    def line(self) -> str:
        """One line for a person: time, who, where, what, outcome, how long, arguments."""
        when = datetime.datetime.fromtimestamp(self.at, datetime.UTC).isoformat(
            timespec="milliseconds"
        )
        took = f"{self.duration_ms:.0f} ms" if self.duration_ms is not None else "- ms"
        outcome = f"{self.outcome} ({self.detail})" if self.detail else self.outcome
        arguments = json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))
        return (
            f"{when.replace('+00:00', 'Z')}  user={self.user_id}  thread={self.thread_id}  "
            f"run={self.run_id}  {self.tool}  {self.executor}  {outcome}  {took}  {arguments}"
        )


def outcome_of(result: Any) -> tuple[str, str | None]:
    """A tool result as an outcome word and a detail: its status, "error", or "ok"."""
    if not isinstance(result, Mapping):
        return "ok", None
    if result.get("error"):
        return "error", str(result["error"])
    status = result.get("status")
    if status:
        detail = result.get("reason") or result.get("message")
        return str(status), str(detail) if detail else None
    return "ok", None


class AuditLog:
    """Appends AuditRecords to the ``audit`` table from a background writer."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[AuditRecord | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        # Transactions written since open(): one per batch, fewer than records under load.
        self.commits = 0
        # When each client call went to the browser (wall clock, monotonic), by call id.
        self._sent: dict[str, tuple[float, float]] = {}

    async def open(self) -> None:
        conn = aiosqlite.connect(self.path)
        # Daemon, so a process that forgets close() still exits; close() flushes first.
        conn._thread.daemon = True
        await conn
        if not in_memory(self.path):
            await conn.execute("PRAGMA journal_mode = WAL")
            # The session store writes to the same file; wait for its lock, do not fail.
            await conn.execute("PRAGMA busy_timeout = 5000")
        await conn.executescript(_SCHEMA)
        await conn.commit()
        self._conn = conn
        self._writer = asyncio.create_task(self._write(conn), name="audit writer")

    async def close(self) -> None:
        """Writes everything recorded so far, then closes the connection."""
        self._closed = True
        if self._writer is not None:
            self._queue.put_nowait(None)
            await self._writer
            self._writer = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    def record(self, record: AuditRecord) -> None:
        """Queues one record; returns at once."""
        if self._closed:
            log.warning("audit closed; not recorded: %s", record.line())
            return
        self._queue.put_nowait(record)

    def note_sent(self, call_id: str) -> None:
        """Remembers when a client call went to the browser, to time its answer."""
        if len(self._sent) >= SENT_CALLS_KEPT:
            self._sent.pop(next(iter(self._sent)))
        self._sent[call_id] = (time.time(), time.monotonic())

    def record_client_result(
        self,
        user: str,
        thread: str,
        run: str,
        tool: str,
        call_id: str,
        args: Mapping[str, Any],
        outcome: str | Mapping[str, Any],
        duration_ms: float | None = None,
    ) -> None:
        """Records the browser's answer to a client call.

        ``outcome`` is the browser's result (its ``status`` becomes the outcome) or an
        outcome word such as "no_result". Without ``duration_ms`` the call is timed from
        when this process passed it on, if it did.
        """
        if isinstance(outcome, str):
            word, detail = outcome, None
        else:
            word, detail = outcome_of(outcome)
        sent = self._sent.pop(call_id, None)
        now = time.time()
        if duration_ms is None and sent is not None:
            duration_ms = (time.monotonic() - sent[1]) * 1000
        started = sent[0] if sent else now - (duration_ms or 0) / 1000
        self.record(
            AuditRecord(
                at=started,
                user_id=user,
                thread_id=thread,
                run_id=run,
                tool=tool,
                call_id=call_id,
                arguments=dict(args),
                outcome=word,
                detail=detail,
                duration_ms=duration_ms,
                executor="client",
            )
        )

    async def flush(self) -> None:
        """Returns once everything recorded so far is written."""
        if self._writer is not None:
            await self._queue.join()

    async def query(self, thread: str | None = None, user: str | None = None) -> list[AuditRecord]:
        """This gateway's records, oldest first, for a thread and/or a user (all if neither)."""
        if self._conn is None:
            raise AuditError("the audit log is not open")
        await self.flush()
        return await _select(self._conn, thread, user)

    async def _write(self, conn: aiosqlite.Connection) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            rows = [record.as_row() for record in batch if record is not None]
            try:
                if rows:
                    await conn.executemany(_INSERT, rows)
                    await conn.commit()
                    self.commits += 1
            except sqlite3.Error:
                # The audit must not take runs down with it; the log line keeps the loss visible.
                log.exception("audit: %d records could not be written", len(rows))
            finally:
                for _ in batch:
                    self._queue.task_done()
            if None in batch:
                return


class AuditPlugin(BasePlugin):
    """Records tool calls as ADK runs them; see the module docstring for which ones."""

    def __init__(self, audit: AuditLog) -> None:
        super().__init__(name="audit")
        self.audit = audit
        # Start of each call in progress (wall clock, monotonic), by call id.
        self._started: dict[str, tuple[float, float]] = {}

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self._started[tool_context.function_call_id or ""] = (time.time(), time.monotonic())
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id or ""
        if tool.is_long_running and not result:
            # Passed on to the browser: its answer is recorded when it comes.
            self._started.pop(call_id, None)
            self.audit.note_sent(call_id)
            return None
        self._record(tool, tool_args, tool_context, *self._outcome(result, tool_context))
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        self._record(tool, tool_args, tool_context, "error", f"{type(error).__name__}: {error}")
        return None

    def _outcome(self, result: Any, tool_context: ToolContext) -> tuple[str, str | None]:
        confirmation = tool_context.tool_confirmation
        if confirmation is not None and not confirmation.confirmed:
            return "rejected", None
        if tool_context.function_call_id in tool_context.actions.requested_tool_confirmations:
            return "awaiting_approval", None
        return outcome_of(result)

    def _record(
        self,
        tool: BaseTool,
        args: dict[str, Any],
        tool_context: ToolContext,
        outcome: str,
        detail: str | None,
    ) -> None:
        call_id = tool_context.function_call_id or ""
        now = (time.time(), time.monotonic())
        started = self._started.pop(call_id, now)
        self.audit.record(
            AuditRecord(
                at=started[0],
                user_id=tool_context.user_id,
                thread_id=tool_context.session.id,
                run_id=_run_id(tool_context),
                tool=tool.name,
                call_id=call_id,
                arguments=dict(args),
                outcome=outcome,
                detail=detail,
                duration_ms=(now[1] - started[1]) * 1000,
                executor="server",
            )
        )


def _run_id(tool_context: ToolContext) -> str:
    """The AG-UI run id the hub put in the run's metadata; ADK's invocation id without it."""
    run_config = tool_context.run_config
    metadata = (run_config.custom_metadata if run_config else None) or {}
    return str(metadata.get(RUN_METADATA_KEY, {}).get("runId") or tool_context.invocation_id)


async def _select(
    conn: aiosqlite.Connection, thread: str | None, user: str | None
) -> list[AuditRecord]:
    conditions, values = [], []
    if thread is not None:
        conditions.append("thread_id = ?")
        values.append(thread)
    if user is not None:
        conditions.append("user_id = ?")
        values.append(user)
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    async with conn.execute(
        f"SELECT {_COLUMNS} FROM audit {where} ORDER BY at, id", values
    ) as rows:
        return [AuditRecord.from_row(tuple(row)) async for row in rows]


async def read_audit(
    db_path: str, thread: str | None = None, user: str | None = None
) -> list[AuditRecord]:
    """The records in a gateway's database file, opened read-only (safe beside the gateway)."""
    if in_memory(db_path):
        raise AuditError("an in-memory gateway keeps no audit to read; pass --db <file>")
    if not os.path.exists(db_path):
        raise AuditError(f"{db_path} does not exist; pass the --db of the gateway")
    uri = Path(db_path).absolute().as_uri() + "?mode=ro"
    try:
        async with aiosqlite.connect(uri, uri=True) as conn:
            return await _select(conn, thread, user)
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return []  # a gateway that never recorded a tool call
        raise AuditError(f"cannot read the audit in {db_path}: {error}") from error


async def print_audit(
    db_path: str, thread: str | None = None, user: str | None = None, out: TextIO | None = None
) -> int:
    """Prints one line per tool call, oldest first; returns how many were printed."""
    out = out or sys.stdout
    records = await read_audit(db_path, thread, user)
    for record in records:
        out.write(record.line() + "\n")
    if not records:
        scope = " and ".join(
            f"{name} {value!r}" for name, value in (("thread", thread), ("user", user)) if value
        )
        out.write(f"no tool calls recorded{' for ' + scope if scope else ''}\n")
    return len(records)
