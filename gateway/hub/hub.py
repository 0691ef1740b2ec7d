"""Threads and runs: one active run per thread, pauses, resume, cancel, reattach, fan-out.

The Hub plans and drives runs. A door's input claims its thread; planning reads what the
input brings and makes it a message for ADK (a new turn, or the answers that resume the
paused invocation); driving streams ADK's events through the translator to the run's
subscribers. Its parts live beside it, each with its share of the theory of operation:

    gateway.threads   a thread's life as one table (``TRANSITIONS``), the calls it waits on
    gateway.inputs    reading an input: a new turn, a browser's results, approval answers
    gateway.runs      threads and runs in memory; a client tool's live calls reach only the
                      run's executor, every other event all of the thread's watchers
    gateway.outbox    a run's deliveries in order, each held until its write commits, so
                      nothing a client is sent is lost in a crash
    gateway.eventlog  every event a run emits numbered in its thread's log; a reattach
                      with the last number a client saw replays what came after
    gateway.notices   notices, and events outside any run sent as a run of their own
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import time
import urllib.parse
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import msgspec
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import types

from gateway import logs
from gateway import wire as p
from gateway.a2ui import ACTION_ACTIVITY
from gateway.a2ui.actions import ACTION_KEY, action_content, check_action
from gateway.a2ui.catalogs import CAPABILITIES, ClientCatalogs, client_catalogs
from gateway.a2ui.surfaces import Surfaces
from gateway.adk import approvals
from gateway.adk.engine import CONFIRMATION_CALL, Engine
from gateway.audit.log import AuditLog
from gateway.cluster import Cluster, SingleNode
from gateway.context import DEFAULT_CONTEXT_ALLOW, allowed_context, event_metadata
from gateway.hub import eventlog
from gateway.hub.busy import WAITING_PER_THREAD, Busy, in_progress, queue_full, requested
from gateway.hub.following import Followers
from gateway.hub.inputs import NewTurn, read_input, starts_turn
from gateway.hub.limits import Quota, RunSlots
from gateway.hub.open_calls import OpenCall, answered_calls, open_calls
from gateway.hub.outbox import Commit
from gateway.hub.runs import Run
from gateway.hub.states import Trigger, thread_state, transition
from gateway.hub.takeover import READ_BACK, closing_frames
from gateway.hub.threads import Subscriber, Thread
from gateway.models.calls import MODEL_FAILED, FailedCall, Stall
from gateway.store import QuarantinedThreadError, StoreError, ThreadPage, cut_off
from gateway.store.cut_off import Ending, cut_off_reply
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.leases import DeadLease
from gateway.tools.client import ClientTool
from gateway.tools.declarations import DeclarationLog, declared_client_tools
from gateway.translate import history
from gateway.translate.translator import AgentFailure, Phase, RunTranslator, dump_json
from gateway.wire.notices import standalone

log = logging.getLogger(__name__)

# Where a MESSAGES_SNAPSHOT says when each message was stored ({messageId: ms since the
# epoch}, in its metadata): AG-UI messages carry no time, and a reloaded page shows one.
MESSAGE_TIMES = "gateway.times"
# How often a reattach looks again at a run that is still being planned.
PLANNING_POLL_SECONDS = 0.002
# How often a reattach looks again for the start of a run another process holds the lease for.
ELSEWHERE_POLL_SECONDS = 0.02
ELSEWHERE_POLL_MAX_SECONDS = 1.0
# How long ADK gets to seal a cancelled invocation before its task is cancelled outright.
CANCEL_GRACE_SECONDS = 0.5
# How long a run in progress at shutdown may take to finish before it is cancelled.
SHUTDOWN_GRACE_SECONDS = 2.0


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run does: the message for ADK (None: nothing to resume yet) and its context."""

    message: types.Content | None
    metadata: dict[str, Any]
    client_tools: dict[str, ClientTool]
    # The thread as planning read it, handed to ADK; None: ADK reads it itself.
    session: Session | None
    notices: list[p.Event] = dataclasses.field(default_factory=list)
    # With nothing to resume: the browser calls still unanswered, by id, for the outcome.
    waiting: dict[str, str] = dataclasses.field(default_factory=dict)
    # The browser's results, for the thread's other connections.
    results: list[p.ToolCallResult] = dataclasses.field(default_factory=list)
    # The user's message that starts the turn, for the thread's other connections.
    said: NewTurn | None = None
    # The thread's state, for a client that shares state: its deltas apply to this.
    state: p.StateSnapshot | None = None
    # What the client renders of A2UI (None: nothing), and the thread's surfaces if planning
    # read them (a press is checked against them); the run's tools show surfaces by these.
    catalogs: ClientCatalogs | None = None
    surfaces: Surfaces | None = None


def _iso(timestamp: float) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_owner(owner: str, user_id: str, thread_id: str) -> None:
    if owner != user_id:
        raise p.GatewayError(
            p.ErrorCode.ACCESS_DENIED,
            f"Thread {thread_id!r} belongs to another user; start a new thread.",
        )


def _quarantined(thread_id: str) -> p.GatewayError:
    """What the owner of a thread the store quarantined is told; the log names the row."""
    return p.GatewayError(
        p.ErrorCode.INTERNAL_ERROR,
        f"Thread {thread_id!r} cannot be loaded: part of its stored history is damaged, so it "
        "was set aside for an operator to look at. Start a new thread to go on.",
    )


