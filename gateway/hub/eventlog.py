"""A thread's event log, as the hub numbers and replays it.

Every event the hub sends a thread's watchers (a run's, from RUN_STARTED to its end) gets
the next number of the thread's log, 1, 2, 3..., as it is emitted, and is stored as a frame
(``gateway.store.frames``). The number travels on the event itself, as AG-UI's free-form
``metadata`` (``{"gateway.seq": 12}``), which AG-UI 1.0 and 0.0.x clients both accept,
and on SSE as the frame's ``id:`` line. A client that comes back with the last number it
saw is replayed the frames after it, then follows live; one whose number the log cannot
answer gets the snapshots as before. Snapshots sent to one subscriber are not logged:
they carry the number of the log's head when they were made.

Numbers are given by the process that runs the thread, after the stored head, and each
delivery waits in the run's outbox for its frame's commit, except streamed text, which
goes out ahead of it (``gateway.hub.outbox``). So a client may hold a number the store
lacks, a few at most: a reattach with it waits for the run's commits, and after a crash
(which leaves a gap in the numbers: ``gateway.hub.takeover``) gets the snapshot.

One event goes out unnumbered: the RUN_STARTED a /ws input is sent as soon as it is
admitted (docs/first-event.md), before the thread is read; the run's RUN_STARTED in the
log, numbered, is what everyone else and every replay is sent.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from gateway import wire as p
from gateway.store.frames import FrameLog, LoggedFrame

# The key of an event's metadata that holds its number in the thread's log.
SEQ = "gateway.seq"


def numbered(event: p.Event, seq: int) -> p.Event:
    """Marks the event with its number (or, for a snapshot, the head it shows)."""
    event.metadata = {**event.metadata, SEQ: seq} if event.metadata else {SEQ: seq}
    return event


def seq_of(event: p.Event) -> int | None:
    seq = event.metadata.get(SEQ) if event.metadata else None
    return seq if isinstance(seq, int) else None


def frame(event: p.Event, *, only_for: str | None, not_for: str | None) -> LoggedFrame:
    seq = seq_of(event)
    assert seq is not None, "an event is numbered before it is logged"
    return LoggedFrame(seq, p.encode(event), only_for, not_for)


def shown_to(frame: LoggedFrame, client: str | None) -> bool:
    """Whether a replay to ``client`` (a client instance, or None) includes the frame."""
    if frame.only_for is not None and (client is None or frame.only_for != client):
        return False
    return frame.not_for is None or frame.not_for != client


def shown_to_joiner(frame: LoggedFrame, client: str | None) -> bool:
    """Whether a client joining a run with nothing of it (a reattach with no cursor, the
    run's frames from its start) is sent the frame: all but another instance's client
    calls. The echoes of the run's input (``not_for`` its sender) go to it too: a reloaded
    sender no longer holds what it sent."""
    return frame.only_for is None or (client is not None and frame.only_for == client)


class _Kind(msgspec.Struct):
    type: str = ""


_kind = msgspec.json.Decoder(_Kind)


class _Outcome(msgspec.Struct):
    type: str = "success"
    pending: list[str] | None = msgspec.field(default=None, name="pendingToolCallIds")


class _End(msgspec.Struct):
    type: str = ""
    outcome: _Outcome | None = None


_end = msgspec.json.Decoder(_End)
_RUN_ENDS = frozenset({"RUN_FINISHED", "RUN_ERROR"})


def replay(
    log: FrameLog, after: int, client: str | None, running_since: int | None
) -> list[p.Event] | None:
    """The events after ``after`` for ``client``, from a read of the log after
    ``after - 1`` (so it shows whether the log holds ``after`` itself); None when the log
    cannot answer that cursor: beyond its head, older than what it keeps, or through a run
    that a crash cut off (``cut_off``). ``running_since``: the number of the RUN_STARTED
    of the run in progress, if one is."""
    if after > log.head:
        return None
    if after > 0 and (not log.frames or log.frames[0].seq != after):
        # The log does not hold ``after``: trimmed away, never written, or a number sent
        # ahead of a commit a crash cut off (the gap ``gateway.hub.takeover`` leaves).
        return None
    if after == 0 and log.oldest is not None and log.oldest > 1:
        return None
    if cut_off(log, after, running_since):
        return None
    return [p.decode_event(f.data) for f in log.frames if f.seq > after and shown_to(f, client)]


def ended_waiting(log: FrameLog) -> bool:
    """Whether the read ends with a run's end that left the thread waiting: a browser call
    or an approval open, or an error, which may have cut a run with calls open."""
    if not log.frames:
        return False
    end = _end.decode(log.frames[-1].data)
    if end.type == "RUN_ERROR":
        return True
    outcome = end.outcome
    return (
        end.type == "RUN_FINISHED"
        and outcome is not None
        and (outcome.type == "interrupt" or bool(outcome.pending))
    )


def cut_off(log: FrameLog, after: int, running_since: int | None) -> bool:
    """Whether the frames from ``after`` on go through a run that never ended: one a
    crash cut off, whose end only the snapshot shows (the store closed it). A run is open
    from its RUN_STARTED to its end; one still open where the log ends must be the run in
    progress."""
    open_since: int | None = None  # the RUN_STARTED of the open run; 0: before the read
    for frame in log.frames:
        kind = _kind.decode(frame.data).type
        if kind == "RUN_STARTED":
            if open_since is not None and frame.seq > after:
                return True  # a run began while the one before it was open
            open_since = frame.seq
        elif kind in _RUN_ENDS:
            open_since = None
        elif open_since is None and frame.seq == after:
            open_since = 0  # the cursor is inside a run begun before it
    if open_since is None:
        return False
    if running_since is None:
        return True
    # The run in progress began before the cursor, or is the one whose start was read; a
    # run begun before the cursor while the one in progress began after it was cut off.
    return open_since != running_since if open_since else running_since >= after


def open_run(log: FrameLog) -> int:
    """The number of the RUN_STARTED of the run the log's read leaves open (0: begun before
    the read), for a run in progress on another process (``running_since`` of ``replay``)."""
    since = 0
    for frame in log.frames:
        kind = _kind.decode(frame.data).type
        if kind == "RUN_STARTED":
            since = frame.seq
        elif kind in _RUN_ENDS:
            since = 0
    return since


def after_replay(held: Iterable[p.Event], last: int) -> list[p.Event]:
    """Of the events sent live while a replay was read, those it did not include."""
    return [event for event in held if (seq := seq_of(event)) is None or seq > last]
