"""Opening a store's database: the ``--db`` value picks its backend.

A ``postgresql://`` (or ``postgres://``) URL is PostgreSQL, anything else a SQLite file
(``urls``). This is the one module that names the backends: the seam (``backend``) names
none of them and no backend imports this module, so the seam and its backends make no
import circle.
"""

from __future__ import annotations

from gateway.store.backend import Backend
from gateway.store.errors import StoreError
from gateway.store.messages import EventMessages
from gateway.store.urls import is_postgres


async def open_backend(
    db: str, *, durability: str, read_only: bool, messages: EventMessages
) -> Backend:
    """Connects to the database ``db`` names, checked and brought up to date (``messages``
    is the store's projection, for a SQLite migration that recomputes what rows keep).

    Raises ``StoreError`` with a sentence (never a password) if it cannot be used.
    """
    if is_postgres(db):
        try:
            from gateway.store.postgres.backend import open_postgres
        except ImportError:
            raise StoreError(
                "--db names a PostgreSQL database, but psycopg is not installed:"
                " install agent-gateway[postgres]."
            ) from None

        return await open_postgres(db, durability=durability, read_only=read_only)
    from gateway.store.sqlite.backend import open_sqlite

    return await open_sqlite(db, durability=durability, read_only=read_only, messages=messages)
