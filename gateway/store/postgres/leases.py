"""The cluster's lease table in SQL: one row per thread whose run a process holds.

A lease names its holder, a process of the cluster (``gateway_nodes``), and expires unless the
holder's heartbeat renews it. A holder is dead at once, whatever the expiry says, when the
backend of its listening connection is gone from ``pg_stat_activity`` (its process was
killed, its host lost): ``gateway_live_nodes`` is the one definition of a live holder, and
every statement that may take a lease from another holder asks it.

Each lease carries an epoch from ``gateway_lease_epochs``: a new one whenever the thread
changes holder (or its lease is taken anew after a release), the same while its holder
takes it again. It is the lease's fencing token (``gateway.store.leases``): a write made
under it is checked in its own transaction, most in the write's own statement
(``fences.LEASES``), with a lock on the lease's row that a taker's update waits for (the
epoch is a key: ``FOR KEY SHARE``, which the renewal's update does not wait for), so no
write of an old holder commits after its thread changed hands. Statements that lock
several leases to change them lock them in ``thread_id`` order (the renewal, a release),
so they never wait on each other in a circle. A run's lease is let go of in the
store's batch that commits its last frames (``release_leases``), or on the cluster's own
connection (``release``) when the store could not.

The gateway's processes connect as one role (or one with ``pg_read_all_stats``): a backend
of another role shows no ``backend_start`` in ``pg_stat_activity`` and would look dead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from psycopg import errors

from gateway.store.leases import DeadLease, Held, Taken
from gateway.store.postgres.json_rows import Row, document
from gateway.store.postgres.notify import CHANNEL

log = logging.getLogger(__name__)

# How long a lock of the nodes' table (a process joining) or of the users' (a process naming
# the users it watches) may wait in the server's queue, and its pause before the next try.
# While it waits, every batch that would read the table waits behind it: behind a process
# frozen inside a write transaction that read the table, the whole cluster's writes would
# wait until the server ends that session.
JOIN_LOCK_WAIT = "50ms"
JOIN_PAUSE_SECONDS = 0.1

if TYPE_CHECKING:
    from psycopg import AsyncConnection, Connection
    from psycopg.rows import TupleRow

    from gateway.store.writes import ReleaseLeases

# Held while the tables are created, so processes starting together do not race on them.
_SCHEMA_LOCK = 0x6761_7465_6C65_6173  # "gateleas"

_SCHEMA = (
    "CREATE SEQUENCE IF NOT EXISTS gateway_lease_epochs",
    "CREATE TABLE IF NOT EXISTS gateway_nodes ("
    " node_id text PRIMARY KEY,"
    " pid integer NOT NULL,"
    " backend_start timestamptz NOT NULL,"
    " started_at timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS gateway_leases ("
    " thread_id text PRIMARY KEY,"
    " holder text NOT NULL,"
    " user_id text NOT NULL,"
    " run_id text NOT NULL,"
    " expires_at timestamptz NOT NULL)",
    # Added to the table of a cluster that ran before fencing; each existing lease gets one.
    "ALTER TABLE gateway_leases ADD COLUMN IF NOT EXISTS"
    " epoch bigint NOT NULL DEFAULT nextval('gateway_lease_epochs')",
    # Whether a process waits for the lease: only then is its release told (``want``).
    "ALTER TABLE gateway_leases ADD COLUMN IF NOT EXISTS wanted boolean NOT NULL DEFAULT false",
    # Whether a process listens on a channel of its own (``notify``): one of an earlier
    # version does not, and is told on the cluster's channel.
    "ALTER TABLE gateway_nodes ADD COLUMN IF NOT EXISTS own_channel boolean NOT NULL DEFAULT false",
    # Whether the holder's own channel is told of the frames written under the lease too
    # (``notify``): taken from a dead holder, whose cut-off run's end the taker writes.
    "ALTER TABLE gateway_leases ADD COLUMN IF NOT EXISTS"
    " tell_holder boolean NOT NULL DEFAULT false",
    "CREATE INDEX IF NOT EXISTS gateway_leases_holder ON gateway_leases (holder)",
    # The epoch a key (epochs are never given twice), so that a take, which sets it, waits
    # for the FOR KEY SHARE lock a batch checking a fence holds (``fences.LEASES``),
    # while the renewal, which changes no key, passes it.
    "CREATE UNIQUE INDEX IF NOT EXISTS gateway_leases_epoch ON gateway_leases (epoch)",
    # The users whose threads a process has watchers of (``watch_users``): frames written
    # under a lease are told to the processes that watch the thread's user, and to no other
    # (``writes``), where every process was told of every thread's.
    "CREATE TABLE IF NOT EXISTS gateway_node_users ("
    " user_id text NOT NULL,"
    " node_id text NOT NULL,"
    " PRIMARY KEY (user_id, node_id))",
    # Whether a process names the users it watches (``gateway_node_users``): one of an
    # earlier version does not, and is told of every thread's frames.
    "ALTER TABLE gateway_nodes ADD COLUMN IF NOT EXISTS names_users boolean NOT NULL DEFAULT false",
    "CREATE OR REPLACE VIEW gateway_live_nodes AS"
    " SELECT n.node_id FROM gateway_nodes n JOIN pg_stat_activity a"
    " ON a.pid = n.pid AND a.backend_start = n.backend_start",
)

# A lease another process may take: run out, or its holder's listening backend gone.
_DEAD = "(l.expires_at < now() OR l.holder NOT IN (SELECT node_id FROM gateway_live_nodes))"


async def create_schema(conn: AsyncConnection[TupleRow]) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for statement in _SCHEMA:
            await conn.execute(statement)


async def register_node(conn: AsyncConnection[TupleRow], node_id: str) -> None:
    """Names ``conn``'s backend as the node's: the node lives as long as that backend (a
    node that connects again names its new one). ``conn`` listens already: a batch that
    finds the node alive tells it of its frames (``writes.append_frames``).

    The table is locked meanwhile (``_locked``): a batch that looked for live nodes before
    (and so told this one nothing) has committed by the time this returns, where the
    node's first read of a log finds its frames; every later one finds the node."""
    await until_locked(
        lambda: _locked(
            conn,
            "gateway_nodes",
            "INSERT INTO gateway_nodes (node_id, pid, backend_start, own_channel, names_users)"
            " SELECT %s, pid, backend_start, true, true FROM pg_stat_activity"
            " WHERE pid = pg_backend_pid() ON CONFLICT (node_id) DO UPDATE"
            " SET pid = excluded.pid, backend_start = excluded.backend_start",
            (node_id,),
        ),
        waiting="joining the cluster waits for a transaction that read its processes",
    )


