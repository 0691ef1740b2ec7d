"""Every read of the store in PostgreSQL's SQL: rows fetched whole, decoded by the caller.

The same reads as ``sqlite.reads``, returning the same plain values. Each runs in one
read-only transaction at REPEATABLE READ (``backend``), so its statements see one snapshot
even while other processes commit: a session's row and its events always agree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

import psycopg

from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.postgres.branches import branch_tree as branch_tree
from gateway.store.postgres.scopes import scope_state as scope_state
from gateway.store.postgres.thread_index import thread_row as thread_row
from gateway.store.postgres.thread_index import thread_rows as thread_rows
from gateway.store.projection import StoredMessages
from gateway.store.quarantine import Quarantine
from gateway.store.recovery import OpenRun, StreamedMessage
from gateway.store.rows import StoredListing, StoredSession
from gateway.store.threads import ThreadSummary


def _quarantine_of(thread_id: str, user_id: str, row: Sequence[Any]) -> Quarantine | None:
    """The quarantine of a thread from its ``LEFT JOIN quarantine`` columns, if it has one."""
    seq, column, reason, at = row
    return Quarantine(thread_id, user_id, seq, column, reason, at) if column is not None else None


_QUARANTINE_COLUMNS = "q.seq, q.column_name, q.reason, q.at"


def load_session(
    db: psycopg.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    window: int | None,
    after: float | None,
) -> StoredSession | None:
    """A session with its scopes and events, in two statements: the row with its quarantine,
    scopes and where its events start, then the events."""
    row = db.execute(
        _SESSION_WINDOWED if window is not None else _SESSION,
        {"app": app_name, "user": user_id, "id": session_id, "skip": (window or 1) - 1},
    ).fetchone()
    if row is None:
        return None
    pk, state, update_time, revision = row[:4]
    if (quarantine := _quarantine_of(session_id, user_id, row[4:8])) is not None:
        return StoredSession(
            app_name, user_id, session_id, "", (None, None), 0.0, 0, [], quarantine
        )
    scopes = cast(tuple[str | None, str | None], tuple(row[8:10]))
    events: list[tuple[int, str]] = []
    if window != 0:
        events = cast(
            list[tuple[int, str]],
            db.execute(_EVENTS, {"pk": pk, "start": row[10], "after": after}).fetchall(),
        )
    return StoredSession(
        app_name, user_id, session_id, state, scopes, update_time, revision, events, None
    )


_SESSION = (
    f"SELECT s.pk, s.state, s.update_time, s.revision, {_QUARANTINE_COLUMNS},"
    " (SELECT state FROM app_states WHERE app_name = s.app_name),"
    " (SELECT state FROM user_states WHERE app_name = s.app_name AND user_id = s.user_id),"
    " {start} FROM sessions s LEFT JOIN quarantine q ON q.session_pk = s.pk"
    " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s"
)
# A window's events start at its oldest; a call still waiting on the browser must stay in
# reach, with its invocation (LEAST passes over a NULL: no call waits).
_SESSION_WINDOWED = _SESSION.replace(
    "{start}",
    "LEAST(COALESCE((SELECT seq FROM events WHERE session_pk = s.pk"
    " ORDER BY seq DESC LIMIT 1 OFFSET %(skip)s), 0),"
    " (SELECT MIN(invocation_seq) FROM open_calls WHERE session_pk = s.pk AND long_running))",
)
_SESSION = _SESSION.replace("{start}", "0")
# As ADK's in-memory service, with ``after``: what follows the last event older than it.
_EVENTS = (
    "SELECT seq, data FROM events WHERE session_pk = %(pk)s AND seq >= %(start)s"
    " AND seq > COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = %(pk)s"
    " AND seq >= %(start)s AND timestamp < %(after)s), -1) ORDER BY seq"
)


def thread_messages(
    db: psycopg.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    max_bytes: int | None = None,
    before: int | None = None,
    limit: int | None = None,
) -> StoredMessages | None:
    older = before if before is not None else _NO_CURSOR
    # The thread's row, its newest event's id and, within ``max_bytes``, where the page
    # starts (``page_start``), in one statement.
    row = db.execute(
        _MESSAGES_PAGED if max_bytes is not None else _MESSAGES,
        {"app": app_name, "user": user_id, "id": session_id, "before": older, "max": max_bytes},
    ).fetchone()
    if row is None:
        return None
    if (quarantine := _quarantine_of(session_id, user_id, row[1:5])) is not None:
        return StoredMessages(None, [], quarantine)
    pk, latest, cut, newest = row[0], row[5], row[6], row[7]
    start = 0
    if max_bytes is not None:
        # The newest rows whose messages fit in max_bytes, and at least the newest one.
        start = _page_start(cut, newest)
    if limit is not None:
        # And no more than the newest `limit` rows of messages.
        edge = db.execute(
            "SELECT seq FROM events WHERE session_pk = %s AND messages IS NOT NULL AND seq < %s"
            " ORDER BY seq DESC LIMIT 1 OFFSET %s",
            (pk, older, limit - 1),
        ).fetchone()
        start = max(start, edge[0] if edge else 0)
    rows = cast(
        list[tuple[int, str, float]],
        db.execute(
            "SELECT seq, messages, timestamp FROM events"
            " WHERE session_pk = %s AND messages IS NOT NULL AND seq >= %s AND seq < %s"
            " ORDER BY seq",
            (pk, start, older),
        ).fetchall(),
    )
    earlier = None
    # Only a page that starts past the first row can leave older ones out.
    if start and rows:
        first = rows[0][0]
        older_rows = db.execute(
            "SELECT 1 FROM events WHERE session_pk = %s AND messages IS NOT NULL AND seq < %s"
            " LIMIT 1",
            (pk, first),
        ).fetchone()
        earlier = first if older_rows else None
    return StoredMessages(cast(str | None, latest), rows, None, earlier)


# A cursor past every row: seq is a BIGINT, at most 2**63 - 1.
_NO_CURSOR = (1 << 63) - 1

# Of a thread ``s``'s rows of messages before ``%(before)s``: the newest whose running total
# of bytes, newest first, passes ``%(max)s`` (NULL when all fit, or no ``max``), and the
# newest of all.
_PAGE_START = (
    "(SELECT seq FROM (SELECT seq, SUM(octet_length(messages))"
    " OVER (ORDER BY seq DESC) AS total FROM events"
    " WHERE session_pk = s.pk AND messages IS NOT NULL AND seq < %(before)s) AS page"
    " WHERE total > %(max)s ORDER BY seq DESC LIMIT 1),"
    " (SELECT MAX(seq) FROM events WHERE session_pk = s.pk AND messages IS NOT NULL"
    " AND seq < %(before)s)"
)


_MESSAGES = (
    f"SELECT s.pk, {_QUARANTINE_COLUMNS},"
    " (SELECT id FROM events WHERE session_pk = s.pk ORDER BY seq DESC LIMIT 1),"
    " {page} FROM sessions s LEFT JOIN quarantine q ON q.session_pk = s.pk"
    " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s"
)
_MESSAGES_PAGED = _MESSAGES.replace("{page}", _PAGE_START)
_MESSAGES = _MESSAGES.replace("{page}", "NULL, NULL")


def _page_start(cut: int | None, newest: int | None) -> int:
    """The oldest seq of the newest rows that fit, from ``_PAGE_START``'s two values."""
    if cut is None:
        return 0  # everything fits
    return newest if cut == newest and newest is not None else cut + 1