class Hub:
    def __init__(
        self,
        engine: Engine,
        *,
        client_tool_timeout: float = 120.0,
        approval_timeout: float = 900.0,
        audit: AuditLog | None = None,
        context_allow: frozenset[str] = DEFAULT_CONTEXT_ALLOW,
        slots: RunSlots | None = None,
        snapshot_bytes: int | None = None,
        cursor_bytes: int = 1 << 20,
        quota: Quota | None = None,
        model_timeout: float = 120.0,
        busy_policy: Busy = Busy.INTERRUPT,
        cluster: Cluster | None = None,
    ) -> None:
        self.engine = engine
        # The processes this one runs threads with; on its own, a cluster of one.
        self.cluster: Cluster = cluster or SingleNode()
        # What an input on a thread with a run going meets, unless it asks for another.
        self.busy_policy = busy_policy
        # Seconds a model call may send nothing before its run is stopped.
        self.model_timeout = model_timeout
        self.quota = quota or Quota()
        # How much of a thread a reattach sends at most; older messages are paged in.
        self.snapshot_bytes = snapshot_bytes
        # How much of each thread's event log is kept for reattach by cursor.
        self.cursor_bytes = cursor_bytes
        # Runs in progress across all threads; unlimited unless the caller sets a cap.
        self.slots = slots or RunSlots(0, 0.0)
        self.audit = audit
        self.context_allow = context_allow
        self.client_tool_timeout = client_tool_timeout
        self.approval_timeout = approval_timeout
        self.threads: dict[str, Thread] = {}
        self.status_listeners: list[Callable[[bool], None]] = []
        self.declarations = DeclarationLog()
        self.followers = Followers(self._read_log)
        # Threads whose dead holder's run this process is closing, done when it has.
        self._taking_over: dict[str, asyncio.Future[None]] = {}
        # Of those, the ones a cancel or a new message reached while they closed: the model
        # is not asked again for the cut-off reply, which nobody wants any more.
        self._takeovers_stopped: set[str] = set()
        self._running = 0
        # Set by stop(): from then on no browser call starts waiting on a timer.
        self._stopping = False

    @property
    def busy(self) -> bool:
        return self._running > 0

    # --- the doors' verbs ----------------------------------------------------------------

    async def start(
        self, user_id: str, run_input: p.RunAgentInput, executor: Subscriber | None
    ) -> Run:
        """Claims the thread and starts the run; raises GatewayError before any event.

        On a thread with a run going, the input's busy policy (``gateway.hub.busy``) decides:
        refused, or it waits its turn, first stopping the run for ``interrupt``.
        """
        thread_id = run_input.thread_id
        policy = requested(run_input, self.busy_policy)
        while True:
            if (known := self.threads.get(thread_id)) is not None:
                # Refused without a read: another user's thread.
                _check_owner(known.user_id, user_id, thread_id)
                if known.run is not None or known.waiting:
                    return await self._start_after_run(known, policy, user_id, run_input, executor)
            try:
                return await self._start(user_id, run_input, executor, policy)
            except _Claimed:
                continue
            except _HeldElsewhere:
                held = await self._thread(user_id, thread_id)  # refused if not the user's
                return await self._start_after_run(held, policy, user_id, run_input, executor)

    async def _start_after_run(
        self,
        thread: Thread,
        policy: Busy,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
    ) -> Run:
        """Starts the run once the thread's runs, and the inputs waiting before it, are done;
        a run on another process is waited for (and stopped, to interrupt it) the same way."""
        if policy is Busy.REJECT:
            raise in_progress(thread.thread_id)
        if thread.waiting >= WAITING_PER_THREAD:
            raise queue_full(thread.thread_id)
        interrupts = policy is Busy.INTERRUPT and starts_turn(run_input)
        thread.waiting += 1
        try:
            async with thread.turns:  # first come, first served
                while True:
                    while (running := thread.run) is not None:
                        if interrupts and self.stop_run(running):
                            log.info("a new message stops %s", running)
                        await running.done.wait()
                    try:
                        return await self._start(user_id, run_input, executor, policy)
                    except _Claimed:
                        continue
                    except _HeldElsewhere:
                        if interrupts and await self.cluster.cancel(thread.thread_id, user_id):
                            log.info(
                                "a new message stops the run of thread %s elsewhere",
                                thread.thread_id,
                            )
                            interrupts = False  # once: its holder stops it, then releases
                        await self.cluster.released(thread.thread_id)
        finally:
            thread.waiting -= 1
            self._forget_if_unused(thread)

    async def _start(
        self, user_id: str, run_input: p.RunAgentInput, executor: Subscriber | None, policy: Busy
    ) -> Run:
        thread_id = run_input.thread_id
        await self.slots.take()
        leased = False
        try:
            # The lease first: the read after it sees all a run elsewhere stored.
            leased = await self._lease(thread_id, user_id, run_input.run_id)
            if not leased:
                raise in_progress(thread_id) if policy is Busy.REJECT else _HeldElsewhere()
            opened = await self.engine.open_thread(user_id, thread_id)
            _check_owner(opened.owner, user_id, thread_id)
            assert opened.session is not None
            thread = self.threads.setdefault(thread_id, Thread(thread_id, user_id))
            # Again: a run may have claimed it during the read. One that ran its course
            # meanwhile cannot have: its writes queue behind the read, which saw all it stored.
            if thread.run is not None:
                raise in_progress(thread_id) if policy is Busy.REJECT else _Claimed()
            if thread.head is None:
                thread.head = opened.log_head
        except BaseException as error:
            self.slots.give_back()
            if leased:
                self.cluster.release(thread_id)
            if isinstance(error, QuarantinedThreadError):
                raise _quarantined(thread_id) from None
            raise
        run = self._claim(thread, run_input.run_id, executor, holds_slot=True, leased=True)
        try:
            self.quota.check(
                opened.usage, new_thread=opened.created, new_turn=starts_turn(run_input)
            )
            plan = await self._plan(run, run_input, opened.session)
            if run_input.state not in (None, {}):
                shared = p.StateSnapshot(snapshot=history.state_snapshot(opened.session))
                plan = dataclasses.replace(plan, state=shared)
        except BaseException:
            try:
                if opened.created:  # a request refused leaves no empty thread behind
                    await self.engine.forget_thread(user_id, thread_id)
            finally:
                self._finish(run)
            raise
        if executor is not None:
            thread.watch(executor)
        run.task = asyncio.create_task(self._drive(run, plan), name=f"run {run.run_id}")
        return run

    def finish_cut_off(self, user_id: str, thread_id: str, *, leased: bool = False) -> None:
        """Asks the model again for the reply a restart cut off after answers reached it
        (``SessionService.unanswered``), so the thread ends saying what the browser did.

        The run is the thread's one run, with no executor and no client tools: a reattach
        follows it live, and the model cannot ask the browser for anything again.
        ``leased``: the caller took the thread's lease, and the run releases it.
        """
        thread = self.threads.setdefault(thread_id, Thread(thread_id, user_id))
        if thread.run is not None:
            if leased:
                self.cluster.release(thread_id)
            return
        run_id = f"{cut_off.FINISHING}{uuid.uuid4().hex[:12]}"
        run = self._claim(thread, run_id, None, leased=leased)
        log.info("thread %s: asking again for the reply a restart cut off", thread_id)
        ask = types.Content(role="user", parts=[types.Part(text=cut_off.RESTARTED)])
        metadata = {"runId": run.run_id, "context": {}}
        run.task = asyncio.create_task(self._drive(run, Plan(ask, metadata, {}, None)))

    async def cancel(self, user_id: str, thread_id: str, run_id: str | None = None) -> bool:
        """Stops the thread's run (the run ``run_id`` only, if named), here or on the
        process that runs it; False when there was nothing of this user's to stop."""
        thread = self.threads.get(thread_id)
        if thread is None or thread.run is None:
            try:
                return await self.cluster.cancel(thread_id, user_id, run_id)
            except StoreError:
                raise _cluster_unreachable() from None
        if thread.user_id != user_id or run_id not in (None, thread.run.run_id):
            return False
        thread.run.abort.set()
        return True

    def stop_run(self, run: Run) -> bool:
        """Stops a run as a cancel does (its client left, a new message interrupts it);
        False when it had ended already (or paused: its stream was over), or was stopping."""
        if run.thread.run is not run or run.ended or run.abort.is_set():
            return False
        run.abort.set()
        return True

    async def stop(self, grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Stops the runs in progress before the store closes, so none fails on a closed
        store: each has ``grace`` seconds to finish; the rest stop where they are and keep
        what they streamed, which the next start closes as interrupted, as after a crash.
        Calls waiting on a browser stop waiting here: the store would be closed when their
        time came (they stay open in the thread), also those of runs that pause in the grace."""
        self._stopping = True
        for thread in self.threads.values():
            if thread.expiry is not None:
                thread.expiry.cancel()
                thread.expiry = None
        tasks = [
            thread.run.task
            for thread in self.threads.values()
            if thread.run is not None and thread.run.task is not None
        ]
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=grace)
        if late:
            log.info("shutting down: %d runs still in progress stop where they are", len(late))
            for thread in self.threads.values():
                if (run := thread.run) is not None and run.task in late:
                    # Its lease stays: the process that takes it over closes the run.
                    run.leased, run.release = False, None
            for task in late:
                task.cancel()
            await asyncio.wait(late, timeout=grace)

    async def reattach(
        self, user_id: str, thread_id: str, subscriber: Subscriber, after: int | None = None
    ) -> Run | None:
        """Sends the thread as snapshots, or with ``after`` (the last number of the thread's
        log the subscriber saw) the events after it when the log can answer that; returns
        the run in progress it now follows live."""
        thread = await self._thread(user_id, thread_id)
        replayed = after is not None and subscriber not in thread.watchers
        if replayed and await self._replay(thread, subscriber, after or 0):
            return thread.run
        # A run another process is streaming is joined from its start, as the log has it.
        pause = ELSEWHERE_POLL_SECONDS
        while thread.run is None and await self._runs_elsewhere(thread_id):
            # One that follows the run already gets the snapshot once it has ended: a second
            # RUN_STARTED inside the run would break its stream.
            try:
                if subscriber not in thread.watchers and await self._join_elsewhere(
                    thread, subscriber
                ):
                    return None
            except QuarantinedThreadError:
                self._forget_if_unused(thread)
                raise _quarantined(thread_id) from None
            # Its start is not committed yet, or it has just ended: look again shortly.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cluster.released(thread_id), pause)
            pause = min(pause * 2, ELSEWHERE_POLL_MAX_SECONDS)
            thread = await self._thread(user_id, thread_id)  # it may have been let go meanwhile
        head = await self._head(thread)
        while True:
            try:
                page, session = await self.engine.thread_view(
                    user_id, thread_id, self.snapshot_bytes
                )
            except QuarantinedThreadError:
                self._forget_if_unused(thread)
                raise _quarantined(thread_id) from None
            run = thread.run
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
        snapshot = _snapshot(thread_id, page, session)
        if run is None:
            head = thread.head if thread.head is not None else head
            thread.watch(subscriber)
            open_items = open_calls(session)
            own = [
                call_id
                for call_id, call in open_items.items()
                if subscriber.client is not None and call.client == subscriber.client
            ]
            if own:
                snapshot.append(_executes(own))
            for event in standalone(thread_id, snapshot):
                if isinstance(event, p.RunFinished):
                    event.outcome = self._waiting_for(open_items)
                subscriber.deliver(eventlog.numbered(event, head))
            thread.positions[subscriber] = head  # what another process logs next follows
            self.followers.heard(thread, thread.heard)
            return None
        started = p.RunStarted(
            thread_id=thread_id, run_id=run.run_id, protocol_version=p.PROTOCOL_VERSION
        )
        # The client instance that started the run is back: it executes the run's calls.
        executes = subscriber.client is not None and subscriber.client == run.owner
        if executes:
            snapshot.append(_executes(sorted(run.translator.client_calls)))
        catch_up = [started, *snapshot, *run.translator.reopen()]
        # What it shows is the run as of the last number given out, in the outbox before it.
        shows = thread.head or 0
        run.join(subscriber, [eventlog.numbered(e, shows) for e in catch_up], executes=executes)
        return run

    async def _replay(self, thread: Thread, subscriber: Subscriber, after: int) -> bool:
        """Sends the events of the thread's log after ``after``, then makes the subscriber
        a watcher; False, sending nothing, when the log cannot answer that cursor.

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
            log = await self.engine.frames_after(
                thread.user_id, thread.thread_id, max(after - 1, 0)
            )
            running = thread.run.first_seq if thread.run is not None else None
            events = eventlog.replay(log, after, subscriber.client, running)
            if events is None and thread.run is None and not thread.replaying[subscriber]:
                # Cut off by a process that died just now: its end is logged, then replayed;
                # or another process runs it (or is logging its end): followed from the log.
                if await self._take_over(thread.user_id, thread.thread_id):
                    log = await self.engine.frames_after(
                        thread.user_id, thread.thread_id, max(after - 1, 0)
                    )
                    events = eventlog.replay(log, after, subscriber.client, None)
                elif await self._runs_elsewhere(thread.thread_id):
                    elsewhere = eventlog.open_run(log)
                    events = eventlog.replay(log, after, subscriber.client, elsewhere)
        finally:
            held = thread.replaying.pop(subscriber, [])
            if events is None and subscriber in thread.watchers:  # it may have left meanwhile
                thread.watchers.remove(subscriber)
                if run is not None and run.executor is subscriber:
                    run.executor = previous
        if events is None:
            return False
        for event in events:
            subscriber.deliver(event)
        last = log.frames[-1].seq if log.frames else after
        for event in eventlog.after_replay(held, last):
            subscriber.deliver(event)
        if thread.run is None:  # run elsewhere, or none: it follows the log from here
            thread.positions[subscriber] = last
            self.followers.heard(thread, log.head)
        return True

    async def _join_elsewhere(self, thread: Thread, subscriber: Subscriber) -> bool:
        """Joins the run another process is streaming, for a subscriber with no cursor: the
        run's RUN_STARTED, the thread as it was before the run, the run's frames so far,
        then live from the log; False, sending nothing, when the log shows no run open (its
        start is not committed yet, or it has just ended).

        The snapshot leaves out every stored event of the run (``run_start``), which the
        run's frames bring, so nothing shows twice however far the store is ahead of the
        log. As in ``_replay``, the subscriber watches from before the reads.
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
                snapshot = _snapshot(thread.thread_id, page, session)
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
            return False
        for event in events:
            subscriber.deliver(event)
        for event in eventlog.after_replay(held, log.head):
            subscriber.deliver(event)
        if thread.run is None:  # it follows the log from here
            thread.positions[subscriber] = log.head
            self.followers.heard(thread, log.head)
        return True

    async def _runs_elsewhere(self, thread_id: str) -> bool:
        try:
            return await self.cluster.runs_elsewhere(thread_id)
        except StoreError:
            return False  # as if cut off: the snapshot is sent, which is never wrong

    async def _head(self, thread: Thread) -> int:
        """The number of the last frame of the thread's log, read if nobody numbered one yet."""
        if thread.head is not None:
            return thread.head
        return await self.engine.log_head(thread.user_id, thread.thread_id)

    async def earlier(
        self, user_id: str, thread_id: str, before: int | None, limit: int | None = None
    ) -> ThreadPage:
        """The messages of a thread before a snapshot's (or an earlier page's) first one;
        with no ``before``, its latest part, as a reattach's snapshot has it; ``limit``: of
        at most that many events."""
        owner = await self._owner(thread_id)
        if owner is None and before is None:
            # A thread not begun yet has no messages, as a reattach to it shows.
            return ThreadPage([], None, None)
        if owner is None:
            raise p.GatewayError(p.ErrorCode.VALIDATION_ERROR, f"There is no thread {thread_id!r}.")
        _check_owner(owner, user_id, thread_id)
        try:
            return await self.engine.thread_page(
                user_id, thread_id, max_bytes=self.snapshot_bytes, before=before, limit=limit
            )
        except QuarantinedThreadError:
            raise _quarantined(thread_id) from None

    def _waiting_for(self, open_items: dict[str, OpenCall]) -> p.Outcome:
        """How an idle thread's last run ended: open approvals, or open browser calls."""
        approvals = [self._interrupt(call) for call in open_items.values() if call.is_approval]
        if approvals:
            return p.InterruptOutcome(interrupts=approvals)
        return p.SuccessOutcome(pending_tool_call_ids=list(open_items) or None)

    def unwatch(self, subscriber: Subscriber, thread_id: str) -> None:
        thread = self.threads.get(thread_id)
        if thread is not None and subscriber in thread.watchers:
            thread.watchers.remove(subscriber)
            thread.positions.pop(subscriber, None)
            self._forget_if_unused(thread)

    def leave(self, subscriber: Subscriber) -> None:
        """A connection closed: its runs go on, their events are stored, nobody is sent them."""
        for thread in list(self.threads.values()):
            if subscriber in thread.watchers:
                thread.watchers.remove(subscriber)
            thread.positions.pop(subscriber, None)
            if thread.run is not None:
                if thread.run.executor is subscriber:
                    thread.run.executor = None
                if subscriber in thread.run.joining:
                    thread.run.joining.remove(subscriber)
            self._forget_if_unused(thread)

    # --- the cluster ---------------------------------------------------------------------

    async def _lease(self, thread_id: str, user_id: str, run_id: str) -> bool:
        """Takes the thread's lease for a run of this process; False while another process
        holds it. A lease taken from a dead holder first closes the run it cut off. Each
        lease taken is released once (``Cluster.release``), by the run or the caller."""
        if (closing := self._taking_over.get(thread_id)) is not None:
            # This process holds the lease to close a dead holder's run: taking it as its
            # own would start a run beside that close.
            await asyncio.shield(closing)
        try:
            taken = await self.cluster.take(thread_id, user_id, run_id)
        except StoreError:
            raise _cluster_unreachable() from None
        if taken is None:
            return False
        if (thread := self.threads.get(thread_id)) is not None and thread.run is None:
            # Another process may have run it since: its log's head is read again.
            thread.head = None
        if taken.from_dead is not None:
            try:
                await self._close_cut_off(user_id, thread_id, taken.from_dead)
            except BaseException:
                self.cluster.release(thread_id)
                raise
        return True

    async def _close_cut_off(self, user_id: str, thread_id: str, holder: str) -> bool:
        """Closes the run a dead process cut off on the thread, as a restart closes its
        own; True when the model is to be asked again for its reply."""
        log.warning("thread %s: its process %s died mid-run; closing that run", thread_id, holder)
        try:
            ask_again = await self.engine.close_cut_off(thread_id)
        except QuarantinedThreadError:
            raise _quarantined(thread_id) from None
        await self._end_logged_run(user_id, thread_id)
        return ask_again

    async def _end_logged_run(self, user_id: str, thread_id: str) -> None:
        """Writes the end of the cut-off run into the thread's log, for every watcher."""
        head = await self.engine.log_head(user_id, thread_id)
        if head == 0:
            return
        tail = await self.engine.frames_after(user_id, thread_id, max(head - READ_BACK, 0))
        if frames := closing_frames(tail):
            await self.engine.log_frames(user_id, thread_id, frames)
        if (thread := self.threads.get(thread_id)) is not None and thread.run is None:
            thread.head = None  # read again: the taker wrote after what it had given out

    async def take_over(self, lease: DeadLease) -> None:
        """The cluster found a thread whose process died mid-run: closes that run."""
        await self._take_over(lease.user_id, lease.thread_id)

    async def _take_over(self, user_id: str, thread_id: str) -> bool:
        """Takes the thread's lease if its holder died, closes the run it cut off and lets
        the thread go, unless the model is to reply again, which runs here; False when
        there was nothing to close, or another process holds the thread."""
        if (closing := self._taking_over.get(thread_id)) is not None:
            await asyncio.shield(closing)  # this process is closing it already
            return True
        closing = self._taking_over[thread_id] = asyncio.get_running_loop().create_future()
        try:
            taken = await self.cluster.take(thread_id, user_id, "takeover")
            if taken is None:  # another process was first, or runs it
                return False
            if taken.from_dead is None:
                self.cluster.release(thread_id)
                return False
            try:
                ask_again = await self._close_cut_off(user_id, thread_id, taken.from_dead)
            except BaseException:
                self.cluster.release(thread_id)
                raise
            if ask_again and thread_id not in self._takeovers_stopped:
                self.finish_cut_off(user_id, thread_id, leased=True)
            else:
                self.cluster.release(thread_id)
            return True
        finally:
            del self._taking_over[thread_id]
            self._takeovers_stopped.discard(thread_id)
            closing.set_result(None)

    def cancel_requested(self, thread_id: str, user_id: str, run_id: str | None = None) -> None:
        """A cancel sent to another process for this process's run (``Cluster.cancel``;
        ``run_id`` only, if named), or for the cut-off run it is closing, whose reply it
        then does not ask for again."""
        thread = self.threads.get(thread_id)
        if thread is not None and thread.run is not None and thread.user_id == user_id:
            if run_id not in (None, thread.run.run_id):
                return
            log.info("a cancel sent to another process stops %s", thread.run)
            thread.run.abort.set()
        elif thread_id in self._taking_over:
            log.info("a cancel sent to another process stops the takeover of %s", thread_id)
            self._takeovers_stopped.add(thread_id)

    def committed(self, thread_id: str, seq: int) -> None:
        """A thread's log grew, on whichever process runs it: this process's watchers of
        it are sent what they have not seen (``gateway.hub.following``)."""
        if (thread := self.threads.get(thread_id)) is not None:
            self.followers.heard(thread, seq)

    async def _read_log(self, thread: Thread, after: int) -> FrameLog:
        return await self.engine.frames_after(thread.user_id, thread.thread_id, after)

    def _release(self, run: Run) -> Commit:
        run.leased = False
        run.release = None
        return self.cluster.release(run.thread.thread_id)

    def lost(self) -> None:
        """This process may have lost its leases: its runs stop, as a cancel stops them."""
        for thread in self.threads.values():
            if thread.run is not None and thread.run.leased:
                self.stop_run(thread.run)

    # --- planning a run ------------------------------------------------------------------

    async def _thread(self, user_id: str, thread_id: str) -> Thread:
        owner = await self._owner(thread_id)
        if owner is not None:
            _check_owner(owner, user_id, thread_id)
        thread = self.threads.get(thread_id)
        return thread or self.threads.setdefault(thread_id, Thread(thread_id, user_id))

    async def _owner(self, thread_id: str) -> str | None:
        """Whose a thread is, without a read if a run or watcher has it in memory."""
        thread = self.threads.get(thread_id)
        return thread.user_id if thread else await self.engine.thread_owner(thread_id)

    def _translator(self, thread: Thread, run_id: str) -> RunTranslator:
        return RunTranslator(
            thread.thread_id,
            run_id,
            interrupt_for=lambda call_id, args, asked_at: self._interrupt(
                OpenCall(call_id, CONFIRMATION_CALL, "", asked_at, args)
            ),
            subagents=self.engine.subagents(),
            usage=partial(self.engine.take_usage, run_id),
        )

    def _interrupt(self, call: OpenCall) -> p.Interrupt:
        original = call.approved_call()
        name = str(original.get("name", ""))
        args = original.get("args") or {}
        asked = call.asked_confirmation()
        return p.Interrupt(
            id=call.call_id,
            reason="approval",
            message=approvals.interrupt_message(
                name, args, str(asked.get("hint") or ""), self.engine.catalog
            ),
            tool_call_id=str(original.get("id", "")) or None,
            response_schema=approvals.response_schema(asked.get("payload")),
            expires_at=_iso(call.asked_at + self.approval_timeout),
            metadata={"tool": name, "arguments": args},
        )

    async def _plan(self, run: Run, run_input: p.RunAgentInput, session: Session) -> Plan:
        thread = run.thread
        open_items = open_calls(session)
        request = read_input(
            run_input, open_items, answered_calls(session), self.approval_timeout, time.time()
        )
        catalogs = client_catalogs(run_input.context)
        metadata: dict[str, Any] = {
            "runId": run.run_id,
            **_owned_by(run),
            # Only allowed entries reach the policy and the model; the rest are logged.
            "context": allowed_context(
                {
                    entry.description: entry.value
                    for entry in run_input.context
                    if entry.description != CAPABILITIES  # the gateway's to read
                },
                self.context_allow,
            ),
        }
        client_tools = declared_client_tools(
            run_input.tools, self.engine.catalog, self.engine.server_tools
        )
        if self.engine.catalog is None:
            self.declarations.note(run.executor, client_tools)
        state = thread_state(open_items)
        if isinstance(request, NewTurn):
            surfaces = None
            if request.action is not None:  # refused before anything is stored
                surfaces = await self.engine.surfaces(thread.user_id, thread.thread_id)
                check_action(request.action, surfaces)
                metadata[ACTION_KEY] = msgspec.to_builtins(request.action)
            transition(state, Trigger.USER_MESSAGE)
            if open_items:
                await self._supersede(thread, run.run_id, session, open_items)
            thread.early.clear()
            thread.early_messages.clear()
            metadata["messageId"] = request.message_id
            content = types.Content(role="user", parts=[types.Part(text=request.text)])
            return Plan(
                content,
                metadata,
                client_tools,
                session,
                said=request,
                catalogs=catalogs,
                surfaces=surfaces,
            )
        thread.early.update(request.responses)
        thread.early_messages.update(request.tool_messages)
        answered = {cid: r for cid, r in thread.early.items() if cid in open_items}
        if not answered or any(call_id not in answered for call_id in open_items):
            if answered:
                transition(state, Trigger.SOME_ANSWERED)
            waiting = {
                call_id: call.name
                for call_id, call in open_items.items()
                if call_id not in thread.early and not call.is_approval
            }
            return Plan(
                None, metadata, client_tools, session, notices=request.notices, waiting=waiting
            )
        transition(state, Trigger.ALL_ANSWERED)
        self._audit_answers(thread, run.run_id, open_items, answered)
        messages = dict(thread.early_messages)
        thread.early.clear()
        thread.early_messages.clear()
        metadata["toolMessageIds"] = {cid: m.id for cid, m in messages.items()}
        results = [
            p.ToolCallResult(
                message_id=messages[cid].id,
                tool_call_id=cid,
                content=dump_json(answered[cid]),
                role="tool",
            )
            for cid in open_items
            if cid in messages
        ]
        return Plan(
            _responses(open_items, answered),
            metadata,
            client_tools,
            session,
            notices=request.notices,
            results=results,
            catalogs=catalogs,
        )

    async def _supersede(
        self, thread: Thread, run_id: str, session: Session, open_items: dict[str, OpenCall]
    ) -> None:
        """Closes open calls so a new user message starts from a consistent thread."""
        by_invocation: dict[str, dict[str, dict[str, Any]]] = {}
        for call in open_items.values():
            response = (
                {"confirmed": False, "payload": {"reason": "superseded"}}
                if call.is_approval
                else {"status": "no_result", "reason": "superseded"}
            )
            by_invocation.setdefault(call.invocation_id, {})[call.call_id] = response
        for invocation_id, responses in by_invocation.items():
            calls = {cid: open_items[cid] for cid in responses}
            self._audit_answers(thread, run_id, calls, responses)
            event = AdkEvent(
                author="user", invocation_id=invocation_id, content=_responses(calls, responses)
            )
            await self.engine.append(session, event)

    # --- driving a run -------------------------------------------------------------------

    async def _drive(self, run: Run, plan: Plan) -> None:
        translator = run.translator
        thread = run.thread
        logs.bind(user=thread.user_id, thread=thread.thread_id, run=run.run_id)
        started = time.perf_counter()
        if thread.head is None:
            try:
                thread.head = await self.engine.log_head(thread.user_id, thread.thread_id)
            except StoreError as error:  # the run goes on; a reattach gets the snapshot
                log.warning("%s is not logged: its thread's log cannot be read: %s", run, error)
        await self.followers.catch_up(thread)
        run.emit(translator.start())
        run.emit([plan.state] if plan.state is not None else [])
        run.emit(plan.notices)
        # Observers see the user's message and the browser's results; the executor sent them.
        # A press on a surface no client sends as a message: every watcher is shown it.
        if plan.said is not None and plan.said.action is not None:
            run.emit([_pressed(plan.said)])
        elif plan.said is not None and plan.said.text:
            run.emit(_said(plan.said), observers_only=True)
        run.emit(plan.results, observers_only=True)
        try:
            if plan.message is not None:
                await self._stream(run, plan)
            else:
                # Nothing to resume yet: the run reports what the thread still waits for.
                translator.pending.update(plan.waiting)
            if run.abort.is_set():
                run.emit(translator.cancelled())
            elif translator.interrupts:
                run.emit(translator.interrupted())
            else:
                run.emit(translator.finish())
        except ModelStalled as stalled:
            run.fail(self._stalled(run, stalled.stall))
        except AgentFailure as exc:
            failed = self.engine.take_model_failure(run.run_id)
            if exc.error_code == MODEL_FAILED and failed is not None:
                run.fail(_model_failed(run, failed))
            else:
                run.fail(p.unexpected(f"{run} ({exc})", p.ErrorCode.AGENT_ERROR, traceback=False))
        except QuarantinedThreadError:  # found by a read of the run (ADK's, or a cancel's)
            run.fail(_quarantined(thread.thread_id))
        except (StoreError, StaleSessionError):
            run.fail(p.unexpected(str(run)))
        except Exception:  # the model or a tool raised
            run.fail(p.unexpected(str(run), p.ErrorCode.AGENT_ERROR))
        finally:
            self.engine.forget_model_calls(run.run_id)
            # The thread takes its next run only once this one's events are all out.
            await run.outbox.drained()
            log.info(
                "run %s on thread %s ended in %.0f ms",
                run.run_id,
                thread.thread_id,
                (time.perf_counter() - started) * 1000,
            )
            # Armed before the run lets go of the thread: a thread nobody watches is kept
            # while its calls wait, so the hub's stop and a later input find that timer.
            if translator.pending:
                self._arm_expiry(thread)
            self._trim_log(run)
            self._finish(run)

    async def _stream(self, run: Run, plan: Plan) -> None:
        """Feeds ADK's events through the translator until the run ends or is cancelled."""
        assert plan.message is not None
        events = self.engine.run(
            user_id=run.thread.user_id,
            thread_id=run.thread.thread_id,
            session=plan.session,
            message=plan.message,
            metadata=plan.metadata,
            client_tools=plan.client_tools,
            catalogs=plan.catalogs,
            surfaces=plan.surfaces,
            abort_signal=run.abort,
        )
        # One task per run consumes ADK's stream, so a cancel can stop a slow tool without
        # a task and a wait per event.
        consumer = asyncio.create_task(self._consume(run, events))
        aborted = asyncio.ensure_future(run.abort.wait())
        stalled = asyncio.ensure_future(self.engine.model_stalled(run.run_id, self.model_timeout))
        stall: Stall | None = None
        try:
            await asyncio.wait({consumer, aborted, stalled}, return_when=asyncio.FIRST_COMPLETED)
            if not consumer.done():
                if stalled.done():  # stopped as a cancel is, then told as a failure
                    stall = stalled.result()
                    run.abort.set()
                # Cancelled: ADK seals the invocation if it stops in time; a slow tool that
                # does not is cancelled outright.
                await asyncio.wait({consumer}, timeout=CANCEL_GRACE_SECONDS)
                consumer.cancel()
        except asyncio.CancelledError:  # the hub's stop: ADK's stream stops here too
            consumer.cancel()
            raise
        finally:
            aborted.cancel()
            stalled.cancel()
        if run.abort.is_set():
            await _settle(consumer)
            await self._keep_cut_off_reply(run, Ending.STOPPED if stall is None else Ending.FAILED)
            await self._seal(run)
            if stall is not None:
                raise ModelStalled(stall)
            return
        try:
            await consumer  # a failure of the model or a tool surfaces here
        except Exception:
            await self._keep_cut_off_reply(run, Ending.FAILED)
            raise

    async def _consume(self, run: Run, events: AsyncGenerator[AdkEvent, None]) -> None:
        async with aclosing(events):
            async for event in events:
                if not event.partial:
                    run.last_event_id = event.id
                # After a cancel ADK's sealing events are stored, not streamed.
                out = [] if run.abort.is_set() else run.translator.translate(event)
                run.emit(out, after=self._keep_streamed_text(run, event, out))

    def _stalled(self, run: Run, stall: Stall) -> p.GatewayError:
        log.warning(
            "%s: %s sent nothing for %.1f s (GATEWAY_MODEL_TIMEOUT); the run was stopped",
            run,
            stall.model,
            stall.seconds,
        )
        return p.GatewayError(
            p.ErrorCode.AGENT_ERROR,
            f"The model sent nothing for {self.model_timeout:g} s, so the run was stopped; "
            "try again.",
        )

    def _keep_streamed_text(self, run: Run, event: AdkEvent, out: list[p.Event]) -> Commit | None:
        """Stores the text so far of a streamed message; returns the commit its chunk awaits."""
        if not event.partial:
            if run.streaming is not None and event.id == run.streaming.id:
                run.streaming = None  # ADK stored the whole message in its place
            return None
        if not any(isinstance(e, p.TextMessageContent) for e in out):
            return None
        run.streaming = event
        return self.engine.save_streamed_text(
            user_id=run.thread.user_id,
            thread_id=run.thread.thread_id,
            invocation_id=event.invocation_id,
            message_id=event.id,
            author=event.author,
            text=run.translator.text_so_far(event.id),
        )

    async def _keep_cut_off_reply(self, run: Run, ending: Ending) -> None:
        """Stores the text so far of the message the run was streaming as its reply, marked
        with how the run ended; the write that stores it drops the streamed text.

        Awaited before the run's last event goes out, so a client that reloads on it finds
        the reply. Should the write fail, the streamed text stays for the restart to close.
        """
        chunk, run.streaming = run.streaming, None
        if chunk is None:
            return
        reply = cut_off_reply(
            message_id=chunk.id,
            invocation_id=chunk.invocation_id,
            author=chunk.author,
            text=run.translator.text_so_far(chunk.id),
            ending=ending,
            # What the final event would have carried: the run's id, the sub-agent's mark.
            metadata=dict(event_metadata(chunk)),
        )
        try:
            session = await self.engine.session(run.thread.user_id, run.thread.thread_id)
            if session is not None:
                # run.last_event_id stays: a reattach that reads the reply waits for the
                # run's end instead of being sent it twice (in the snapshot and re-opened).
                await self.engine.append(session, reply)
        except (StoreError, StaleSessionError) as error:
            log.warning("%s: its %s reply was not stored: %s", run, ending.value, error)

    async def _seal(self, run: Run) -> None:
        """Answers calls a cancel left open, so the next turn starts from a whole history."""
        session = await self.engine.session(run.thread.user_id, run.thread.thread_id)
        if session is None:
            return
        answered = answered_calls(session)
        dangling: dict[str, OpenCall] = {}
        for event in session.events:
            if event.invocation_id and event_metadata(event).get("runId") == run.run_id:
                for call in event.get_function_calls():
                    if call.id and call.id not in answered:
                        dangling[call.id] = OpenCall(
                            call.id, call.name or "", event.invocation_id, event.timestamp, {}
                        )
        if dangling:
            stopped = {"status": "cancelled", "reason": "the user stopped the run"}
            responses = {call_id: stopped for call_id in dangling}
            invocation_id = next(iter(dangling.values())).invocation_id
            await self.engine.append(
                session,
                AdkEvent(
                    author="user",
                    invocation_id=invocation_id,
                    content=_responses(dangling, responses),
                ),
            )

    # --- client tools nobody answers -----------------------------------------------------

    def _arm_expiry(self, thread: Thread) -> None:
        if thread.expiry is not None:
            thread.expiry.cancel()
            thread.expiry = None
        if self._stopping:
            return
        loop = asyncio.get_running_loop()
        thread.expiry = loop.call_later(
            self.client_tool_timeout, lambda: asyncio.ensure_future(self._expire(thread))
        )

    async def _expire(self, thread: Thread) -> None:
        """Answers unanswered browser calls with ``no_result``/``timeout``; the model goes on."""
        thread.expiry = None
        if thread.run is not None:
            return
        run_id = f"expire-{uuid.uuid4().hex[:12]}"
        try:
            # A thread another process runs now was answered there, or times out there.
            if not await self._lease(thread.thread_id, thread.user_id, run_id):
                return
        except p.GatewayError as error:
            log.warning("thread %s: its calls' expiry waits: %s", thread.thread_id, error.message)
            self._arm_expiry(thread)
            return
        try:
            session = await self.engine.session(thread.user_id, thread.thread_id)
        except QuarantinedThreadError:  # logged by the store; nothing can answer its calls
            self.cluster.release(thread.thread_id)
            return
        except BaseException:
            self.cluster.release(thread.thread_id)
            raise
        open_items = {c: call for c, call in open_calls(session).items() if not call.is_approval}
        # A run claimed it during the read (it answers instead), or nothing is open.
        if thread.run is not None or not open_items:
            self.cluster.release(thread.thread_id)
            return
        timeout = {"status": "no_result", "reason": "timeout"}
        responses = {cid: thread.early.get(cid, timeout) for cid in open_items}
        thread.early.clear()
        thread.early_messages.clear()
        run = self._claim(thread, run_id, None, leased=True)
        log.info("thread %s: %d browser calls expired", thread.thread_id, len(open_items))
        self._audit_answers(thread, run.run_id, open_items, responses)
        metadata = {"runId": run.run_id, "context": {}}
        run.task = asyncio.create_task(
            self._drive(run, Plan(_responses(open_items, responses), metadata, {}, None))
        )

    # --- bookkeeping ---------------------------------------------------------------------

    def _audit_answers(
        self,
        thread: Thread,
        run_id: str,
        calls: dict[str, OpenCall],
        responses: dict[str, dict[str, Any]],
    ) -> None:
        """Records what the browser (or a person, for an approval) answered each call."""
        if self.audit is None:
            return
        for call_id, call in calls.items():
            if call_id not in responses:
                continue
            if call.is_approval:
                tool = f"{call.approved_call().get('name', '')} approval"
                args = call.approved_call().get("args") or {}
            else:
                tool, args = call.name, call.args
            self.audit.record_client_result(
                thread.user_id,
                thread.thread_id,
                run_id,
                tool,
                call_id,
                args,
                responses[call_id],
                duration_ms=(time.time() - call.asked_at) * 1000,
            )

    def _log_frames(self, thread: Thread, frames: list[LoggedFrame]) -> Commit:
        return self.engine.log_frames(thread.user_id, thread.thread_id, frames)

    def _trim_log(self, run: Run) -> None:
        """Keeps the newest ``cursor_bytes`` of the thread's log, once its run is over."""
        thread = run.thread
        if thread.head is None:
            return
        try:
            trimmed = self.engine.trim_log(thread.user_id, thread.thread_id, self.cursor_bytes)
        except StoreError:
            return  # closed: the next run's end trims it
        trimmed.add_done_callback(_trim_failed)

    def _claim(
        self,
        thread: Thread,
        run_id: str,
        executor: Subscriber | None,
        *,
        holds_slot: bool = False,
        leased: bool = False,
    ) -> Run:
        """Makes a run the thread's one active run; ``_finish`` undoes it (and releases the
        thread's lease, if ``leased``: the caller took it for this run)."""
        run = Run(thread, run_id, executor, self._translator(thread, run_id), holds_slot)
        run.log = partial(self._log_frames, thread)
        if leased:
            run.leased = True
            run.release = partial(self._release, run)
        thread.run = run
        self._running += 1
        if self._running == 1:
            self._status_changed()
        return run

    def _finish(self, run: Run) -> None:
        thread = run.thread
        if thread.run is run:
            thread.run = None
        if run.leased:  # a run that ended before its last event: before a waiter wakes
            self._release(run)
        run.done.set()
        if run.holds_slot:
            self.slots.give_back()
        self._running -= 1
        if self._running == 0:
            self._status_changed()
        self._forget_if_unused(thread)

    def _forget_if_unused(self, thread: Thread) -> None:
        if (
            thread.run is None
            and not thread.watchers
            and not thread.early
            and not thread.expiry
            and not thread.waiting
        ):
            self.threads.pop(thread.thread_id, None)

    def _status_changed(self) -> None:
        for listener in self.status_listeners:
            listener(self.busy)


HISTORY = "gateway.history"
# Tells a reattached connection that it executes the run: the calls named were made
# before it came, and are its own to execute, or to send the result of again.
EXECUTOR = "gateway.executor"


def _owned_by(run: Run) -> dict[str, str]:
    """The run's metadata naming whose its client calls are to execute, stored with each
    of its events so that it outlives the connection and a restart."""
    return {"client": run.owner} if run.owner else {}


def _executes(call_ids: list[str]) -> p.Custom:
    return p.Custom(name=EXECUTOR, value={"toolCallIds": call_ids})


def _said(turn: NewTurn) -> list[p.Event]:
    return [
        p.TextMessageStart(message_id=turn.message_id, role="user"),
        p.TextMessageContent(message_id=turn.message_id, delta=turn.text),
        p.TextMessageEnd(message_id=turn.message_id),
    ]


def _pressed(turn: NewTurn) -> p.ActivitySnapshot:
    assert turn.action is not None
    return p.ActivitySnapshot(
        message_id=turn.message_id,
        activity_type=ACTION_ACTIVITY,
        content=action_content(msgspec.to_builtins(turn.action)),
        replace=True,
    )


def _snapshot(thread_id: str, page: ThreadPage, session: Session | None) -> list[p.Event]:
    """What a reattach shows of a thread: its messages, where to page in older ones, its
    state."""
    return [
        p.MessagesSnapshot(
            messages=msgspec.convert(page.messages, list[p.Message]),
            metadata={MESSAGE_TIMES: page.times_ms()} if page.times else None,
        ),
        *_earlier_part(thread_id, page),
        p.StateSnapshot(snapshot=history.state_snapshot(session) if session else {}),
    ]


def _earlier_part(thread_id: str, page: ThreadPage) -> list[p.Event]:
    """After a snapshot that leaves older messages out: where to page them in from."""
    if page.earlier is None:
        return []
    query = urllib.parse.urlencode({"threadId": thread_id, "before": page.earlier})
    return [
        p.Custom(
            name=HISTORY,
            value={"earlier": True, "before": page.earlier, "href": f"/history?{query}"},
        )
    ]


class _Claimed(Exception):
    """A run claimed the thread during an input's read: the input waits its turn after all."""


class _HeldElsewhere(Exception):
    """Another process runs the thread: the input waits its turn for the lease."""


def _cluster_unreachable() -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.INTERNAL_ERROR,
        "The gateway cannot reach its database just now; try again in a moment.",
    )


