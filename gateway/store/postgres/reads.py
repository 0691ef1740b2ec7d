"""Every read of the store in PostgreSQL's SQL: rows fetched whole, decoded by the caller.

The same reads as ``sqlite.reads``, returning the same plain values. Each sees one
snapshot even while other processes commit (``snapshot``): a read of several statements in
one read-only transaction at REPEATABLE READ, so a session's row and its events always
agree; a read marked ``one_statement`` by being one statement, with no transaction around
it. The reads every run makes (a session, a thread opened) are one statement each.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

import psycopg

from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.postgres.branches import branch_tree as branch_tree
from gateway.store.postgres.scopes import scope_state as scope_state
from gateway.store.postgres.snapshot import one_statement
from gateway.store.postgres.thread_index import thread_row as thread_row
from gateway.store.postgres.thread_index import thread_rows as thread_rows
from gateway.store.projection import StoredMessages
from gateway.store.quarantine import Quarantine
from gateway.store.recovery import OpenRun, StreamedMessage
from gateway.store.rows import StoredListing, StoredSession
from gateway.store.run_start import RUN_ID_POSTGRES, RUN_ID_POSTGRES_ROWS
from gateway.store.threads import ThreadSummary, Usage


def _quarantine_of(thread_id: str, user_id: str, row: Sequence[Any]) -> Quarantine | None:
    """The quarantine of a thread from its ``LEFT JOIN quarantine`` columns, if it has one."""
    seq, column, reason, at = row
    return Quarantine(thread_id, user_id, seq, column, reason, at) if column is not None else None


_QUARANTINE_COLUMNS = "q.seq, q.column_name, q.reason, q.at"


@one_statement
def load_session(
    db: psycopg.Connection,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    window: int | None,
    after: float | None,
) -> StoredSession | None:
    """A session with its scopes and events, in one statement: a row an event (one with
    no event if it has none), each with the session's row, its quarantine and scopes."""
    rows = db.execute(
        _SESSION_WINDOWED if window is not None else _SESSION,
        _session_params(app_name, user_id, session_id, window, after),
    ).fetchall()
    return _stored_session(app_name, user_id, session_id, rows)


@one_statement
def read_thread(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str, window: int
) -> tuple[StoredSession, Usage, int] | None:
    """A thread as opening it gives it (``backend.Reads.read_thread``) in one statement: the
    session's as ``load_session`` reads it, each row with the user's usage and the head of
    the thread's log (where a snapshot of BEGIN, three statements and COMMIT took five
    round trips)."""
    rows = db.execute(
        _THREAD, _session_params(app_name, user_id, session_id, window, None)
    ).fetchall()
    if (stored := _stored_session(app_name, user_id, session_id, rows)) is None:
        return None
    threads, stored_bytes, head = rows[0][9:12]
    return stored, Usage(threads, stored_bytes), int(head)


def _session_params(
    app_name: str, user_id: str, session_id: str, window: int | None, after: float | None
) -> dict[str, Any]:
    return {
        "app": app_name,
        "user": user_id,
        "id": session_id,
        "skip": (window or 1) - 1,
        "events": window != 0,
        "after": after,
    }


def _stored_session(
    app_name: str, user_id: str, session_id: str, rows: list[tuple[Any, ...]]
) -> StoredSession | None:
    """The session of the session statement's rows (``_SESSION``); None for no row."""
    if not rows:
        return None
    row = rows[0]
    state, update_time, revision = row[0:3]
    if (quarantine := _quarantine_of(session_id, user_id, row[3:7])) is not None:
        return StoredSession(
            app_name, user_id, session_id, "", (None, None), 0.0, 0, [], quarantine
        )
    scopes = cast(tuple[str | None, str | None], tuple(row[7:9]))
    events = [(seq, data) for *_, seq, data in rows if seq is not None]
    return StoredSession(
        app_name, user_id, session_id, state, scopes, update_time, revision, events, None
    )


