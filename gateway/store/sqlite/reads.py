"""Every read of the store in SQL: rows fetched whole, decoded by the caller afterwards.

Each read is one function of the connection, run in one call into its thread, and returns
plain values (``rows``, ``projection``): nothing is decoded while a cursor is open. A
quarantined thread's read returns its quarantine and nothing else.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any, cast

from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.projection import StoredMessages
from gateway.store.quarantine import Quarantine
from gateway.store.recovery import OpenRun, StreamedMessage
from gateway.store.rows import StoredListing, StoredSession
from gateway.store.run_start import RUN_ID_SQLITE, RUN_ID_SQLITE_ROWS
from gateway.store.sqlite.branches import branch_tree as branch_tree
from gateway.store.sqlite.scopes import scope_state as scope_state
from gateway.store.sqlite.scopes import stored_scopes
from gateway.store.sqlite.thread_index import thread_row as thread_row
from gateway.store.sqlite.thread_index import thread_rows as thread_rows
from gateway.store.threads import ThreadSummary, Usage


def _quarantine_of(thread_id: str, user_id: str, row: Sequence[Any]) -> Quarantine | None:
    """The quarantine of a thread from its ``LEFT JOIN quarantine`` columns, if it has one."""
    seq, column, reason, at = row
    return Quarantine(thread_id, user_id, seq, column, reason, at) if column is not None else None


_QUARANTINE_COLUMNS = "q.seq, q.column_name, q.reason, q.at"


def load_session(
    db: sqlite3.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    window: int | None,
    after: float | None,
) -> StoredSession | None:
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
        return StoredSession(
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
    scopes = stored_scopes(db, app_name, user_id)
    return StoredSession(
        app_name, user_id, session_id, state, scopes, update_time, revision, events, None
    )


def thread_messages(
    db: sqlite3.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    max_bytes: int | None = None,
    before: int | None = None,
    limit: int | None = None,
) -> StoredMessages | None:
    row = db.execute(
        f"SELECT s.pk, {_QUARANTINE_COLUMNS} FROM sessions s"
        " LEFT JOIN quarantine q ON q.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    if row is None:
        return None
    if (quarantine := _quarantine_of(session_id, user_id, row[1:])) is not None:
        return StoredMessages(None, [], quarantine)
    pk = row[0]
    latest = db.execute(
        "SELECT id FROM events WHERE session_pk = ? ORDER BY seq DESC LIMIT 1", (pk,)
    ).fetchone()
    older = before if before is not None else _NO_CURSOR
    start = 0
    if max_bytes is not None:
        # The newest rows whose messages fit in max_bytes, and at least the newest one.
        start = page_start(db, pk, older, max_bytes)
    if limit is not None:
        # And no more than the newest `limit` rows of messages.
        (edge,) = db.execute(
            "SELECT seq FROM events WHERE session_pk = ? AND messages IS NOT NULL AND seq < ?"
            " ORDER BY seq DESC LIMIT 1 OFFSET ?",
            (pk, older, limit - 1),
        ).fetchone() or (0,)
        start = max(start, edge)
    rows = db.execute(
        "SELECT seq, messages, timestamp FROM events"
        " WHERE session_pk = ? AND messages IS NOT NULL AND seq >= ? AND seq < ?"
        " ORDER BY seq",
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
    return StoredMessages(cast(str, latest[0]) if latest else None, rows, None, earlier)


# A cursor past every row: seq is an INTEGER PRIMARY KEY, at most 2**63 - 1.
_NO_CURSOR = (1 << 63) - 1


def messages_from(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str, start: int, limit: int
) -> StoredMessages:
    """The thread's first ``limit`` rows of messages from seq ``start`` on, oldest first (no
    quarantine read: its page was read already)."""
    rows = db.execute(
        "SELECT e.seq, e.messages, e.timestamp FROM sessions s JOIN events e"
        " ON e.session_pk = s.pk WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?"
        " AND e.messages IS NOT NULL AND e.seq >= ? ORDER BY e.seq LIMIT ?",
        (app_name, user_id, session_id, start, limit),
    ).fetchall()
    return StoredMessages(None, rows, None)


def page_start(db: sqlite3.Connection, pk: int, before: int, max_bytes: int) -> int:
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


def thread_summaries(
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


def list_sessions(db: sqlite3.Connection, *, app_name: str, user_id: str | None) -> StoredListing:
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
    return StoredListing(app_state[0] if app_state else None, user_states, rows)


def app_names(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT DISTINCT app_name FROM sessions ORDER BY 1")]


def thread_owner(db: sqlite3.Connection, *, app_name: str, session_id: str) -> str | None:
    row = db.execute(
        "SELECT user_id FROM sessions WHERE app_name = ? AND id = ? ORDER BY create_time LIMIT 1",
        (app_name, session_id),
    ).fetchone()
    return cast(str, row[0]) if row else None


def open_runs(
    db: sqlite3.Connection, *, app_name: str, session_ids: Collection[str] | None = None
) -> list[OpenRun]:
    """The open runs of the app's threads (all of them, or those named)."""
    query = (
        "SELECT pk, user_id, id, invocation_id FROM sessions WHERE app_name = ? AND run_open = 1"
    )
    params: tuple[str, ...] = (app_name,)
    if session_ids is not None:
        query += " AND id IN (SELECT value FROM json_each(?))"
        params += (json.dumps(list(session_ids)),)
    found = db.execute(query, params).fetchall()
    runs = []
    for pk, user_id, session_id, invocation_id in found:
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
            OpenRun(
                user_id,
                session_id,
                invocation_id or "",
                dangling,
                StreamedMessage(*streamed) if streamed else None,
            )
        )
    return runs


