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
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.audit import log as audit_module
from gateway.audit.log import AuditLog
from gateway.store.sqlite.audit import SqliteAuditTables
from tests.support.audit import record

pytestmark = pytest.mark.unit


@pytest.fixture
async def audit(tmp_path: Path) -> AsyncIterator[AuditLog]:
    """An audit on a file, whose patience with a locked file is cut from 5 s to 20 ms, so a
    short hold outlasts it as a long one did under load."""
    audit = AuditLog(str(tmp_path / "gateway.db"))
    await audit.open()
    tables = audit._tables
    assert isinstance(tables, SqliteAuditTables) and tables._conn is not None
    await tables._conn.execute("PRAGMA busy_timeout = 20")
    try:
        yield audit
    finally:
        await audit.close()


def lock(audit: AuditLog) -> sqlite3.Connection:
    """Another writer of the file, as the store is, holding its lock until COMMIT."""
    holder = sqlite3.connect(audit.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def test_records_that_meet_a_locked_file_are_written_once_it_is_free(
    audit: AuditLog,
) -> None:
    holder = lock(audit)
    audit.record(record("t1"))
    await asyncio.sleep(0.3)
    holder.execute("COMMIT")
    holder.close()
    assert [entry.thread_id for entry in await audit.query()] == ["t1"]


async def test_a_file_locked_past_the_bound_loses_the_batch_aloud_and_the_audit_goes_on(
    audit: AuditLog, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit_module, "BUSY_GIVE_UP_SECONDS", 0.1)
    holder = lock(audit)
    audit.record(record("t1"))
    await audit.flush()
    holder.execute("COMMIT")
    holder.close()
    assert "audit: 1 records could not be written" in caplog.text
    audit.record(record("t2"))
    assert [entry.thread_id for entry in await audit.query()] == ["t2"]
