"""The store's write commands: what each write is and decides, whatever database applies it.

A command is a frozen value; ``group_commit`` queues them, and the backend applies a batch
in one transaction (``sqlite.writes``, ``postgres.writes``: the SQL). What a command
decides from what it reads (a stale copy, the run an event leaves open, the new session a
create returns) is here, once. What applying it returns reaches the caller once the batch
is committed; what it raises fails that write alone, unless the database itself failed
(see each backend's ``transaction``). A write made under a thread's lease in a cluster is
``Fenced``: the backend's transaction applies it only if its lease is still current, in the
write's own statement where it can (PostgreSQL's ``transaction``), else by locking the
lease first and reading its epoch (``unfenced``); one that is not fails alone with
``FencedError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.sessions.session import Session

from gateway.store.branches import Fork, Moved, Switch
from gateway.store.codec import Damage
from gateway.store.errors import FencedError
from gateway.store.frames import LoggedFrame
from gateway.store.leases import Fence
from gateway.store.progress import RunProgress
from gateway.store.rows import StoredSession
from gateway.store.thread_index import NOTHING, IndexedText, ThreadPatch
from gateway.store.threads import OpenedThread, Usage

NO_DELTAS: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}


def not_found(session_id: str) -> SessionNotFoundError:
    return SessionNotFoundError(f"Session {session_id} not found.")


@dataclasses.dataclass(frozen=True, slots=True)
class CreateSession:
    app_name: str
    user_id: str
    session_id: str
    deltas: dict[str, dict[str, Any]]
    now: float

    def session(self, merged_state: object) -> Session:
        """The new session, given what applying the command returned (its merged state)."""
        session = Session(
            app_name=self.app_name,
            user_id=self.user_id,
            id=self.session_id,
            state=cast(dict[str, Any], merged_state),
            last_update_time=self.now,
        )
        session._storage_update_marker = "0"
        return session

    def already_exists(self) -> AlreadyExistsError:
        return AlreadyExistsError(f"Session with id {self.session_id} already exists.")


@dataclasses.dataclass(frozen=True, slots=True)
class OpenThread:
    """Reads a thread for a run, creating it for the asker if nobody has used it yet.

    One hop where a run would otherwise take three (whose is it, load it, create it). It
    goes through the writer so that its read is ordered with every write: no append that
    was queued before it is missing from the session it returns. Applied, it gives an
    ``OpenedThread``, or for the owner the rows of the session (decoded once the commit
    is over), the owner's ``Usage`` and the head of the thread's log.
    """

    app_name: str
    user_id: str
    session_id: str
    window: int
    now: float

    def creation(self) -> CreateSession:
        return CreateSession(self.app_name, self.user_id, self.session_id, NO_DELTAS, self.now)


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
    # What it says, for the thread's title, preview and search (``thread_index``).
    indexed: IndexedText = NOTHING

    def check_fresh(self, revision: int, update_time: float) -> None:
        """Raises StaleSessionError if the stored session moved on since this copy was loaded."""
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

    def revision_after(self) -> int | None:
        """The session's revision once this event is in, as applying it returns it (None
        for a copy loaded without one)."""
        return self.loaded_revision + 1 if self.loaded_revision is not None else None

    def run_after(
        self, invocation_id: str | None, invocation_seq: int | None, run_open: bool, seq: int
    ) -> tuple[int, bool]:
        """The session's invocation start and open run once this event, stored at ``seq``,
        is in: a new invocation starts at it; an event that does not say keeps the run."""
        start = seq if invocation_id != self.invocation_id else cast(int, invocation_seq)
        return start, run_open if self.progress.run_open is None else self.progress.run_open


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteSession:
    app_name: str
    user_id: str
    session_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class PatchThread:
    """Changes what a thread's listing shows (``thread_index.ThreadPatch``); applied, it
    gives the thread's ``ThreadRow`` after it, or None if the user has no such thread."""

    app_name: str
    user_id: str
    session_id: str
    patch: ThreadPatch


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


@dataclasses.dataclass(frozen=True, slots=True)
class AppendFrames:
    """Adds frames to a thread's log (``gateway.store.frames``); applied, it gives the
    number of the last frame written.

    A number the log holds already fails the write (the primary key): two writers of one
    thread's log are a fault, never a silent overwrite.
    """

    app_name: str
    user_id: str
    session_id: str
    frames: tuple[LoggedFrame, ...]

    def followed_by(self, newer: Sequence[AppendFrames]) -> AppendFrames:
        """This write and newer ones of the same thread as one write."""
        frames = [*self.frames]
        for write in newer:
            frames += write.frames
        return dataclasses.replace(self, frames=tuple(frames))