# The session's row, then its events from where they start (``{start}``), none if it is
# quarantined or ``events`` is false; as ADK's in-memory service, with ``after``: what
# follows the last event older than it. A thread's read (``_THREAD``) adds its columns
# (``{thread}``), before the event's two, from its own part of the FROM (``{beside}``).
_SESSION_ROWS = (
    f"SELECT s.state, s.update_time, s.revision, {_QUARANTINE_COLUMNS},"
    " (SELECT state FROM app_states WHERE app_name = s.app_name),"
    " (SELECT state FROM user_states WHERE app_name = s.app_name AND user_id = s.user_id),"
    "{thread} e.seq, e.data FROM sessions s{beside} LEFT JOIN quarantine q ON q.session_pk = s.pk"
    " CROSS JOIN LATERAL (SELECT {start} AS start) AS w"
    " LEFT JOIN LATERAL (SELECT seq, data FROM events WHERE %(events)s AND q.session_pk IS NULL"
    " AND session_pk = s.pk AND seq >= w.start AND seq > COALESCE((SELECT MAX(seq) FROM events"
    " WHERE session_pk = s.pk AND seq >= w.start AND timestamp < %(after)s), -1)) AS e ON TRUE"
    " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s ORDER BY e.seq"
)
# A window's events start at its oldest; a call still waiting on the browser must stay in
# reach, with its invocation (LEAST passes over a NULL: no call waits).
_WINDOW_START = (
    "LEAST(COALESCE((SELECT seq FROM events WHERE session_pk = s.pk"
    " ORDER BY seq DESC LIMIT 1 OFFSET %(skip)s), 0),"
    " (SELECT MIN(invocation_seq) FROM open_calls WHERE session_pk = s.pk AND long_running))"
)
_SESSION, _SESSION_WINDOWED = (
    _SESSION_ROWS.replace("{start}", start).replace("{thread}", "").replace("{beside}", "")
    for start in ("0", _WINDOW_START)
)


@one_statement
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
    # One statement: a row a row of messages of the page (one with none if it has none),
    # each with the thread's quarantine, its newest event's id and whether rows older than
    # the page are left out.
    found = db.execute(
        _MESSAGES[max_bytes is not None, limit is not None],
        {
            "app": app_name,
            "user": user_id,
            "id": session_id,
            "before": before if before is not None else _NO_CURSOR,
            "max": max_bytes,
            "skip": (limit or 1) - 1,
        },
    ).fetchall()
    if not found:
        return None
    if (quarantine := _quarantine_of(session_id, user_id, found[0][0:4])) is not None:
        return StoredMessages(None, [], quarantine)
    latest, left_out = found[0][4], found[0][5]
    rows = [(seq, messages, at) for *_, seq, messages, at in found if seq is not None]
    earlier = rows[0][0] if rows and left_out else None
    return StoredMessages(cast(str | None, latest), rows, None, earlier)


# A cursor past every row: seq is a BIGINT, at most 2**63 - 1.
_NO_CURSOR = (1 << 63) - 1


@one_statement
def messages_from(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str, start: int, limit: int
) -> StoredMessages:
    """The thread's first ``limit`` rows of messages from seq ``start`` on, oldest first (no
    quarantine read: its page was read already)."""
    rows = db.execute(
        "SELECT e.seq, e.messages, e.timestamp FROM sessions s JOIN events e"
        " ON e.session_pk = s.pk WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s"
        " AND e.messages IS NOT NULL AND e.seq >= %s ORDER BY e.seq LIMIT %s",
        (app_name, user_id, session_id, start, limit),
    ).fetchall()
    return StoredMessages(None, cast(list[tuple[int, str, float]], rows), None)


