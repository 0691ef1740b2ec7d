"""One transaction for a batch of writes, each write undone alone if it fails.

As ``sqlite.transaction``: a write that fails for its own reasons (a stale session, a
duplicate, a value PostgreSQL refuses) is undone alone and its error returned. Each
statement is a round trip here, so savepoints are paid only by a batch that needs them: it
is applied without, and should one of its writes fail, undone and applied again with each
write at a savepoint of its own (``_applied``). A failure of the database (the connection
lost, the disk full, a read-only server) fails the whole batch. Two processes whose
batches lock the same rows in opposite orders can deadlock; PostgreSQL then aborts one
batch, which is tried again.
A connection found dropped before the batch's COMMIT was sent (the server restarted, a
proxy closed it while idle) committed nothing of it: ``ConnectionDropped`` says so, and
the backend tries the batch again once on a new connection.

Without savepoints, the frames of all the batch's threads and their streamed texts go in one
statement, their trims and the leases the batch lets go of in one after it, each held back
only as long as no write of its thread that needs it there comes after it (``_applied``).

A write under a thread's lease (``Fenced``) of a kind a run makes all along (an event,
frames, a streamed text, a trim: ``_CHECKED_BY_ITS_STATEMENT``) carries its fence into its
statement, which locks the lease and applies the write only while its epoch is current
(``fences``): it costs no statement of its own. One refused changed nothing, and
fails alone (``FencedError``) with nothing to undo. Any other fenced write's lease is read
and locked first, one statement for the batch (``fences.lease_epochs``), outside any
write's savepoint so the lock holds to the commit, and the write is applied only if its
epoch is current (``unfenced``). The leases the cluster lets go of in the batch
(``ReleaseLeases``, after the run's last frames) go after the other writes, in the
statement of the trims (every part of it sees the leases as they were before it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import errors

from gateway.store.errors import FencedError
from gateway.store.leases import Fence
from gateway.store.postgres import leases
from gateway.store.postgres import writes as sql
from gateway.store.postgres.fences import lease_epochs
from gateway.store.writes import (
    AppendEvent,
    AppendFrames,
    Failed,
    Fenced,
    ReleaseLeases,
    SaveStreamedText,
    TrimFrames,
    Write,
    apply,
    unfenced,
)

# How many times a batch aborted by a deadlock (or a serialization failure) is tried.
_ATTEMPTS = 5


class ConnectionDropped(Exception):
    """The connection was found lost before the batch's COMMIT: nothing of it is stored."""


def commit(db: psycopg.Connection, writes: Sequence[Write]) -> list[object]:
    """Applies writes in one transaction; a write that fails is undone alone and returned."""
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return _commit_once(db, writes)
        except errors.TransactionRollback:
            if attempt == _ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _commit_once(db: psycopg.Connection, writes: Sequence[Write]) -> list[object]:
    try:
        epochs = lease_epochs(db, _leases_locked(writes))
        try:
            results = _applied(db, writes, epochs, isolate=False)
        except _WriteFailed as failed:
            db.rollback()
            if len(writes) == 1:  # a lone write's failure is its whole transaction's
                return [Failed(failed.error)]
            # Once more, each write at a savepoint of its own, undone alone if it fails.
            epochs = lease_epochs(db, _leases_locked(writes))
            results = _applied(db, writes, epochs, isolate=True)
    except psycopg.OperationalError as error:
        if db.closed:
            raise ConnectionDropped() from error
        db.rollback()
        raise
    except BaseException:
        if not db.closed:
            db.rollback()
        raise
    try:
        db.commit()  # if the connection drops now, the batch may or may not be stored
    except BaseException:
        if not db.closed:
            db.rollback()
        raise
    return results


# The fenced writes whose statement checks its fence itself (``fences``).
_CHECKED_BY_ITS_STATEMENT = (AppendEvent, AppendFrames, SaveStreamedText, TrimFrames)


def _leases_locked(writes: Sequence[Write]) -> list[str]:
    """The leases a batch locks first: those its fenced writes are made under whose
    statement does not check its fence itself."""
    return sorted(
        {
            w.fence.thread_id
            for w in writes
            if isinstance(w, Fenced) and not isinstance(w.write, _CHECKED_BY_ITS_STATEMENT)
        }
    )


def _fence_of(write: Write, epochs: Mapping[str, int]) -> tuple[Fence | None, Write]:
    """The write to apply and the fence its statement checks: a fenced write's own if its
    statement checks it, else none, the write checked here against ``epochs`` (raises
    ``FencedError`` if its lease is not current)."""
    if isinstance(write, Fenced) and isinstance(write.write, _CHECKED_BY_ITS_STATEMENT):
        return write.fence, write.write
    return None, unfenced(write, epochs)


