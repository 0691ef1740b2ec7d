"""The audit when the file is busy, as scripts/load.py found it.

At 500 users the session store commits back to back on the gateway's SQLite file, and the
audit's writer, which shares the file, waited at most its busy timeout (5 s) for the write
lock. Once in ten rounds it waited longer and gave up: "audit: 15 records could not be
written". Timed at 500 users, an audit batch held or waited for the lock up to 3.6 s (its
inserts and commit were three trips through the busy event loop inside one transaction),
and the store's commits waited up to 0.75 s for it. Now a batch is one trip to the
database thread, and one that meets a locked file is tried again, not dropped.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from gateway import audit as audit_module
from gateway.audit import AuditLog, AuditRecord


def call(thread: str) -> AuditRecord:
    return AuditRecord(
        at=1_700_000_000.0,
        user_id="load-0001",
        thread_id=thread,
        run_id="r1",
        tool="find_screen",
        call_id=f"call-{thread}",
        arguments={"query": "업무 요청 목록"},
        outcome="ok",
        detail=None,
        duration_ms=0.4,
        executor="server",
    )


async def test_records_that_meet_a_locked_file_are_written_once_it_is_free(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gateway.db"
    audit = AuditLog(str(path))
    await audit.open()
    try:
        # The audit's patience cut from 5 s, so a short hold outlasts it as a long one did.
        assert audit._conn is not None
        await audit._conn.execute("PRAGMA busy_timeout = 50")
        # Another writer of the file, as the store is, holding the lock for a while.
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        audit.record(call("t1"))
        await asyncio.sleep(0.3)
        holder.execute("COMMIT")
        holder.close()
        await audit.flush()
        assert [record.thread_id for record in await audit.query()] == ["t1"]
    finally:
        await audit.close()


async def test_a_file_locked_past_the_bound_loses_the_batch_aloud_and_the_audit_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit_module, "BUSY_GIVE_UP_SECONDS", 0.1)
    path = tmp_path / "gateway.db"
    audit = AuditLog(str(path))
    await audit.open()
    try:
        assert audit._conn is not None
        await audit._conn.execute("PRAGMA busy_timeout = 20")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        audit.record(call("t1"))
        await audit.flush()
        holder.execute("COMMIT")
        holder.close()
        assert "audit: 1 records could not be written" in caplog.text
        audit.record(call("t2"))
        assert [record.thread_id for record in await audit.query()] == ["t2"]
    finally:
        await audit.close()