async def watch_users(conn: AsyncConnection[TupleRow], node_id: str, users: Sequence[str]) -> bool:
    """Names ``users`` as users whose threads the node has watchers of: the frames other
    nodes write of their threads from now on are told to it (``writes``). As for a node's
    registration, the table is locked meanwhile (``_locked``): a batch that read it before
    (and so did not tell this node) has committed by the time this returns, so a read of a
    log after it finds that batch's frames, and every later batch tells the node. False,
    naming no one, when the lock was not had within ``JOIN_LOCK_WAIT``: the caller tries
    again after a pause (``JOIN_PAUSE_SECONDS``), letting its connection's other work go
    first."""
    return await _locked(
        conn,
        "gateway_node_users",
        "INSERT INTO gateway_node_users (user_id, node_id)"
        " SELECT json_array_elements_text(%s::json), %s ON CONFLICT DO NOTHING",
        (document(list(users)), node_id),
    )


async def unwatch_users(
    conn: AsyncConnection[TupleRow], node_id: str, users: Sequence[str]
) -> None:
    """The node watches none of ``users``' threads any more: it is told of them no more.
    Nothing waits for it (a node told of a thread it does not watch ignores the notice)."""
    await conn.execute(
        "DELETE FROM gateway_node_users WHERE node_id = %s"
        " AND user_id IN (SELECT json_array_elements_text(%s::json))",
        (node_id, document(list(users))),
    )


