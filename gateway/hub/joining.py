"""Joining a thread from its log: a replay after a cursor, or a run on another process.

Theory of operation. A client that reattaches with the last number of the thread's log it
saw (``gateway.hub.eventlog``) is sent the frames after it, then follows live; one with
no cursor, on a thread another process is running, joins that run from its start: its
RUN_STARTED, the thread as it was before the run, the run's frames so far, then live from
the log (``gateway.hub.following``). Either way the subscriber watches the thread from
before the reads, and what it is sent meanwhile waits (``Thread.replaying``) to go out
after what was read, each event once.

A cursor that missed nothing, on a thread with no run in progress here or elsewhere (one
never used, with cursor 0, included), gets an ``UP_TO_DATE`` notice in a run of its own,
numbered with the cursor: every reattach is answered, so a client can tell "up to date"
from "lost" (a resumed SSE stream is not: its end says so, and EventSource, which comes
back by itself whenever a stream ends, would be told again each time). When the run the
cursor ends left the thread waiting, the notice's RUN_FINISHED says on what, as read from
the thread now (``gateway.hub.open_calls``), as a snapshot's does: the answer to a call
may have been sent in an input a crash caught before anything of it was stored (its early
RUN_STARTED has no number), and the client, told the call is still open, sends it again;
one whose answer is stored is not listed. When the log
cannot answer a cursor (beyond its head, older than what it keeps, through a run a crash
cut off) nothing is sent, and the hub sends the snapshots instead
(``gateway.hub.snapshots``); when it shows no run open on the other process (its start
not committed yet, or just ended), the hub looks again shortly. A cursor into a run
whose process died just now first has that run's end written into the log, by
``take_over``: the hub's, which closes a dead holder's run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.cluster import Cluster
from gateway.hub import eventlog
from gateway.hub.following import Followers
from gateway.hub.open_calls import OpenCall, open_calls
from gateway.hub.snapshots import encoded_size, thread_snapshot
from gateway.hub.threads import Subscriber, Thread
from gateway.store import StoreError
from gateway.store.frames import FrameLog
from gateway.wire.notices import up_to_date

logger = logging.getLogger(__name__)

# How long a reattach by cursor waits for another process to commit the frame its client
# was sent ahead of the commit (a commit groups for up to 5 ms, and a busy writer queues).
CATCH_UP_SECONDS = 1.0

# Takes over a thread whose process died mid-run: (user_id, thread_id) -> whether it
# closed such a run (and the log now ends it).
TakeOver = Callable[[str, str], Awaitable[bool]]

# How an idle thread's last run ended, given what it waits on (``Planner.waiting_for``).
WaitingFor = Callable[[dict[str, OpenCall]], p.Outcome]


class Joiner:
    """Replays a thread's log to a subscriber, or joins it to a run on another process."""

    def __init__(
        self,
        engine: Engine,
        cluster: Cluster,
        followers: Followers,
        *,
        snapshot_bytes: int | None,
        take_over: TakeOver,
        waiting_for: WaitingFor,
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.followers = followers
        # How much of a thread the snapshot of a joined run sends at most.
        self.snapshot_bytes = snapshot_bytes
        self.take_over = take_over
        self.waiting_for = waiting_for

    async def replay(
        self, thread: Thread, subscriber: Subscriber, after: int, *, say_up_to_date: bool = True
    ) -> int | None:
        """Sends the events of the thread's log after ``after``, then makes the subscriber
        a watcher, returning the bytes of the log it read; None, sending nothing, when the
        log cannot answer that cursor. ``say_up_to_date``: send the UP_TO_DATE notice when
        it missed nothing (a stream that ends says so by itself).

        The subscriber watches from before the read, its live events held back meanwhile
        (``Thread.replaying``): an event committed during the read is in the read or held,
        and one in both is sent once. A cursor into or through a run that never ended (a
        crash cut it off) cannot be answered: only the snapshot shows how it ended.
        """
        thread.replaying[subscriber] = []
        thread.watch(subscriber)
        run = thread.run
        executes = (
            run is not None and subscriber.client is not None and run.owner == subscriber.client
        )
        previous = run.executor if run is not None else None
        if run is not None and executes:
            run.executor = subscriber  # the owner instance is back: it executes from here on
        events: list[p.Event] | None = None
        try:
            if run is not None:  # a cursor it was sent ahead of the store is in the read
                await run.outbox.stored()
            log = await self.engine.frames_after(
                thread.user_id, thread.thread_id, max(after - 1, 0)
            )
            running = thread.run.first_seq if thread.run is not None else None
            events = eventlog.replay(log, after, subscriber.client, running)
            if events is not None and (run := thread.run) is not None and run.routed is not None:
                # A frame committed whose delivery still waits in the run's outbox goes
                # to the subscriber live, as a watcher now: the replay stops before it.
                log, events = _up_to(log, events, max(run.routed, after))
            if events is None and thread.run is None and not thread.replaying[subscriber]:
                # Cut off by a process that died just now: its end is logged, then replayed;
                # or another process runs it (or is logging its end): followed from the log.
                if await self.take_over(thread.user_id, thread.thread_id):
                    log = await self.engine.frames_after(
                        thread.user_id, thread.thread_id, max(after - 1, 0)
                    )
                    events = eventlog.replay(log, after, subscriber.client, None)
                elif await self.runs_elsewhere(thread.thread_id) and thread.run is None:
                    if after > log.head:  # sent there ahead of its commit
                        log = await self._caught_up(thread, after)
                    # (One begun here meanwhile leaves the other's end out of the read:
                    # the snapshot is sent instead.)
                    if thread.run is None:
                        elsewhere = eventlog.open_run(log)
                        events = eventlog.replay(log, after, subscriber.client, elsewhere)
        finally:
            held = thread.replaying.pop(subscriber, [])
            if events is None and subscriber in thread.watchers:  # it may have left meanwhile
                thread.watchers.remove(subscriber)
                if run is not None and run.executor is subscriber:
                    run.executor = previous
        if events is None:
            return None
        missed_nothing = not events and not held and log.head <= after
        waits = None
        if say_up_to_date and missed_nothing and eventlog.ended_waiting(log):
            # Read before the look at the run (``_idle``): from its answer to the notice
            # nothing may wait, or a run begun meanwhile would be told it is not there.
            waits = await self._still_waits(thread)
        for event in events:
            subscriber.deliver(event)
        last = log.frames[-1].seq if log.frames else after
        for event in eventlog.after_replay(held, last):
            subscriber.deliver(event)
        if say_up_to_date and missed_nothing and await self._idle(thread):
            for event in up_to_date(thread.thread_id, after):
                if waits is not None and isinstance(event, p.RunFinished):
                    event.outcome = waits
                subscriber.deliver(eventlog.numbered(event, after))
        if thread.run is None:  # run elsewhere, or none: it follows the log from here
            thread.positions[subscriber] = last
            self.followers.heard(thread, log.head)
        return _log_bytes(log)

    async def join_elsewhere(self, thread: Thread, subscriber: Subscriber) -> int | None:
        """Joins the run another process is streaming, for a subscriber with no cursor: the
        run's RUN_STARTED, the thread as it was before the run, the run's frames so far,
        then live from the log, returning the bytes of what it read; None, sending
        nothing, when the log shows no run open (its start is not committed yet, or it has
        just ended), or when a run of this process began during the reads: the caller
        joins that one instead (the other's start, sent first, would leave a run open in
        the subscriber's stream when this one's RUN_STARTED came).

        The snapshot leaves out every stored event of the run (``run_start``), which the
        run's frames bring, so nothing shows twice however far the store is ahead of the
        log. As in ``replay``, the subscriber watches from before the reads.
        """
        thread.replaying[subscriber] = []
        thread.watch(subscriber)
        events: list[p.Event] | None = None
        try:
            log = await self.engine.frames_after(thread.user_id, thread.thread_id, 0)
            start = eventlog.open_run(log)
            if start and thread.run is None:
                [first] = [f for f in log.frames if f.seq == start]
                started = p.decode_event(first.data)
                assert isinstance(started, p.RunStarted)
                before = await self.engine.run_start(
                    thread.user_id, thread.thread_id, started.run_id
                )
                page, session = await self.engine.thread_view(
                    thread.user_id, thread.thread_id, self.snapshot_bytes, before=before
                )
                tree = await self.engine.branches(thread.user_id, thread.thread_id)
                if thread.run is None:  # nor one begun here during the reads: it is joined
                    snapshot = thread_snapshot(thread.thread_id, page, session, tree)
                    events = [
                        started,
                        *(eventlog.numbered(event, start) for event in snapshot),
                        *(
                            p.decode_event(f.data)
                            for f in log.frames
                            if f.seq > start and eventlog.shown_to_joiner(f, subscriber.client)
                        ),
                    ]
        finally:
            held = thread.replaying.pop(subscriber, [])
            if events is None and subscriber in thread.watchers:  # it may have left meanwhile
                thread.watchers.remove(subscriber)
        if events is None:
            return None
        for event in events:
            subscriber.deliver(event)
        for event in eventlog.after_replay(held, log.head):
            subscriber.deliver(event)
        if thread.run is None:  # it follows the log from here
            thread.positions[subscriber] = log.head
            self.followers.heard(thread, log.head)
        return encoded_size(snapshot) + _log_bytes(log)

    async def _caught_up(self, thread: Thread, after: int) -> FrameLog:
        """The thread's log after ``after - 1`` once it holds ``after``, a number another
        process's client was sent ahead of its frame's commit (streamed text goes out first,
        ``gateway.hub.outbox``): read again when the commit's notice comes
        (``Thread.heard``), or after ``CATCH_UP_SECONDS`` (a notice lost, or a crash cut the
        run off before the commit, and the read still cannot answer: the snapshot is sent)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(thread.hears(after), CATCH_UP_SECONDS)
        return await self.engine.frames_after(thread.user_id, thread.thread_id, max(after - 1, 0))

    async def _still_waits(self, thread: Thread) -> p.Outcome | None:
        """What the idle thread waits on now, read from the store (the run the log ends
        with left it waiting, and an answer may have been stored since, or lost); None
        when the read fails: the notice then says what it always said."""
        try:
            session = await self.engine.session(thread.user_id, thread.thread_id)
        except StoreError as error:
            logger.warning(
                "reattach up to date on thread %s: its open calls could not be read (%s)",
                thread.thread_id,
                type(error).__name__,
            )
            return None
        waiting = open_calls(session)
        logger.info(
            "reattach up to date on thread %s: it waits on %d call(s)",
            thread.thread_id,
            len(waiting),
        )
        return self.waiting_for(waiting)

    async def _idle(self, thread: Thread) -> bool:
        """Whether the thread has no run in progress, here or on another process."""
        return (
            thread.run is None
            and not await self.runs_elsewhere(thread.thread_id)
            and thread.run is None  # nor one started while another process was asked
        )

    async def runs_elsewhere(self, thread_id: str) -> bool:
        try:
            return await self.cluster.runs_elsewhere(thread_id)
        except StoreError:
            return False  # as if cut off: the snapshot is sent, which is never wrong


def _up_to(log: FrameLog, events: list[p.Event], last: int) -> tuple[FrameLog, list[p.Event]]:
    """The read and its replay cut after the frame numbered ``last``."""
    frames = [frame for frame in log.frames if frame.seq <= last]
    kept = [event for event in events if (seq := eventlog.seq_of(event)) is None or seq <= last]
    return dataclasses.replace(log, frames=frames), kept


def _log_bytes(log: FrameLog) -> int:
    return sum(len(frame.data) for frame in log.frames)
