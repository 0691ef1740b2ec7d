"""The session store: ADK sessions for the gateway, durable, windowed and group-committed.

``SessionService`` is the whole of it to the rest of the gateway. Its parts, one concept
each (each module's docstring has the theory of its part):

- ``service``      ADK's session contract and the gateway's additions, over the parts below
- ``group_commit`` the single writer: one transaction for whatever is queued; health
- ``codec``        stored values as text and back; a bad one is a ``Damage``, never a raise
- ``rows``         a read's rows as plain values, decoded once the read is over
- ``projection``   a thread as AG-UI messages from what each event row keeps (snapshots)
- ``progress``     what an event does to its thread's open calls and run
- ``recovery``     the events that close a run a crash cut off
- ``quarantine``   a thread set aside because a stored value of it cannot be decoded
- ``threads``      what the store answers about threads: opened, listed, a user's usage
- ``errors``       what the store raises when it cannot be used
- ``sqlite/``      the SQLite backend, every statement of SQL: the connection, the schema
                   and its migrations, the write commands and their transaction, the reads,
                   the state scopes, the open calls, the one-process lock

The modules above ``sqlite/`` hold the logic any backend shares; SQL lives only below it.
"""

from gateway.store.errors import CommitFailedError, StoreError
from gateway.store.projection import ThreadPage
from gateway.store.quarantine import Quarantine, QuarantinedThreadError
from gateway.store.recovery import INTERRUPTED_RESULT
from gateway.store.service import SessionService
from gateway.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from gateway.store.threads import OpenedThread, ThreadSummary, Usage

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