async def until_locked(locked: Callable[[], Awaitable[bool]], *, waiting: str = "") -> None:
    """Calls ``locked`` (an insert under a table's lock: ``_locked``, ``watch_users``) until
    it had the lock, pausing ``JOIN_PAUSE_SECONDS`` between tries so that the connection's
    other work (a take, a release) goes first; logs ``waiting`` once, at the first miss."""
    missed = False
    while not await locked():
        if not missed and waiting:
            log.info(waiting)
        missed = True
        await asyncio.sleep(JOIN_PAUSE_SECONDS)


async def _locked(
    conn: AsyncConnection[TupleRow], table: str, insert: str, params: Sequence[object]
) -> bool:
    """``insert`` into ``table`` with the table locked (ACCESS EXCLUSIVE), which waits for
    every transaction that read it, and holds back every one that would, until the rows
    are in. Every batch that writes frames under a lease reads both tables it is used on
    (``writes``'s notices), so it either committed before the rows went in or finds them.
    The lock waits ``JOIN_LOCK_WAIT``, then this gives up (False), so the others' batches
    go on before the next try and a transaction that does not end holds back only it."""
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{JOIN_LOCK_WAIT}'")
            await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            await conn.execute(insert, params)
    except errors.LockNotAvailable:
        return False
    return True


async def forget_node(conn: AsyncConnection[TupleRow], node_id: str) -> list[str]:
    """A node that stops: its row goes, so the leases it still holds (runs its stop cut
    off) are dead at once, for another node to take over and close; returns their threads.
    Run in the caller's transaction."""
    cursor = await conn.execute(
        "SELECT thread_id FROM gateway_leases WHERE holder = %s", (node_id,)
    )
    threads = [str(row[0]) for row in await cursor.fetchall()]
    await conn.execute("DELETE FROM gateway_nodes WHERE node_id = %s", (node_id,))
    await conn.execute("DELETE FROM gateway_node_users WHERE node_id = %s", (node_id,))
    return threads


