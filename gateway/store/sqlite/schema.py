"""The SQLite file's schema: numbered, and brought up to date when a gateway opens it.

The schema is numbered; ``MIGRATIONS[n]`` takes a database from version n to n + 1, all in
one transaction. ``prepare`` refuses a file that is not an agent-gateway store, or one
newer than this code. A migration that meets a stored event it cannot decode sets that
one thread aside (quarantined once every migration has run) and goes on.

Each migration is given the connection and the store's projection of an event into its
AG-UI messages (``gateway.store.messages``): those that recompute the messages column
make them with it, as an append does.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

from google.adk.events import Event

from gateway.store.codec import decoded_event, dump_messages
from gateway.store.cut_off import LEGACY_NOTE
from gateway.store.messages import EventMessages
from gateway.store.progress import RunProgress
from gateway.store.quarantine import Quarantine
from gateway.store.run_start import RUN_ID_SQLITE, RUN_ID_SQLITE_ROWS
from gateway.store.schema import check_ours, migrations_due
from gateway.store.sqlite.open_calls import record_progress
from gateway.store.sqlite.thread_index import MIGRATION as THREAD_INDEX
from gateway.store.sqlite.thread_index import index_existing

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")

# A migration: the connection, and the projection that makes an event row's messages.
Migration = Callable[[sqlite3.Connection, EventMessages], None]


def _create_v1(db: sqlite3.Connection, messages: EventMessages) -> None:
    for statement in (
        "CREATE TABLE app_states (app_name TEXT PRIMARY KEY, state TEXT NOT NULL,"
        " update_time REAL NOT NULL)",
        "CREATE TABLE user_states (app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
        " state TEXT NOT NULL, update_time REAL NOT NULL, PRIMARY KEY (app_name, user_id))",
        # pk is an explicit INTEGER PRIMARY KEY so VACUUM never renumbers it under events.
        "CREATE TABLE sessions (pk INTEGER PRIMARY KEY, app_name TEXT NOT NULL,"
        " user_id TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL,"
        " create_time REAL NOT NULL, update_time REAL NOT NULL,"
        " revision INTEGER NOT NULL DEFAULT 0, UNIQUE (app_name, user_id, id))",
        "CREATE INDEX sessions_by_thread ON sessions (app_name, id)",
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, session_pk INTEGER NOT NULL,"
        " id TEXT NOT NULL, invocation_id TEXT NOT NULL, author TEXT NOT NULL,"
        " timestamp REAL NOT NULL, data TEXT NOT NULL)",
        "CREATE INDEX events_by_session ON events (session_pk, seq)",
    ):
        db.execute(statement)


def _track_runs_v2(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds open-call and open-run tracking, and rebuilds both from the stored events."""
    for statement in (
        "ALTER TABLE sessions ADD COLUMN invocation_id TEXT",
        "ALTER TABLE sessions ADD COLUMN invocation_seq INTEGER",
        "ALTER TABLE sessions ADD COLUMN run_open INTEGER NOT NULL DEFAULT 0",
        "CREATE TABLE open_calls (session_pk INTEGER NOT NULL, call_id TEXT NOT NULL,"
        " name TEXT NOT NULL, seq INTEGER NOT NULL, invocation_seq INTEGER NOT NULL,"
        " long_running INTEGER NOT NULL, PRIMARY KEY (session_pk, call_id)) WITHOUT ROWID",
    ):
        db.execute(statement)
    session_pks = [pk for (pk,) in db.execute("SELECT pk FROM sessions ORDER BY pk").fetchall()]
    for session_pk in session_pks:
        invocation_id: str | None = None
        invocation_seq = 0
        run_open = False
        rows = db.execute(
            "SELECT seq, invocation_id, data FROM events WHERE session_pk = ? ORDER BY seq",
            (session_pk,),
        ).fetchall()
        for seq, event_invocation, data in rows:
            if event_invocation != invocation_id:
                invocation_id, invocation_seq = event_invocation, seq
            if (event := _migrated_event(db, session_pk, seq, data)) is None:
                continue
            progress = RunProgress.of(event)
            record_progress(db, progress, session_pk, seq, invocation_seq)
            run_open = progress.run_open if progress.run_open is not None else run_open
        db.execute(
            "UPDATE sessions SET invocation_id = ?, invocation_seq = ?, run_open = ? WHERE pk = ?",
            (invocation_id, invocation_seq if rows else None, run_open, session_pk),
        )


