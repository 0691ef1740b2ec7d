"""The write commands (``gateway.store.writes``) in PostgreSQL's SQL, for many writers.

Other processes write the same rows, so every read a write decides on takes the row's
lock first (``FOR UPDATE``): an append checks the revision of a session no one else can
append to until it commits, and a new thread's id is locked while its owner is looked up,
so that of two processes opening it at once one creates it and the other finds it.

A write made under a thread's lease (``Fenced``) is applied only while that lease is
current: an event, frames, a streamed text and a trim take a ``Fence`` and check it in
their own statement (``fences``); any other fenced write is checked before the batch's
(``fences.lease_epochs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import psycopg

from gateway.store.codec import dump, load_state, merged_state, updated_state
from gateway.store.leases import Fence
from gateway.store.postgres import leases
from gateway.store.postgres.branches import move_branch as move_branch
from gateway.store.postgres.fences import (
    LEASES,
    current,
    epochs,
    fenced_threads,
    fencing,
    outcomes,
    refused,
)
from gateway.store.postgres.json_rows import Row, document
from gateway.store.postgres.notify import CHANNEL, committed
from gateway.store.postgres.open_calls import record_progress
from gateway.store.postgres.reads import LOG_HEAD, USAGE, load_session, thread_owner
from gateway.store.postgres.schema import EVENT_BYTES
from gateway.store.postgres.scopes import merge_scope, with_scopes
from gateway.store.postgres.thread_index import TITLE_SEQ
from gateway.store.postgres.thread_index import patch_thread as patch_row
from gateway.store.rows import StoredSession
from gateway.store.thread_index import TITLE_FIRST, ThreadRow, title_words
from gateway.store.threads import OpenedThread, Usage
from gateway.store.writes import (
    AppendEvent,
    AppendFrames,
    CreateSession,
    DeleteSession,
    ForgetLeftoverTexts,
    OpenThread,
    PatchThread,
    ReleaseLeases,
    SaveStreamedText,
    SetAside,
    TrimFrames,
    not_found,
)


def create_session(db: psycopg.Connection, create: CreateSession) -> dict[str, Any]:
    """Returns the new session's merged state."""
    # ON CONFLICT, not an error: an error would abort the whole transaction, not one write.
    created = db.execute(
        "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING pk",
        (
            create.app_name,
            create.user_id,
            create.session_id,
            dump(create.deltas["session"]),
            create.now,
            create.now,
        ),
    ).fetchone()
    if created is None:
        raise create.already_exists()
    if create.deltas["app"]:
        merge_scope(db, create.app_name, None, create.deltas["app"], create.now)
    if create.deltas["user"]:
        merge_scope(db, create.app_name, create.user_id, create.deltas["user"], create.now)
    return with_scopes(db, create.app_name, create.user_id, create.deltas["session"])


def open_thread(
    db: psycopg.Connection, opening: OpenThread
) -> OpenedThread | tuple[StoredSession, Usage, int]:
    # The thread's lock, held to the end of the transaction (another process opening the
    # same new thread waits for it, then finds the owner this one recorded), whose it is,
    # the asker's usage and the head of the thread's log, in one statement.
    _, owner, threads, stored_bytes, head = cast(
        tuple[None, str | None, int, int, int],
        db.execute(
            _OPENING,
            {
                "lock": f"{opening.app_name}\x1f{opening.session_id}",
                "app": opening.app_name,
                "user": opening.user_id,
                "id": opening.session_id,
            },
        ).fetchone(),
    )
    create = opening.creation()
    state = None
    if owner is None:
        # The statement read before it had the lock: the creation, a statement of its own,
        # creates nothing if another process created the thread in between.
        state = create_if_unused(db, create)
        if state is None:
            owner = thread_owner(db, app_name=opening.app_name, session_id=opening.session_id)
            if owner is None:  # created, then deleted, in between: the asker's to make
                state = create_session(db, create)
    if state is not None:
        usage = Usage(threads + 1, stored_bytes)  # the new thread counted in, with no events
        return OpenedThread(opening.user_id, create.session(state), created=True, usage=usage)
    assert owner is not None  # found by one statement or the other
    if owner != opening.user_id:
        return OpenedThread(owner, None, created=False)
    stored = load_session(
        db,
        app_name=opening.app_name,
        user_id=opening.user_id,
        session_id=opening.session_id,
        window=opening.window,
        after=None,
    )
    assert stored is not None  # its owner was just read, and nothing deletes it under the lock
    return stored, Usage(threads, stored_bytes), head


