"""The session store: ADK sessions for the gateway, durable, windowed and group-committed.

``SessionService`` is the whole of it to the rest of the gateway. Its parts, one concept
each (each module's docstring has the theory of its part):

- ``service``      ADK's session contract and the gateway's additions, over the parts below
- ``backend``      the seam to a database: its reads, its commit of a batch, whether other
                   processes write it too; it names no backend
- ``open``         opens the backend a ``--db`` value picks, the one module above both
- ``urls``         what a ``--db`` value names, PostgreSQL or a SQLite file, and how to say
                   it without its password
- ``writes``       the write commands, as values: what each decides, for any backend
- ``schema``       what a database must be to be used: ours, not newer, current
- ``group_commit`` the single writer: one transaction for whatever is queued; health
- ``thread_writes`` the writes about a thread on their way to the writer, fenced by the
                   lease a cluster holds the thread under; the streamed text's save
- ``codec``        stored values as text and back; a bad one is a ``Damage``, never a raise
- ``rows``         a read's rows as plain values, decoded once the read is over
- ``messages``     AG-UI messages as rows keep them, and the projection the store is given
                   to make them from an ADK event (the gateway's is translation's); a mark
                   a later event sets on an earlier message
- ``projection``   a thread as AG-UI messages from what each event row keeps (snapshots)
- ``progress``     what an event does to its thread's open calls and run
- ``recovery``     the events that close a run a crash cut off
- ``restarts``     closing the runs a crash cut off, through the service, and what goes on
- ``cut_off``      how a reply cut off (stopped, failed, interrupted) is stored and marked
- ``shared_writes`` one session written by several writers at once (a live turn), in turn
- ``quarantine``   a thread set aside because a stored value of it cannot be decoded
- ``threads``      what the store answers about threads: opened, listed, a user's usage
- ``thread_index`` a user's threads as a list: titles, previews, flags, search terms, pages
- ``frames``       each thread's event log: numbered frames, read after a cursor
- ``run_start``    where a run's stored events begin: the thread as it was before the run,
                   and a run's stored input found by its runId (an index), for dedupe
- ``leases``       what the store answers about a thread's lease (``gateway.cluster``)
- ``errors``       what the store raises when it cannot be used
- ``sqlite/``      the SQLite backend (the default: one file, one writing process): the
                   connection and where its SQL runs (``database``, the audit's too), the
                   schema and its migrations, the write commands' SQL and their
                   transaction, the reads, the state scopes, the open calls, the audit's
                   tables, the one-process lock
- ``postgres/``    the PostgreSQL backend (``--db postgresql://...``), the same concerns for
                   a database several gateway processes write: row locks where SQLite had
                   one writer, a writer and a reader connection, a lock that counts the
                   live gateways; and the cluster's SQL (leases, notifications)

The modules above ``sqlite/`` and ``postgres/`` hold the logic any backend shares; SQL lives
only below them. Nothing here imports a layer above the store: what translation decides
(which messages an event shows as) comes in as ``messages``, given to ``SessionService``.
"""

from typing import TYPE_CHECKING

from gateway.lazy import reexports

if TYPE_CHECKING:
    from gateway.store.errors import CommitFailedError, StoreError
    from gateway.store.projection import ThreadPage
    from gateway.store.quarantine import Quarantine, QuarantinedThreadError
    from gateway.store.recovery import INTERRUPTED_RESULT
    from gateway.store.service import SessionService
    from gateway.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
    from gateway.store.threads import OpenedThread, ThreadSummary, Usage

# Imported when first asked for: a module of the store (``cut_off``, which translation uses)
# may then be imported alone, as a worker process does, without the service and SQLite.
__getattr__ = reexports(
    __name__,
    {
        "CommitFailedError": "gateway.store.errors",
        "StoreError": "gateway.store.errors",
        "ThreadPage": "gateway.store.projection",
        "Quarantine": "gateway.store.quarantine",
        "QuarantinedThreadError": "gateway.store.quarantine",
        "INTERRUPTED_RESULT": "gateway.store.recovery",
        "SessionService": "gateway.store.service",
        "MIGRATIONS": "gateway.store.sqlite.schema",
        "SCHEMA_VERSION": "gateway.store.sqlite.schema",
        "OpenedThread": "gateway.store.threads",
        "ThreadSummary": "gateway.store.threads",
        "Usage": "gateway.store.threads",
    },
)

__all__ = [
    "INTERRUPTED_RESULT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CommitFailedError",
    "OpenedThread",
    "Quarantine",
    "QuarantinedThreadError",
    "SessionService",
    "StoreError",
    "ThreadPage",
    "ThreadSummary",
    "Usage",
]