class ModelStalled(Exception):
    """A model call of the run sent nothing for ``GATEWAY_MODEL_TIMEOUT``; the run stopped."""

    def __init__(self, stall: Stall) -> None:
        super().__init__(f"{stall.model} sent nothing for {stall.seconds:.0f} s")
        self.stall = stall


def _model_failed(run: Run, failed: FailedCall) -> p.GatewayError:
    """A provider's failure a user will meet: one log line, and the sentence for the client."""
    log.warning("%s: %s failed: %s", run, failed.model, failed.failure.detail)
    return p.GatewayError(failed.failure.code, failed.failure.sentence)


def _responses(calls: dict[str, OpenCall], responses: dict[str, dict[str, Any]]) -> types.Content:
    """Function responses in call order: the model pairs them with its calls by position."""
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=call.call_id, name=call.name, response=responses[call.call_id]
            )
        )
        for call in calls.values()
        if call.call_id in responses
    ]
    return types.Content(role="user", parts=parts)


def _trim_failed(trimmed: asyncio.Future[object]) -> None:
    # A log left untrimmed is trimmed by the thread's next run; the store logged the outage.
    if not trimmed.cancelled() and trimmed.exception() is not None:
        log.debug("a thread's log was not trimmed: %r", trimmed.exception())


async def _settle(task: asyncio.Future[Any]) -> None:
    try:
        await task
    except (asyncio.CancelledError, StopAsyncIteration):
        pass
    except Exception:
        log.exception("a cancelled run failed while stopping")