def create_if_unused(db: psycopg.Connection, create: CreateSession) -> dict[str, Any] | None:
    """A new thread with no state of its own (an opening's), and its merged state, unless
    anyone's thread has its id: one statement, where the check, the insert and the read of
    its scopes took three."""
    assert not any(create.deltas.values())
    row = db.execute(
        "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
        " SELECT %(app)s, %(user)s, %(id)s, '{}', %(now)s, %(now)s WHERE NOT EXISTS"
        " (SELECT FROM sessions WHERE app_name = %(app)s AND id = %(id)s)"
        " ON CONFLICT DO NOTHING RETURNING"
        " (SELECT state FROM app_states WHERE app_name = %(app)s),"
        " (SELECT state FROM user_states WHERE app_name = %(app)s AND user_id = %(user)s)",
        {
            "app": create.app_name,
            "user": create.user_id,
            "id": create.session_id,
            "now": create.now,
        },
    ).fetchone()
    if row is None:
        return None
    return merged_state({}, load_state(row[0]), load_state(row[1]))


_OPENING = (
    "SELECT pg_advisory_xact_lock(hashtextextended(%(lock)s, 0)),"
    " (SELECT user_id FROM sessions WHERE app_name = %(app)s AND id = %(id)s"
    " ORDER BY create_time, pk LIMIT 1), usage.threads, usage.stored_bytes,"
    f" ({LOG_HEAD}) FROM ({USAGE}) AS usage"
)


def append_event(db: psycopg.Connection, append: AppendEvent, fence: Fence | None = None) -> int:
    """Returns the session's new revision; under a ``fence`` no longer its thread's lease,
    changes nothing and raises ``FencedError``."""
    state = None
    if append.deltas["session"]:
        # The state is merged here, in Python, as on SQLite: the row is locked and read
        # first (the append's statement, locking it again, finds it as read).
        found = db.execute(
            "SELECT state FROM sessions WHERE app_name = %s AND user_id = %s AND id = %s"
            " FOR UPDATE",
            (append.app_name, append.user_id, append.session_id),
        ).fetchone()
        if found is None:
            raise not_found(append.session_id)
        state = updated_state(found[0], append.deltas["session"])
    progress = append.progress
    # The calls the event makes and answers go in the statement, unless one id comes twice
    # (each of a statement's parts sees the rows as they were before it: the later could
    # not find the earlier), which ``record_progress`` applies in turn after it.
    call_ids = [call_id for call_id, _, _ in progress.calls]
    calls_inline = len({*call_ids, *progress.answers}) == len(call_ids) + len(progress.answers)
    indexed = append.indexed
    title = indexed.title
    params: dict[str, object] = {
        "app": append.app_name,
        "user": append.user_id,
        "session": append.session_id,
        "loaded_revision": append.loaded_revision,
        "loaded_update_time": append.loaded_update_time,
        "id": append.event_id,
        "invocation": append.invocation_id,
        "author": append.author,
        "timestamp": append.timestamp,
        "data": append.data,
        "messages": append.messages,
        "run_open": progress.run_open,
        "state": state,
        "words": indexed.words or None,
        "preview": indexed.preview,
        "title": title,
        "title_source": TITLE_FIRST,
        "title_words": title_words(indexed, title),
        "title_seq": TITLE_SEQ,
        "answers": document(list(progress.answers) if calls_inline else []),
        "calls": document([_Call(*call) for call in progress.calls] if calls_inline else []),
    }
    if fence is not None:
        params.update(fenced=fenced_threads([fence]), epoch=fence.epoch)
    row = db.execute(_APPEND_FENCED_EVENT if fence else _APPEND_EVENT, params).fetchone()
    if row is None:
        raise not_found(append.session_id)
    revision, update_time, pk, seq, invocation_seq, appended, current = row
    if not appended:
        if not current:
            raise refused(fence)
        append.check_fresh(revision, update_time)  # raises: the statement found it stale
        raise AssertionError("an append found fresh was not stored")
    if append.deltas["app"]:
        merge_scope(db, append.app_name, None, append.deltas["app"], append.timestamp)
    if append.deltas["user"]:
        merge_scope(db, append.app_name, append.user_id, append.deltas["user"], append.timestamp)
    if not calls_inline:
        record_progress(db, progress, pk, seq, invocation_seq)
    return cast(int, revision) + 1


