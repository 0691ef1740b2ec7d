"""Several gateway processes on one PostgreSQL database acting as one.

What makes them one:

- **Leases.** A thread has at most one run across all processes: before a run, a process
  takes the thread's lease, a row in the database naming it the holder, taken atomically
  (``INSERT … ON CONFLICT … WHERE`` the old holder is dead), renewed by a heartbeat every
  ``GATEWAY_LEASE_SECONDS / 3`` and released in the store's commit of the run's last
  frames (``writes.ReleaseLeases``), before its last event is out. A holder is
  dead when its lease runs out, and at once when the backend of its listening connection is
  gone from ``pg_stat_activity``, so a killed process's threads are free in about a second.
- **Fencing.** Each lease taken carries an epoch, a new one whenever the thread changes
  hands, and every write the holder makes of the thread carries it: PostgreSQL refuses, in
  the write's own transaction, one whose epoch is no longer the thread's. A holder that
  stalled past its lease (a GC pause, a frozen VM) and wakes after a takeover therefore
  stores nothing more; its hub stops the run and tells its clients to reattach
  (``Hub.fenced``). What that guarantees under which failures: ``docs/cluster.md``.
- **Control.** A cancel sent to any process reaches the process holding the run; an input
  that interrupts a run elsewhere stops it the same way and runs once the lease is released:
  a process that waits for a lease marks it wanted, and only a wanted lease's release is
  told (every process hears every notice, which costs its event loop).
  A tool result or an approval for a paused thread needs no message: no lease is held while a
  thread waits on its browser, so whichever process receives the answer takes the lease and
  resumes the paused invocation from the store.
- **Fan-out.** Every run's frames go to the thread's event log; the statement that appends
  them sends a notice (thread, seq), delivered when the frames commit, to every other live
  process (the run's own delivers its events itself), and a process with watchers of the
  thread reads the frames after its cursor from the log and delivers them.
- **Takeover.** Every process looks for dead leases every ``GATEWAY_LEASE_CHECK_SECONDS``;
  the first to take one closes the cut-off run as interrupted, through the log, so every
  watcher sees it end, and releases the lease.

Why PostgreSQL's LISTEN/NOTIFY carries the messages, not Redis or NATS: the cluster needs
PostgreSQL anyway, so there is no second service to deploy, secure and watch; and NOTIFY is
transactional, delivered when its transaction commits and never if it rolls back, so a notice
never names an event the log does not hold yet. Its limit, payloads under 8,000 bytes, is why
a notice carries only (thread, seq) and listeners read the frames from the log after their
cursor: a notice lost or coalesced costs nothing, the next one names a later seq. Each process
holds one listening connection, whatever the number of threads it follows, on the cluster's
channel and a channel of its own (``gateway.store.postgres.notify``).

On one process (SQLite) the cluster is ``SingleNode``: the hub's own table of threads is the
lease, and nothing is sent.

What stays with one process: the expiry timer of a paused thread's browser calls (armed by
the process that paused it; if that process dies, the thread's next message supersedes
them); answers to some of a batch of parallel browser calls (``Thread.early``), until the
rest reach the same process (split across processes, the rest wait for the expiry); the
per-user rate limit, ``GATEWAY_MAX_RUNS`` and single-use /ws tickets, each counted per
process. A reattach without a cursor to a run another process is streaming gets its
snapshot once that run has ended: a snapshot cannot be cut between another process's
frames; with a cursor it follows the run live.

Modules: ``node`` (what the hub asks of a cluster, and the cluster of one process),
``postgres`` (the cluster on PostgreSQL), ``messages`` (what processes send each other),
``hearing`` (the listening connection's notices, read off its socket).
The SQL is in ``gateway.store.postgres.leases`` and ``gateway.store.postgres.notify``.
"""

from __future__ import annotations

from gateway.cluster.node import Cluster, Members, SingleNode
from gateway.config import Settings
from gateway.store.urls import is_postgres

__all__ = ["Cluster", "Members", "SingleNode", "for_settings"]


def for_settings(settings: Settings) -> Cluster:
    """The cluster the gateway's database makes it part of: on PostgreSQL, every process on
    that database; on SQLite, this process alone."""
    if not is_postgres(settings.db):
        return SingleNode()
    from gateway.cluster.postgres import PostgresCluster

    return PostgresCluster(
        settings.db,
        lease_seconds=settings.lease_seconds,
        check_seconds=settings.lease_check_seconds,
    )
