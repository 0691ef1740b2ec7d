"""The write commands (``gateway.store.writes``) in SQLite's SQL, inside the writer's transaction.

One process writes the file (``lock``), so a row read here cannot change before the
transaction ends: a read-then-write needs no row lock.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

from gateway.store.codec import dump, updated_state
from gateway.store.rows import StoredSession
from gateway.store.sqlite import reads
from gateway.store.sqlite.branches import move_branch as move_branch
from gateway.store.sqlite.open_calls import record_progress
from gateway.store.sqlite.reads import thread_owner, usage
from gateway.store.sqlite.scopes import merge_scope, with_scopes
from gateway.store.sqlite.streamed import streamed_texts, unknown
from gateway.store.sqlite.thread_index import LISTED, erase_index, index_words, owner_token
from gateway.store.sqlite.thread_index import patch_thread as patch_row
from gateway.store.thread_index import ThreadRow, listed
from gateway.store.threads import OpenedThread, Usage
from gateway.store.writes import (
    AppendEvent,
    AppendFrames,
    CreateSession,
    DeleteSession,
    ForgetLeftoverTexts,
    OpenThread,
    PatchThread,
    SaveStreamedText,
    SetAside,
    TrimFrames,
    not_found,
)


def create_session(db: sqlite3.Connection, create: CreateSession) -> dict[str, Any]:
    """Returns the new session's merged state."""
    try:
        db.execute(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                create.app_name,
                create.user_id,
                create.session_id,
                dump(create.deltas["session"]),
                create.now,
                create.now,
            ),
        )
    except sqlite3.IntegrityError:
        raise create.already_exists() from None
    if create.deltas["app"]:
        merge_scope(db, create.app_name, None, create.deltas["app"], create.now)
    if create.deltas["user"]:
        merge_scope(db, create.app_name, create.user_id, create.deltas["user"], create.now)
    return with_scopes(db, create.app_name, create.user_id, create.deltas["session"])


def open_thread(
    db: sqlite3.Connection, opening: OpenThread
) -> OpenedThread | tuple[StoredSession, Usage, int]:
    owner = thread_owner(db, app_name=opening.app_name, session_id=opening.session_id)
    if owner is None:
        create = opening.creation()
        session = create.session(create_session(db, create))
        return OpenedThread(
            opening.user_id,
            session,
            created=True,
            usage=usage(db, app_name=opening.app_name, user_id=opening.user_id),
        )
    if owner != opening.user_id:
        return OpenedThread(owner, None, created=False)
    found = reads.read_thread(
        db,
        app_name=opening.app_name,
        user_id=opening.user_id,
        session_id=opening.session_id,
        window=opening.window,
    )
    assert found is not None  # its owner was just read, in the same transaction
    return found


# An append's update of its session: the run's columns, and the listing's (``LISTED``).
_APPENDED = (
    "UPDATE sessions SET revision = ?, update_time = ?, invocation_id = ?,"
    " invocation_seq = ?, run_open = ?, state = ?, stored_bytes = stored_bytes + ?,"
    f" {LISTED} WHERE pk = ?"
)


def append_event(db: sqlite3.Connection, append: AppendEvent) -> int:
    """Returns the session's new revision."""
    row = db.execute(
        "SELECT pk, revision, update_time, invocation_id, invocation_seq, run_open, state,"
        " title_source IS NULL FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
        (append.app_name, append.user_id, append.session_id),
    ).fetchone()
    if row is None:
        raise not_found(append.session_id)
    pk, revision, update_time, invocation_id, invocation_seq, run_open, state, untitled = row
    append.check_fresh(revision, update_time)
    cursor = db.execute(
        # Past every seq a branch keeps aside too: SQLite would reuse those of moved rows.
        "INSERT INTO events (seq, session_pk, id, invocation_id, author, timestamp, data, messages)"
        " VALUES (MAX(COALESCE((SELECT MAX(seq) FROM events), 0),"
        " COALESCE((SELECT MAX(seq) FROM branch_events), 0)) + 1, ?, ?, ?, ?, ?, ?, ?)",
        (
            pk,
            append.event_id,
            append.invocation_id,
            append.author,
            append.timestamp,
            append.data,
            append.messages,
        ),
    )
    seq = cast(int, cursor.lastrowid)
    # The message's final event replaces its streamed text, in the same transaction; only
    # an event that is a thread's streamed message has one (``streamed``).
    streamed = streamed_texts(db)
    if streamed is None or streamed.get(pk) == append.event_id:
        db.execute(
            "DELETE FROM streamed_texts WHERE session_pk = ? AND message_id = ?",
            (pk, append.event_id),
        )
        if streamed is not None:
            del streamed[pk]
    invocation_seq, run_open = append.run_after(invocation_id, invocation_seq, run_open, seq)
    if append.deltas["session"]:
        state = updated_state(state, append.deltas["session"])
    # The thread's listing columns go in the same statement (``thread_index``): its
    # preview, and its first title if it has none.
    indexed = append.indexed
    preview, title, source = listed(indexed, untitled)
    db.execute(
        _APPENDED,
        (
            revision + 1,
            append.timestamp,
            append.invocation_id,
            invocation_seq,
            run_open,
            state,
            # The row's bytes as the quota counts them (``EVENT_BYTES``), from the values
            # just bound: reading them back from the row cost a read of its whole data.
            stored_bytes(append.data) + stored_bytes(append.messages),
            preview,
            title,
            source,
            pk,
        ),
    )
    if append.deltas["app"]:
        merge_scope(db, append.app_name, None, append.deltas["app"], append.timestamp)
    if append.deltas["user"]:
        merge_scope(db, append.app_name, append.user_id, append.deltas["user"], append.timestamp)
    record_progress(db, append.progress, pk, seq, invocation_seq)
    index_words(db, pk, owner_token(append.app_name, append.user_id), seq, indexed, title)
    return cast(int, revision) + 1


