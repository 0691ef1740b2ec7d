"""The PostgreSQL schema: numbered, created or brought up to date in one transaction.

The same shape as SQLite's (``sqlite.schema``) with its own numbers: ``MIGRATIONS[n]``
takes a database from version n to n + 1, and a new database gets every one of them in
one transaction. Several gateways may start on one new database at once: a lock on the
schema (``pg_advisory_xact_lock``) lets one create it while the others wait and then find
it current. ``prepare`` refuses a database that has tables but no ``schema_version`` (not
an agent-gateway store), or one newer than this code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg

from gateway.store.postgres.thread_index import MIGRATION as THREAD_INDEX
from gateway.store.postgres.thread_index import index_existing
from gateway.store.run_start import RUN_ID_POSTGRES, RUN_ID_POSTGRES_ROWS
from gateway.store.schema import check_ours, migrations_due

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")

Migration = Callable[[psycopg.Connection], None]

# The key of the advisory lock that serializes schema changes (any number: ours alone).
_SCHEMA_LOCK = 0x6167_6177_0001

# What an event row takes, as the quota counts it: its data and its messages, in bytes.
EVENT_BYTES = "octet_length(data) + COALESCE(octet_length(messages), 0)"


def _create_v1(db: psycopg.Connection) -> None:
    for statement in (
        "CREATE TABLE app_states (app_name TEXT PRIMARY KEY, state TEXT NOT NULL,"
        " update_time DOUBLE PRECISION NOT NULL)",
        "CREATE TABLE user_states (app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
        " state TEXT NOT NULL, update_time DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (app_name, user_id))",
        "CREATE TABLE sessions (pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " app_name TEXT NOT NULL, user_id TEXT NOT NULL, id TEXT NOT NULL,"
        " state TEXT NOT NULL, create_time DOUBLE PRECISION NOT NULL,"
        " update_time DOUBLE PRECISION NOT NULL, revision BIGINT NOT NULL DEFAULT 0,"
        # The invocation the last event belongs to, where it starts, and whether the
        # model owes a reply (``progress``).
        " invocation_id TEXT, invocation_seq BIGINT, run_open BOOLEAN NOT NULL DEFAULT FALSE,"
        " stored_bytes BIGINT NOT NULL DEFAULT 0, UNIQUE (app_name, user_id, id))",
        "CREATE INDEX sessions_by_thread ON sessions (app_name, id)",
        "CREATE INDEX sessions_with_open_runs ON sessions (app_name) WHERE run_open",
        # seq orders a thread's events: appends to one thread hold its row's lock, so
        # within a thread seq grows in the order events commit.
        "CREATE TABLE events (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " session_pk BIGINT NOT NULL REFERENCES sessions ON DELETE CASCADE,"
        " id TEXT NOT NULL, invocation_id TEXT NOT NULL, author TEXT NOT NULL,"
        " timestamp DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, messages TEXT)",
        "CREATE INDEX events_by_session ON events (session_pk, seq)",
        "CREATE TABLE open_calls (session_pk BIGINT NOT NULL REFERENCES sessions"
        " ON DELETE CASCADE, call_id TEXT NOT NULL, name TEXT NOT NULL, seq BIGINT NOT NULL,"
        " invocation_seq BIGINT NOT NULL, long_running BOOLEAN NOT NULL,"
        " PRIMARY KEY (session_pk, call_id))",
        # One row per session at most: a run streams one message at a time.
        "CREATE TABLE streamed_texts (session_pk BIGINT PRIMARY KEY REFERENCES sessions"
        " ON DELETE CASCADE, invocation_id TEXT NOT NULL, message_id TEXT NOT NULL,"
        " author TEXT NOT NULL, text TEXT NOT NULL, update_time DOUBLE PRECISION NOT NULL)",
        # One row per thread: the first bad value found is enough to refuse it.
        "CREATE TABLE quarantine (session_pk BIGINT PRIMARY KEY REFERENCES sessions"
        " ON DELETE CASCADE, seq BIGINT, column_name TEXT NOT NULL, reason TEXT NOT NULL,"
        " at DOUBLE PRECISION NOT NULL)",
        # Each thread's event log (``gateway.store.frames``), numbered by its one writer.
        "CREATE TABLE frames (session_pk BIGINT NOT NULL REFERENCES sessions"
        " ON DELETE CASCADE, seq BIGINT NOT NULL, data BYTEA NOT NULL, only_for TEXT,"
        " not_for TEXT, PRIMARY KEY (session_pk, seq))",
        # The audit log (``gateway.audit``, ``postgres.audit``): every process's records.
        "CREATE TABLE audit (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " at DOUBLE PRECISION NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,"
        " run_id TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT NOT NULL,"
        " arguments TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT,"
        " duration_ms DOUBLE PRECISION,"
        " executor TEXT NOT NULL CHECK (executor IN ('server', 'client')))",
        "CREATE INDEX audit_by_thread ON audit (thread_id, at)",
        "CREATE INDEX audit_by_user ON audit (user_id, at)",
        "CREATE TABLE access (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " at DOUBLE PRECISION NOT NULL, user_id TEXT NOT NULL, org TEXT, via TEXT NOT NULL,"
        " client TEXT NOT NULL, door TEXT NOT NULL, action TEXT NOT NULL,"
        " thread_id TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT)",
        "CREATE INDEX access_by_thread ON access (thread_id, at)",
        "CREATE INDEX access_by_user ON access (user_id, at)",
        "CREATE INDEX access_by_client ON access (client, at)",
        # What the writer's health probe counts up (``writes.Probe``): one row.
        "CREATE TABLE probes (count BIGINT NOT NULL)",
        "INSERT INTO probes VALUES (0)",
    ):
        db.execute(statement)


def _index_threads_v2(db: psycopg.Connection) -> None:
    """Adds the thread index (``postgres.thread_index``): titles, previews, pins, archive,
    metadata and the full-text words, made from the stored events."""
    for statement in THREAD_INDEX:
        db.execute(statement)
    index_existing(db)


def _keep_branches_v3(db: psycopg.Connection) -> None:
    """Adds branches (``gateway.store.branches``): the versions of a turn a regenerate or
    an edit made, those not shown kept aside; every thread so far is on its trunk. A later
    migration that rewrites event rows rewrites those of ``branch_events`` too."""
    for statement in (
        "ALTER TABLE sessions ADD COLUMN branch BIGINT NOT NULL DEFAULT 0",
        "CREATE TABLE branches (session_pk BIGINT NOT NULL REFERENCES sessions"
        " ON DELETE CASCADE, id BIGINT NOT NULL, parent BIGINT NOT NULL,"
        " fork_seq BIGINT NOT NULL, run_id TEXT NOT NULL, message_id TEXT NOT NULL,"
        " text TEXT NOT NULL, parent_run_id TEXT, created_at DOUBLE PRECISION NOT NULL,"
        " selected_at DOUBLE PRECISION NOT NULL, forked BOOLEAN NOT NULL,"
        " PRIMARY KEY (session_pk, id))",
        "CREATE TABLE branch_events (seq BIGINT PRIMARY KEY, branch BIGINT NOT NULL,"
        " session_pk BIGINT NOT NULL REFERENCES sessions ON DELETE CASCADE,"
        " id TEXT NOT NULL, invocation_id TEXT NOT NULL, author TEXT NOT NULL,"
        " timestamp DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, messages TEXT)",
        "CREATE INDEX branch_events_by_branch ON branch_events (session_pk, branch)",
    ):
        db.execute(statement)


def _index_runs_v4(db: psycopg.Connection) -> None:
    """Indexes the run id stamped on the events a user's input begins, so that an input
    sent again is found to have run (``run_start.stored_run``, ``gateway.hub.dedupe``)."""
    db.execute(
        f"CREATE INDEX IF NOT EXISTS events_by_run ON events (session_pk, ({RUN_ID_POSTGRES}))"
        f" WHERE {RUN_ID_POSTGRES_ROWS}"
    )


MIGRATIONS: tuple[Migration, ...] = (
    _create_v1,
    _index_threads_v2,
    _keep_branches_v3,
    _index_runs_v4,
)
SCHEMA_VERSION = len(MIGRATIONS)


def prepare(db: psycopg.Connection, *, where: str, read_only: bool) -> None:
    """Checks the database is ours and current; a writer creates or migrates it."""
    if not read_only:
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
    rows = db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchall()
    tables = {name for (name,) in rows}
    check_ours(where, tables, kind="a PostgreSQL database", other="another database")
    version = 0
    if tables:
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
    if not migrations_due(where, version, SCHEMA_VERSION, read_only=read_only):
        db.commit()
        return
    if version == 0:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (0)")
    for migration in MIGRATIONS[version:]:
        migration(db)
    db.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
    db.commit()
    if version:
        log.info("migrated %s from store schema %d to %d", where, version, SCHEMA_VERSION)