class _Call(Row):
    """A call an event makes, opened by its append (``_append_event_sql``)."""

    call_id: str
    name: str
    long_running: bool


# An append in one statement (one round trip, where a read of the row and the append took
# two): the session's row locked (``FOR UPDATE``: one process appends to a thread at a
# time, and one that appended first has committed, moving the revision, before this reads
# it), the event's seq drawn under that lock (so a thread's seqs grow in commit order),
# and, only if the row is as the caller loaded it (``AppendEvent.check_fresh``, in SQL):
# the event; its message's streamed text gone (the final event replaces it); what it adds
# to the thread index (``thread_index.index_event``: its words, the preview, the first
# title, only while the thread has none, and the title's words where its own do not
# start with them, ``title_words``); the calls it makes
# opened and those it answers closed (``progress``); and the row moved on, its run as
# ``AppendEvent.run_after`` says. Each part of a WITH runs whether read or not, and a part
# with nothing to add (a NULL, an empty array, no fresh row) adds nothing. Under a fence
# (``fences``), a row is fresh only while the fence is current. It returns the row as
# found, its new invocation start, whether the event went in and whether its fence was
# current.
def _append_event_sql(fenced: bool) -> str:
    return (
        f"WITH {LEASES if fenced else ''}found AS (SELECT pk, id, revision, update_time,"
        " invocation_id, invocation_seq, run_open,"
        " title_source IS NULL AS untitled, nextval(pg_get_serial_sequence('events', 'seq')) AS seq"
        " FROM sessions WHERE app_name = %(app)s AND user_id = %(user)s AND id = %(session)s"
        " FOR UPDATE),"
        " fresh AS (SELECT pk, seq, revision, untitled, CASE WHEN invocation_id IS DISTINCT FROM"
        " %(invocation)s THEN seq ELSE invocation_seq END AS invocation_seq,"
        " COALESCE(%(run_open)s::boolean, run_open) AS run_open FROM found"
        " WHERE CASE WHEN %(loaded_revision)s::bigint IS NULL"
        " THEN update_time <= %(loaded_update_time)s ELSE revision = %(loaded_revision)s END"
        f" AND {current(fenced, '%(epoch)s', 'found.id')}),"
        " event AS (INSERT INTO events"
        " (seq, session_pk, id, invocation_id, author, timestamp, data, messages)"
        " OVERRIDING SYSTEM VALUE SELECT seq, pk, %(id)s, %(invocation)s, %(author)s,"
        f" %(timestamp)s, %(data)s, %(messages)s FROM fresh RETURNING {EVENT_BYTES} AS bytes),"
        " streamed AS (DELETE FROM streamed_texts"
        " WHERE session_pk IN (SELECT pk FROM fresh) AND message_id = %(id)s),"
        " words AS (INSERT INTO thread_words (session_pk, seq, words)"
        " SELECT pk, seq, to_tsvector('simple', %(words)s::text) FROM fresh"
        " WHERE %(words)s::text IS NOT NULL),"
        " title_words AS (INSERT INTO thread_words (session_pk, seq, words)"
        " SELECT pk, %(title_seq)s, to_tsvector('simple', %(title_words)s::text) FROM fresh"
        " WHERE untitled AND %(title_words)s::text IS NOT NULL"
        " ON CONFLICT (session_pk, seq) DO UPDATE SET words = excluded.words),"
        " answered AS (DELETE FROM open_calls WHERE session_pk IN (SELECT pk FROM fresh)"
        " AND call_id IN (SELECT json_array_elements_text(%(answers)s::json))),"
        " called AS (INSERT INTO open_calls"
        " (session_pk, call_id, name, seq, invocation_seq, long_running)"
        " SELECT fresh.pk, c.call_id, c.name, fresh.seq, fresh.invocation_seq, c.long_running"
        " FROM fresh, json_to_recordset(%(calls)s::json)"
        " AS c (call_id text, name text, long_running boolean)"
        " ON CONFLICT (session_pk, call_id) DO UPDATE SET name = excluded.name,"
        " seq = excluded.seq, invocation_seq = excluded.invocation_seq,"
        " long_running = excluded.long_running),"
        " moved AS (UPDATE sessions s SET revision = fresh.revision + 1,"
        " update_time = %(timestamp)s, invocation_id = %(invocation)s,"
        " invocation_seq = fresh.invocation_seq, run_open = fresh.run_open,"
        " state = COALESCE(%(state)s::text, s.state),"
        " stored_bytes = s.stored_bytes + (SELECT bytes FROM event),"
        " preview = COALESCE(%(preview)s::text, s.preview),"
        " title = CASE WHEN fresh.untitled THEN COALESCE(%(title)s::text, s.title)"
        " ELSE s.title END,"
        " title_source = CASE WHEN fresh.untitled AND %(title)s::text IS NOT NULL"
        " THEN %(title_source)s ELSE s.title_source END FROM fresh WHERE s.pk = fresh.pk"
        " RETURNING fresh.invocation_seq)"
        " SELECT found.revision, found.update_time, found.pk, found.seq,"
        " (SELECT invocation_seq FROM moved), EXISTS (SELECT FROM moved),"
        f" {current(fenced, '%(epoch)s', 'found.id')} FROM found"
    )


