"""A SQLite file as schema version 1 left it, for the tests of the store's migrations.

``write_v1`` writes threads of ADK events the way the first schema stored them: no
open-call or open-run tracking, no AG-UI messages beside each event.
"""

from __future__ import annotations

import sqlite3

from google.adk.events import Event

from tests.support.backends import APP

V1_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE TABLE app_states (app_name TEXT PRIMARY KEY, state TEXT NOT NULL, update_time REAL NOT NULL);
CREATE TABLE user_states (app_name TEXT NOT NULL, user_id TEXT NOT NULL, state TEXT NOT NULL,
  update_time REAL NOT NULL, PRIMARY KEY (app_name, user_id));
CREATE TABLE sessions (pk INTEGER PRIMARY KEY, app_name TEXT NOT NULL, user_id TEXT NOT NULL,
  id TEXT NOT NULL, state TEXT NOT NULL, create_time REAL NOT NULL, update_time REAL NOT NULL,
  revision INTEGER NOT NULL DEFAULT 0, UNIQUE (app_name, user_id, id));
CREATE INDEX sessions_by_thread ON sessions (app_name, id);
CREATE TABLE events (seq INTEGER PRIMARY KEY, session_pk INTEGER NOT NULL, id TEXT NOT NULL,
  invocation_id TEXT NOT NULL, author TEXT NOT NULL, timestamp REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX events_by_session ON events (session_pk, seq);
"""


def write_v1(path: str, threads: dict[str, list[Event]], app: str = APP) -> None:
    """A database as schema version 1 left it: no open-call or open-run tracking."""
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        for pk, (thread, events) in enumerate(threads.items(), start=1):
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, 'u', ?, '{\"n\": 1}', 1.0, 2.0, ?)",
                (pk, app, thread, len(events)),
            )
            db.executemany(
                "INSERT INTO events (session_pk, id, invocation_id, author, timestamp, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (pk, e.id, e.invocation_id, e.author, e.timestamp, e.model_dump_json())
                    for e in events
                ],
            )


def drop_user_usage(db: sqlite3.Connection) -> None:
    """Takes out what schema 12 added (each user's totals and the triggers that keep them),
    for a test that makes a file as an older schema left it."""
    for trigger in ("user_usage_on_insert", "user_usage_on_delete", "user_usage_on_bytes"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE user_usage")