def thread_summaries(
    db: psycopg.Connection, *, app_name: str, user_id: str | None, quarantined_only: bool
) -> list[ThreadSummary]:
    rows = db.execute(
        f"SELECT s.id, s.user_id, s.update_time, {_QUARANTINE_COLUMNS} FROM sessions s"
        " LEFT JOIN quarantine q ON q.session_pk = s.pk WHERE s.app_name = %(app)s"
        " AND (%(user)s::text IS NULL OR s.user_id = %(user)s)"
        " AND (NOT %(quarantined)s OR q.session_pk IS NOT NULL)"
        " ORDER BY s.update_time, s.user_id, s.id",
        {"app": app_name, "user": user_id, "quarantined": quarantined_only},
    ).fetchall()
    summaries = []
    for row in rows:
        thread_id, owner, updated_at = row[:3]
        quarantine = _quarantine_of(thread_id, owner, row[3:])
        summaries.append(ThreadSummary(thread_id, owner, updated_at, quarantine))
    return summaries


def list_sessions(db: psycopg.Connection, *, app_name: str, user_id: str | None) -> StoredListing:
    params = {"app": app_name, "user": user_id}
    rows = cast(
        list[tuple[str, str, str, float, int]],
        db.execute(
            "SELECT s.user_id, s.id, s.state, s.update_time, s.revision FROM sessions s"
            " WHERE s.app_name = %(app)s AND (%(user)s::text IS NULL OR s.user_id = %(user)s)"
            " AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.session_pk = s.pk)"
            " ORDER BY s.update_time, s.user_id, s.id",
            params,
        ).fetchall(),
    )
    app_state = db.execute(
        "SELECT state FROM app_states WHERE app_name = %(app)s", params
    ).fetchone()
    user_states: dict[str, str | None] = dict(
        db.execute(
            "SELECT user_id, state FROM user_states WHERE app_name = %(app)s"
            " AND (%(user)s::text IS NULL OR user_id = %(user)s)",
            params,
        ).fetchall()
    )
    return StoredListing(app_state[0] if app_state else None, user_states, rows)