_APPEND_EVENT = _append_event_sql(fenced=False)
_APPEND_FENCED_EVENT = _append_event_sql(fenced=True)


def probe(db: psycopg.Connection) -> None:
    db.execute("UPDATE probes SET count = count + 1")


def delete_session(db: psycopg.Connection, delete: DeleteSession) -> None:
    # Its events, open calls, streamed text, quarantine, log and words go with it
    # (ON DELETE CASCADE).
    db.execute(
        "DELETE FROM sessions WHERE app_name = %s AND user_id = %s AND id = %s",
        (delete.app_name, delete.user_id, delete.session_id),
    )


def patch_thread(db: psycopg.Connection, patch: PatchThread) -> ThreadRow | None:
    return patch_row(db, patch.app_name, patch.user_id, patch.session_id, patch.patch)


def save_streamed_text(
    db: psycopg.Connection, save: SaveStreamedText, fence: Fence | None = None
) -> None:
    if isinstance(failed := save_streamed_texts(db, [save], [fence])[0], Exception):
        raise failed


def save_streamed_texts(
    db: psycopg.Connection,
    saves: Sequence[SaveStreamedText],
    fences: Sequence[Fence | None] | None = None,
) -> list[Exception | None]:
    """The streamed texts of several threads (one a thread: a thread's row holds one), in
    one statement, each thread's key found by the statement itself, and each under its
    fence (``fences``, None for none) checked by it too. Each save's outcome, in order:
    None, or the error of a thread that is not there, or ``FencedError``."""
    params = _texts_params(saves, fences)
    fenced = fencing(params, fences)
    found = db.execute(
        _SAVE_FENCED_STREAMED_TEXTS if fenced else _SAVE_STREAMED_TEXTS, params
    ).fetchall()  # all: a statement that writes is over only once read to its end
    return outcomes(found, fences, [(None, save.session_id) for save in saves])


def _texts_params(
    saves: Sequence[SaveStreamedText], fences: Sequence[Fence | None] | None
) -> dict[str, object]:
    threads = [save.session_id for save in saves]
    texts = [
        _Text(
            number,
            save.app_name,
            save.user_id,
            save.session_id,
            save.invocation_id,
            save.message_id,
            save.author,
            save.text,
            save.update_time,
            epoch,
        )
        for number, (save, epoch) in enumerate(zip(saves, epochs(fences, threads), strict=True))
    ]
    return {"texts": document(texts)}


class _Text(Row):
    """A streamed text's row (``_save_streamed_texts_sql``)."""

    number: int
    app_name: str
    user_id: str
    id: str
    invocation_id: str
    message_id: str
    author: str
    text: str
    update_time: float
    epoch: int | None = None


