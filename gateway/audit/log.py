"""The audit log of a running gateway: records queued as they happen, written in batches.

Recording is a ``put_nowait``: one background task writes whatever is queued in one
transaction (``tables``), so a run never waits for the disk, and a failed write is logged,
never raised into a run. A batch that finds the database busy (the store commits back to
back under load) is waited out, not dropped. Refusals of callers nobody identified are
recorded up to a rate (``RefusalBudget``), so a flood of bad tokens cannot fill the disk.

A client call passed on to the browser is recorded when the browser's answer arrives: the
hub calls ``AuditLog.record_client_result``, timed from when the call was sent
(``note_sent``, told by the ``plugin``). The doors record ``AccessRecord``s
(``record_access``).

Open the log after the session store: the store refuses a new file that already has
tables of someone else's, and an audit table created first would be one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from gateway.audit.records import AccessRecord, AuditRecord, Entry, outcome_of
from gateway.audit.tables import AuditError, Row, audit_tables
from gateway.store.errors import BusyError

log = logging.getLogger(__name__)

# Client calls whose send time is kept for timing the browser's answer; older ones go.
SENT_CALLS_KEPT = 10_000
# A batch that finds the file locked (the store commits back to back under load) is tried
# again after a pause, for this long in all before it is given up with a log line.
BUSY_RETRY_SECONDS = 0.05
BUSY_GIVE_UP_SECONDS = 60.0

# How long the writer waits, after taking a record, for more to go in the same batch. A
# batch is a transaction: on PostgreSQL a statement and its round trip, ~0.5 ms of the
# gateway's CPU, and under load a story's records (a server tool's, a browser's answer)
# went a batch each, as they came. Nobody waits on a record: the audit is read by an
# operator, and a reader (``flush``, ``query``) and ``close`` cut the wait short.
GATHER_SECONDS = 0.1

# Refused attempts recorded per second at most, so a flood of bad tokens cannot fill the
# disk; the rest are counted in a log line at most every REFUSALS_REPORT_SECONDS.
REFUSALS_PER_SECOND = 20.0
REFUSAL_BURST = 100.0
REFUSALS_REPORT_SECONDS = 10.0


class AuditLog:
    """Appends AuditRecords to the ``audit`` table from a background writer."""

    def __init__(self, path: str, *, durability: str = "normal") -> None:
        self.path = path  # the gateway's --db: a SQLite file, or a PostgreSQL URL
        self._tables = audit_tables(path, durability=durability)  # the store's
        self._open = False
        self._queue: asyncio.Queue[Entry | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        # Transactions written since open(): one per batch, fewer than records under load.
        self.commits = 0
        # When each client call went to the browser (wall clock, monotonic), by call id.
        self._sent: dict[str, tuple[float, float]] = {}
        self._refusals = RefusalBudget()
        # Set while a reader or ``close`` wants what is queued written now (``_gather``).
        self._hurry = asyncio.Event()
        self._flushing = 0

    async def open(self) -> None:
        await self._tables.open()
        self._open = True
        self._writer = asyncio.create_task(self._write(), name="audit writer")

    async def close(self) -> None:
        """Writes everything recorded so far, then closes the connection."""
        self._closed = True
        self._hurry.set()
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
        if self._writer is None:
            return
        self._flushing += 1
        self._hurry.set()
        try:
            await self._queue.join()
        finally:
            self._flushing -= 1
            if not self._flushing and not self._closed:
                self._hurry.clear()

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
            if batch[0] is not None:
                await self._gather()
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

    async def _gather(self) -> None:
        """Lets more records join the batch for ``GATHER_SECONDS``, unless hurried."""
        if not self._hurry.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), GATHER_SECONDS)

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