def stored_bytes(text: str | None) -> int:
    """``length(CAST(text AS BLOB))`` of a value SQLite stores as UTF-8 (``EVENT_BYTES``)."""
    if text is None:
        return 0
    return len(text) if text.isascii() else len(text.encode())


def delete_session(db: sqlite3.Connection, delete: DeleteSession) -> None:
    row = db.execute(
        "SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
        (delete.app_name, delete.user_id, delete.session_id),
    ).fetchone()
    if row is None:
        return
    if (streamed := streamed_texts(db)) is not None:
        streamed.pop(row[0], None)
    erase_index(db, row[0])
    for table in (
        "events",
        "open_calls",
        "streamed_texts",
        "quarantine",
        "frames",
        "branch_events",
        "branches",
    ):
        db.execute(f"DELETE FROM {table} WHERE session_pk = ?", row)
    db.execute("DELETE FROM sessions WHERE pk = ?", row)


def patch_thread(db: sqlite3.Connection, patch: PatchThread) -> ThreadRow | None:
    return patch_row(db, patch.app_name, patch.user_id, patch.session_id, patch.patch)


def save_streamed_text(db: sqlite3.Connection, save: SaveStreamedText) -> None:
    saved = db.execute(
        "INSERT INTO streamed_texts"
        " (session_pk, invocation_id, message_id, author, text, update_time)"
        " SELECT pk, ?, ?, ?, ?, ? FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?"
        " ON CONFLICT (session_pk) DO UPDATE SET invocation_id = excluded.invocation_id,"
        " message_id = excluded.message_id, author = excluded.author, text = excluded.text,"
        " update_time = excluded.update_time RETURNING session_pk",
        (
            save.invocation_id,
            save.message_id,
            save.author,
            save.text,
            save.update_time,
            save.app_name,
            save.user_id,
            save.session_id,
        ),
    ).fetchall()  # all: a RETURNING statement is over only once read to its end
    if not saved:
        raise not_found(save.session_id)
    if (streamed := streamed_texts(db)) is not None:
        streamed[saved[0][0]] = save.message_id


def append_frames(db: sqlite3.Connection, append: AppendFrames) -> int:
    # The session's key is looked up by each row's insert: one statement, not two.
    cursor = db.executemany(
        "INSERT INTO frames (session_pk, seq, data, only_for, not_for)"
        " SELECT pk, ?, ?, ?, ? FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
        [
            (
                f.seq,
                f.data,
                f.only_for,
                f.not_for,
                append.app_name,
                append.user_id,
                append.session_id,
            )
            for f in append.frames
        ],
    )
    if cursor.rowcount == 0:
        raise not_found(append.session_id)
    return append.frames[-1].seq


def trim_frames(db: sqlite3.Connection, trim: TrimFrames) -> int:
    """Returns the bytes the log keeps (``gateway.store.log_sizes``)."""
    row = db.execute(
        "SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
        (trim.app_name, trim.user_id, trim.session_id),
    ).fetchone()
    if row is None:
        return 0
    (pk,) = row
    db.execute(
        "DELETE FROM frames WHERE session_pk = ?1 AND seq < COALESCE("
        " (SELECT MIN(seq) FROM (SELECT seq, SUM(length(data)) OVER (ORDER BY seq DESC)"
        " AS kept FROM frames WHERE session_pk = ?1) WHERE kept <= ?2),"
        " (SELECT MAX(seq) FROM frames WHERE session_pk = ?1))",
        (pk, trim.max_bytes),
    )
    (kept,) = db.execute(
        "SELECT COALESCE(SUM(length(data)), 0) FROM frames WHERE session_pk = ?", (pk,)
    ).fetchone()
    return cast(int, kept)


def forget_leftover_texts(db: sqlite3.Connection, forget: ForgetLeftoverTexts) -> None:
    unknown(db)  # rare (a restart's): read again rather than follow which went
    if forget.session_ids is None:
        db.execute(
            "DELETE FROM streamed_texts WHERE session_pk IN"
            " (SELECT pk FROM sessions WHERE app_name = ?)",
            (forget.app_name,),
        )
        return
    db.executemany(
        "DELETE FROM streamed_texts WHERE session_pk IN"
        " (SELECT pk FROM sessions WHERE app_name = ? AND id = ?)",
        [(forget.app_name, session_id) for session_id in forget.session_ids],
    )


def set_aside(db: sqlite3.Connection, set_aside: SetAside) -> None:
    db.execute(
        "INSERT OR IGNORE INTO quarantine (session_pk, seq, column_name, reason, at)"
        " SELECT pk, ?, ?, ?, ? FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
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


def probe(db: sqlite3.Connection) -> None:
    """Counts up the file's ``user_version``, which nothing else uses (the schema version is
    a table)."""
    (count,) = db.execute("PRAGMA user_version").fetchone()
    db.execute(f"PRAGMA user_version = {(int(count) + 1) % 2**31}")
