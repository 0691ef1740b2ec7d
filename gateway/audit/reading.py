"""The audit read from outside a gateway: ``agent-gateway audit`` and tests.

The database is opened read-only, so reading is safe beside a running gateway; a store
that cannot be read is an ``AuditError`` with the store's sentence. ``print_audit`` prints
a thread's, a user's or an address's tool calls and door actions, one line each, oldest
first.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

from gateway.audit.records import AccessRecord, AuditRecord, Entry
from gateway.audit.tables import AuditError, AuditTables, Row, audit_tables
from gateway.store.errors import StoreError


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
