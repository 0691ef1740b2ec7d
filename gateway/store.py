"""ADK sessions on one aiosqlite connection: durable, windowed, group-committed.

Theory of operation:

- One long-lived connection in WAL mode. Every read and every write batch of a file is one
  call into aiosqlite's worker thread, not one per SQL statement; an in-memory database,
  which never waits on a disk, runs on the loop instead (``Database``).
- Writes (create, append, delete) queue up for one writer task. It takes whatever is
  queued, commits it in one transaction and then wakes each caller: ``append_event``
  returns only once its event is committed, yet a run never waits on another run's model,
  only on the shared commit it joined. ``durability`` picks ``synchronous``: ``normal``
  survives a process crash, ``full`` also survives power loss.
- Optimistic concurrency as in ADK's SQL services: a session carries the revision it was
  loaded at, and appending through an outdated copy raises ``StaleSessionError``.
- ``open_calls`` holds every function call without a response yet, so a load can reach
  back past its window to a call still waiting on the browser, and a restart can find the
  runs a crash cut off (``close_interrupted``).
- Streamed text is not an ADK event until its message completes, yet a client is sent it
  chunk by chunk. ``streamed_texts`` keeps the text so far of the message a thread is
  streaming (``save_streamed_text``; the hub sends a chunk only once it is committed).
  Appending the message's final event deletes the row in the same transaction; a row a
  crash left behind becomes the message, marked interrupted (``close_interrupted``).
- Each event row also keeps the AG-UI messages it shows as (``history.event_messages``),
  written with the event, so a whole thread's snapshot is one read and a JSON decode
  (``thread_messages``) instead of rebuilding every ADK event with pydantic. A change to
  what ``event_messages`` returns needs a migration that recomputes the column.
- The schema is numbered; ``MIGRATIONS[n]`` takes a database from version n to n + 1.
- A read fetches every row it needs and returns them as plain values; they are decoded
  only once the read is over, outside any cursor. A cursor left open by a failed decode
  would keep a stale read snapshot on the store's one connection, and every later
  ``BEGIN IMMEDIATE`` would fail with "database is locked".
- A thread with a stored value that cannot be decoded (old data, a bug) is quarantined:
  one log line names it and the row, ``quarantine`` records it, and every later read of
  it raises ``QuarantinedThreadError`` at once, without decoding. Other threads, start-up
  and crash recovery go on without it.
- One process writes a file: ``open`` takes an ``flock`` on ``<file>.lock`` (holding the
  pid), which the kernel releases when the process dies, however it dies.
- ``can_commit`` says whether the writer's last commit succeeded; while it fails the
  writer tries a one-page commit of its own every ``PROBE_SECONDS``, so it also learns of
  the recovery when no write comes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import sqlite3
import time
import traceback
from collections.abc import Callable, Hashable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import aiosqlite
import msgspec
import pydantic
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.genai import types
from typing_extensions import override

from gateway.config import in_memory
from gateway.database import Database
from gateway.history import Message, answered_calls_only, event_messages

log = logging.getLogger(__name__)

T = TypeVar("T")
_SYNCHRONOUS: dict[str, str] = {"normal": "NORMAL", "full": "FULL"}

# What a thread shows for a run a crash cut off (one text for both languages we serve).
INTERRUPTED_TEXT = "(응답이 중단되었습니다 / the previous response was interrupted)"
# The same note after the text of a message cut off mid-stream.
INTERRUPTED_NOTE = "\n\n" + INTERRUPTED_TEXT
# The answer a cut-off server call gets, so the model request is well formed again.
INTERRUPTED_RESULT = {"error": "interrupted: the gateway stopped before this call finished"}

_MAX_BATCH = 1024
# How long the writer may wait for the rest of a burst of streamed text (see _linger),
# and the turns of the event loop without a new chunk that end a burst: ADK takes three
# turns between two chunks of one stream.
_LINGER_SECONDS = 0.005
_QUIET_TURNS = 4


# While commits fail, how often the writer tries one of its own (a _Probe).
PROBE_SECONDS = 1.0
# What a decoder said about a stored value is cut to this length for logs and operators.
_COMPLAINT_CHARS = 200
# What decoding a stored value raises when the value is bad (msgspec's and pydantic's
# errors are ValueErrors; a column of the wrong SQLite type gives a TypeError).
_DECODE_ERRORS = (ValueError, TypeError, RecursionError)


class StoreError(Exception):
    """The database cannot be used as it is: unreadable, corrupt, foreign, too new or in use."""


class CommitFailedError(StoreError):
    """The store could not commit: nothing of this write is stored (the cause is logged)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Quarantine:
    """Why a thread is set aside: which stored value of it cannot be decoded, and since when."""

    thread_id: str
    user_id: str
    seq: int | None  # the event row; None: the session's own state
    column: str  # "data" or "messages" of the event row, or "state" of the session
    reason: str  # what the decoder said, without the value, cut short
    at: float

    @property
    def where(self) -> str:
        return f"event row {self.seq} ({self.column})" if self.seq is not None else "its state"

    def describe(self) -> str:
        return (
            f"thread {self.thread_id!r:.200} of user {self.user_id!r:.200} is quarantined:"
            f" {self.where} cannot be decoded ({self.reason})"
        )

    def report(self, then: str) -> None:
        """The one warning that names the thread and the row."""
        # Each value apart, so that the log formatter cuts each on its own.
        log.warning(
            "thread %r of user %r is quarantined: %s cannot be decoded (%s); %s",
            self.thread_id,
            self.user_id,
            self.where,
            self.reason,
            then,
        )


class QuarantinedThreadError(StoreError):
    """A thread holds a stored value that cannot be decoded, so the store refuses to load it.

    The message names the thread and the row, for logs and operators; a client is told
    something it can act on instead (see ``hub``).
    """

    def __init__(self, quarantine: Quarantine) -> None:
        super().__init__(quarantine.describe())
        self.quarantine = quarantine


# --- schema and migrations ----------------------------------------------------------------

Migration = Callable[[sqlite3.Connection], None]


def _create_v1(db: sqlite3.Connection) -> None:
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


def _track_runs_v2(db: sqlite3.Connection) -> None:
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
            progress = _RunProgress.of(event)
            progress.record(db, session_pk, seq, invocation_seq)
            run_open = progress.run_open if progress.run_open is not None else run_open
        db.execute(
            "UPDATE sessions SET invocation_id = ?, invocation_seq = ?, run_open = ? WHERE pk = ?",
            (invocation_id, invocation_seq if rows else None, run_open, session_pk),
        )


def _keep_messages_v3(db: sqlite3.Connection) -> None:
    """Adds each event's AG-UI messages, computed from the stored events."""
    db.execute("ALTER TABLE events ADD COLUMN messages TEXT")
    last_seq = 0
    # In slices, so a large thread history never sits in memory at once.
    while rows := db.execute(
        "SELECT seq, session_pk, data FROM events WHERE seq > ? ORDER BY seq LIMIT 512",
        (last_seq,),
    ).fetchall():
        updates = []
        for seq, session_pk, data in rows:
            if (event := _migrated_event(db, session_pk, seq, data)) is not None:
                updates.append((_dump_messages(event), seq))
        db.executemany("UPDATE events SET messages = ? WHERE seq = ?", updates)
        last_seq = rows[-1][0]


def _migrated_event(db: sqlite3.Connection, session_pk: int, seq: int, data: str) -> Event | None:
    """A stored event a migration reads; None, and its thread set aside, if it cannot be decoded.

    The quarantine table may not exist yet, so the thread waits in a temporary table that
    ``_prepare`` empties into it once every migration has run.
    """
    decoded = _decoded_event(seq, data)
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


