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
from gateway.store.postgres.scopes import stored_scopes
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
    row = db.execute(
        f"SELECT s.pk, s.state, s.update_time, s.revision, {_QUARANTINE_COLUMNS}"
        " FROM sessions s LEFT JOIN quarantine q ON q.session_pk = s.pk"
        " WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s",
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
            edge, waiting = cast(
                tuple[int | None, int | None],
                db.execute(
                    "SELECT (SELECT seq FROM events WHERE session_pk = %(pk)s"
                    " ORDER BY seq DESC LIMIT 1 OFFSET %(skip)s),"
                    " (SELECT MIN(invocation_seq) FROM open_calls"
                    " WHERE session_pk = %(pk)s AND long_running)",
                    {"pk": pk, "skip": window - 1},
                ).fetchone(),
            )
            start = edge or 0
            if waiting is not None:
                start = min(start, waiting)
        if after is not None:
            # As ADK's in-memory service: keep what follows the last event older than `after`.
            (older,) = cast(
                tuple[int | None],
                db.execute(
                    "SELECT MAX(seq) FROM events"
                    " WHERE session_pk = %s AND seq >= %s AND timestamp < %s",
                    (pk, start, after),
                ).fetchone(),
            )
            if older is not None:
                start = older + 1
        events = cast(
            list[tuple[int, str]],
            db.execute(
                "SELECT seq, data FROM events WHERE session_pk = %s AND seq >= %s ORDER BY seq",
                (pk, start),
            ).fetchall(),
        )
    scopes = stored_scopes(db, app_name, user_id)
    return StoredSession(
        app_name, user_id, session_id, state, scopes, update_time, revision, events, None
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
    row = db.execute(
        f"SELECT s.pk, {_QUARANTINE_COLUMNS} FROM sessions s"
        " LEFT JOIN quarantine q ON q.session_pk = s.pk"
        " WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s",
        (app_name, user_id, session_id),
    ).fetchone()
    if row is None:
        return None
    if (quarantine := _quarantine_of(session_id, user_id, row[1:])) is not None:
        return StoredMessages(None, [], quarantine)
    pk = row[0]
    latest = db.execute(
        "SELECT id FROM events WHERE session_pk = %s ORDER BY seq DESC LIMIT 1", (pk,)
    ).fetchone()
    older = before if before is not None else _NO_CURSOR
    start = 0
    if max_bytes is not None:
        # The newest rows whose messages fit in max_bytes, and at least the newest one.
        start = page_start(db, pk, older, max_bytes)
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
    return StoredMessages(cast(str, latest[0]) if latest else None, rows, None, earlier)


# A cursor past every row: seq is a BIGINT, at most 2**63 - 1.
_NO_CURSOR = (1 << 63) - 1


def page_start(db: psycopg.Connection, pk: int, before: int, max_bytes: int) -> int:
    """The oldest seq of the newest rows before ``before`` that fit in ``max_bytes``."""
    (cut, newest) = cast(
        tuple[int | None, int | None],
        db.execute(
            "SELECT (SELECT seq FROM (SELECT seq, SUM(octet_length(messages))"
            " OVER (ORDER BY seq DESC) AS total FROM events"
            " WHERE session_pk = %(pk)s AND messages IS NOT NULL AND seq < %(before)s) AS page"
            " WHERE total > %(max)s ORDER BY seq DESC LIMIT 1),"
            " (SELECT MAX(seq) FROM events WHERE session_pk = %(pk)s AND messages IS NOT NULL"
            " AND seq < %(before)s)",
            {"pk": pk, "before": before, "max": max_bytes},
        ).fetchone(),
    )
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
