"""Watchers of a thread whose run is on another process: fed from the thread's log.

The process that runs a thread delivers its events to its own watchers; every other process
learns from the cluster (``gateway.cluster``) that the thread's log grew to some number, and
reads the frames after what each of its watchers has seen. Each watcher has a position, the
number of the last frame it was sent (or the head its snapshot showed); a frame goes to it
once, in order, and only if a replay may show it to that watcher's client instance
(``eventlog.shown_to``): a client tool's live call reaches only a watcher of the instance
that owns the run, the executor.

One read a thread at a time: notices that arrive during a read are folded into the next.
Positions are kept only while the thread has no run here; once a run of this process
claims the thread, its watchers are first caught up to the log's head, then sent the run's
events live.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial

from gateway import wire as p
from gateway.hub import eventlog
from gateway.hub.threads import Subscriber, Thread
from gateway.store import StoreError
from gateway.store.frames import FrameLog

log = logging.getLogger(__name__)

# Reads a thread's log after a number: (thread, after) -> the frames after it.
ReadLog = Callable[[Thread, int], Awaitable[FrameLog]]


class Followers:
    """The threads this process follows for its watchers, one read of a thread at a time."""

    def __init__(self, read: ReadLog) -> None:
        self._read = read
        self._reading: dict[str, asyncio.Task[None]] = {}

    def heard(self, thread: Thread, seq: int) -> None:
        """The thread's log holds frames up to ``seq``, written by another process."""
        thread.hear(seq)
        if thread.run is not None or not thread.watchers:
            return
        reading = self._reading.get(thread.thread_id)
        # A read that has returned but whose task has not yet run its done callbacks will
        # not look at ``heard`` again: a notice in that gap needs a read of its own.
        if reading is None or reading.done():
            task = asyncio.create_task(self._follow(thread), name=f"follow {thread.thread_id}")
            self._reading[thread.thread_id] = task
            task.add_done_callback(partial(self._done, thread.thread_id))

    def _done(self, thread_id: str, task: asyncio.Task[None]) -> None:
        if self._reading.get(thread_id) is task:
            del self._reading[thread_id]

    async def catch_up(self, thread: Thread) -> None:
        """Before a run of this process emits: sends its watchers what other processes
        logged that they have not been sent, then forgets their positions."""
        if thread.positions:
            try:
                await self._deliver(thread, for_run=True)
            except StoreError as error:  # they get the new run's events; a reload, the rest
                log.warning("thread %s: watchers not caught up: %s", thread.thread_id, error)
        thread.positions.clear()

    async def _follow(self, thread: Thread) -> None:
        try:
            while thread.run is None and thread.watchers:
                if not await self._deliver(thread):
                    return
        except StoreError as error:  # the next notice tries again
            log.warning("thread %s: its log cannot be read: %s", thread.thread_id, error)

    async def _deliver(self, thread: Thread, *, for_run: bool = False) -> bool:
        """One read and its deliveries; False when every watcher has all that was heard of
        (or, unless ``for_run``, a run of this process has claimed the thread)."""
        positions = [position(thread, watcher) for watcher in thread.watchers]
        known = [seq for seq in positions if seq is not None]
        # A run's catch-up reads whatever was heard: a notice may have been lost.
        if not known or (min(known) >= thread.heard and not for_run):
            return False
        after = min(known)
        frames = await self._read(thread, after)
        if thread.run is not None and not for_run:
            return False  # a run of this process has begun: its catch-up delivers this
        if frames.head <= after:
            # Nothing newer than the watchers have: what was heard of is gone (the thread
            # was deleted, its log cut back); waiting for more would never end.
            thread.heard = frames.head
            return False
        if frames.oldest is not None and frames.oldest > after + 1:
            log.warning(
                "thread %s: frames %d to %d were trimmed before its watchers here were sent them",
                thread.thread_id,
                after + 1,
                frames.oldest - 1,
            )
        for watcher in list(thread.watchers):
            seen = position(thread, watcher)
            if seen is None:
                continue
            for frame in frames.frames:
                if frame.seq > seen and eventlog.shown_to(frame, watcher.client):
                    thread.send(watcher, p.decode_event(frame.data))
            thread.positions[watcher] = max(seen, frames.head)
        thread.hear(frames.head)
        # The head this process gave out is not the log's any more.
        thread.head = None
        return True


def position(thread: Thread, watcher: Subscriber) -> int | None:
    """The number of the last frame of the thread's log ``watcher`` was sent."""
    return thread.positions.get(watcher, thread.head)
