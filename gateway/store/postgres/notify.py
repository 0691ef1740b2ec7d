"""The cluster's messages over PostgreSQL's LISTEN/NOTIFY, in SQL: one channel, text payloads.

NOTIFY is transactional: a notice sent in a transaction is delivered when it commits, and not
at all if it rolls back, so a notice never names a write other processes cannot read yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

# The one channel of a database's gateway processes.
CHANNEL = "gateway_cluster"


async def listen(conn: AsyncConnection[TupleRow]) -> None:
    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))


async def notify(conn: AsyncConnection[TupleRow], payloads: Sequence[str]) -> None:
    """Sends each payload on the channel, all in one transaction (one statement)."""
    if not payloads:
        return
    calls = sql.SQL(", ").join(
        sql.SQL("pg_notify({}, {})").format(sql.Literal(CHANNEL), sql.Placeholder())
        for _ in payloads
    )
    await conn.execute(sql.SQL("SELECT {}").format(calls), list(payloads))
