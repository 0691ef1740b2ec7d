"""The store's write commands: each applies itself inside the writer's shared transaction.

A command is a frozen value with ``apply(db)``; ``group_commit`` queues them and
``transaction.commit`` applies a batch. What ``apply`` returns reaches the caller once the
batch is committed; what it raises fails that write alone, unless the database itself
failed (see ``transaction``).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any, cast

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.sessions.session import Session

from gateway.store.codec import Damage, dump, load_state
from gateway.store.frames import LoggedFrame
from gateway.store.progress import RunProgress
from gateway.store.rows import StoredSession
from gateway.store.sqlite.open_calls import record_progress
from gateway.store.sqlite.reads import load_session, log_head, thread_owner
from gateway.store.sqlite.schema import EVENT_BYTES
from gateway.store.sqlite.scopes import merge_scope, with_scopes
from gateway.store.threads import OpenedThread, Usage


@dataclasses.dataclass(frozen=True, slots=True)
class CreateSession:
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
                    dump(self.deltas["session"]),
                    self.now,
                    self.now,
                ),
            )
        except sqlite3.IntegrityError:
            raise AlreadyExistsError(f"Session with id {self.session_id} already exists.") from None
        if self.deltas["app"]:
            merge_scope(db, self.app_name, None, self.deltas["app"], self.now)
        if self.deltas["user"]:
            merge_scope(db, self.app_name, self.user_id, self.deltas["user"], self.now)
        return with_scopes(db, self.app_name, self.user_id, self.deltas["session"])


@dataclasses.dataclass(frozen=True, slots=True)
class OpenThread:
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

    def apply(self, db: sqlite3.Connection) -> OpenedThread | tuple[StoredSession, Usage, int]:
        """The thread; for its owner, the rows of it (decoded once the commit is over), the
        owner's usage and the head of the thread's log."""
        owner = thread_owner(db, app_name=self.app_name, session_id=self.session_id)
        if owner is None:
            empty: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
            create = CreateSession(self.app_name, self.user_id, self.session_id, empty, self.now)
            session = create.session(create.apply(db))
            return OpenedThread(self.user_id, session, created=True, usage=self._usage(db))
        if owner != self.user_id:
            return OpenedThread(owner, None, created=False)
        stored = load_session(
            db,
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            window=self.window,
            after=None,
        )
        assert stored is not None  # its owner was just read, in the same transaction
        head = log_head(
            db, app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
        )
        return stored, self._usage(db), head

    def _usage(self, db: sqlite3.Connection) -> Usage:
        threads, stored_bytes = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(stored_bytes), 0) FROM sessions"
            " WHERE app_name = ? AND user_id = ?",
            (self.app_name, self.user_id),
        ).fetchone()
        return Usage(threads, stored_bytes)


@dataclasses.dataclass(frozen=True, slots=True)
class AppendEvent:
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
    progress: RunProgress

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
                (dump({**load_state(state), **self.deltas["session"]}), pk),
            )
        db.execute(
            "UPDATE sessions SET revision = ?, update_time = ?, invocation_id = ?,"
            " invocation_seq = ?, run_open = ?,"
            f" stored_bytes = stored_bytes + (SELECT {EVENT_BYTES} FROM events WHERE seq = ?)"
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
            merge_scope(db, self.app_name, None, self.deltas["app"], self.timestamp)
        if self.deltas["user"]:
            merge_scope(db, self.app_name, self.user_id, self.deltas["user"], self.timestamp)
        record_progress(db, self.progress, pk, seq, invocation_seq)
        return cast(int, revision) + 1


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteSession:
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
        for table in ("events", "open_calls", "streamed_texts", "quarantine", "frames"):
            db.execute(f"DELETE FROM {table} WHERE session_pk = ?", row)
        db.execute("DELETE FROM sessions WHERE pk = ?", row)


@dataclasses.dataclass(frozen=True, slots=True)
class SaveStreamedText:
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
class AppendFrames:
    """Adds frames to a thread's log (``gateway.store.frames``).

    A number the log holds already fails the write (the primary key): two writers of one
    thread's log are a fault, never a silent overwrite.
    """

    app_name: str
    user_id: str
    session_id: str
    frames: tuple[LoggedFrame, ...]

    def followed_by(self, newer: AppendFrames) -> AppendFrames:
        """This write and a newer one of the same thread as one write."""
        return dataclasses.replace(self, frames=self.frames + newer.frames)

    def apply(self, db: sqlite3.Connection) -> int:
        """Returns the number of the last frame written."""
        row = db.execute(
            "SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (self.app_name, self.user_id, self.session_id),
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(f"Session {self.session_id} not found.")
        (pk,) = row
        db.executemany(
            "INSERT INTO frames (session_pk, seq, data, only_for, not_for) VALUES (?, ?, ?, ?, ?)",
            [(pk, f.seq, f.data, f.only_for, f.not_for) for f in self.frames],
        )
        return self.frames[-1].seq


@dataclasses.dataclass(frozen=True, slots=True)
class TrimFrames:
    """Keeps the newest frames of a thread's log that fit ``max_bytes``, and the newest one
    whatever its size, so the log always knows its head."""

    app_name: str
    user_id: str
    session_id: str
    max_bytes: int

    def apply(self, db: sqlite3.Connection) -> None:
        row = db.execute(
            "SELECT pk FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (self.app_name, self.user_id, self.session_id),
        ).fetchone()
        if row is None:
            return
        (pk,) = row
        db.execute(
            "DELETE FROM frames WHERE session_pk = ?1 AND seq < COALESCE("
            " (SELECT MIN(seq) FROM (SELECT seq, SUM(length(data)) OVER (ORDER BY seq DESC)"
            " AS kept FROM frames WHERE session_pk = ?1) WHERE kept <= ?2),"
            " (SELECT MAX(seq) FROM frames WHERE session_pk = ?1))",
            (pk, self.max_bytes),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ForgetLeftoverTexts:
    """Deletes every streamed text of the app, once a restart has used what it needs."""

    app_name: str

    def apply(self, db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM streamed_texts WHERE session_pk IN"
            " (SELECT pk FROM sessions WHERE app_name = ?)",
            (self.app_name,),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class SetAside:
    """Quarantines a thread; the first value found bad stays its reason."""

    app_name: str
    user_id: str
    session_id: str
    damage: Damage
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
class Probe:
    """The smallest real write, to learn whether the store can commit again.

    It counts up the file's ``user_version``, which nothing else uses (the store's schema
    version is a table): taking the write lock alone, or an UPDATE that changes nothing,
    writes no page, so it would not show a full or read-only disk.
    """

    def apply(self, db: sqlite3.Connection) -> None:
        (count,) = db.execute("PRAGMA user_version").fetchone()
        db.execute(f"PRAGMA user_version = {(int(count) + 1) % 2**31}")


Write = (
    CreateSession
    | OpenThread
    | AppendEvent
    | DeleteSession
    | SaveStreamedText
    | AppendFrames
    | TrimFrames
    | ForgetLeftoverTexts
    | SetAside
    | Probe
)
