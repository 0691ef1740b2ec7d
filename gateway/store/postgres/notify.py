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


# One statement whatever the number of payloads, so it is prepared once (a statement with
# a placeholder a payload was a new one for each number, composed anew at every call). The
# payloads go in binary: as a text array psycopg would quote and escape each in Python.
# (They are JSON, which holds no NUL, the one character PostgreSQL's text refuses.)
_NOTIFY = "SELECT pg_notify(%s, payload) FROM unnest(%b::text[]) AS payload"


async def notify(conn: AsyncConnection[TupleRow], payloads: Sequence[str]) -> None:
    """Sends each payload on the channel, in order, all in one transaction (one statement)."""
    if not payloads:
        return
    await conn.execute(_NOTIFY, (CHANNEL, list(payloads)))