# Where a page of thread ``s``'s rows of messages before ``%(before)s`` starts: the newest
# rows whose messages fit in ``%(max)s`` bytes, and at least the newest one (``{fit}``),
# and no more than the newest ``%(skip)s`` + 1 (``{edge}``); 0 for either not asked.
_PAGE_START = "GREATEST({fit}, {edge})"
# Of the rows before the cursor, newest first with their running total of bytes: past the
# newest whose total passes ``max`` (the newest itself, if it alone does), or all.
_FIT = (
    "(SELECT CASE WHEN cut.seq IS NULL THEN 0 WHEN cut.seq = newest.seq THEN cut.seq"
    " ELSE cut.seq + 1 END FROM (SELECT MAX(seq) AS seq FROM events WHERE session_pk = s.pk"
    " AND messages IS NOT NULL AND seq < %(before)s) AS newest LEFT JOIN (SELECT seq FROM"
    " (SELECT seq, SUM(octet_length(messages)) OVER (ORDER BY seq DESC) AS total FROM events"
    " WHERE session_pk = s.pk AND messages IS NOT NULL AND seq < %(before)s) AS page"
    " WHERE total > %(max)s ORDER BY seq DESC LIMIT 1) AS cut ON TRUE)"
)
_EDGE = (
    "COALESCE((SELECT seq FROM events WHERE session_pk = s.pk AND messages IS NOT NULL"
    " AND seq < %(before)s ORDER BY seq DESC LIMIT 1 OFFSET %(skip)s), 0)"
)
# The page's rows (none for a quarantined thread); whether it leaves older rows out: only
# a page that starts past the first row can.
_PAGE = (
    f"SELECT {_QUARANTINE_COLUMNS},"
    " (SELECT id FROM events WHERE session_pk = s.pk ORDER BY seq DESC LIMIT 1),"
    " EXISTS (SELECT FROM events WHERE session_pk = s.pk AND messages IS NOT NULL"
    " AND seq < w.start), e.seq, e.messages, e.timestamp"
    " FROM sessions s LEFT JOIN quarantine q ON q.session_pk = s.pk"
    f" CROSS JOIN LATERAL (SELECT {_PAGE_START} AS start) AS w"
    " LEFT JOIN LATERAL (SELECT seq, messages, timestamp FROM events"
    " WHERE q.session_pk IS NULL AND session_pk = s.pk AND messages IS NOT NULL"
    " AND seq >= w.start AND seq < %(before)s) AS e ON TRUE"
    " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s ORDER BY e.seq"
)
# By whether the page is bounded in bytes, and in rows.
_MESSAGES = {
    (paged, limited): _PAGE.replace("{fit}", _FIT if paged else "0").replace(
        "{edge}", _EDGE if limited else "0"
    )
    for paged in (False, True)
    for limited in (False, True)
}


@one_statement
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


@one_statement
def app_names(db: psycopg.Connection) -> list[str]:
    rows = db.execute("SELECT DISTINCT app_name FROM sessions ORDER BY 1").fetchall()
    return [row[0] for row in rows]


@one_statement
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


# What a user's threads hold, by ``%(app)s`` and ``%(user)s``; an opening of a thread, and
# a thread's read, read it in their own statements (``writes._OPENING``, ``_THREAD``).
USAGE = (
    "SELECT COUNT(*) AS threads, COALESCE(SUM(stored_bytes), 0)::bigint AS stored_bytes"
    " FROM sessions WHERE app_name = %(app)s AND user_id = %(user)s"
)


@one_statement
def usage(db: psycopg.Connection, *, app_name: str, user_id: str) -> Usage:
    """What the user's threads hold."""
    row = db.execute(USAGE, {"app": app_name, "user": user_id}).fetchone()
    return Usage(*row) if row else Usage(0, 0)


# The number of the last frame of a thread's log, by ``%(app)s``, ``%(user)s`` and
# ``%(id)s``: 0 for none (or no such thread).
LOG_HEAD = (
    "SELECT COALESCE(MAX(f.seq), 0) FROM sessions s JOIN frames f ON f.session_pk = s.pk"
    " WHERE s.app_name = %(app)s AND s.user_id = %(user)s AND s.id = %(id)s"
)


@one_statement
def log_head(db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str) -> int:
    """The number of the last frame of a thread's log; 0 for none (or no such thread)."""
    row = db.execute(LOG_HEAD, {"app": app_name, "user": user_id, "id": session_id}).fetchone()
    return int(row[0]) if row else 0


# A thread's read: its windowed session's rows, each with the user's usage and the head of
# its log; both depend on the parameters alone, so PostgreSQL computes each once.
_THREAD = (
    _SESSION_ROWS.replace("{start}", _WINDOW_START)
    .replace("{thread}", f" usage.threads, usage.stored_bytes, ({LOG_HEAD}),")
    .replace("{beside}", f" CROSS JOIN ({USAGE}) AS usage")
)


@one_statement
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


def run_rows(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str, run_id: str
) -> list[tuple[int, str]]:
    """The (seq, data) of the first events of a thread stamped with ``run_id`` that a
    user's input began (``run_start.stored_run``), through the index on that stamp."""
    return cast(
        list[tuple[int, str]],
        db.execute(
            "SELECT seq, data FROM events WHERE session_pk = (SELECT pk FROM sessions"
            " WHERE app_name = %s AND user_id = %s AND id = %s)"
            f" AND {RUN_ID_POSTGRES_ROWS} AND {RUN_ID_POSTGRES} = %s ORDER BY seq LIMIT 4",
            (app_name, user_id, session_id, run_id),
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