class _WriteFailed(Exception):
    """A write failed for its own reasons in a batch applied without savepoints."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error


def _applied(
    db: psycopg.Connection, writes: Sequence[Write], epochs: Mapping[str, int], *, isolate: bool
) -> list[object]:
    """Each write's result, or its failure (``Failed``) when ``isolate`` puts each write at
    a savepoint; without, the first write to fail raises ``_WriteFailed``.

    A savepoint and its release are two statements a write, most of a small write's cost,
    for a failure (a stale session, a duplicate) that almost never comes: so a batch is
    applied without them first, and only a batch in which a write failed is applied again
    with them. Without them, the frames of every thread in the batch and their streamed
    texts go in one statement (``writes.append_frames_and_save_texts``; a batch of one
    kind, ``append_frames_of`` or ``save_streamed_texts``): each is held back until a
    write of the same thread that reads or changes it (or one of no one thread) comes, or
    the batch ends, so that write still finds it there (``_meets``).
    """
    results: list[object] = [None] * len(writes)
    held: dict[int, tuple[Fence | None, Held]] = {}  # writes held back, by their place
    for number, write in enumerate(writes):
        try:
            fence, applying = _fence_of(write, epochs)
        except FencedError as error:  # refused before any statement: nothing to undo
            results[number] = Failed(error)
            continue
        if held and _meets(applying, [w for _, w in held.values()]):
            _apply_held(db, held, results)
        if not isolate and isinstance(applying, Held):
            held[number] = (fence, applying)
            continue
        if isolate:
            db.execute("SAVEPOINT write")
        try:
            results[number] = _apply(db, applying, fence)
        except Exception as error:
            if _cannot_commit(error):
                raise  # not this write's fault: the whole batch fails
            if isolate:
                db.execute("ROLLBACK TO SAVEPOINT write")
            elif not isinstance(error, FencedError):
                raise _WriteFailed(error) from None
            # A write its statement refused (``FencedError``) changed nothing.
            results[number] = Failed(error)
            continue
        if isolate:
            db.execute("RELEASE SAVEPOINT write")
    if held:
        _apply_held(db, held, results)
    return results


def _apply(db: psycopg.Connection, write: Write, fence: Fence | None) -> object:
    match write:
        case ReleaseLeases():
            return leases.release_leases(db, [write])[0]
        case AppendEvent() if fence is not None:
            return sql.append_event(db, write, fence)
        case AppendFrames() if fence is not None:
            return sql.append_frames(db, write, fence)
        case SaveStreamedText() if fence is not None:
            sql.save_streamed_text(db, write, fence)
            return None
        case TrimFrames() if fence is not None:
            sql.trim_frames(db, write, fence)
            return None
    return apply(sql, db, write)


# The writes held back to go with the others of their kind in one statement (a trim, after
# the frames; the cluster's releases, after the trims).
Held = AppendFrames | SaveStreamedText | TrimFrames | ReleaseLeases


def _meets(write: Write, held: Iterable[Held]) -> bool:
    """Whether the held writes must be applied before ``write``: it may read or change what
    their threads hold, or it is its thread's second streamed text (a thread's row holds
    one, and one statement cannot change a row twice). Frames go with any others, and so
    does a trim of a log, applied after them: it keeps the newest frames that fit, so over
    the frames that came after it too it keeps what it would have, or less, and no trim
    splits a batch's frames in two statements. An event takes its message's streamed text
    away, but neither reads nor changes the log: a run's frames and events come in turns,
    and its frames still go in one statement a batch."""
    match write:
        case AppendFrames() | TrimFrames() | ReleaseLeases():
            return False
        case SaveStreamedText(session_id=texts_of) | AppendEvent(session_id=texts_of):
            return any(isinstance(w, SaveStreamedText) and w.session_id == texts_of for w in held)
    thread = getattr(write, "session_id", None)
    return thread is None or any(getattr(each, "session_id", None) == thread for each in held)


def _apply_held(
    db: psycopg.Connection, held: dict[int, tuple[Fence | None, Held]], results: list[object]
) -> None:
    """Applies the held writes in two statements: the frames and streamed texts, then the
    trims and the leases let go of (each pair, or the one of it the batch holds), each
    write's result in its place; one its statement refused (``FencedError``) changed
    nothing, and fails alone."""
    frames = {n: w for n, w in held.items() if isinstance(w[1], AppendFrames)}
    texts = {n: w for n, w in held.items() if isinstance(w[1], SaveStreamedText)}
    trims = {n: w for n, w in held.items() if isinstance(w[1], TrimFrames)}
    releases = {n: w for n, (_, w) in held.items() if isinstance(w, ReleaseLeases)}
    try:
        outcomes: dict[int, object] = {}
        if frames and texts:
            appends, frame_fences = _split(frames)
            saves, text_fences = _split(texts)
            of_frames, of_texts = sql.append_frames_and_save_texts(
                db, appends, frame_fences, saves, text_fences
            )
            outcomes.update(zip(frames, of_frames, strict=True))
            outcomes.update(zip(texts, of_texts, strict=True))
        elif frames:
            appends, fences = _split(frames)
            outcomes.update(zip(frames, sql.append_frames_of(db, appends, fences), strict=True))
        elif texts:
            saves, fences = _split(texts)
            outcomes.update(zip(texts, sql.save_streamed_texts(db, saves, fences), strict=True))
        if trims and releases:
            cuts, fences = _split(trims)
            of_trims, let_go = sql.trim_frames_and_release(
                db, cuts, fences, list(releases.values())
            )
            outcomes.update(zip(trims, of_trims, strict=True))
            outcomes.update(zip(releases, let_go, strict=True))
        elif trims:
            cuts, fences = _split(trims)
            outcomes.update(zip(trims, sql.trim_frames_of(db, cuts, fences), strict=True))
        elif releases:
            let_go = leases.release_leases(db, list(releases.values()))
            outcomes.update(zip(releases, let_go, strict=True))
    except Exception as error:
        if _cannot_commit(error):
            raise
        raise _WriteFailed(error) from None  # whose, the batch applied again will tell
    for number, outcome in outcomes.items():
        if isinstance(outcome, FencedError):
            results[number] = Failed(outcome)
        elif isinstance(outcome, Exception):
            raise _WriteFailed(outcome)
        else:
            results[number] = outcome
    held.clear()


def _split(held: dict[int, tuple[Fence | None, Any]]) -> tuple[list[Any], list[Fence | None]]:
    """Held writes of one kind, and their fences."""
    return [w for _, w in held.values()], [fence for fence, _ in held.values()]


def _cannot_commit(error: Exception) -> bool:
    """Whether a write failed because of the database, not because of what it holds."""
    return isinstance(error, psycopg.Error) and not isinstance(
        error, psycopg.DataError | psycopg.IntegrityError
    )