def _keep_streamed_text_v4(db: sqlite3.Connection) -> None:
    """Adds the text so far of the message each thread is streaming (none in older files)."""
    # One row per session at most: a run streams one message at a time.
    db.execute(
        "CREATE TABLE streamed_texts (session_pk INTEGER PRIMARY KEY,"
        " invocation_id TEXT NOT NULL, message_id TEXT NOT NULL, author TEXT NOT NULL,"
        " text TEXT NOT NULL, update_time REAL NOT NULL)"
    )


def _quarantine_v5(db: sqlite3.Connection) -> None:
    """Adds the threads set aside because a stored value of theirs cannot be decoded."""
    # One row per thread: the first bad value found is enough to refuse it.
    db.execute(
        "CREATE TABLE quarantine (session_pk INTEGER PRIMARY KEY, seq INTEGER,"
        " column_name TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL)"
    )


# What an event row takes, as the quota counts it: its data and its messages, in bytes.
_EVENT_BYTES = "length(CAST(data AS BLOB)) + COALESCE(length(CAST(messages AS BLOB)), 0)"


def _count_stored_bytes_v6(db: sqlite3.Connection) -> None:
    """Adds what each thread holds in bytes, for the per-user quota, counted from its events."""
    db.execute("ALTER TABLE sessions ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0")
    db.execute(
        f"UPDATE sessions SET stored_bytes = (SELECT COALESCE(SUM({_EVENT_BYTES}), 0)"
        " FROM events WHERE session_pk = sessions.pk)"
    )


MIGRATIONS: tuple[Migration, ...] = (
    _create_v1,
    _track_runs_v2,
    _keep_messages_v3,
    _keep_streamed_text_v4,
    _quarantine_v5,
    _count_stored_bytes_v6,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _prepare(
    db: sqlite3.Connection, *, path: str, synchronous: str, read_only: bool, in_memory: bool
) -> None:
    """Checks the file is ours and readable, then brings its schema up to date."""
    # The first read fails here on a file that is not SQLite, before anything is written.
    rows = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    tables = {name for (name,) in rows}
    if not read_only:
        if not in_memory:
            db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {synchronous}")
    if tables and "schema_version" not in tables:
        raise StoreError(
            f"{path} is a SQLite database but not an agent-gateway store (it has no"
            f" schema_version table; tables: {', '.join(sorted(tables))}). Point --db at"
            " another file."
        )
    version = 0
    if tables:
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema version {version}, newer than the version {SCHEMA_VERSION}"
            " this agent-gateway understands. Upgrade agent-gateway, or use another --db."
        )
    if version == SCHEMA_VERSION:
        return
    if read_only:
        raise StoreError(
            f"{path} has store schema version {version} and needs migrating to"
            f" {SCHEMA_VERSION}; start the gateway on it once to migrate."
        )
    db.execute("BEGIN IMMEDIATE")
    try:
        if version == 0:
            db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            db.execute("INSERT INTO schema_version VALUES (0)")
        for migration in MIGRATIONS[version:]:
            migration(db)
        _quarantine_set_aside(db, path)
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if version:
        log.info("migrated %s from store schema %d to %d", path, version, SCHEMA_VERSION)


# --- what an event does to its run ------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _RunProgress:
    """What one stored event does to the calls and the run of its thread."""

    calls: tuple[tuple[str, str, bool], ...]  # (call id, tool name, long running) it makes
    answers: tuple[str, ...]  # call ids it answers
    run_open: bool | None  # True: the model owes a reply; None: the event does not say

    @classmethod
    def of(cls, event: Event) -> _RunProgress:
        if event.content is None or not event.content.parts:
            # A model error ends its run; a content-less event (state, agent end) says nothing.
            return cls((), (), False if event.error_code else None)
        long_running = event.long_running_tool_ids or set()
        calls = tuple(
            (call.id, call.name or "", call.id in long_running)
            for call in event.get_function_calls()
            if call.id
        )
        answers = tuple(r.id for r in event.get_function_responses() if r.id)
        if answers or any(not lr for _, _, lr in calls):
            run_open: bool | None = True  # the model continues after a server call or a result
        elif calls:
            run_open = False  # paused on the browser: waiting is not being cut off
        elif event.author == "user":
            run_open = True  # the model owes a reply to what the user said
        elif any(part.text and not part.thought for part in event.content.parts):
            run_open = False  # the model replied
        else:
            run_open = None
        return cls(calls, answers, run_open)

    def record(
        self, db: sqlite3.Connection, session_pk: int, seq: int, invocation_seq: int
    ) -> None:
        if self.answers:
            db.executemany(
                "DELETE FROM open_calls WHERE session_pk = ? AND call_id = ?",
                [(session_pk, call_id) for call_id in self.answers],
            )
        if self.calls:
            db.executemany(
                "INSERT OR REPLACE INTO open_calls"
                " (session_pk, call_id, name, seq, invocation_seq, long_running)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (session_pk, call_id, name, seq, invocation_seq, long_running)
                    for call_id, name, long_running in self.calls
                ],
            )


# --- writes: each runs inside the writer's shared transaction ---------------------------


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_MESSAGES_DECODER = msgspec.json.Decoder(list[Message])


def _dump_messages(event: Event) -> str | None:
    """The event's AG-UI messages as stored: a JSON array, or NULL when it shows none."""
    messages = event_messages(event)
    return msgspec.json.encode(messages).decode() if messages else None


def _load_state(text: str | None) -> dict[str, Any]:
    state = json.loads(text) if text else {}
    if not isinstance(state, dict):
        raise ValueError(f"a state must be a JSON object, not {type(state).__name__}")
    return state


def _merge_scope(
    db: sqlite3.Connection, app_name: str, user_id: str | None, delta: dict[str, Any], now: float
) -> None:
    """Applies a delta to app state (user_id None) or user state, as dict.update does."""
    if user_id is None:
        row = db.execute("SELECT state FROM app_states WHERE app_name = ?", (app_name,)).fetchone()
        state = {**_load_state(row[0] if row else None), **delta}
        db.execute(
            "INSERT OR REPLACE INTO app_states (app_name, state, update_time) VALUES (?, ?, ?)",
            (app_name, _dump(state), now),
        )
    else:
        row = db.execute(
            "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?", (app_name, user_id)
        ).fetchone()
        state = {**_load_state(row[0] if row else None), **delta}
        db.execute(
            "INSERT OR REPLACE INTO user_states (app_name, user_id, state, update_time)"
            " VALUES (?, ?, ?, ?)",
            (app_name, user_id, _dump(state), now),
        )


def _scope_state(db: sqlite3.Connection, app_name: str, user_id: str | None) -> dict[str, Any]:
    """The app state (user_id None) or the user state, without prefixes."""
    if user_id is None:
        row = db.execute("SELECT state FROM app_states WHERE app_name = ?", (app_name,)).fetchone()
    else:
        row = db.execute(
            "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?",
            (app_name, user_id),
        ).fetchone()
    return _load_state(row[0] if row else None)


def _with_scopes(
    db: sqlite3.Connection, app_name: str, user_id: str, session_state: dict[str, Any]
) -> dict[str, Any]:
    """A session's state as ADK shows it: its own keys, then app: and user: ones."""
    # One statement: every statement in the database thread is a wait for the GIL.
    app_state, user_state = db.execute(
        "SELECT (SELECT state FROM app_states WHERE app_name = ?),"
        " (SELECT state FROM user_states WHERE app_name = ? AND user_id = ?)",
        (app_name, app_name, user_id),
    ).fetchone()
    return _merged_state(session_state, _load_state(app_state), _load_state(user_state))


def _merged_state(
    session_state: dict[str, Any], app_state: dict[str, Any], user_state: dict[str, Any]
) -> dict[str, Any]:
    merged = dict(session_state)
    merged.update((State.APP_PREFIX + key, value) for key, value in app_state.items())
    merged.update((State.USER_PREFIX + key, value) for key, value in user_state.items())
    return merged