def _texts_parts(fenced: bool, found: str) -> tuple[str, str]:
    """A statement of streamed texts as its WITH's parts (the texts found, under the name
    ``found``, and saved) and what it returns of each, a row a text found."""
    parts = (
        f" {found} AS (SELECT t.*, s.pk,"
        f" {current(fenced, 't.epoch', 't.id')} AS current FROM json_to_recordset(%(texts)s::json)"
        " AS t (number int, app_name text, user_id text, id text, invocation_id text,"
        " message_id text, author text, text text, update_time float8, epoch bigint)"
        " JOIN sessions s ON s.app_name = t.app_name AND s.user_id = t.user_id AND s.id = t.id),"
        " saved AS (INSERT INTO streamed_texts"
        " (session_pk, invocation_id, message_id, author, text, update_time)"
        f" SELECT pk, invocation_id, message_id, author, text, update_time FROM {found}"
        " WHERE current"
        " ON CONFLICT (session_pk) DO UPDATE SET invocation_id = excluded.invocation_id,"
        " message_id = excluded.message_id, author = excluded.author, text = excluded.text,"
        " update_time = excluded.update_time)"
    )
    return parts, f"number, current FROM {found}"


def _save_streamed_texts_sql(fenced: bool) -> str:
    parts, each = _texts_parts(fenced, "found")
    return f"WITH {LEASES if fenced else ''}{parts} SELECT {each}"


_SAVE_STREAMED_TEXTS = _save_streamed_texts_sql(fenced=False)
_SAVE_FENCED_STREAMED_TEXTS = _save_streamed_texts_sql(fenced=True)


def append_frames(db: psycopg.Connection, append: AppendFrames, fence: Fence | None = None) -> int:
    outcome = append_frames_of(db, [append], [fence])[0]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def append_frames_of(
    db: psycopg.Connection,
    appends: Sequence[AppendFrames],
    fences: Sequence[Fence | None] | None = None,
) -> list[int | Exception]:
    """The frames of several writes, of any threads, in one statement, each thread's key
    found by the statement itself, each write under its fence (``fences``, None for none)
    checked by it too, and each write's notice to the cluster
    (``notify.committed``) sent by the same statement: NOTIFY is delivered at commit, so a
    notice costs no statement or transaction of its own. A thread's last write tells of
    all its frames: hearing a notice costs a process's event loop, so a thread with
    several writes here is told once, and frames written under a lease are told neither
    to its holder nor to a process that does not watch the thread's user (``notify``).
    Each write's outcome, in order: the number of its last frame, or the error of a
    thread that is not there, or ``FencedError``."""
    params = _frames_params(appends, fences)
    fenced = fencing(params, fences)
    found = db.execute(
        _APPEND_FENCED_FRAMES if fenced else _APPEND_FRAMES, params
    ).fetchall()  # all: a statement that writes is over only once read to its end
    return outcomes(found, fences, _frames_wrote(appends))


def append_frames_and_save_texts(
    db: psycopg.Connection,
    appends: Sequence[AppendFrames],
    frame_fences: Sequence[Fence | None],
    saves: Sequence[SaveStreamedText],
    text_fences: Sequence[Fence | None],
) -> tuple[list[int | Exception], list[Exception | None]]:
    """``append_frames_of`` and ``save_streamed_texts`` in one statement: neither reads
    what the other writes, and most of a run's batches hold both, so each such batch
    costs a round trip less. Each write's outcome, as theirs: the frames', the texts'."""
    params = {**_frames_params(appends, frame_fences), **_texts_params(saves, text_fences)}
    fenced = fencing(params, [*frame_fences, *text_fences])
    found = db.execute(
        _FENCED_FRAMES_AND_TEXTS if fenced else _FRAMES_AND_TEXTS, params
    ).fetchall()  # all: a statement that writes is over only once read to its end
    of_frames = [row[1:] for row in found if not row[0]]
    of_texts = [row[1:] for row in found if row[0]]
    return (
        outcomes(of_frames, frame_fences, _frames_wrote(appends)),
        outcomes(of_texts, text_fences, [(None, save.session_id) for save in saves]),
    )


def _frames_params(
    appends: Sequence[AppendFrames], fences: Sequence[Fence | None] | None
) -> dict[str, object]:
    last = {_thread_of(append): number for number, append in enumerate(appends)}
    threads = [append.session_id for append in appends]
    writes = [
        _FramesWrite(
            number,
            append.app_name,
            append.user_id,
            append.session_id,
            committed(append.session_id, append.frames[-1].seq)
            if last[_thread_of(append)] == number
            else None,
            epoch,
        )
        for number, (append, epoch) in enumerate(zip(appends, epochs(fences, threads), strict=True))
    ]
    frames = [
        _Frame(number, frame.seq, frame.data, frame.only_for, frame.not_for)
        for number, append in enumerate(appends)
        for frame in append.frames
    ]
    return {"writes": document(writes), "frames": document(frames), "channel": CHANNEL}