@dataclasses.dataclass(frozen=True, slots=True)
class TrimFrames:
    """Keeps the newest frames of a thread's log that fit ``max_bytes``, and the newest one
    whatever its size, so the log always knows its head. Applied, it gives the bytes the
    log keeps where the backend counts them (SQLite's, for ``log_sizes``), else None."""

    app_name: str
    user_id: str
    session_id: str
    max_bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class ForgetLeftoverTexts:
    """Deletes the streamed texts of the app's threads (all of them, or those named), once
    a restart has used what it needs."""

    app_name: str
    session_ids: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class SetAside:
    """Quarantines a thread; the first value found bad stays its reason."""

    app_name: str
    user_id: str
    session_id: str
    damage: Damage
    at: float


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseLeases:
    """The cluster's (PostgreSQL's): lets go of the leases of ``threads`` that ``node_id``
    still holds, each thread's notice (``(thread_id, notice)``) sent if another process
    waits for it, and sends ``told`` (thread changes) to the other live processes watching
    a user they name (``postgres.leases.release``), in the batch's transaction, so a run's
    lease goes with its last frames, in their commit (``gateway.cluster.postgres``).
    Applied, it gives the threads let go of."""

    node_id: str
    threads: tuple[tuple[str, str | None], ...]
    told: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Probe:
    """The smallest real write, to learn whether the store can commit again.

    It must write something (each backend counts up a number of its own): taking a lock
    alone, or an UPDATE that changes nothing, would not show a full or read-only disk.
    """


@dataclasses.dataclass(frozen=True, slots=True)
class Fenced:
    """A write made under a thread's lease: applied only while ``fence`` is still the
    thread's lease, checked in the write's own transaction; else ``FencedError``."""

    fence: Fence
    write: Write

    def followed_by(self, newer: Sequence[Fenced]) -> Fenced:
        """Frames of one thread under one fence, as one write (``AppendFrames``)."""
        assert isinstance(self.write, AppendFrames)
        frames = [cast(AppendFrames, write.write) for write in newer]
        return dataclasses.replace(self, write=self.write.followed_by(frames))


def unfenced(write: Write, epochs: Mapping[str, int]) -> Write:
    """The write to apply: a fenced write's own, if its lease is the thread's current one in
    ``epochs`` (read, and locked, in the same transaction); else raises FencedError."""
    if not isinstance(write, Fenced):
        return write
    fence = write.fence
    if epochs.get(fence.thread_id) != fence.epoch:
        raise FencedError(fence.thread_id, fence.epoch)
    return write.write


@dataclasses.dataclass(frozen=True, slots=True)
class Failed:
    """In a batch's results, in place of a write that failed alone (undone alone)."""

    error: Exception


class WriteSql(Protocol):
    """A backend's SQL for each command: its ``writes`` module, one function a command,
    each run inside the writer's transaction."""

    def create_session(self, db: Any, create: CreateSession) -> dict[str, Any]:
        """Returns the new session's merged state."""
        ...

    def open_thread(
        self, db: Any, opening: OpenThread
    ) -> OpenedThread | tuple[StoredSession, Usage, int]: ...

    def append_event(self, db: Any, append: AppendEvent) -> int:
        """Returns the session's new revision."""
        ...

    def delete_session(self, db: Any, delete: DeleteSession) -> None: ...

    def patch_thread(self, db: Any, patch: PatchThread) -> object: ...

    def save_streamed_text(self, db: Any, save: SaveStreamedText) -> None: ...

    def append_frames(self, db: Any, append: AppendFrames) -> int:
        """Returns the number of the last frame written."""
        ...

    def trim_frames(self, db: Any, trim: TrimFrames) -> int | None:
        """Returns the bytes the log keeps, where the backend counts them."""
        ...

    def forget_leftover_texts(self, db: Any, forget: ForgetLeftoverTexts) -> None: ...

    def set_aside(self, db: Any, set_aside: SetAside) -> None: ...

    def probe(self, db: Any) -> None: ...

    def move_branch(self, db: Any, move: Fork | Switch) -> Moved: ...


def apply(sql: WriteSql, db: Any, write: Write) -> object:
    """Applies one command with a backend's SQL; what it returns reaches its caller once
    the batch commits."""
    match write:
        case Fenced():
            raise AssertionError("a fenced write is checked by its transaction (unfenced)")
        case ReleaseLeases():
            raise AssertionError("a cluster's write is PostgreSQL's transaction's own")
        case AppendEvent():
            return sql.append_event(db, write)
        case SaveStreamedText():
            sql.save_streamed_text(db, write)
        case AppendFrames():
            return sql.append_frames(db, write)
        case TrimFrames():
            return sql.trim_frames(db, write)
        case OpenThread():
            return sql.open_thread(db, write)
        case CreateSession():
            return sql.create_session(db, write)
        case DeleteSession():
            sql.delete_session(db, write)
        case PatchThread():
            return sql.patch_thread(db, write)
        case ForgetLeftoverTexts():
            sql.forget_leftover_texts(db, write)
        case SetAside():
            sql.set_aside(db, write)
        case Probe():
            sql.probe(db)
        case Fork() | Switch():
            return sql.move_branch(db, write)
    return None


Write = (
    CreateSession
    | OpenThread
    | AppendEvent
    | DeleteSession
    | PatchThread
    | SaveStreamedText
    | AppendFrames
    | TrimFrames
    | ForgetLeftoverTexts
    | SetAside
    | Probe
    | Fork
    | Switch
    | Fenced
    | ReleaseLeases
)
