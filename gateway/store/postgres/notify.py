"""The cluster's messages over PostgreSQL's LISTEN/NOTIFY, in SQL: one channel, text payloads.

NOTIFY is transactional: a notice sent in a transaction is delivered when it commits, and not
at all if it rolls back, so a notice never names a write other processes cannot read yet. That
is why a thread's frames carry their own notice (``committed``): the statement that appends
them to the log sends it (``writes.append_frames``), in the writer's transaction.

Each process listens on the cluster's channel and on one of its own (``node_channel``).
Frames written under a lease are told on the channels of the live processes other than its
holder that watch the thread's user (``Cluster.watch``, ``leases.watch_users``): the holder
delivers its run's events to its own watchers itself, a process with no watcher of the
user's threads has no use for them, and hearing a notice costs a process's event loop.
(The holder is told too of the frames it writes closing a dead process's run: its own
watchers follow them from the log.) Anything else goes on the cluster's channel.
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


def node_channel(node_id: str) -> str:
    """The channel of the process ``node_id`` (a uuid's hex: 48 characters in all, under
    PostgreSQL's 63)."""
    return f"{CHANNEL}_{node_id}"


async def listen(conn: AsyncConnection[TupleRow], node_id: str) -> None:
    """Listens on the cluster's channel and on the process's own."""
    for channel in (CHANNEL, node_channel(node_id)):
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))


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
