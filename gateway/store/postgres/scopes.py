"""ADK's ``app:`` and ``user:`` state on PostgreSQL, one row per app and per user.

Several processes may merge deltas into one user's state at once: a merge takes the row's
lock (``FOR UPDATE``) before it reads the state, so each applies to the state the one
before it committed and no key is lost.
"""

from __future__ import annotations

from typing import Any, cast

import psycopg

from gateway.store.codec import load_state, merged_state, updated_state
from gateway.store.postgres.snapshot import one_statement


def merge_scope(
    db: psycopg.Connection, app_name: str, user_id: str | None, delta: dict[str, Any], now: float
) -> None:
    """Applies a delta to app state (user_id None) or user state, as dict.update does."""
    if user_id is None:
        db.execute(
            "INSERT INTO app_states (app_name, state, update_time) VALUES (%s, '{}', %s)"
            " ON CONFLICT DO NOTHING",
            (app_name, now),
        )
        (state,) = cast(
            tuple[str],
            db.execute(
                "SELECT state FROM app_states WHERE app_name = %s FOR UPDATE", (app_name,)
            ).fetchone(),
        )
        db.execute(
            "UPDATE app_states SET state = %s, update_time = %s WHERE app_name = %s",
            (updated_state(state, delta), now, app_name),
        )
        return
    db.execute(
        "INSERT INTO user_states (app_name, user_id, state, update_time)"
        " VALUES (%s, %s, '{}', %s) ON CONFLICT DO NOTHING",
        (app_name, user_id, now),
    )
    (state,) = cast(
        tuple[str],
        db.execute(
            "SELECT state FROM user_states WHERE app_name = %s AND user_id = %s FOR UPDATE",
            (app_name, user_id),
        ).fetchone(),
    )
    db.execute(
        "UPDATE user_states SET state = %s, update_time = %s WHERE app_name = %s AND user_id = %s",
        (updated_state(state, delta), now, app_name, user_id),
    )


@one_statement
def scope_state(db: psycopg.Connection, app_name: str, user_id: str | None) -> dict[str, Any]:
    """The app state (user_id None) or the user state, without prefixes."""
    if user_id is None:
        row = db.execute("SELECT state FROM app_states WHERE app_name = %s", (app_name,)).fetchone()
    else:
        row = db.execute(
            "SELECT state FROM user_states WHERE app_name = %s AND user_id = %s",
            (app_name, user_id),
        ).fetchone()
    return load_state(row[0] if row else None)


def stored_scopes(
    db: psycopg.Connection, app_name: str, user_id: str
) -> tuple[str | None, str | None]:
    """The app state and the user state of a session, as stored (decoded by the caller)."""
    return cast(
        tuple[str | None, str | None],
        db.execute(
            "SELECT (SELECT state FROM app_states WHERE app_name = %s),"
            " (SELECT state FROM user_states WHERE app_name = %s AND user_id = %s)",
            (app_name, app_name, user_id),
        ).fetchone(),
    )


def with_scopes(
    db: psycopg.Connection, app_name: str, user_id: str, session_state: dict[str, Any]
) -> dict[str, Any]:
    """A session's state as ADK shows it: its own keys, then app: and user: ones."""
    app_state, user_state = stored_scopes(db, app_name, user_id)
    return merged_state(session_state, load_state(app_state), load_state(user_state))
