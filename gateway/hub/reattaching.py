"""A reattach: a client shown a thread as it stands, then following its run live.

Theory of operation. A client that comes back (a reload, a reconnect, another tab) asks
for a thread, with the last number of its log it saw or without. With a cursor the log
answers when it can (``gateway.hub.joining``); a run another process is streaming is
joined from its start; otherwise the thread is read and sent as snapshots
(``gateway.hub.snapshots``), and the run in progress here, if any, is joined at the point
the read shows. An input sent again (``gateway.hub.dedupe``) is answered the same way,
after a notice that it did not run again (``rejoin``); older messages are paged in
(``earlier``). Every reattach and page is charged to the user's ``SendBudget``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import msgspec

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.cluster import Cluster
from gateway.hub import dedupe, eventlog
from gateway.hub.admission import Admission
from gateway.hub.dedupe import Duplicate
from gateway.hub.following import Followers
from gateway.hub.joining import Joiner
from gateway.hub.limits import SendBudget
from gateway.hub.planning import Planner
from gateway.hub.refusals import check_owner, quarantined
from gateway.hub.snapshots import encoded_size, idle_view, run_view, thread_snapshot
from gateway.hub.threads import Run, Subscriber, Thread
from gateway.metrics import Metrics
from gateway.store import QuarantinedThreadError, ThreadPage
from gateway.translate.translator import Phase

# How often a reattach looks again at a run that is still being planned.
PLANNING_POLL_SECONDS = 0.002
# How often a reattach looks again for the start of a run another process holds the lease for.
ELSEWHERE_POLL_SECONDS = 0.02
ELSEWHERE_POLL_MAX_SECONDS = 1.0
# How long a reattach waits for an input admitted on an idle thread to claim it.
CLAIM_WAIT_SECONDS = 2.0


class Reattacher:
    """Shows threads to clients that come back; see the module's docstring."""

    def __init__(
        self,
        engine: Engine,
        cluster: Cluster,
        threads: dict[str, Thread],
        admission: Admission,
        joiner: Joiner,
        followers: Followers,
        planner: Planner,
        *,
        sends: SendBudget,
        metrics: Metrics,
        snapshot_bytes: int | None,
        thread: Callable[[str, str], Awaitable[Thread]],
        owner: Callable[[str], Awaitable[str | None]],
        forget_if_unused: Callable[[Thread], None],
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.threads = threads
        self.admission = admission
        self.joiner = joiner
        self.followers = followers
        self.planner = planner
        self.sends = sends
        self.metrics = metrics
        self.snapshot_bytes = snapshot_bytes
        # The thread in memory, its owner read first (refused if not the user's).
        self.thread = thread
        # Whose a thread is, without a read if the hub has it in memory.
        self.owner = owner
        self.forget_if_unused = forget_if_unused

    async def reattach(
        self,
        user_id: str,
        thread_id: str,
        subscriber: Subscriber,
        after: int | None = None,
        *,
        say_up_to_date: bool = True,
    ) -> Run | None:
        """Sends the thread as snapshots, or with ``after`` (the last number of the thread's
        log the subscriber saw) the events after it when the log can answer that (and
        ``say_up_to_date``, an UP_TO_DATE notice when that is nothing); returns the run in
        progress it now follows live. A user whose reattaches sent more than
        ``sends`` allows is refused (RATE_LIMIT_EXCEEDED) before anything is read."""
        self.sends.check(user_id)
        self.metrics.reattached()
        thread = await self.thread(user_id, thread_id)
        if thread.run is None and self.admission.admitted.get(thread_id):
            # An input admitted on the idle thread, perhaps told it began (its early
            # RUN_STARTED), has not claimed it yet: it starts even if its connection closed.
            # Found idle and without the message, the client reattaching (cut just after it
            # sent it) would send it again, a second run beside the first.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.admission.claimed(thread_id), CLAIM_WAIT_SECONDS)
            thread = await self.thread(user_id, thread_id)
        if after is not None and subscriber not in thread.watchers:
            sent = await self.joiner.replay(
                thread, subscriber, after, say_up_to_date=say_up_to_date
            )
            if sent is not None:
                self.sends.spend(user_id, sent)
                return thread.run
        # A run another process is streaming is joined from its start, as the log has it.
        pause = ELSEWHERE_POLL_SECONDS
        while thread.run is None and await self.joiner.runs_elsewhere(thread_id):
            # One that follows the run already gets the snapshot once it has ended: a second
            # RUN_STARTED inside the run would break its stream.
            try:
                if (
                    subscriber not in thread.watchers
                    and (joined := await self.joiner.join_elsewhere(thread, subscriber)) is not None
                ):
                    self.sends.spend(user_id, joined)
                    return None
            except QuarantinedThreadError:
                self.forget_if_unused(thread)
                raise quarantined(thread_id) from None
            # Its start is not committed yet, or it has just ended: look again shortly.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cluster.released(thread_id), pause)
            pause = min(pause * 2, ELSEWHERE_POLL_MAX_SECONDS)
            thread = await self.thread(user_id, thread_id)  # it may have been let go meanwhile
        while True:
            # What the thread runs as it is read. From the look at the run after the reads
            # to the join (or the watch) nothing may wait: a run that ended meanwhile
            # would be joined after its RUN_FINISHED went out, one begun meanwhile watched
            # from its middle.
            run = thread.run
            try:
                head = await self._head(thread)
                page, session = await self.engine.thread_view(
                    user_id, thread_id, self.snapshot_bytes
                )
                tree = await self.engine.branches(user_id, thread_id)
            except QuarantinedThreadError:
                self.forget_if_unused(thread)
                raise quarantined(thread_id) from None
            if self.threads.get(thread_id) is not thread:
                # Let go meanwhile (its run ended, nobody watched): watched, it would be
                # sent nothing of the thread's next run, which the hub holds anew.
                thread = await self.thread(user_id, thread_id)
                continue
            if thread.run is not run:
                continue  # a run ended or began during the reads, which may miss its end
            if run is not None and run.translator.phase is Phase.NEW:
                # Still being planned: join once it has started, or find the thread idle.
                await asyncio.sleep(PLANNING_POLL_SECONDS)
                continue
            if run is not None and (run.ended or subscriber in thread.watchers):
                # Its last events wait on a commit; the thread is idle once they are out.
                # Or the subscriber follows it live already: a second RUN_STARTED inside
                # the run would break its stream, so the snapshot comes once it has ended.
                await run.done.wait()
                continue
            if run is None or run.last_event_id in (None, page.latest):
                break
            # The run has streamed an event the read did not find yet: its write waits on
            # a commit. Read again once it had the chance (an in-memory store reads inline,
            # so a loop without a pause would keep the commit from ever happening).
            await asyncio.sleep(PLANNING_POLL_SECONDS)
        snapshot = thread_snapshot(thread_id, page, session, tree)
        self.sends.spend(user_id, encoded_size(snapshot))
        if run is None:
            head = thread.head if thread.head is not None else head
            thread.watch(subscriber)
            for event in idle_view(thread_id, snapshot, session, subscriber.client, self.planner):
                subscriber.deliver(eventlog.numbered(event, head))
            thread.positions[subscriber] = head  # what another process logs next follows
            self.followers.heard(thread, thread.heard)
            return None
        catch_up, executes = run_view(run, snapshot, subscriber.client)
        # What it shows is the run as of the last number given out, in the outbox before it.
        shows = thread.head or 0
        run.join(subscriber, [eventlog.numbered(e, shows) for e in catch_up], executes=executes)
        return run

    async def _head(self, thread: Thread) -> int:
        """The number of the last frame of the thread's log, read if nobody numbered one yet."""
        if thread.head is not None:
            return thread.head
        return await self.engine.log_head(thread.user_id, thread.thread_id)

    async def rejoin(
        self, user_id: str, duplicate: Duplicate, subscriber: Subscriber, *, started: bool
    ) -> Run | None:
        """Answers an input sent again (``gateway.hub.dedupe``), which does not run: a
        RUN_DEDUPED notice naming its run (in that run, which it ends, if ``started``: its
        RUN_STARTED went out as it was admitted; else in a run of its own), then the thread
        as a reattach without a cursor shows it, and the run in progress live (that run,
        if it is going). Returns the run it now follows, as ``reattach`` does."""
        dedupe.noted(duplicate, self.metrics)
        for event in dedupe.told(duplicate, started=started):
            subscriber.deliver(event)
        return await self.reattach(user_id, duplicate.thread_id, subscriber)

    async def earlier(
        self, user_id: str, thread_id: str, before: int | None, limit: int | None = None
    ) -> ThreadPage:
        """The messages of a thread before a snapshot's (or an earlier page's) first one;
        with no ``before``, its latest part, as a reattach's snapshot has it; ``limit``: of
        at most that many events. Charged to ``sends``, as a reattach's snapshot is."""
        self.sends.check(user_id)
        owner = await self.owner(thread_id)
        if owner is None and before is None:
            # A thread not begun yet has no messages, as a reattach to it shows.
            return ThreadPage([], None, None)
        if owner is None:
            raise p.GatewayError(p.ErrorCode.VALIDATION_ERROR, f"There is no thread {thread_id!r}.")
        check_owner(owner, user_id, thread_id)
        try:
            page = await self.engine.thread_page(
                user_id, thread_id, max_bytes=self.snapshot_bytes, before=before, limit=limit
            )
        except QuarantinedThreadError:
            raise quarantined(thread_id) from None
        self.sends.spend(user_id, len(msgspec.json.encode(page.messages)))
        return page
