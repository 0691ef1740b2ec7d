"""ADK's ``app:`` and ``user:`` state, in tables of their own, shared by a user's sessions.

A session's own state lives in its row; the scopes live once per app and once per user, and
a session shows all three merged, prefixed as ADK does.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

from gateway.store.codec import load_state, merged_state, updated_state


def merge_scope(
    db: sqlite3.Connection, app_name: str, user_id: str | None, delta: dict[str, Any], now: float
) -> None:
    """Applies a delta to app state (user_id None) or user state, as dict.update does."""
    if user_id is None:
        row = db.execute("SELECT state FROM app_states WHERE app_name = ?", (app_name,)).fetchone()
        db.execute(
            "INSERT OR REPLACE INTO app_states (app_name, state, update_time) VALUES (?, ?, ?)",
            (app_name, updated_state(row[0] if row else None, delta), now),
        )
    else:
        row = db.execute(
            "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?", (app_name, user_id)
        ).fetchone()
        db.execute(
            "INSERT OR REPLACE INTO user_states (app_name, user_id, state, update_time)"
            " VALUES (?, ?, ?, ?)",
            (app_name, user_id, updated_state(row[0] if row else None, delta), now),
        )


def scope_state(db: sqlite3.Connection, app_name: str, user_id: str | None) -> dict[str, Any]:
    """The app state (user_id None) or the user state, without prefixes."""
    if user_id is None:
        row = db.execute("SELECT state FROM app_states WHERE app_name = ?", (app_name,)).fetchone()
    else:
        row = db.execute(
            "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?",
            (app_name, user_id),
        ).fetchone()
    return load_state(row[0] if row else None)


def stored_scopes(
    db: sqlite3.Connection, app_name: str, user_id: str
) -> tuple[str | None, str | None]:
    """The app state and the user state of a session, as stored (decoded by the caller)."""
    # One statement: every statement in the database thread is a wait for the GIL.
    return cast(
        tuple[str | None, str | None],
        db.execute(
            "SELECT (SELECT state FROM app_states WHERE app_name = ?),"
            " (SELECT state FROM user_states WHERE app_name = ? AND user_id = ?)",
            (app_name, app_name, user_id),
        ).fetchone(),
    )


def with_scopes(
    db: sqlite3.Connection, app_name: str, user_id: str, session_state: dict[str, Any]
) -> dict[str, Any]:
    """A session's state as ADK shows it: its own keys, then app: and user: ones."""
    app_state, user_state = stored_scopes(db, app_name, user_id)
    return merged_state(session_state, load_state(app_state), load_state(user_state))