def usage(db: sqlite3.Connection, *, app_name: str, user_id: str) -> Usage:
    """What the user's threads hold: one row, kept by triggers (``schema.USER_USAGE``), not a
    sum over the user's threads."""
    row = db.execute(
        "SELECT threads, stored_bytes FROM user_usage WHERE app_name = ? AND user_id = ?",
        (app_name, user_id),
    ).fetchone()
    return Usage(*row) if row else Usage(0, 0)


def log_head(db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str) -> int:
    """The number of the last frame of a thread's log; 0 for none (or no such thread)."""
    (head,) = db.execute(
        "SELECT MAX(f.seq) FROM sessions s JOIN frames f ON f.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    return int(head or 0)


def read_thread(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str, window: int
) -> tuple[StoredSession, Usage, int] | None:
    """A thread as opening it gives it (``backend.Reads.read_thread``): its session, the
    user's usage and its log's head, in three steps (each a call into SQLite, not a round
    trip); the writer's opening reads it so, in its transaction."""
    stored = load_session(
        db, app_name=app_name, user_id=user_id, session_id=session_id, window=window, after=None
    )
    if stored is None:
        return None
    found = usage(db, app_name=app_name, user_id=user_id)
    return stored, found, log_head(db, app_name=app_name, user_id=user_id, session_id=session_id)


def invocation_rows(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str
) -> list[tuple[int, str]]:
    """The (seq, data) of a thread's events from where its latest invocation began, up to
    its newest (``run_start``)."""
    return [
        (seq, str(data))
        for seq, data in db.execute(
            "SELECT e.seq, e.data FROM sessions s JOIN events e ON e.session_pk = s.pk"
            " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?"
            " AND e.seq >= COALESCE(s.invocation_seq, 0) ORDER BY e.seq",
            (app_name, user_id, session_id),
        )
    ]


def run_rows(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str, run_id: str
) -> list[tuple[int, str]]:
    """The (seq, data) of the first events of a thread stamped with ``run_id`` that a
    user's input began (``run_start.stored_run``), through the index on that stamp."""
    return [
        (seq, str(data))
        for seq, data in db.execute(
            "SELECT seq, data FROM events WHERE session_pk = (SELECT pk FROM sessions"
            " WHERE app_name = ? AND user_id = ? AND id = ?)"
            f" AND {RUN_ID_SQLITE_ROWS} AND {RUN_ID_SQLITE} = ? ORDER BY seq LIMIT 4",
            (app_name, user_id, session_id, run_id),
        ).fetchall()
    ]


def frames_after(
    db: sqlite3.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    after: int,
    limit: int | None = None,
) -> FrameLog:
    """The frames of a thread's log numbered above ``after`` (the first ``limit`` of them),
    and where the log stands."""
    oldest, head = db.execute(
        "SELECT MIN(f.seq), MAX(f.seq) FROM sessions s JOIN frames f ON f.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    rows = db.execute(
        "SELECT f.seq, f.data, f.only_for, f.not_for FROM sessions s"
        " JOIN frames f ON f.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ? AND f.seq > ? ORDER BY f.seq"
        " LIMIT ?",
        (app_name, user_id, session_id, after, -1 if limit is None else limit),
    ).fetchall()
    frames = [
        LoggedFrame(seq, bytes(data), only_for, not_for) for seq, data, only_for, not_for in rows
    ]
    return FrameLog(frames, oldest, int(head or 0))