def _frames_wrote(appends: Sequence[AppendFrames]) -> list[tuple[int, str]]:
    """What each write of frames gives if applied (its last frame's number), and its thread."""
    return [(append.frames[-1].seq, append.session_id) for append in appends]


class _FramesWrite(Row):
    """A write's row of a statement of frames (``_append_frames_sql``): its thread, the
    notice its frames are told with (its thread's last write's only), its fence's epoch."""

    number: int
    app_name: str
    user_id: str
    id: str
    notice: str | None = None
    epoch: int | None = None


class _Frame(Row):
    """A frame's row, with its write's number (``_append_frames_sql``)."""

    number: int
    seq: int
    data: bytes
    only_for: str | None = None
    not_for: str | None = None


def _thread_of(append: AppendFrames) -> tuple[str, str, str]:
    return append.app_name, append.user_id, append.session_id


# Each part of a WITH runs once, whether read or not: the threads found (with their key),
# their frames added (a fenced write's only while current), then one row a thread found,
# and its notice if current (``_TOLD``). The writes and the frames come as rows of JSON
# (``json_rows``), the frames' data in base64: as arrays, psycopg dumped each element in
# Python (and in text, wrote bytes out in hex).
def _frames_parts(fenced: bool) -> tuple[str, str]:
    """A statement of frames as its WITH's parts and what it returns of each write found."""
    parts = (
        " w AS (SELECT * FROM"
        " json_to_recordset(%(writes)s::json) AS w (number int, app_name text, user_id text,"
        " id text, notice text, epoch bigint)),"
        " found AS (SELECT w.number, w.notice, s.pk"
        f"{', w.id, w.user_id, w.epoch' if fenced else ''},"
        f" {current(fenced, 'w.epoch', 'w.id')} AS current FROM w JOIN sessions s"
        " ON s.app_name = w.app_name AND s.user_id = w.user_id AND s.id = w.id),"
        " added AS (INSERT INTO frames (session_pk, seq, data, only_for, not_for)"
        " SELECT found.pk, f.seq, decode(f.data, 'base64'), f.only_for, f.not_for FROM found"
        " JOIN json_to_recordset(%(frames)s::json)"
        " AS f (number int, seq bigint, data text, only_for text, not_for text)"
        " ON f.number = found.number WHERE found.current)"
    )
    each = (
        "number, current, CASE WHEN current AND notice IS NOT NULL"
        f" THEN {_TOLD_UNDER_LEASE if fenced else _TOLD} END FROM found"
    )
    return parts, each


def _append_frames_sql(fenced: bool) -> str:
    parts, each = _frames_parts(fenced)
    return f"WITH {LEASES + _NODES if fenced else ''}{parts} SELECT {each}"


# Frames and streamed texts in one statement: each row says whose it is (TRUE, a text's).
def _frames_and_texts_sql(fenced: bool) -> str:
    frames, of_frames = _frames_parts(fenced)
    texts, _ = _texts_parts(fenced, "texts")
    return (
        f"WITH {LEASES + _NODES if fenced else ''}{frames},{texts}"
        f" SELECT FALSE, {of_frames} UNION ALL SELECT TRUE, number, current, NULL FROM texts"
    )


# A notice on the cluster's channel; one under a lease on the channels of the live
# processes that watch the thread's user (``leases.watch_users``) other than its holder,
# and on its holder's too if it is to be told (``notify``): the lease as the statement
# locked it (``fences.LEASES``), the processes read once a statement
# (``leases.register_node`` and ``watch_users`` say why none is missed). A process of an
# earlier version, with no channel of its own, is told on the cluster's (several such are
# one notice: PostgreSQL sends a transaction's same notice once); one that names no users
# is told of every thread.
_NODES = (
    "nodes AS MATERIALIZED (SELECT n.node_id, n.own_channel, n.names_users FROM gateway_nodes n"
    " JOIN gateway_live_nodes USING (node_id)),"
)
_TOLD = "pg_notify(%(channel)s, notice)::text"
_TOLD_UNDER_LEASE = (
    f"CASE WHEN epoch IS NULL THEN {_TOLD} ELSE (SELECT string_agg(pg_notify(CASE"
    " WHEN n.own_channel THEN %(channel)s || '_' || n.node_id ELSE %(channel)s END,"
    " notice)::text, '') FROM leases l JOIN nodes n ON CASE WHEN n.node_id = l.holder"
    " THEN l.tell_holder ELSE NOT n.names_users OR EXISTS (SELECT FROM gateway_node_users u"
    " WHERE u.user_id = found.user_id AND u.node_id = n.node_id) END"
    " WHERE l.thread_id = found.id) END"
)