@dataclasses.dataclass(frozen=True, slots=True)
class _CreateSession:
    app_name: str
    user_id: str
    session_id: str
    deltas: dict[str, dict[str, Any]]
    now: float

    def session(self, merged_state: object) -> Session:
        """The new session, given what ``apply`` returned."""
        session = Session(
            app_name=self.app_name,
            user_id=self.user_id,
            id=self.session_id,
            state=cast(dict[str, Any], merged_state),
            last_update_time=self.now,
        )
        session._storage_update_marker = "0"
        return session

    def apply(self, db: sqlite3.Connection) -> dict[str, Any]:
        """Returns the new session's merged state."""
        try:
            db.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self.app_name,
                    self.user_id,
                    self.session_id,
                    _dump(self.deltas["session"]),
                    self.now,
                    self.now,
                ),
            )
        except sqlite3.IntegrityError:
            raise AlreadyExistsError(f"Session with id {self.session_id} already exists.") from None
        if self.deltas["app"]:
            _merge_scope(db, self.app_name, None, self.deltas["app"], self.now)
        if self.deltas["user"]:
            _merge_scope(db, self.app_name, self.user_id, self.deltas["user"], self.now)
        return _with_scopes(db, self.app_name, self.user_id, self.deltas["session"])


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """What one user's threads hold: how many, and their stored events in bytes."""

    threads: int = 0
    stored_bytes: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class OpenedThread:
    """Whose a thread is and, for its owner, its session; ``created`` if it was new.

    ``usage`` is the asker's, the new thread counted in.
    """

    owner: str
    session: Session | None
    created: bool
    usage: Usage = Usage()


@dataclasses.dataclass(frozen=True, slots=True)
class _OpenThread:
    """Reads a thread for a run, creating it for the asker if nobody has used it yet.

    One hop where a run would otherwise take three (whose is it, load it, create it). It
    goes through the writer so that its read is ordered with every write: no append that
    was queued before it is missing from the session it returns.
    """

    app_name: str
    user_id: str
    session_id: str
    window: int
    now: float

    def apply(self, db: sqlite3.Connection) -> OpenedThread | tuple[_StoredSession, Usage]:
        """The thread; for its owner, the rows of it (decoded once the commit is over) and
        the owner's usage."""
        owner = _thread_owner(db, app_name=self.app_name, session_id=self.session_id)
        if owner is None:
            empty: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
            create = _CreateSession(self.app_name, self.user_id, self.session_id, empty, self.now)
            session = create.session(create.apply(db))
            return OpenedThread(self.user_id, session, created=True, usage=self._usage(db))
        if owner != self.user_id:
            return OpenedThread(owner, None, created=False)
        stored = _load_session(
            db,
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            window=self.window,
            after=None,
        )
        assert stored is not None  # its owner was just read, in the same transaction
        return stored, self._usage(db)

    def _usage(self, db: sqlite3.Connection) -> Usage:
        threads, stored_bytes = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(stored_bytes), 0) FROM sessions"
            " WHERE app_name = ? AND user_id = ?",
            (self.app_name, self.user_id),
        ).fetchone()
        return Usage(threads, stored_bytes)


@dataclasses.dataclass(frozen=True, slots=True)
class _AppendEvent:
    app_name: str
    user_id: str
    session_id: str
    loaded_revision: int | None  # None: a session this store did not load; check by time
    loaded_update_time: float
    event_id: str
    invocation_id: str
    author: str
    timestamp: float
    data: str
    messages: str | None
    deltas: dict[str, dict[str, Any]]
    progress: _RunProgress

    def apply(self, db: sqlite3.Connection) -> int:
        """Returns the session's new revision."""
        row = db.execute(
            "SELECT pk, revision, update_time, invocation_id, invocation_seq, run_open"
            " FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (self.app_name, self.user_id, self.session_id),
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(f"Session {self.session_id} not found.")
        pk, revision, update_time, invocation_id, invocation_seq, run_open = row
        stale = (
            revision != self.loaded_revision
            if self.loaded_revision is not None
            else update_time > self.loaded_update_time
        )
        if stale:
            raise StaleSessionError(
                f"Session {self.session_id} changed in storage since this copy was loaded"
                f" (revision {revision}, copy at {self.loaded_revision}); reload it."
            )
        cursor = db.execute(
            "INSERT INTO events"
            " (session_pk, id, invocation_id, author, timestamp, data, messages)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                pk,
                self.event_id,
                self.invocation_id,
                self.author,
                self.timestamp,
                self.data,
                self.messages,
            ),
        )
        seq = cast(int, cursor.lastrowid)
        # The message's final event replaces its streamed text, in the same transaction.
        db.execute(
            "DELETE FROM streamed_texts WHERE session_pk = ? AND message_id = ?",
            (pk, self.event_id),
        )
        if invocation_id != self.invocation_id:
            invocation_seq = seq
        if self.progress.run_open is not None:
            run_open = self.progress.run_open
        if self.deltas["session"]:
            (state,) = db.execute("SELECT state FROM sessions WHERE pk = ?", (pk,)).fetchone()
            db.execute(
                "UPDATE sessions SET state = ? WHERE pk = ?",
                (_dump({**_load_state(state), **self.deltas["session"]}), pk),
            )
        db.execute(
            "UPDATE sessions SET revision = ?, update_time = ?, invocation_id = ?,"
            " invocation_seq = ?, run_open = ?,"
            f" stored_bytes = stored_bytes + (SELECT {_EVENT_BYTES} FROM events WHERE seq = ?)"
            " WHERE pk = ?",
            (
                revision + 1,
                self.timestamp,
                self.invocation_id,
                invocation_seq,
                run_open,
                seq,
                pk,
            ),
        )
        if self.deltas["app"]:
            _merge_scope(db, self.app_name, None, self.deltas["app"], self.timestamp)
        if self.deltas["user"]:
            _merge_scope(db, self.app_name, self.user_id, self.deltas["user"], self.timestamp)
        self.progress.record(db, pk, seq, invocation_seq)
        return cast(int, revision) + 1


@dataclasses.dataclass(frozen=True, slots=True)
class _DeleteSession:
    app_name: str
    user_id: str
    session_id: str

    def apply(self, db: sqlite3.Connection) -> None:
        row = db.execute(
            "SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (self.app_name, self.user_id, self.session_id),
        ).fetchone()
        if row is None:
            return
        for table in ("events", "open_calls", "streamed_texts", "quarantine"):
            db.execute(f"DELETE FROM {table} WHERE session_pk = ?", row)
        db.execute("DELETE FROM sessions WHERE pk = ?", row)


@dataclasses.dataclass(frozen=True, slots=True)
class _SaveStreamedText:
    app_name: str
    user_id: str
    session_id: str
    invocation_id: str
    message_id: str
    author: str
    text: str
    update_time: float

    def apply(self, db: sqlite3.Connection) -> None:
        cursor = db.execute(
            "INSERT INTO streamed_texts"
            " (session_pk, invocation_id, message_id, author, text, update_time)"
            " SELECT pk, ?, ?, ?, ?, ? FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?"
            " ON CONFLICT (session_pk) DO UPDATE SET invocation_id = excluded.invocation_id,"
            " message_id = excluded.message_id, author = excluded.author, text = excluded.text,"
            " update_time = excluded.update_time",
            (
                self.invocation_id,
                self.message_id,
                self.author,
                self.text,
                self.update_time,
                self.app_name,
                self.user_id,
                self.session_id,
            ),
        )
        if cursor.rowcount == 0:
            raise SessionNotFoundError(f"Session {self.session_id} not found.")


