"""What a backend's schema must be before a store uses it: ours, not newer, and current.

Each backend numbers its own migrations (``sqlite.schema``, ``postgres.schema``) and reads
what its database holds; what may be done with what it read is decided here, once, in the
sentences an operator reads.
"""

from __future__ import annotations

from collections.abc import Collection

from gateway.store.errors import StoreError


def check_ours(where: str, tables: Collection[str], *, kind: str, other: str) -> None:
    """Refuses a database that holds tables but no ``schema_version``: not a store.

    ``kind`` names the database ("a SQLite database"), ``other`` what to point --db at
    instead ("another file").
    """
    if tables and "schema_version" not in tables:
        listed = ", ".join(sorted(tables)[:10])
        raise StoreError(
            f"{where} is {kind} but not an agent-gateway store (it has no schema_version"
            f" table; tables: {listed}). Point --db at {other}."
        )


def migrations_due(where: str, version: int, current: int, *, read_only: bool) -> bool:
    """Whether the migrations from ``version`` to ``current`` are to run now.

    Refuses a newer schema, and one a read-only store would have to migrate.
    """
    if version > current:
        raise StoreError(
            f"{where} has store schema version {version}, newer than the version {current}"
            " this agent-gateway understands. Upgrade agent-gateway, or use another --db."
        )
    if version == current:
        return False
    if read_only:
        raise StoreError(
            f"{where} has no agent-gateway store yet; start the gateway on it once to create it."
            if version == 0
            else f"{where} has store schema version {version} and needs migrating to"
            f" {current}; start the gateway on it once to migrate."
        )
    return True