def app_names(db: psycopg.Connection) -> list[str]:
    rows = db.execute("SELECT DISTINCT app_name FROM sessions ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def thread_owner(db: psycopg.Connection, *, app_name: str, session_id: str) -> str | None:
    row = db.execute(
        "SELECT user_id FROM sessions WHERE app_name = %s AND id = %s"
        " ORDER BY create_time, pk LIMIT 1",
        (app_name, session_id),
    ).fetchone()
    return cast(str, row[0]) if row else None


def open_runs(
    db: psycopg.Connection, *, app_name: str, session_ids: Collection[str] | None = None
) -> list[OpenRun]:
    """The open runs of the app's threads (all of them, or those named)."""
    found = db.execute(
        "SELECT pk, user_id, id, invocation_id FROM sessions WHERE app_name = %s AND run_open"
        " AND (%s::text[] IS NULL OR id = ANY(%s::text[]))",
        (app_name, *((list(session_ids),) * 2 if session_ids is not None else (None, None))),
    ).fetchall()
    runs = []
    for pk, user_id, session_id, invocation_id in found:
        dangling = cast(
            list[tuple[str, str]],
            db.execute(
                "SELECT call_id, name FROM open_calls WHERE session_pk = %s AND NOT long_running"
                " ORDER BY seq",
                (pk,),
            ).fetchall(),
        )
        # Only text of the run that is open: anything older outlived its run by mistake.
        streamed = db.execute(
            "SELECT message_id, author, text FROM streamed_texts"
            " WHERE session_pk = %s AND invocation_id = %s",
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


def log_head(db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str) -> int:
    """The number of the last frame of a thread's log; 0 for none (or no such thread)."""
    row = db.execute(
        "SELECT MAX(f.seq) FROM sessions s JOIN frames f ON f.session_pk = s.pk"
        " WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s",
        (app_name, user_id, session_id),
    ).fetchone()
    return int(row[0] or 0) if row else 0


def invocation_rows(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str
) -> list[tuple[int, str]]:
    """The (seq, data) of a thread's events from where its latest invocation began, up to
    its newest (``run_start``)."""
    return cast(
        list[tuple[int, str]],
        db.execute(
            "SELECT e.seq, e.data FROM sessions s JOIN events e ON e.session_pk = s.pk"
            " WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s"
            " AND e.seq >= COALESCE(s.invocation_seq, 0) ORDER BY e.seq",
            (app_name, user_id, session_id),
        ).fetchall(),
    )


def frames_after(
    db: psycopg.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    after: int,
    limit: int | None = None,
) -> FrameLog:
    """The frames of a thread's log numbered above ``after`` (the first ``limit`` of them),
    and where the log stands."""
    thread = {"app": app_name, "user": user_id, "id": session_id}
    oldest, head = cast(
        tuple[int | None, int | None],
        db.execute(
            "SELECT MIN(f.seq), MAX(f.seq) FROM sessions s JOIN frames f ON f.session_pk = s.pk"
            " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s",
            thread,
        ).fetchone(),
    )
    rows = db.execute(
        "SELECT f.seq, f.data, f.only_for, f.not_for FROM sessions s"
        " JOIN frames f ON f.session_pk = s.pk"
        " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s"
        " AND f.seq > %(after)s ORDER BY f.seq LIMIT %(limit)s",  # LIMIT NULL: all
        {**thread, "after": after, "limit": limit},
    ).fetchall()
    frames = [
        LoggedFrame(seq, bytes(data), only_for, not_for) for seq, data, only_for, not_for in rows
    ]
    return FrameLog(frames, oldest, int(head or 0))
