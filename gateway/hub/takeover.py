"""The run a dead process cut off: closed by the process that takes its thread's lease.

A thread's lease comes back to this process from a dead holder in two ways: an input here
takes it (``Takeovers.lease``), or the cluster's sweep finds it (``Takeovers.take_over``).
Either way the store first closes the cut-off run in the thread's history, the log gets
the run's end (below), and what the run left to go on with, if anything (a person's answer
to act on, a reply owed: ``recovery.Unfinished``), runs first, holding the lease
(``Hub.finish_cut_off``). A cancel sent while the close is under way stops that going on:
nobody wants the reply any more.

The end of the run, as its thread's log tells it.

The store closes the cut-off run in the thread's history (``close_interrupted_thread``);
its watchers, on any process, follow the thread's log, where the run stops mid-stream. The
process that took the dead lease writes the run's end there: an END for each message, tool
call or span it left open, innermost first, then RUN_ERROR saying what happened. Numbered
after the log's head (the taker holds the lease, so no one else writes), they reach every
watcher as the run's own last events would have, and a reattach by cursor after the crash
is answered from the log like any other. They leave a gap of ``UNSTORED_NUMBERS`` after the
head: the dead process may have sent that many numbers of streamed text ahead of their
commit (``gateway.hub.outbox``), and a client holding one is sent the snapshot, never
another frame under its number. The RUN_ERROR's code, ``RUN_INTERRUPTED``, tells
a client the process was lost, not that anything unexpected failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.cluster import Cluster
from gateway.hub import eventlog
from gateway.hub.outbox import UNSTORED_NUMBERS
from gateway.hub.refusals import quarantined, store_unavailable
from gateway.metrics import Metrics
from gateway.store import QuarantinedThreadError, StoreError
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.recovery import Unfinished

log = logging.getLogger(__name__)

# How far back the log is read for the cut-off run's start; beyond it, only RUN_ERROR.
READ_BACK = 2000

CUT_OFF = (
    "The gateway process running this reply stopped before it finished; what it had said "
    "is kept, marked interrupted. Send your message again to go on."
)


def closing_frames(log: FrameLog) -> list[LoggedFrame]:
    """The frames that end the run the log's tail leaves open; none if it ends a run."""
    if not log.frames or isinstance(
        p.decode_event(log.frames[-1].data), p.RunFinished | p.RunError
    ):
        return []  # the run had ended: nothing was cut off in the log
    open_items: dict[str, tuple[p.Event, str | None]] = {}
    for frame in log.frames:
        event = p.decode_event(frame.data)
        match event:
            case p.RunStarted():
                open_items.clear()
            case p.TextMessageStart(message_id=key):
                open_items[f"text {key}"] = (p.TextMessageEnd(message_id=key), frame.only_for)
            case p.ToolCallStart(tool_call_id=key):
                open_items[f"call {key}"] = (p.ToolCallEnd(tool_call_id=key), frame.only_for)
            case p.ReasoningStart(message_id=key):
                open_items[f"span {key}"] = (p.ReasoningEnd(message_id=key), frame.only_for)
            case p.ReasoningMessageStart(message_id=key):
                open_items[f"thought {key}"] = (
                    p.ReasoningMessageEnd(message_id=key),
                    frame.only_for,
                )
            case p.TextMessageEnd(message_id=key):
                open_items.pop(f"text {key}", None)
            case p.ToolCallEnd(tool_call_id=key):
                open_items.pop(f"call {key}", None)
            case p.ReasoningEnd(message_id=key):
                open_items.pop(f"span {key}", None)
            case p.ReasoningMessageEnd(message_id=key):
                open_items.pop(f"thought {key}", None)
    ends = [*reversed(open_items.values())]
    ends.append((p.RunError(message=CUT_OFF, code=p.ErrorCode.RUN_INTERRUPTED.value), None))
    return [
        eventlog.frame(eventlog.numbered(event, seq), only_for=only_for, not_for=None)
        for seq, (event, only_for) in enumerate(ends, start=log.head + UNSTORED_NUMBERS + 1)
    ]


