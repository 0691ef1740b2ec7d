"""What a ``--db`` value names: a PostgreSQL URL (``postgresql://``, ``postgres://``) or,
for anything else, a SQLite file; and how to name it to people, without its password.

Below the backends: each of them, the audit's tables and the cluster read a ``--db`` value
this way, and none of them needs the factory that opens one (``open``).
"""

from __future__ import annotations

import urllib.parse

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(db: str) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database rather than a SQLite file."""
    return db.startswith(_POSTGRES_SCHEMES)


def described(db: str) -> str:
    """The database a ``--db`` value names, for people: a URL without its password or query."""
    if not is_postgres(db):
        return db
    try:
        parts = urllib.parse.urlsplit(db)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "postgresql://(a URL that cannot be parsed)"
    user = f"{parts.username}@" if parts.username else ""
    return f"postgresql://{user}{host}{port}{parts.path}"