def _keep_messages_v3(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds each event's AG-UI messages, computed from the stored events."""
    db.execute("ALTER TABLE events ADD COLUMN messages TEXT")
    _compute_messages(db, messages)


def _compute_messages(
    db: sqlite3.Connection, messages: EventMessages, data_like: str = "%"
) -> None:
    """Writes each event's AG-UI messages as the projection ``messages`` makes them now
    (only those of events whose stored data is LIKE ``data_like``)."""
    last_seq = 0
    # In slices, so a large thread history never sits in memory at once.
    while rows := db.execute(
        "SELECT seq, session_pk, data FROM events WHERE seq > ? AND data LIKE ?"
        " ORDER BY seq LIMIT 512",
        (last_seq, data_like),
    ).fetchall():
        updates = []
        for seq, session_pk, data in rows:
            if (event := _migrated_event(db, session_pk, seq, data)) is not None:
                updates.append((dump_messages(event, messages), seq))
        db.executemany("UPDATE events SET messages = ? WHERE seq = ?", updates)
        last_seq = rows[-1][0]


def _migrated_event(db: sqlite3.Connection, session_pk: int, seq: int, data: str) -> Event | None:
    """A stored event a migration reads; None, and its thread set aside, if it cannot be decoded.

    The quarantine table may not exist yet, so the thread waits in a temporary table that
    ``prepare`` empties into it once every migration has run.
    """
    decoded = decoded_event(seq, data)
    if isinstance(decoded, Event):
        return decoded
    db.execute(
        "CREATE TEMP TABLE IF NOT EXISTS set_aside (session_pk INTEGER PRIMARY KEY,"
        " seq INTEGER, column_name TEXT NOT NULL, reason TEXT NOT NULL)"
    )
    db.execute(
        "INSERT OR IGNORE INTO temp.set_aside VALUES (?, ?, ?, ?)",
        (session_pk, decoded.seq, decoded.column, decoded.reason),
    )
    return None


def _quarantine_set_aside(db: sqlite3.Connection, path: str) -> None:
    """Quarantines the threads the migrations set aside, with one log line each."""
    if not db.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'set_aside'").fetchall():
        return
    rows = db.execute(
        "SELECT s.id, s.user_id, a.seq, a.column_name, a.reason FROM temp.set_aside a"
        " JOIN sessions s ON s.pk = a.session_pk ORDER BY a.session_pk"
    ).fetchall()
    db.execute(
        "INSERT OR IGNORE INTO quarantine (session_pk, seq, column_name, reason, at)"
        " SELECT session_pk, seq, column_name, reason, ? FROM temp.set_aside",
        (time.time(),),
    )
    db.execute("DROP TABLE temp.set_aside")
    for thread_id, user_id, seq, column, reason in rows:
        quarantine = Quarantine(thread_id, user_id, seq, column, reason, 0.0)
        quarantine.report(f"found migrating {path}")


def _keep_streamed_text_v4(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds the text so far of the message each thread is streaming (none in older files)."""
    # One row per session at most: a run streams one message at a time.
    db.execute(
        "CREATE TABLE streamed_texts (session_pk INTEGER PRIMARY KEY,"
        " invocation_id TEXT NOT NULL, message_id TEXT NOT NULL, author TEXT NOT NULL,"
        " text TEXT NOT NULL, update_time REAL NOT NULL)"
    )


def _quarantine_v5(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds the threads set aside because a stored value of theirs cannot be decoded."""
    # One row per thread: the first bad value found is enough to refuse it.
    db.execute(
        "CREATE TABLE quarantine (session_pk INTEGER PRIMARY KEY, seq INTEGER,"
        " column_name TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL)"
    )


# What an event row takes, as the quota counts it: its data and its messages, in bytes.
EVENT_BYTES = "length(CAST(data AS BLOB)) + COALESCE(length(CAST(messages AS BLOB)), 0)"


def _count_stored_bytes_v6(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds what each thread holds in bytes, for the per-user quota, counted from its events."""
    db.execute("ALTER TABLE sessions ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0")
    _count_stored_bytes(db)


def _count_stored_bytes(db: sqlite3.Connection) -> None:
    db.execute(
        f"UPDATE sessions SET stored_bytes = (SELECT COALESCE(SUM({EVENT_BYTES}), 0)"
        " FROM events WHERE session_pk = sessions.pk)"
    )


def _name_speakers_v7(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Recomputes each event's messages: who spoke (agent name, sub-agent run), thoughts as
    reasoning messages, server tool results as a client is shown them."""
    _compute_messages(db, messages)
    _count_stored_bytes(db)


def _mark_cut_off_replies_v8(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Recomputes the messages of replies a crash cut off: the text without the bilingual
    note a client was shown, and ``metadata.ended`` (``gateway.store.cut_off``)."""
    _compute_messages(db, messages, f"%{LEGACY_NOTE}%")
    _count_stored_bytes(db)


def _log_frames_v9(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds each thread's event log: the frames its watchers were sent, numbered per thread
    (``gateway.store.frames``); threads from before it start their log empty."""
    db.execute(
        "CREATE TABLE frames (session_pk INTEGER NOT NULL, seq INTEGER NOT NULL,"
        " data BLOB NOT NULL, only_for TEXT, not_for TEXT,"
        " PRIMARY KEY (session_pk, seq)) WITHOUT ROWID"
    )


def _index_threads_v10(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds the thread index (``sqlite.thread_index``): titles, previews, pins, archive,
    metadata and the full-text words, made from the stored events."""
    for statement in THREAD_INDEX:
        db.execute(statement)
    index_existing(db)


def _keep_branches_v11(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds branches (``gateway.store.branches``): the versions of a turn a regenerate or
    an edit made, those not shown kept aside; every thread so far is on its trunk. A later
    migration that rewrites event rows rewrites those of ``branch_events`` too."""
    for statement in (
        "ALTER TABLE sessions ADD COLUMN branch INTEGER NOT NULL DEFAULT 0",
        "CREATE TABLE branches (session_pk INTEGER NOT NULL, id INTEGER NOT NULL,"
        " parent INTEGER NOT NULL, fork_seq INTEGER NOT NULL, run_id TEXT NOT NULL,"
        " message_id TEXT NOT NULL, text TEXT NOT NULL, parent_run_id TEXT,"
        " created_at REAL NOT NULL, selected_at REAL NOT NULL, forked INTEGER NOT NULL,"
        " PRIMARY KEY (session_pk, id)) WITHOUT ROWID",
        "CREATE TABLE branch_events (seq INTEGER PRIMARY KEY, branch INTEGER NOT NULL,"
        " session_pk INTEGER NOT NULL, id TEXT NOT NULL, invocation_id TEXT NOT NULL,"
        " author TEXT NOT NULL, timestamp REAL NOT NULL, data TEXT NOT NULL, messages TEXT)",
        "CREATE INDEX branch_events_by_branch ON branch_events (session_pk, branch)",
    ):
        db.execute(statement)


# Each user's threads and the bytes they hold, for the per-user quota, kept by SQLite as
# ``sessions`` changes: summing the user's rows at every turn grew with their threads
# (0.26 ms a turn at 800 threads, in memory), a cost a plain ADK Runner does not have.
USER_USAGE = (
    "CREATE TABLE user_usage (app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
    " threads INTEGER NOT NULL, stored_bytes INTEGER NOT NULL,"
    " PRIMARY KEY (app_name, user_id)) WITHOUT ROWID",
    "CREATE TRIGGER user_usage_on_insert AFTER INSERT ON sessions BEGIN"
    " INSERT INTO user_usage VALUES (new.app_name, new.user_id, 1, new.stored_bytes)"
    " ON CONFLICT (app_name, user_id) DO UPDATE SET threads = threads + 1,"
    " stored_bytes = stored_bytes + excluded.stored_bytes; END",
    "CREATE TRIGGER user_usage_on_delete AFTER DELETE ON sessions BEGIN"
    " UPDATE user_usage SET threads = threads - 1, stored_bytes = stored_bytes - old.stored_bytes"
    " WHERE app_name = old.app_name AND user_id = old.user_id; END",
    "CREATE TRIGGER user_usage_on_bytes AFTER UPDATE OF stored_bytes ON sessions BEGIN"
    " UPDATE user_usage SET stored_bytes = stored_bytes + new.stored_bytes - old.stored_bytes"
    " WHERE app_name = new.app_name AND user_id = new.user_id; END",
)


def _total_usage_v12(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Adds each user's totals (``USER_USAGE``), counted from the threads there are."""
    for statement in USER_USAGE:
        db.execute(statement)
    db.execute(
        "INSERT INTO user_usage SELECT app_name, user_id, COUNT(*), SUM(stored_bytes)"
        " FROM sessions GROUP BY app_name, user_id"
    )


def _index_runs_v13(db: sqlite3.Connection, messages: EventMessages) -> None:
    """Indexes the run id stamped on the events a user's input begins, so that an input
    sent again is found to have run (``run_start.stored_run``, ``gateway.hub.dedupe``)."""
    db.execute(
        f"CREATE INDEX IF NOT EXISTS events_by_run ON events (session_pk, {RUN_ID_SQLITE})"
        f" WHERE {RUN_ID_SQLITE_ROWS}"
    )


MIGRATIONS: tuple[Migration, ...] = (
    _create_v1,
    _track_runs_v2,
    _keep_messages_v3,
    _keep_streamed_text_v4,
    _quarantine_v5,
    _count_stored_bytes_v6,
    _name_speakers_v7,
    _mark_cut_off_replies_v8,
    _log_frames_v9,
    _index_threads_v10,
    _keep_branches_v11,
    _total_usage_v12,
    _index_runs_v13,
)
SCHEMA_VERSION = len(MIGRATIONS)


def prepare(
    db: sqlite3.Connection,
    *,
    path: str,
    synchronous: str,
    read_only: bool,
    in_memory: bool,
    messages: EventMessages,
) -> None:
    """Checks the file is ours and readable, then brings its schema up to date."""
    # The first read fails here on a file that is not SQLite, before anything is written.
    rows = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    tables = {name for (name,) in rows}
    if not read_only:
        if not in_memory:
            db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {synchronous}")
    check_ours(path, tables, kind="a SQLite database", other="another file")
    version = 0
    if tables:
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
    if not migrations_due(path, version, SCHEMA_VERSION, read_only=read_only):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if version == 0:
            db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            db.execute("INSERT INTO schema_version VALUES (0)")
        for migration in MIGRATIONS[version:]:
            migration(db, messages)
        _quarantine_set_aside(db, path)
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if version:
        log.info("migrated %s from store schema %d to %d", path, version, SCHEMA_VERSION)
