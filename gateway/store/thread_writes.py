"""The writes about a thread, on their way to the one writer: fenced in a cluster.

Theory of operation. Every write goes through the one writer (``group_commit``). In a
cluster, a write about a thread this process holds the lease of goes out fenced
(``writes.Fenced``): ``fence_of`` names the lease it is made under, and the database refuses
it once another process has taken the thread over. The first refusal of a fence is told to
``fenced_listeners``; every later write under that fence is refused here, without a round
trip, so a holder that learns it was fenced writes nothing more.

A write queued, not awaited (``save_streamed_text``) lets its caller hold what depends on
it on the future; a newer one replaces one still queued, so writes that arrive together
cost one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from google.adk.platform import time as platform_time

from gateway.store import writes
from gateway.store.errors import FencedError, StoreError
from gateway.store.group_commit import GroupCommit
from gateway.store.leases import Fence

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")

# Fences refused, kept to refuse their later writes at once: one a thread, the newest few.
_REFUSED_KEPT = 256


def unfenced(thread_id: str) -> Fence | None:
    """No thread is held under a lease: one process writes the database."""
    return None


class ThreadWrites:
    """The one writer of a ``SessionService``, and the fences on its threads' writes."""

    def __init__(self, *, read_only: bool) -> None:
        self.read_only = read_only
        # The one writer, from the store's open() to its close(); never, read-only.
        self.writer: GroupCommit | None = None
        # The lease this process holds a thread under, if any (the cluster's): its writes
        # are fenced by it. Nothing is, unless the gateway says otherwise.
        self.fence_of: Callable[[str], Fence | None] = unfenced
        # Told once of each fence the database refused: another process has the thread.
        self.fenced_listeners: list[Callable[[Fence], None]] = []
        # Fences the database refused, by thread.
        self._refused: dict[str, Fence] = {}

    def writer_or_raise(self) -> GroupCommit:
        """The writer; raises StoreError if the store is read-only or not open."""
        if self.writer is None:
            raise StoreError(
                "the session store is read-only"
                if self.read_only
                else "the session store is closed"
            )
        return self.writer

    def submit(
        self,
        thread_id: str,
        write: writes.Write,
        on_commit: Callable[[object], None] | None = None,
        *,
        replaces: tuple[str, ...] | None = None,
        extends: tuple[str, ...] | None = None,
        urgent: bool = False,
        rides: bool = False,
    ) -> asyncio.Future[object]:
        """Queues a write about a thread, fenced by the lease this process holds it under;
        ``rides``: nobody waits for it (``GroupCommit.submit``)."""
        writer = self.writer_or_raise()
        fence = self.fence_of(thread_id)
        if fence is None:
            return writer.submit(
                write, on_commit, replaces=replaces, extends=extends, urgent=urgent, rides=rides
            )
        if self._refused.get(thread_id) == fence:
            refused: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            refused.set_exception(FencedError(fence.thread_id, fence.epoch))
            return refused
        # Writes under different fences are never merged: the key names the epoch too.
        replaces = (*replaces, str(fence.epoch)) if replaces else None
        extends = (*extends, str(fence.epoch)) if extends else None
        submitted = writer.submit(
            writes.Fenced(fence, write),
            on_commit,
            replaces=replaces,
            extends=extends,
            urgent=urgent,
            rides=rides,
        )
        submitted.add_done_callback(partial(self._check_refused, fence))
        return submitted

    def save_streamed_text(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        invocation_id: str,
        message_id: str,
        author: str,
        text: str,
        rides: bool = False,
    ) -> asyncio.Future[object]:
        """Queues the text so far of the message a thread is streaming; resolves once committed.

        Not a coroutine: a caller that streams holds its chunk on the future, and a save still
        queued is replaced by a newer one, so chunks that arrive together cost one write. The
        message's final event (its id is ``message_id``) deletes the text, as does a cut-off
        reply stored under that id. ``rides``: its chunk goes out without waiting for it
        (``GroupCommit.submit``)."""
        now = platform_time.get_time()
        write = writes.SaveStreamedText(
            app_name, user_id, session_id, invocation_id, message_id, author, text, now
        )
        return self.submit(session_id, write, replaces=(app_name, user_id, session_id), rides=rides)

    def _check_refused(self, fence: Fence, submitted: asyncio.Future[object]) -> None:
        if submitted.cancelled() or not isinstance(submitted.exception(), FencedError):
            return
        if self._refused.get(fence.thread_id) == fence:
            return  # told already
        self._refused[fence.thread_id] = fence
        while len(self._refused) > _REFUSED_KEPT:
            del self._refused[next(iter(self._refused))]
        log.error(
            "thread %r was taken over by another process: writes under its lease (epoch %d)"
            " are refused",
            fence.thread_id,
            fence.epoch,
        )
        for listener in self.fenced_listeners:
            try:
                listener(fence)
            except Exception:  # called from a write's future: the rest must hear too
                log.exception("a listener of a fenced thread failed")
