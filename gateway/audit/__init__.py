"""The audit: every tool call, whose it was, what came of it, and who executed it; and what
callers did at the doors: who, authenticated how, from which address.

Rows go to the ``audit`` (tool calls) and ``access`` (door actions) tables of the gateway's
database, written by a background task so that a run never waits for the disk. Who records
what: ``AuditPlugin`` the tool calls ADK runs, the hub the browser's answers to client
calls (``AuditLog.record_client_result``), the doors (``gateway.doors.access``) their
actions and refusals. ``agent-gateway audit`` reads them back from outside.

Its parts, one job each:

- ``records``  what is kept: ``AuditRecord`` (a tool call), ``AccessRecord`` (a door
               action), each as a row and as a line for a person; a result's outcome
- ``tables``   where it is kept: the two tables behind a small seam, SQLite or PostgreSQL
               as ``--db`` says (their SQL is ``gateway.store.sqlite.audit`` and
               ``gateway.store.postgres.audit``)
- ``log``      ``AuditLog``: records queued and written in batches, a busy database waited
               out, refusals kept to a rate (``RefusalBudget``)
- ``plugin``   ``AuditPlugin``: the ADK plugin that records tool calls as they return
- ``reading``  the audit read read-only from outside a gateway, and printed for the CLI
"""

from typing import TYPE_CHECKING

from gateway.lazy import reexports

if TYPE_CHECKING:
    from gateway.audit.log import AuditLog
    from gateway.audit.plugin import AuditPlugin
    from gateway.audit.reading import print_audit, read_access, read_audit
    from gateway.audit.records import AccessRecord, AuditRecord
    from gateway.audit.tables import AuditError

# Imported when first asked for: a worker process's plugin needs no log, tables or SQLite,
# and only the ``audit`` command reads the audit back.
__getattr__ = reexports(
    __name__,
    {
        "AuditLog": "gateway.audit.log",
        "AuditPlugin": "gateway.audit.plugin",
        "print_audit": "gateway.audit.reading",
        "read_access": "gateway.audit.reading",
        "read_audit": "gateway.audit.reading",
        "AccessRecord": "gateway.audit.records",
        "AuditRecord": "gateway.audit.records",
        "AuditError": "gateway.audit.tables",
    },
)

__all__ = [
    "AccessRecord",
    "AuditError",
    "AuditLog",
    "AuditPlugin",
    "AuditRecord",
    "print_audit",
    "read_access",
    "read_audit",
]