async def take(
    conn: AsyncConnection[TupleRow],
    *,
    thread_id: str,
    node_id: str,
    user_id: str,
    run_id: str,
    ttl: float,
) -> Taken | None:
    """The thread's lease for ``node_id``: new, its own again, or taken from a dead holder;
    None while another live process holds it. Atomic: of two takers one wins. A lease
    that changes hands, or is new, gets a new epoch; its holder's own keeps its epoch.
    One taken from a dead holder tells its taker of the frames written under it too
    (``tell_holder``, ``notify``): the taker closes the cut-off run in the log."""
    cursor = await conn.execute(
        # The old holder as of the statement's snapshot (FOR UPDATE would skip the row the
        # statement itself updates); a racer that loses re-checks the winner's row instead.
        "WITH old AS (SELECT holder FROM gateway_leases WHERE thread_id = %(thread)s)"
        " INSERT INTO gateway_leases AS l (thread_id, holder, user_id, run_id, expires_at)"
        " VALUES (%(thread)s, %(node)s, %(user)s, %(run)s,"
        " now() + %(ttl)s * interval '1 second')"
        " ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder,"
        " user_id = excluded.user_id, run_id = excluded.run_id, expires_at = excluded.expires_at,"
        " epoch = CASE WHEN l.holder = excluded.holder THEN l.epoch ELSE excluded.epoch END,"
        " wanted = l.wanted AND l.holder = excluded.holder,"
        " tell_holder = l.tell_holder OR l.holder <> excluded.holder"
        f" WHERE l.holder = excluded.holder OR {_DEAD}"
        " RETURNING (SELECT holder FROM old), l.epoch",
        {"thread": thread_id, "node": node_id, "user": user_id, "run": run_id, "ttl": ttl},
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    previous, epoch = row
    return Taken(thread_id, previous if previous not in (None, node_id) else None, int(epoch))


async def release(
    conn: AsyncConnection[TupleRow],
    *,
    node_id: str,
    threads: Sequence[tuple[str, str | None]],
    told: Sequence[str] = (),
) -> list[str]:
    """Lets go of the leases of ``threads`` (``(thread_id, notice)``) that ``node_id`` still
    holds, returning the threads it let go of; for each of them another process waits for
    (``want``), sends its notice on the cluster's channel; and sends ``told``, payloads of
    thread changes (``messages.ThreadsChanged``), to the other processes that watch a user
    they name (``_TOLD_TO_WATCHERS``). One statement, so one round trip and one
    transaction: a notice goes out only with its lease, and the releases and messages a
    process has queued meanwhile cost it one statement, where each took its own."""
    cursor = await conn.execute(_RELEASE, _releasing(node_id, threads, told))
    return [str(thread) for thread, _ in await cursor.fetchall() if thread is not None]


def release_leases(db: Connection[TupleRow], releases: Sequence[ReleaseLeases]) -> list[object]:
    """``release`` for the writes of a store's batch (``writes.ReleaseLeases``, all of this
    process), in its transaction: one statement for the batch's, whatever their number.
    Each write's result, in order: the threads it let go of."""
    rows = db.execute(_RELEASE, releasing_of(releases)).fetchall()
    return let_go_by(releases, [thread for thread, _ in rows])


def releasing_of(releases: Sequence[ReleaseLeases]) -> dict[str, object]:
    """The parameters of ``RELEASED`` for a batch's releases (all of this process)."""
    (node_id,) = {release.node_id for release in releases}
    threads = [thread for release in releases for thread in release.threads]
    told = [payload for release in releases for payload in release.told]
    return _releasing(node_id, threads, told)


def let_go_by(releases: Sequence[ReleaseLeases], threads: Sequence[object]) -> list[object]:
    """Each release's result, from the threads ``RELEASED``'s rows name (None: a payload's)."""
    let_go = {str(thread) for thread in threads if thread is not None}
    return [[t for t, _ in release.threads if t in let_go] for release in releases]


def _releasing(
    node_id: str, threads: Sequence[tuple[str, str | None]], told: Sequence[str]
) -> dict[str, object]:
    return {
        "node": node_id,
        "threads": document([_Released(thread, notice) for thread, notice in threads]),
        "told": document(list(told)),
        "channel": CHANNEL,
    }


class _Released(Row):
    """A lease let go of, and the notice of its release (``_RELEASE``)."""

    thread_id: str
    notice: str | None = None


# A payload of thread changes (``messages.ThreadsChanged``) told on the channels of the live
# processes other than its teller that watch a user it names (``watch_users``), and on the
# cluster's to those of earlier versions (several such are one notice); one that names no
# users is told every change. Its processes' own changes are not news to a process, and
# one with no connection of a user has no use for theirs.
_TOLD_TO_WATCHERS = (
    "SELECT string_agg(pg_notify(CASE WHEN o.own_channel THEN %(channel)s || '_' || o.node_id"
    " ELSE %(channel)s END, payload)::text, '') FROM gateway_nodes o"
    " JOIN gateway_live_nodes USING (node_id) WHERE o.node_id <> %(node)s"
    " AND (NOT o.names_users OR EXISTS (SELECT FROM gateway_node_users u"
    " WHERE u.node_id = o.node_id AND u.user_id IN (SELECT c->>0"
    " FROM json_array_elements(payload::json->'changes') AS c)))"
)


# A row a lease let go of (its notice sent if it was wanted), then one a payload told. The
# leases are locked in ``thread_id`` order, as the renewal locks them, so the two never
# wait on each other in a circle. The leases and the payloads go as JSON (``json_rows``):
# as arrays psycopg would dump each element in Python.
# ``RELEASED`` is the WITH's parts, ``RELEASED_ROWS`` what the statement returns (a
# statement of trims takes both in too: ``writes.trim_frames_and_release``).
RELEASED = (
    " n AS (SELECT * FROM json_to_recordset(%(threads)s::json)"
    " AS n (thread_id text, notice text)),"
    " released AS (DELETE FROM gateway_leases WHERE thread_id IN (SELECT thread_id"
    " FROM gateway_leases WHERE holder = %(node)s"
    " AND thread_id = ANY(ARRAY(SELECT thread_id FROM n))"
    " ORDER BY thread_id FOR UPDATE) RETURNING thread_id, wanted)"
)
RELEASED_ROWS = (
    " SELECT r.thread_id, CASE WHEN r.wanted THEN pg_notify(%(channel)s, n.notice)::text END"
    " FROM released r JOIN n USING (thread_id)"
    f" UNION ALL SELECT NULL, ({_TOLD_TO_WATCHERS})"
    " FROM json_array_elements_text(%(told)s::json) AS payload"
)
_RELEASE = f"WITH{RELEASED}{RELEASED_ROWS}"


async def want(conn: AsyncConnection[TupleRow], thread_id: str) -> bool:
    """Marks the thread's lease as waited for, so that its release is told; False when no
    lease is held (the caller may take it now). Every process hears every notice, and
    hearing one costs ~90 µs of the event loop's CPU: a release nobody waits for, most of
    them, is told to nobody. The mark goes with the lease when it changes hands."""
    cursor = await conn.execute(
        "UPDATE gateway_leases SET wanted = true WHERE thread_id = %s", (thread_id,)
    )
    return cursor.rowcount > 0


async def renew(
    conn: AsyncConnection[TupleRow], *, node_id: str, threads: Sequence[str], ttl: float
) -> int:
    """The heartbeat: the node's leases of ``threads``, those it still holds, expire ``ttl``
    seconds from now. Any other lease of the node (one whose release failed) is left to
    run out, for another process to take: renewed, it would be held forever."""
    cursor = await conn.execute(
        "UPDATE gateway_leases SET expires_at = now() + %s * interval '1 second'"
        " WHERE thread_id IN (SELECT thread_id FROM gateway_leases WHERE holder = %s"
        " AND thread_id = ANY(%b::text[]) ORDER BY thread_id FOR NO KEY UPDATE)",
        (ttl, node_id, list(threads)),
    )
    return cursor.rowcount


async def held(conn: AsyncConnection[TupleRow], thread_id: str) -> Held | None:
    """The thread's lease, if a live process holds it."""
    cursor = await conn.execute(
        "SELECT l.holder, l.user_id, l.run_id FROM gateway_leases l"
        f" WHERE l.thread_id = %s AND NOT {_DEAD}",
        (thread_id,),
    )
    row = await cursor.fetchone()
    return None if row is None else Held(str(row[0]), str(row[1]), str(row[2]))


async def dead(conn: AsyncConnection[TupleRow], node_id: str, limit: int) -> list[DeadLease]:
    """Up to ``limit`` leases of other nodes whose holder is dead: threads with a run cut off."""
    cursor = await conn.execute(
        "SELECT l.thread_id, l.user_id, l.holder FROM gateway_leases l"
        f" WHERE l.holder <> %s AND {_DEAD} ORDER BY l.expires_at LIMIT %s",
        (node_id, limit),
    )
    return [DeadLease(str(t), str(u), str(h)) for t, u, h in await cursor.fetchall()]


async def forget_dead_nodes(conn: AsyncConnection[TupleRow]) -> int:
    """Drops the rows of nodes whose backend is gone and that hold no lease any more, and
    the users they watched (and those of any node no longer named)."""
    cursor = await conn.execute(
        "WITH forgotten AS (DELETE FROM gateway_nodes n"
        " WHERE n.node_id NOT IN (SELECT node_id FROM gateway_live_nodes)"
        " AND NOT EXISTS (SELECT 1 FROM gateway_leases l WHERE l.holder = n.node_id)"
        " RETURNING n.node_id),"
        " users AS (DELETE FROM gateway_node_users u WHERE u.node_id IN"
        " (SELECT node_id FROM forgotten) OR u.node_id NOT IN (SELECT node_id FROM gateway_nodes))"
        " SELECT count(*) FROM forgotten"
    )
    row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0