class Takeovers:
    """Leases this process takes from dead holders, and the closes of their cut-off runs.

    ``finish`` goes on with what a close left (the hub's ``finish_cut_off``, the lease
    held); ``read_again`` tells the hub a thread's log grew while it was idle here.
    """

    def __init__(
        self,
        engine: Engine,
        cluster: Cluster,
        metrics: Metrics,
        *,
        finish: Callable[[Unfinished], None],
        read_again: Callable[[str], None],
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.metrics = metrics
        self._finish = finish
        self._read_again = read_again
        # Threads whose dead holder's run this process is closing, done when it has.
        self._closing: dict[str, asyncio.Future[None]] = {}
        # Of those, the ones a cancel reached while they closed: the model is not asked
        # again for the cut-off reply, which nobody wants any more.
        self.stopped: set[str] = set()

    def closing(self, thread_id: str) -> bool:
        return thread_id in self._closing

    def stop(self, thread_id: str) -> bool:
        """A cancel for a thread being closed here; False when none is."""
        if thread_id not in self._closing:
            return False
        self.stopped.add(thread_id)
        return True

    async def lease(self, thread_id: str, user_id: str, run_id: str) -> bool:
        """Takes the thread's lease for a run of this process; False while another process
        holds it. A lease taken from a dead holder first closes the run it cut off; if that
        leaves something to go on with, it runs first, holding the lease, and this is False
        too (unless a cancel came during the close). Each lease taken is released once
        (``Cluster.release``), by the run or the caller."""
        while (closing := self._closing.get(thread_id)) is not None:
            # This process holds the lease to close a dead holder's run: taking it as its
            # own would start a run beside that close.
            await asyncio.shield(closing)
        # Marked before the take, as a takeover marks it: a sweep or a reattach that finds
        # the holder dead meanwhile waits for this input instead of closing the run beside it.
        with self._closing_of(thread_id):
            try:
                taken = await self.cluster.take(thread_id, user_id, run_id)
            except StoreError:
                raise store_unavailable() from None
            if taken is None:
                return False
            # Another process may have run it since: its log's head is read again.
            self._read_again(thread_id)
            if taken.from_dead is None:
                return True
            try:
                unfinished = await self._close(user_id, thread_id, taken.from_dead)
                stopped = thread_id in self.stopped
            except BaseException:
                self.cluster.release(thread_id)
                raise
        if unfinished is None or stopped:
            return True
        # An approval acted on, a reply given, before anything newer runs.
        self._finish(unfinished)
        return False

    async def take_over(self, user_id: str, thread_id: str) -> bool:
        """Takes the thread's lease if its holder died, closes the run it cut off and lets
        the thread go, unless the model is to reply again, which runs here; False when
        there was nothing to close, or another process holds the thread."""
        if (closing := self._closing.get(thread_id)) is not None:
            await asyncio.shield(closing)  # this process is closing it already
            return True
        with self._closing_of(thread_id):
            taken = await self.cluster.take(thread_id, user_id, "takeover")
            if taken is None:  # another process was first, or runs it
                return False
            if taken.from_dead is None:
                self.cluster.release(thread_id)
                return False
            try:
                unfinished = await self._close(user_id, thread_id, taken.from_dead)
            except BaseException:
                self.cluster.release(thread_id)
                raise
            if unfinished is not None and thread_id not in self.stopped:
                self._finish(unfinished)
            else:
                self.cluster.release(thread_id)
            return True

    async def end_logged_run(self, user_id: str, thread_id: str) -> None:
        """Writes the end of the cut-off run into the thread's log, for every watcher: a
        takeover's, and a restart's for the runs it closed (else a follower would get that
        end only when this process's sweep came to the thread)."""
        head = await self.engine.log_head(user_id, thread_id)
        if head == 0:
            return
        tail = await self.engine.frames_after(user_id, thread_id, max(head - READ_BACK, 0))
        if frames := closing_frames(tail):
            await self.engine.log_frames(user_id, thread_id, frames)
        self._read_again(thread_id)  # the taker wrote after what the hub had given out

    async def _close(self, user_id: str, thread_id: str, holder: str) -> Unfinished | None:
        """Closes the run a dead process cut off on the thread, as a restart closes its
        own; what is to go on, if anything."""
        self.metrics.lease_taken_over()
        log.warning("thread %s: its process %s died mid-run; closing that run", thread_id, holder)
        try:
            unfinished = await self.engine.close_cut_off(thread_id)
        except QuarantinedThreadError:
            raise quarantined(thread_id) from None
        await self.end_logged_run(user_id, thread_id)
        return unfinished

    @contextlib.contextmanager
    def _closing_of(self, thread_id: str) -> Iterator[None]:
        # Entered only with no await since ``_closing`` was found without the thread.
        assert thread_id not in self._closing, thread_id
        closing = self._closing[thread_id] = asyncio.get_running_loop().create_future()
        try:
            yield
        finally:
            del self._closing[thread_id]
            self.stopped.discard(thread_id)
            closing.set_result(None)