_APPEND_FRAMES = _append_frames_sql(fenced=False)
_APPEND_FENCED_FRAMES = _append_frames_sql(fenced=True)
_FRAMES_AND_TEXTS = _frames_and_texts_sql(fenced=False)
_FENCED_FRAMES_AND_TEXTS = _frames_and_texts_sql(fenced=True)


def trim_frames(db: psycopg.Connection, trim: TrimFrames, fence: Fence | None = None) -> None:
    if isinstance(refused := trim_frames_of(db, [trim], [fence])[0], Exception):
        raise refused


def trim_frames_of(
    db: psycopg.Connection,
    trims: Sequence[TrimFrames],
    fences: Sequence[Fence | None] | None = None,
) -> list[Exception | None]:
    """The trims of several threads' logs in one statement (each thread's key found by
    the statement itself, each trim's fence checked by it too), where each took one: a
    run's end trims its thread's log, so a batch holds the trims of every run that ended
    meanwhile. Two trims of one log (under one fence) keep what the smaller keeps,
    whichever comes first, so a log is trimmed once, to it. Each trim's outcome, in
    order: None, or ``FencedError``."""
    trimming, logs = _trims_params(trims, fences)
    if not fencing(trimming, [fence for *_, fence in logs]):
        db.execute(_TRIM_FRAMES, trimming)
        return [None] * len(trims)
    stale = [number for (number,) in db.execute(_TRIM_FENCED_FRAMES, trimming).fetchall()]
    return _trimmed(trims, fences, logs, stale)


_Log = tuple[str, str, str, Fence | None]


def _trims_params(
    trims: Sequence[TrimFrames], fences: Sequence[Fence | None] | None
) -> tuple[dict[str, object], list[_Log]]:
    """The parameters of a statement of trims, and its logs (a thread's under one fence),
    each trimmed once, to what the smallest of its trims keeps."""
    fenced = fences if fences is not None else [None] * len(trims)
    smallest: dict[_Log, int] = {}
    for trim, fence in zip(trims, fenced, strict=True):
        log = (trim.app_name, trim.user_id, trim.session_id, fence)
        smallest[log] = min(trim.max_bytes, smallest.get(log, trim.max_bytes))
    rows = [
        _Trim(number, app, user, thread, most, fence.epoch if fence else None)
        for number, ((app, user, thread, fence), most) in enumerate(smallest.items())
    ]
    return {"logs": document(rows)}, list(smallest)


def _trimmed(
    trims: Sequence[TrimFrames],
    fences: Sequence[Fence | None] | None,
    logs: Sequence[_Log],
    stale: Sequence[int],
) -> list[Exception | None]:
    """Each trim's outcome: ``FencedError`` if its log's fence was not current (its
    number among ``stale``), else None."""
    refused_logs = {logs[number] for number in stale}
    fenced = fences if fences is not None else [None] * len(trims)
    return [
        refused(fence) if (t.app_name, t.user_id, t.session_id, fence) in refused_logs else None
        for t, fence in zip(trims, fenced, strict=True)
    ]


class _Trim(Row):
    """A log's row of a statement of trims (``_trim_frames_sql``)."""

    log: int
    app_name: str
    user_id: str
    id: str
    max: int
    epoch: int | None = None


