"""The audit log: every tool call, whose it was, what came of it, and who executed it;
and what callers did at the doors: who, authenticated how, from which address.

Rows go to the ``audit`` (tool calls) and ``access`` (door actions) tables in the gateway's
database, over a connection of their own: the SQLite file (``store.sqlite.audit``; a
":memory:" gateway keeps its audit in memory), or the PostgreSQL database every process of
a cluster records into (``store.postgres.audit``), so one ``agent-gateway audit`` sees them
all. Recording is a ``put_nowait``: one background task writes whatever is queued in one
transaction, so a run never waits for the disk, and a failed write is logged, never raised
into a run.

Who records what:

- ``AuditPlugin`` (an ADK plugin) records each server tool when it returns, timed from
  its before-tool callback; also a client call the gateway answered itself (a refusal of
  the navigation policy: executor "server", since no browser ran it), a call held for a
  person's approval ("awaiting_approval") and one the person rejected ("rejected").
- A client call passed on to the browser is recorded when the browser's answer arrives:
  the hub calls ``AuditLog.record_client_result``.
- The doors (``gateway.doors.access``, for the routes of ``server``, ``sse`` and ``websocket``)
  record ``AccessRecord``s: approvals and their answers, cancels, reattaches, and every
  attempt refused as UNAUTHORIZED or ACCESS_DENIED.

Open the log after the session store: the store refuses a new file that already has
tables of someone else's, and an audit table created first would be one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TextIO

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.context import RUN_METADATA_KEY
from gateway.store.errors import BusyError, StoreError
from gateway.store.sqlite.audit import SqliteAuditTables
from gateway.store.urls import is_postgres

log = logging.getLogger(__name__)

Executor = Literal["server", "client"]

# Client calls whose send time is kept for timing the browser's answer; older ones go.
SENT_CALLS_KEPT = 10_000
# A batch that finds the file locked (the store commits back to back under load) is tried
# again after a pause, for this long in all before it is given up with a log line.
BUSY_RETRY_SECONDS = 0.05
BUSY_GIVE_UP_SECONDS = 60.0

# Refused attempts recorded per second at most, so a flood of bad tokens cannot fill the
# disk; the rest are counted in a log line at most every REFUSALS_REPORT_SECONDS.
REFUSALS_PER_SECOND = 20.0
REFUSAL_BURST = 100.0
REFUSALS_REPORT_SECONDS = 10.0


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
    def from_row(cls, row: tuple[Any, ...]) -> AuditRecord:
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
        took = f"{self.duration_ms:.0f} ms" if self.duration_ms is not None else "- ms"
        outcome = f"{self.outcome} ({self.detail})" if self.detail else self.outcome
        arguments = json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))
        return (
            f"{_when(self.at)}  user={self.user_id}  thread={self.thread_id}  "
            f"run={self.run_id}  {self.tool}  {self.executor}  {outcome}  {took}  {arguments}"
        )


@dataclasses.dataclass(frozen=True)
class AccessRecord:
    """One action at a door. ``user_id`` is "" when the caller was not identified; ``via``
    says how they were ("dev": only claimed); ``outcome`` is "ok", a word such as
    "nothing_to_cancel", or the ErrorCode the caller was refused with."""

    at: float
    user_id: str
    org: str | None
    via: str
    client: str
    door: str
    action: str
    thread_id: str
    target: str
    outcome: str
    detail: str | None

    def as_row(self) -> tuple[Any, ...]:
        return dataclasses.astuple(self)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> AccessRecord:
        return cls(*row)

    def line(self) -> str:
        """One line for a person: time, who and how, from where, what, outcome."""
        who = f"user={self.user_id or '-'} via={self.via}"
        if self.org:
            who += f" org={self.org}"
        target = f" {self.target}" if self.target else ""
        outcome = f"{self.outcome} ({self.detail})" if self.detail else self.outcome
        return (
            f"{_when(self.at)}  {who}  client={self.client or '-'}  "
            f"thread={self.thread_id or '-'}  {self.door} {self.action}{target}  {outcome}"
        )


Entry = AuditRecord | AccessRecord


# One record as the INSERT binds it.
Row = tuple[Any, ...]


class AuditTables(Protocol):
    """Where the records are kept: the two tables of one database (each backend's SQL)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def insert(self, calls: list[Row], actions: list[Row]) -> None:
        """Writes a batch in one transaction, or nothing; BusyError: try again soon."""
        ...

    async def tool_calls(self, thread: str | None, user: str | None) -> list[Row]: ...

    async def door_actions(
        self, thread: str | None, user: str | None, client: str | None
    ) -> list[Row]: ...


def audit_tables(db: str, *, read_only: bool = False) -> AuditTables:
    """The audit's tables in the database a ``--db`` value names."""
    if is_postgres(db):
        from gateway.store.postgres.audit import PostgresAuditTables

        return PostgresAuditTables(db, read_only=read_only)
    return SqliteAuditTables(db, read_only=read_only)


def _when(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        self.path = path  # the gateway's --db: a SQLite file, or a PostgreSQL URL
        self._tables = audit_tables(path)
        self._open = False
        self._queue: asyncio.Queue[Entry | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        # Transactions written since open(): one per batch, fewer than records under load.
        self.commits = 0
        # When each client call went to the browser (wall clock, monotonic), by call id.
        self._sent: dict[str, tuple[float, float]] = {}
        self._refusals = RefusalBudget()

    async def open(self) -> None:
        await self._tables.open()
        self._open = True
        self._writer = asyncio.create_task(self._write(), name="audit writer")

    async def close(self) -> None:
        """Writes everything recorded so far, then closes the connection."""
        self._closed = True
        if self._writer is not None:
            self._queue.put_nowait(None)
            await self._writer
            self._writer = None
        if self._open:
            self._open = False
            await self._tables.close()

    def record(self, record: Entry) -> None:
        """Queues one record; returns at once."""
        if self._closed:
            log.warning("audit closed; not recorded: %s", record.line())
            return
        self._queue.put_nowait(record)

    def record_access(self, record: AccessRecord) -> None:
        """Queues a door action; refusals beyond REFUSALS_PER_SECOND are counted, not kept."""
        if record.outcome == "UNAUTHORIZED" and not self._refusals.admit():
            return
        self.record(record)

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
        if not self._open:
            raise AuditError("the audit log is not open")
        await self.flush()
        return [AuditRecord.from_row(row) for row in await self._tables.tool_calls(thread, user)]

    async def query_access(
        self, thread: str | None = None, user: str | None = None, client: str | None = None
    ) -> list[AccessRecord]:
        """This gateway's door actions, oldest first, filtered like ``query``."""
        if not self._open:
            raise AuditError("the audit log is not open")
        await self.flush()
        found = await self._tables.door_actions(thread, user, client)
        return [AccessRecord.from_row(row) for row in found]

    async def _write(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            calls = [r.as_row() for r in batch if isinstance(r, AuditRecord)]
            actions = [r.as_row() for r in batch if isinstance(r, AccessRecord)]
            try:
                if calls or actions:
                    await self._commit(calls, actions)
            finally:
                for _ in batch:
                    self._queue.task_done()
            if None in batch:
                return

    async def _commit(self, calls: list[Row], actions: list[Row]) -> None:
        """Writes a batch in one transaction; a busy database is waited out, not a reason to
        drop it."""
        waited = 0.0
        while True:
            try:
                await self._tables.insert(calls, actions)
                self.commits += 1
                return
            except Exception as error:
                if not isinstance(error, BusyError) or waited >= BUSY_GIVE_UP_SECONDS:
                    # The audit must not take runs down with it; the log line shows the loss.
                    log.exception("audit: %d records could not be written", len(calls + actions))
                    return
            await asyncio.sleep(BUSY_RETRY_SECONDS)
            waited += BUSY_RETRY_SECONDS


class RefusalBudget:
    """A token bucket for the rows of unidentified refusals; it reports what it drops."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.tokens = REFUSAL_BURST
        self.refilled = clock()
        self.dropped = 0
        self.reported = -REFUSALS_REPORT_SECONDS

    def admit(self) -> bool:
        now = self._clock()
        self.tokens = min(REFUSAL_BURST, self.tokens + (now - self.refilled) * REFUSALS_PER_SECOND)
        self.refilled = now
        admitted = self.tokens >= 1
        if admitted:
            self.tokens -= 1
        else:
            self.dropped += 1
        if self.dropped and now - self.reported >= REFUSALS_REPORT_SECONDS:
            log.warning(
                "audit: %d refused attempts were not recorded (over %.0f/s)",
                self.dropped,
                REFUSALS_PER_SECOND,
            )
            self.dropped, self.reported = 0, now
        return admitted


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


async def read_audit(
    db: str, thread: str | None = None, user: str | None = None
) -> list[AuditRecord]:
    """The tool calls in a gateway's database, opened read-only (safe beside it)."""
    rows = await _read(db, lambda tables: tables.tool_calls(thread, user))
    return [AuditRecord.from_row(row) for row in rows]


async def read_access(
    db: str, thread: str | None = None, user: str | None = None, client: str | None = None
) -> list[AccessRecord]:
    """The door actions in a gateway's database, opened read-only."""
    rows = await _read(db, lambda tables: tables.door_actions(thread, user, client))
    return [AccessRecord.from_row(row) for row in rows]


async def _read(db: str, select: Callable[[AuditTables], Awaitable[list[Row]]]) -> list[Row]:
    tables = audit_tables(db, read_only=True)
    try:
        await tables.open()
        try:
            return await select(tables)
        finally:
            await tables.close()
    except StoreError as error:
        raise AuditError(str(error)) from None


async def print_audit(
    db_path: str,
    thread: str | None = None,
    user: str | None = None,
    client: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Prints one line per tool call and door action, oldest first; returns how many."""
    out = out or sys.stdout
    calls: list[Entry] = [] if client else list(await read_audit(db_path, thread, user))
    entries = sorted(
        calls + list(await read_access(db_path, thread, user, client)), key=lambda e: e.at
    )
    for entry in entries:
        out.write(entry.line() + "\n")
    if not entries:
        scope = " and ".join(
            f"{name} {value!r}"
            for name, value in (("thread", thread), ("user", user), ("client", client))
            if value
        )
        out.write(f"nothing recorded{' for ' + scope if scope else ''}\n")
    return len(entries)
