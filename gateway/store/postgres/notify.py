"""The cluster's messages over PostgreSQL's LISTEN/NOTIFY, in SQL: one channel, text payloads.

NOTIFY is transactional: a notice sent in a transaction is delivered when it commits, and not
at all if it rolls back, so a notice never names a write other processes cannot read yet. That
is why a thread's frames carry their own notice (``committed``): the statement that appends
them to the log sends it (``writes.append_frames``), in the writer's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

from gateway.cluster.messages import Committed, encoded

# The one channel of a database's gateway processes.
CHANNEL = "gateway_cluster"


def committed(thread_id: str, seq: int) -> str | None:
    """The payload telling every process that the thread's log holds frames up to ``seq``."""
    return encoded(Committed(thread_id, seq))


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