def trim_frames_and_release(
    db: psycopg.Connection,
    trims: Sequence[TrimFrames],
    fences: Sequence[Fence | None],
    releases: Sequence[ReleaseLeases],
) -> tuple[list[Exception | None], list[object]]:
    """``trim_frames_of`` and ``leases.release_leases`` in one statement: a run's end
    trims its thread's log and lets go of its lease in the same commit, most of a batch's
    at once. Every part of a statement sees the leases as it began, so the trims' fences
    are checked as they were before the releases, as when the releases came after them.
    Each write's outcome, as theirs: the trims', the releases'."""
    trimming, logs = _trims_params(trims, fences)
    params = {**trimming, **leases.releasing_of(releases)}
    fenced = fencing(params, [fence for *_, fence in logs])
    found = db.execute(
        _FENCED_TRIMS_AND_RELEASES if fenced else _TRIMS_AND_RELEASES, params
    ).fetchall()  # all: a statement that writes is over only once read to its end
    stale = [log for log, _, _ in found if log is not None]
    let_go = [thread for log, thread, _ in found if log is None]
    return _trimmed(trims, fences, logs, stale), leases.let_go_by(releases, let_go)


# Each log keeps its newest frames that fit its bytes, and its newest one whatever its
# size (none fits: the first kept is the newest), so the log always knows its head; a
# thread that is not there, or a log with no frames, loses nothing, nor does one whose
# trim's fence is not current, which the fenced statement returns.
def _trims_parts(fenced: bool) -> str:
    return (
        " t AS (SELECT t.log, s.pk, t.max,"
        f" {current(fenced, 't.epoch', 't.id')} AS current"
        " FROM json_to_recordset(%(logs)s::json) AS t (log int, app_name text, user_id text,"
        " id text, max bigint, epoch bigint)"
        " JOIN sessions s ON s.app_name = t.app_name AND s.user_id = t.user_id AND s.id = t.id),"
        " kept AS (SELECT t.pk, COALESCE((SELECT MIN(seq) FROM (SELECT seq,"
        " SUM(octet_length(data)) OVER (ORDER BY seq DESC) AS bytes FROM frames"
        " WHERE session_pk = t.pk) AS newest WHERE bytes <= t.max),"
        " (SELECT MAX(seq) FROM frames WHERE session_pk = t.pk)) AS first FROM t"
        " WHERE t.current),"
        " trimmed AS (DELETE FROM frames f USING kept"
        " WHERE f.session_pk = kept.pk AND f.seq < kept.first)"
    )


def _trim_frames_sql(fenced: bool) -> str:
    return (
        f"WITH {LEASES if fenced else ''}{_trims_parts(fenced)} SELECT log FROM t WHERE NOT current"
    )


# Trims and the leases let go of: a trim's row (a log whose fence is not current), then
# the releases' (``leases.RELEASED_ROWS``), their log NULL.
def _trims_and_releases_sql(fenced: bool) -> str:
    return (
        f"WITH {LEASES if fenced else ''}{_trims_parts(fenced)},{leases.RELEASED}"
        " SELECT log, NULL, NULL FROM t WHERE NOT current"
        f" UNION ALL SELECT NULL, * FROM ({leases.RELEASED_ROWS}) AS r"
    )


_TRIM_FRAMES = _trim_frames_sql(fenced=False)
_TRIM_FENCED_FRAMES = _trim_frames_sql(fenced=True)
_TRIMS_AND_RELEASES = _trims_and_releases_sql(fenced=False)
_FENCED_TRIMS_AND_RELEASES = _trims_and_releases_sql(fenced=True)


def forget_leftover_texts(db: psycopg.Connection, forget: ForgetLeftoverTexts) -> None:
    named = list(forget.session_ids) if forget.session_ids is not None else None
    db.execute(
        "DELETE FROM streamed_texts WHERE session_pk IN (SELECT pk FROM sessions"
        " WHERE app_name = %s AND (%s::text[] IS NULL OR id = ANY(%s::text[])))",
        (forget.app_name, named, named),
    )


def set_aside(db: psycopg.Connection, set_aside: SetAside) -> None:
    db.execute(
        "INSERT INTO quarantine (session_pk, seq, column_name, reason, at)"
        " SELECT pk, %s, %s, %s, %s FROM sessions WHERE app_name = %s AND user_id = %s AND id = %s"
        " ON CONFLICT DO NOTHING",
        (
            set_aside.damage.seq,
            set_aside.damage.column,
            set_aside.damage.reason,
            set_aside.at,
            set_aside.app_name,
            set_aside.user_id,
            set_aside.session_id,
        ),
    )