@dataclasses.dataclass(frozen=True, slots=True)
class _ForgetStreamedText:
    app_name: str
    user_id: str
    session_id: str
    message_id: str

    def apply(self, db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM streamed_texts WHERE message_id = ? AND session_pk ="
            " (SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?)",
            (self.message_id, self.app_name, self.user_id, self.session_id),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _ForgetLeftoverTexts:
    """Deletes every streamed text of the app, once a restart has used what it needs."""

    app_name: str

    def apply(self, db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM streamed_texts WHERE session_pk IN"
            " (SELECT pk FROM sessions WHERE app_name = ?)",
            (self.app_name,),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _SetAside:
    """Quarantines a thread; the first value found bad stays its reason."""

    app_name: str
    user_id: str
    session_id: str
    damage: _Damage
    at: float

    def apply(self, db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT OR IGNORE INTO quarantine (session_pk, seq, column_name, reason, at)"
            " SELECT pk, ?, ?, ?, ? FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (
                self.damage.seq,
                self.damage.column,
                self.damage.reason,
                self.at,
                self.app_name,
                self.user_id,
                self.session_id,
            ),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Probe:
    """The smallest real write, to learn whether the store can commit again.

    It counts up the file's ``user_version``, which nothing else uses (the store's schema
    version is a table): taking the write lock alone, or an UPDATE that changes nothing,
    writes no page, so it would not show a full or read-only disk.
    """

    def apply(self, db: sqlite3.Connection) -> None:
        (count,) = db.execute("PRAGMA user_version").fetchone()
        db.execute(f"PRAGMA user_version = {(int(count) + 1) % 2**31}")


_Write = (
    _CreateSession
    | _OpenThread
    | _AppendEvent
    | _DeleteSession
    | _SaveStreamedText
    | _ForgetStreamedText
    | _ForgetLeftoverTexts
    | _SetAside
    | _Probe
)


def _commit(db: sqlite3.Connection, writes: Sequence[_Write]) -> list[object]:
    """Applies writes in one transaction; a write that fails is undone alone and returned."""
    results: list[object] = []
    # A lone write needs no savepoint: if it fails, the whole transaction is its own.
    isolate = len(writes) > 1
    db.execute("BEGIN IMMEDIATE")
    try:
        for write in writes:
            if isolate:
                db.execute("SAVEPOINT write")
            try:
                results.append(write.apply(db))
            except Exception as error:
                if _cannot_commit(error):
                    raise  # not this write's fault: the whole batch fails
                if isolate:
                    db.execute("ROLLBACK TO write")
                else:
                    db.execute("ROLLBACK")
                    return [_Failed(error)]
                results.append(_Failed(error))
            if isolate:
                db.execute("RELEASE write")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return results


def _cannot_commit(error: Exception) -> bool:
    """Whether a write failed because of the database (locked, read-only, full, broken)."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError


@dataclasses.dataclass(frozen=True, slots=True)
class _Failed:
    error: Exception


@dataclasses.dataclass(slots=True)
class _Pending:
    write: _Write
    committed: asyncio.Future[object]
    # Called with the write's result once committed, even if its caller was cancelled
    # meanwhile: the write is durable, so the caller's objects must show it.
    on_commit: Callable[[object], None] | None
    # A later write under the same key replaces this one while it is still queued.
    key: Hashable | None = None


class _GroupCommit:
    """The single writer: commits everything queued at a moment in one transaction."""

    def __init__(self, db: Database, on_health: Callable[[bool], None]) -> None:
        self._db = db
        self._on_health = on_health
        # False from a failed commit until one succeeds; see _await_writes.
        self.can_commit = True
        self._failing_since = 0.0
        self._queue: collections.deque[_Pending] = collections.deque()
        # Queued writes a newer one may replace, by key; the writer drops those it takes.
        self._replaceable: dict[Hashable, _Pending] = {}
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._submitted = 0
        self.commits = 0
        self._task = asyncio.create_task(self._run(), name="store-group-commit")

    def submit(
        self,
        write: _Write,
        on_commit: Callable[[object], None] | None = None,
        *,
        replaces: Hashable | None = None,
    ) -> asyncio.Future[object]:
        """Queues a write; the future resolves once it is committed (or fails alone).

        With ``replaces``, a queued write under the same key that the writer has not taken
        yet is replaced by this one, in its place, and both callers share its future: a
        newer state supersedes an older one at no extra cost.
        """
        if self._closing:
            raise StoreError("the session store is closed")
        self._submitted += 1
        if replaces is not None and (queued := self._replaceable.get(replaces)) is not None:
            queued.write = write
            return queued.committed
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        pending = _Pending(write, future, on_commit, replaces)
        self._queue.append(pending)
        if replaces is not None:
            self._replaceable[replaces] = pending
        self._idle.clear()
        self._wakeup.set()
        return future

    async def drained(self) -> None:
        await self._idle.wait()

    async def close(self) -> None:
        self._closing = True
        self._wakeup.set()
        await self._task

    async def _run(self) -> None:
        while True:
            await self._await_writes()
            while self._queue:
                await self._linger()
                await self._commit_batch()
            self._idle.set()
            if self._closing:
                return

    async def _await_writes(self) -> None:
        """Waits for queued writes; while commits fail, probes the database meanwhile."""
        while not self.can_commit and not self._wakeup.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), PROBE_SECONDS)
            if not self._wakeup.is_set():
                await self._try_commit([_Probe()])
        await self._wakeup.wait()
        self._wakeup.clear()

    async def _commit_batch(self) -> None:
        """Commits what is queued, up to _MAX_BATCH; a method so the batch dies with its call."""
        count = min(len(self._queue), _MAX_BATCH)
        batch = [self._queue.popleft() for _ in range(count)]
        for pending in batch:
            if pending.key is not None:
                del self._replaceable[pending.key]
        results = await self._try_commit([pending.write for pending in batch])
        if results is None:
            # Nobody's write is durable. Each caller gets an error of its own: one shared
            # would gather every caller's frames in its traceback.
            results = [
                _Failed(CommitFailedError("the session store could not commit")) for _ in batch
            ]
        for pending, result in zip(batch, results, strict=True):
            _settle(pending, result)

    async def _try_commit(self, writes: list[_Write]) -> list[object] | None:
        """The writes' results, committed in one transaction; None if the commit failed."""
        try:
            results = await self._db.run(partial(_commit, writes=writes))
        except Exception as error:
            if self.can_commit:  # logged once an outage, not once a batch
                log.exception("the session store cannot commit; /ping is Unhealthy until it can")
                self._failing_since = time.monotonic()
                self._health(False)
            # The database thread may keep the error a while; the batch need not stay with it.
            traceback.clear_frames(error.__traceback__)
            return None
        self.commits += 1
        if not self.can_commit:
            seconds = time.monotonic() - self._failing_since
            log.warning("the session store commits again, after %.1f s", seconds)
            self._health(True)
        return results

    def _health(self, can_commit: bool) -> None:
        self.can_commit = can_commit
        self._on_health(can_commit)

    async def _linger(self) -> None:
        """Lets a burst of replaceable writes gather before they are committed.

        A model that streams faster than a commit takes makes a burst of chunks, each
        superseding the last. Committing the first one alone costs a commit (a hop to the
        database thread, fighting the busy loop for the GIL) for text that the next write,
        often the message's final event, stores anyway. So while only replaceable writes
        are queued, the writer waits for ``_QUIET_TURNS`` quiet turns of the loop, at most
        ``_LINGER_SECONDS``. A model that streams at a human pace leaves the loop idle
        between chunks, so each chunk waits only those few turns; any other write ends
        the wait at once.
        """
        deadline = time.monotonic() + _LINGER_SECONDS
        quiet_turns = 0
        while len(self._queue) == len(self._replaceable) and quiet_turns < _QUIET_TURNS:
            if time.monotonic() >= deadline:
                return
            submitted = self._submitted
            await asyncio.sleep(0)
            quiet_turns = quiet_turns + 1 if self._submitted == submitted else 0


def _settle(pending: _Pending, result: object) -> None:
    if isinstance(result, _Failed):
        # The frames of the finished commit hold the whole batch, and the error holds them:
        # clear them, so the batch goes now and not at the next full collection.
        traceback.clear_frames(result.error.__traceback__)
        if not pending.committed.done():
            pending.committed.set_exception(result.error)
        return
    if pending.on_commit is not None:
        pending.on_commit(result)
    if not pending.committed.done():
        pending.committed.set_result(result)


# --- reads: rows first, decoded once the read is over -----------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Damage:
    """A stored value of a thread that cannot be decoded: where it is and what was wrong."""

    seq: int | None  # the event row; None: the session's own state
    column: str
    reason: str


def _complaint(error: Exception) -> str:
    """What a decoder said about a stored value, without the value itself, cut short."""
    if isinstance(error, pydantic.ValidationError):
        details = error.errors(include_url=False, include_context=False, include_input=False)
        said = "; ".join(
            f"{'.'.join(map(str, detail['loc'])) or '$'}: {detail['msg']}" for detail in details[:3]
        )
    else:
        said = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
    return said[:_COMPLAINT_CHARS]


def _decoded_event(seq: int, data: str) -> Event | _Damage:
    try:
        return Event.model_validate_json(data)
    except _DECODE_ERRORS as error:  # the error, and the frames it holds, end here
        return _Damage(seq, "data", _complaint(error))


def _decoded_state(text: str | None) -> dict[str, Any] | _Damage:
    try:
        return _load_state(text)
    except _DECODE_ERRORS as error:
        return _Damage(None, "state", _complaint(error))


def _decoded_messages(seq: int, text: str, *, checked: bool = False) -> list[Message] | _Damage:
    """The messages of one event row; ``checked`` also checks each one's shape (slower)."""
    try:
        messages = _MESSAGES_DECODER.decode(text)
        for message in messages if checked else ():
            _check_message(message)
    except _DECODE_ERRORS as error:
        return _Damage(seq, "messages", _complaint(error))
    return messages


def _check_message(message: Message) -> None:
    """Raises ValueError unless a stored message has what a snapshot is built from."""
    role = message.get("role")
    if not isinstance(message.get("id"), str) or role not in ("user", "assistant", "tool"):
        raise ValueError("a stored message needs a string id and a role")
    if role == "tool" and not isinstance(message.get("toolCallId"), str):
        raise ValueError("a stored tool message needs a string toolCallId")
    calls = message.get("toolCalls", [])
    if not isinstance(calls, list) or not all(
        isinstance(call, dict) and isinstance(call.get("id"), str) for call in calls
    ):
        raise ValueError("a stored message's toolCalls need string ids")


def _quarantine_of(thread_id: str, user_id: str, row: Sequence[Any]) -> Quarantine | None:
    """The quarantine of a thread from its ``LEFT JOIN quarantine`` columns, if it has one."""
    seq, column, reason, at = row
    return Quarantine(thread_id, user_id, seq, column, reason, at) if column is not None else None


_QUARANTINE_COLUMNS = "q.seq, q.column_name, q.reason, q.at"


@dataclasses.dataclass(frozen=True, slots=True)
class _StoredSession:
    """A session as its rows were read: decoded by ``_decoded_session`` after the read."""

    app_name: str
    user_id: str
    session_id: str
    state: str
    scopes: tuple[str | None, str | None]  # the app state and the user state, as stored
    update_time: float
    revision: int
    events: list[tuple[int, str]]  # (seq, data)
    quarantine: Quarantine | None  # if set, nothing else was read


def _load_session(
    db: sqlite3.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    window: int | None,
    after: float | None,
) -> _StoredSession | None:
    row = db.execute(
        f"SELECT s.pk, s.state, s.update_time, s.revision, {_QUARANTINE_COLUMNS}"
        " FROM sessions s LEFT JOIN quarantine q ON q.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    if row is None:
        return None
    pk, state, update_time, revision = row[:4]
    if (quarantine := _quarantine_of(session_id, user_id, row[4:])) is not None:
        return _StoredSession(
            app_name, user_id, session_id, "", (None, None), 0.0, 0, [], quarantine
        )
    events: list[tuple[int, str]] = []
    if window != 0:
        start = 0
        if window is not None:
            # A call still waiting on the browser must stay in reach, with its invocation.
            edge, waiting = db.execute(
                "SELECT (SELECT seq FROM events WHERE session_pk = ?"
                " ORDER BY seq DESC LIMIT 1 OFFSET ?),"
                " (SELECT MIN(invocation_seq) FROM open_calls"
                " WHERE session_pk = ? AND long_running = 1)",
                (pk, window - 1, pk),
            ).fetchone()
            start = edge or 0
            if waiting is not None:
                start = min(start, waiting)
        if after is not None:
            # As ADK's in-memory service: keep what follows the last event older than `after`.
            (older,) = db.execute(
                "SELECT MAX(seq) FROM events WHERE session_pk = ? AND seq >= ? AND timestamp < ?",
                (pk, start, after),
            ).fetchone()
            if older is not None:
                start = older + 1
        events = db.execute(
            "SELECT seq, data FROM events WHERE session_pk = ? AND seq >= ? ORDER BY seq",
            (pk, start),
        ).fetchall()
    # One statement: every statement in the database thread is a wait for the GIL.
    scopes = db.execute(
        "SELECT (SELECT state FROM app_states WHERE app_name = ?),"
        " (SELECT state FROM user_states WHERE app_name = ? AND user_id = ?)",
        (app_name, app_name, user_id),
    ).fetchone()
    return _StoredSession(
        app_name, user_id, session_id, state, scopes, update_time, revision, events, None
    )


def _decoded_session(stored: _StoredSession) -> Session | _Damage:
    """The session its rows make, or the first of its values that cannot be decoded."""
    state = _decoded_state(stored.state)
    if isinstance(state, _Damage):
        return state
    events = []
    for seq, data in stored.events:
        event = _decoded_event(seq, data)
        if isinstance(event, _Damage):
            return event
        events.append(event)
    app_state, user_state = stored.scopes
    session = Session(
        app_name=stored.app_name,
        user_id=stored.user_id,
        id=stored.session_id,
        state=_merged_state(state, _load_state(app_state), _load_state(user_state)),
        events=events,
        last_update_time=stored.update_time,
    )
    session._storage_update_marker = str(stored.revision)
    return session


@dataclasses.dataclass(frozen=True, slots=True)
class _StoredMessages:
    """A thread's AG-UI messages as stored, one JSON array per event row."""

    latest: str | None  # the id of the thread's latest event
    rows: list[tuple[int, str]]  # (seq, messages)
    quarantine: Quarantine | None  # if set, nothing else was read
    earlier: int | None = None  # a row older than these was left out: page back from here


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadPage:
    """The latest part of a thread as AG-UI messages, within a size (``thread_page``)."""

    messages: list[Message]
    latest: str | None  # the id of the thread's latest stored event
    # Where the page starts, when older messages were left out: the ``before`` of the page
    # before it. None: the page starts the thread.
    earlier: int | None


def _thread_messages(
    db: sqlite3.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    max_bytes: int | None = None,
    before: int | None = None,
) -> _StoredMessages | None:
    row = db.execute(
        f"SELECT s.pk, {_QUARANTINE_COLUMNS} FROM sessions s"
        " LEFT JOIN quarantine q ON q.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    if row is None:
        return None
    if (quarantine := _quarantine_of(session_id, user_id, row[1:])) is not None:
        return _StoredMessages(None, [], quarantine)
    pk = row[0]
    latest = db.execute(
        "SELECT id FROM events WHERE session_pk = ? ORDER BY seq DESC LIMIT 1", (pk,)
    ).fetchone()
    older = before if before is not None else _NO_CURSOR
    start = 0
    if max_bytes is not None:
        # The newest rows whose messages fit in max_bytes, and at least the newest one.
        start = _page_start(db, pk, older, max_bytes)
    rows = db.execute(
        "SELECT seq, messages FROM events WHERE session_pk = ? AND messages IS NOT NULL"
        " AND seq >= ? AND seq < ? ORDER BY seq",
        (pk, start, older),
    ).fetchall()
    earlier = None
    # Only a page that starts past the first row can leave older ones out.
    if start and rows:
        first = rows[0][0]
        older_rows = db.execute(
            "SELECT 1 FROM events WHERE session_pk = ? AND messages IS NOT NULL AND seq < ?"
            " LIMIT 1",
            (pk, first),
        ).fetchone()
        earlier = first if older_rows else None
    return _StoredMessages(cast(str, latest[0]) if latest else None, rows, None, earlier)


# A cursor past every row: seq is an INTEGER PRIMARY KEY, at most 2**63 - 1.
_NO_CURSOR = (1 << 63) - 1


def _page_start(db: sqlite3.Connection, pk: int, before: int, max_bytes: int) -> int:
    """The oldest seq of the newest rows before ``before`` that fit in ``max_bytes``."""
    (cut, newest) = db.execute(
        "SELECT (SELECT seq FROM (SELECT seq, SUM(length(CAST(messages AS BLOB)))"
        " OVER (ORDER BY seq DESC) AS total FROM events"
        " WHERE session_pk = ?1 AND messages IS NOT NULL AND seq < ?2)"
        " WHERE total > ?3 ORDER BY seq DESC LIMIT 1),"
        " (SELECT MAX(seq) FROM events WHERE session_pk = ?1 AND messages IS NOT NULL"
        " AND seq < ?2)",
        (pk, before, max_bytes),
    ).fetchone()
    if cut is None:
        return 0  # everything fits
    return cast(int, newest) if cut == newest else cast(int, cut) + 1


def _decoded_messages_of(stored: _StoredMessages) -> list[Message] | _Damage:
    messages: list[Message] = []
    for seq, text in stored.rows:
        decoded = _decoded_messages(seq, text)
        if isinstance(decoded, _Damage):
            return decoded
        messages.extend(decoded)
    try:
        return answered_calls_only(messages)
    except (KeyError, TypeError):  # a message lacks what it needs; find its row
        pass
    # Checked only now: checking every message of every snapshot costs a quarter of it.
    for seq, text in stored.rows:
        if isinstance(damage := _decoded_messages(seq, text, checked=True), _Damage):
            return damage
    return _Damage(stored.rows[-1][0], "messages", "a message lacks what a snapshot needs")


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One thread in a listing: whose it is, when it last changed, and its quarantine if any."""

    thread_id: str
    user_id: str
    updated_at: float
    quarantine: Quarantine | None


def _thread_summaries(
    db: sqlite3.Connection, *, app_name: str, user_id: str | None, quarantined_only: bool
) -> list[ThreadSummary]:
    query = (
        f"SELECT s.id, s.user_id, s.update_time, {_QUARANTINE_COLUMNS} FROM sessions s"
        " LEFT JOIN quarantine q ON q.session_pk = s.pk WHERE s.app_name = ?"
    )
    params: tuple[str, ...] = (app_name,)
    if user_id is not None:
        query += " AND s.user_id = ?"
        params += (user_id,)
    if quarantined_only:
        query += " AND q.session_pk IS NOT NULL"
    rows = db.execute(query + " ORDER BY s.update_time, s.user_id, s.id", params).fetchall()
    summaries = []
    for row in rows:
        thread_id, owner, updated_at = row[:3]
        quarantine = _quarantine_of(thread_id, owner, row[3:])
        summaries.append(ThreadSummary(thread_id, owner, updated_at, quarantine))
    return summaries


@dataclasses.dataclass(frozen=True, slots=True)
class _StoredListing:
    app_state: str | None
    user_states: dict[str, str | None]
    # (owner, session id, state, update time, revision) of each thread not quarantined
    rows: list[tuple[str, str, str, float, int]]


def _list_sessions(db: sqlite3.Connection, *, app_name: str, user_id: str | None) -> _StoredListing:
    query = (
        "SELECT s.user_id, s.id, s.state, s.update_time, s.revision FROM sessions s"
        " WHERE s.app_name = ? AND s.pk NOT IN (SELECT session_pk FROM quarantine)"
    )
    params: tuple[str, ...] = (app_name,)
    if user_id is not None:
        query += " AND s.user_id = ?"
        params += (user_id,)
    rows = db.execute(query + " ORDER BY s.update_time, s.user_id, s.id", params).fetchall()
    app_state = db.execute(
        "SELECT state FROM app_states WHERE app_name = ?", (app_name,)
    ).fetchone()
    scope_query = "SELECT user_id, state FROM user_states WHERE app_name = ?"
    if user_id is not None:
        scope_query += " AND user_id = ?"
    user_states = dict(db.execute(scope_query, params).fetchall())
    return _StoredListing(app_state[0] if app_state else None, user_states, rows)


# --- the file's one writer ---------------------------------------------------------------


def _lock_for_writing(path: str) -> int:
    """Takes the lock that makes this process the file's one writer; returns its descriptor.

    An ``flock`` on ``<file>.lock`` beside the database, holding the owner's pid: the
    kernel releases it when its process ends, even by SIGKILL, so it never outlives one.
    """
    lock_path = os.path.realpath(path) + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise StoreError(f"cannot create the lock file {lock_path}: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StoreError(
            f"{path} is in use by another agent-gateway process (pid {owner}, lock"
            f" {lock_path}); stop it first, or point --db at another file."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


# --- the service ------------------------------------------------------------------------


class SessionService(BaseSessionService):
    """ADK's session contract on SQLite, for one gateway process.

    One process owns a database file for writing: revisions and group commit assume no
    other writer, and ``open`` takes a lock that says so. Other processes may read it
    (``read_only=True``), e.g. operator commands.
    """

    def __init__(
        self,
        path: str,
        *,
        durability: str = "normal",
        history_window: int = 200,
        read_only: bool = False,
    ) -> None:
        if durability not in _SYNCHRONOUS:
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        if history_window < 1:
            raise ValueError(f"history_window must be at least 1, not {history_window}")
        self.path = path
        self.durability = durability
        self.history_window = history_window
        self.read_only = read_only
        self._db: Database | None = None
        self._writer: _GroupCommit | None = None
        # Sessions a caller loaded and handed over for the next plain get_session (see
        # handed_over), by (app, user, session id).
        self._handed_over: dict[tuple[str, str, str], Session] = {}
        # Called with can_commit whenever it changes.
        self.health_listeners: list[Callable[[bool], None]] = []
        self._lock: int | None = None  # the descriptor of the file's lock, while open

    # --- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Connects, checks the file and migrates it; raises StoreError if it is unusable."""
        memory_only = in_memory(self.path)
        if not self.read_only and not memory_only:
            self._lock = _lock_for_writing(self.path)
        try:
            await self._connect(memory_only)
        except BaseException:
            self._unlock()
            raise

    async def _connect(self, memory_only: bool) -> None:
        target, uri = self.path, False
        if self.read_only and not memory_only:
            if not os.path.exists(self.path):
                raise StoreError(f"{self.path} does not exist")
            target, uri = Path(self.path).absolute().as_uri() + "?mode=ro", True
        # An in-memory database is used on the loop's thread (see Database).
        conn = aiosqlite.connect(
            target, uri=uri, isolation_level=None, check_same_thread=not memory_only
        )
        db = Database(conn, inline=memory_only)
        # Daemon, so a process that forgets close() still exits; close() flushes first.
        conn._thread.daemon = True
        try:
            await conn
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the session store {self.path}: {error}") from error
        try:
            await db.run(
                partial(
                    _prepare,
                    path=self.path,
                    synchronous=_SYNCHRONOUS[self.durability],
                    read_only=self.read_only,
                    in_memory=memory_only,
                ),
            )
        except BaseException as error:
            await conn.close()
            if isinstance(error, sqlite3.DatabaseError):
                raise StoreError(
                    f"{self.path} is not a usable session store ({error}). It was left as it"
                    " is: restore it from a backup, or move it aside to start a new one."
                ) from error
            raise
        self._db = db
        if not self.read_only:
            self._writer = _GroupCommit(db, self._health_changed)

    async def close(self) -> None:
        """Commits every queued write, then closes the connection and lets go of the file."""
        if self._writer is not None:
            await self._writer.close()
            self._writer = None
        if self._db is not None:
            db, self._db = self._db, None
            if not self.read_only:
                with contextlib.suppress(sqlite3.Error):
                    await db.run(lambda raw: raw.execute("PRAGMA optimize"))
            await db.conn.close()
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = None

    @property
    def can_commit(self) -> bool:
        """False from a commit that failed until one succeeds (the writer keeps trying)."""
        return self._writer.can_commit if self._writer is not None else True

    def _health_changed(self, can_commit: bool) -> None:
        for listener in self.health_listeners:
            listener(can_commit)

    @property
    def commits(self) -> int:
        """Transactions the writer committed since open(): fewer than writes under load."""
        return self._writer.commits if self._writer is not None else 0

    @override
    async def flush(self) -> None:
        if self._writer is not None:
            await self._writer.drained()

    # --- ADK's contract -----------------------------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        now = platform_time.get_time()
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        create = _CreateSession(app_name, user_id, session_id, deltas, now)
        return create.session(await self._write(create))

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """Loads the state and a window of recent events.

        Without a config the window is ``history_window`` events; a config's
        ``num_recent_events`` replaces it (None: every event). A positive window always
        reaches back to a long-running call still waiting for its response, from the start
        of its invocation. ``after_timestamp`` then filters as ADK's in-memory service does.
        A session handed over (see ``handed_over``) is returned as it is, once.
        """
        session_id = session_id.strip() if session_id else session_id
        window: int | None = self.history_window
        after = None
        if config is not None:
            window, after = config.num_recent_events, config.after_timestamp
        elif (handed := self._handed_over.pop((app_name, user_id, session_id), None)) is not None:
            return handed
        stored = await self._read(
            partial(
                _load_session,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                window=window,
                after=after,
            )
        )
        return None if stored is None else await self._session_of(stored)

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The sessions without their events; a quarantined one is left out."""
        listing = await self._read(partial(_list_sessions, app_name=app_name, user_id=user_id))
        app_state = _load_state(listing.app_state)
        sessions = []
        for owner, session_id, state_text, update_time, revision in listing.rows:
            state = _decoded_state(state_text)
            if isinstance(state, _Damage):
                await self._set_aside(app_name, owner, session_id, state)
                continue
            user_state = _load_state(listing.user_states.get(owner))
            session = Session(
                app_name=app_name,
                user_id=owner,
                id=session_id,
                state=_merged_state(state, app_state, user_state),
                last_update_time=update_time,
            )
            session._storage_update_marker = str(revision)
            sessions.append(session)
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        session_id = session_id.strip() if session_id else session_id
        await self._write(_DeleteSession(app_name, user_id, session_id))

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._read(partial(_scope_state, app_name=app_name, user_id=user_id))

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        """Commits the event, then adds it to ``session``; partial events are not stored."""
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        marker = session._storage_update_marker
        write = _AppendEvent(
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            loaded_revision=int(marker) if marker is not None else None,
            loaded_update_time=session.last_update_time,
            event_id=event.id,
            invocation_id=event.invocation_id,
            author=event.author,
            timestamp=event.timestamp,
            data=event.model_dump_json(exclude_none=True, by_alias=True),
            messages=_dump_messages(event),
            deltas=_session_util.extract_json_safe_state_delta(event.actions.state_delta)
            if event.actions and event.actions.state_delta
            else {"app": {}, "user": {}, "session": {}},
            progress=_RunProgress.of(event),
        )

        def commit_to_session(revision: object) -> None:
            session._storage_update_marker = str(revision)
            session.last_update_time = event.timestamp
            self._commit_event_to_session(session, event)

        await self._writer_or_raise().submit(write, commit_to_session)
        return event

    # --- gateway additions --------------------------------------------------------------

    async def open_thread(self, app_name: str, user_id: str, session_id: str) -> OpenedThread:
        """The thread as a run of ``user_id`` needs it; created for that user if it is new.

        The session is loaded as get_session does without a config. Another user's thread
        gives its owner and no session.
        """
        opened = cast(
            OpenedThread | tuple[_StoredSession, Usage],
            await self._write(
                _OpenThread(
                    app_name,
                    user_id,
                    session_id.strip(),
                    self.history_window,
                    platform_time.get_time(),
                )
            ),
        )
        if isinstance(opened, OpenedThread):
            return opened
        stored, usage = opened
        session = await self._session_of(stored)
        return OpenedThread(stored.user_id, session, created=False, usage=usage)

    @contextlib.contextmanager
    def handed_over(self, session: Session) -> Iterator[None]:
        """Within the block, the next get_session of ``session`` without a config returns it.

        A run loads its thread to plan, then ADK's runner asks for the same session: the
        hand-over spares a second read of what was just read. The caller's hold on the
        thread (one run at a time) is what keeps the object current.
        """
        key = (session.app_name, session.user_id, session.id)
        self._handed_over[key] = session
        try:
            yield
        finally:
            if self._handed_over.get(key) is session:
                del self._handed_over[key]

    async def thread_owner(self, app_name: str, session_id: str) -> str | None:
        """The user a thread belongs to, whoever asks; None if no such thread exists."""
        return await self._read(partial(_thread_owner, app_name=app_name, session_id=session_id))

    async def thread_messages(
        self, app_name: str, user_id: str, session_id: str
    ) -> tuple[list[Message], str | None]:
        """The whole thread as AG-UI messages, and the id of its latest stored event.

        The messages are ``history.messages_snapshot`` of every event, with no window,
        read in one go without rebuilding ADK events. The event id lets a caller tell
        whether a run stored an event since. An unknown thread gives ``([], None)``.
        """
        page = await self.thread_page(app_name, user_id, session_id)
        return page.messages, page.latest

    async def thread_page(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        max_bytes: int | None = None,
        before: int | None = None,
    ) -> ThreadPage:
        """The thread's messages as ``thread_messages`` gives them, newest last, within bounds.

        ``max_bytes`` keeps the newest events whose stored messages fit in that many bytes
        (the newest one always), so a snapshot of a long thread stays small; ``before`` (a
        page's ``earlier``) reads only what is older than that page. A tool result whose call
        was left out is left out too.
        """
        session_id = session_id.strip() if session_id else session_id
        stored = await self._read(
            partial(
                _thread_messages,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                max_bytes=max_bytes,
                before=before,
            )
        )
        if stored is None:
            return ThreadPage([], None, None)
        if stored.quarantine is not None:
            raise QuarantinedThreadError(stored.quarantine)
        messages = _decoded_messages_of(stored)
        if isinstance(messages, _Damage):
            await self._quarantine(app_name, user_id, session_id, messages)
        return ThreadPage(messages, stored.latest, stored.earlier)

    async def threads(
        self, app_name: str, *, user_id: str | None = None, quarantined_only: bool = False
    ) -> list[ThreadSummary]:
        """The threads of the app (or of one user), least recently updated first.

        Nothing is decoded: a listing shows the quarantine each thread has on record.
        """
        return await self._read(
            partial(
                _thread_summaries,
                app_name=app_name,
                user_id=user_id,
                quarantined_only=quarantined_only,
            )
        )

    async def apps(self) -> list[str]:
        """The names of the Apps that have threads here, in order."""
        return await self._read(_app_names)

    def save_streamed_text(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        invocation_id: str,
        message_id: str,
        author: str,
        text: str,
    ) -> asyncio.Future[object]:
        """Queues the text so far of the message a thread is streaming; resolves once committed.

        Not a coroutine: a caller that streams holds its chunk on the future instead of
        waiting, and a save still queued is replaced by a newer one, so chunks that arrive
        together cost one write. Appending the message's final event (an event whose id is
        ``message_id``) deletes the text; so does ``forget_streamed_text``.
        """
        write = _SaveStreamedText(
            app_name,
            user_id,
            session_id,
            invocation_id,
            message_id,
            author,
            text,
            platform_time.get_time(),
        )
        return self._writer_or_raise().submit(write, replaces=(app_name, user_id, session_id))

    def forget_streamed_text(
        self, *, app_name: str, user_id: str, session_id: str, message_id: str
    ) -> asyncio.Future[object]:
        """Queues deleting a message's streamed text, for a run that ended without it."""
        write = _ForgetStreamedText(app_name, user_id, session_id, message_id)
        return self._writer_or_raise().submit(write)

    async def close_interrupted(self, app_name: str, *, author: str = "model") -> int:
        """Closes each run a crash cut off, so its thread takes a new run at once.

        A server call left without its response gets an error response. The message the
        run was streaming becomes a stored assistant message under the id the client saw,
        holding the text committed so far followed by a note that the response was
        interrupted; a run cut off before streaming any text gets the note alone. Either is
        marked ``custom_metadata["agui"]["interrupted"]``. Calls waiting on the browser are
        left waiting. The note's author is the thread's last agent (``author`` if it has
        none). Streamed text of runs that had ended is dropped, as it would have been.
        A quarantined thread is skipped with a log line: it cannot take a run anyway.
        Call once after ``open()`` and before serving runs; returns how many were closed.
        """
        open_runs = await self._read(partial(_open_runs, app_name=app_name))
        closed = 0
        for run in open_runs:
            try:
                session = await self.get_session(
                    app_name=app_name, user_id=run.user_id, session_id=run.session_id
                )
            except QuarantinedThreadError:
                log.warning(
                    "restart: the run cut off on thread %r stays open, since the thread"
                    " is quarantined",
                    run.session_id,
                )
                continue
            if session is None:
                continue
            for event in _closing_events(session, run, author):
                await self.append_event(session, event)
            closed += 1
        await self._write(_ForgetLeftoverTexts(app_name))
        if closed:
            log.warning("closed %d runs interrupted by a restart", closed)
        return closed

    # --- internals ----------------------------------------------------------------------

    async def _session_of(self, stored: _StoredSession) -> Session:
        """The session its rows make; raises QuarantinedThreadError if they cannot."""
        if stored.quarantine is not None:
            raise QuarantinedThreadError(stored.quarantine)
        session = _decoded_session(stored)
        if isinstance(session, _Damage):
            await self._quarantine(stored.app_name, stored.user_id, stored.session_id, session)
        return session

    async def _quarantine(
        self, app_name: str, user_id: str, session_id: str, damage: _Damage
    ) -> NoReturn:
        quarantine = await self._set_aside(app_name, user_id, session_id, damage)
        raise QuarantinedThreadError(quarantine)

    async def _set_aside(
        self, app_name: str, user_id: str, session_id: str, damage: _Damage
    ) -> Quarantine:
        """Logs a thread found damaged and records its quarantine, if the store can write."""
        quarantine = Quarantine(
            session_id, user_id, damage.seq, damage.column, damage.reason, time.time()
        )
        quarantine.report("other threads are served")
        if self._writer is None:
            return quarantine  # read-only: the gateway that owns the file records it
        # If the store cannot commit (that is logged), the next read finds the damage again.
        with contextlib.suppress(StoreError):
            await self._write(_SetAside(app_name, user_id, session_id, damage, quarantine.at))
        return quarantine

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._db is None:
            raise StoreError("the session store is not open")
        return await self._db.run(fn)

    async def _write(self, write: _Write) -> object:
        return await self._writer_or_raise().submit(write)

    def _writer_or_raise(self) -> _GroupCommit:
        if self._writer is None:
            raise StoreError(
                "the session store is read-only"
                if self.read_only
                else "the session store is closed"
            )
        return self._writer


def _app_names(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT DISTINCT app_name FROM sessions ORDER BY 1")]


def _thread_owner(db: sqlite3.Connection, *, app_name: str, session_id: str) -> str | None:
    row = db.execute(
        "SELECT user_id FROM sessions WHERE app_name = ? AND id = ? ORDER BY create_time LIMIT 1",
        (app_name, session_id),
    ).fetchone()
    return cast(str, row[0]) if row else None


@dataclasses.dataclass(frozen=True, slots=True)
class _StreamedMessage:
    """The message a run was streaming when it was cut off, as far as it was committed."""

    message_id: str
    author: str
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class _OpenRun:
    user_id: str
    session_id: str
    invocation_id: str
    dangling: list[tuple[str, str]]  # (call id, name) of server calls without a response
    streamed: _StreamedMessage | None


def _open_runs(db: sqlite3.Connection, *, app_name: str) -> list[_OpenRun]:
    runs = []
    for pk, user_id, session_id, invocation_id in db.execute(
        "SELECT pk, user_id, id, invocation_id FROM sessions WHERE app_name = ? AND run_open = 1",
        (app_name,),
    ).fetchall():
        dangling = db.execute(
            "SELECT call_id, name FROM open_calls WHERE session_pk = ? AND long_running = 0"
            " ORDER BY seq",
            (pk,),
        ).fetchall()
        # Only text of the run that is open: anything older outlived its run by mistake.
        streamed = db.execute(
            "SELECT message_id, author, text FROM streamed_texts"
            " WHERE session_pk = ? AND invocation_id = ?",
            (pk, invocation_id),
        ).fetchone()
        runs.append(
            _OpenRun(
                user_id,
                session_id,
                invocation_id or "",
                dangling,
                _StreamedMessage(*streamed) if streamed else None,
            )
        )
    return runs


def _closing_events(session: Session, run: _OpenRun, author: str) -> list[Event]:
    invocation_id, dangling = run.invocation_id, run.dangling
    agent = next((e.author for e in reversed(session.events) if e.author != "user"), author)
    # The run the client saw cut off: the gateway stamps its id on the invocation's events.
    run_ids = [
        metadata.get("runId")
        for e in session.events
        if e.invocation_id == invocation_id
        and isinstance(metadata := (e.custom_metadata or {}).get("agui"), dict)
    ]
    run_id = next((r for r in reversed(run_ids) if isinstance(r, str)), None)
    mark: dict[str, Any] = {"interrupted": True} | ({"runId": run_id} if run_id else {})
    closing = []
    if dangling:
        responses = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id, name=name, response=dict(INTERRUPTED_RESULT)
                )
            )
            for call_id, name in dangling
        ]
        closing.append(
            Event(
                invocation_id=invocation_id,
                author=agent,
                content=types.Content(role="user", parts=responses),
                custom_metadata={"agui": dict(mark)},
            )
        )
    closing.append(_interrupted_reply(run.streamed, invocation_id, agent, mark))
    return closing


def _interrupted_reply(
    streamed: _StreamedMessage | None, invocation_id: str, agent: str, mark: dict[str, Any]
) -> Event:
    """The cut-off answer: what the client was sent of it, then the note, as one message.

    One message, so the thread reads as one answer that stopped, the client finds it
    under the id it streamed, and the model's next turn sees both what it said and that
    it was cut off.
    """
    parts = [types.Part(text=INTERRUPTED_TEXT)]
    if streamed is not None:
        parts = [types.Part(text=streamed.text), types.Part(text=INTERRUPTED_NOTE)]
    return Event(
        id=streamed.message_id if streamed else "",  # "": ADK mints a new id
        invocation_id=invocation_id,
        author=streamed.author if streamed else agent,
        content=types.Content(role="model", parts=parts),
        custom_metadata={"agui": dict(mark)},
    )
