"""A session store as the gateway opens it, for tests that make their own.

``SessionService`` takes the projection of an event into the AG-UI messages its row keeps
(``gateway.store.messages``); the gateway gives ``history.event_messages``, and so does
every store a test makes here, so what the tests store is what a gateway stores.
"""

from __future__ import annotations

from typing import Any

from gateway.store import SessionService
from gateway.translate.history import event_messages


def session_store(db: str, **options: Any) -> SessionService:
    """A store over ``db`` (a SQLite file or a PostgreSQL URL), not opened yet; ``options``
    are ``SessionService``'s (``read_only``, ``history_window``, ``durability``)."""
    return SessionService(db, messages=event_messages, **options)
