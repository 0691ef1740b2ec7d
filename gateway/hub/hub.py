"""The Hub: one active run per thread, the doors' verbs on threads, and the cluster.

Theory of operation. A door's input is admitted (``gateway.hub.admission``): refused at
once, or acknowledged, then given its turn on the thread, which claims it (``claim``):
in the cluster, the thread's lease (``gateway.cluster``), so only one process runs it;
here, the thread's one run (a live turn's too), until the run lets go of it (``ended``).
Once claimed, the thread is read, the ``Planner`` makes the run's plan
(``gateway.hub.planning``) and the ``Driver`` drives it in a task of its own
(``gateway.hub.driving``), which tells the hub when the run's last events are out. A
cancel reaches the run wherever it runs; a reattach (``gateway.hub.reattaching``)
follows the thread from its log (``gateway.hub.joining``) or is sent snapshots
(``gateway.hub.snapshots``), then the run in progress live.

What else is the hub's: the threads in memory (``threads``, each forgotten once nothing
holds it), the cluster's callbacks (a dead process's run to close, a cancel for a run of
this process, a log that grew elsewhere, leases lost), browser calls nobody answers
(``gateway.hub.expiry``, armed when a run ends waiting on them), and draining and stopping
at shutdown: a draining hub starts no run and takes over no dead process's thread, while
the runs it has go on to their end (``drain``). The package's floor plan is in
``gateway.hub``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import cast

from google.genai import types

from gateway import wire as p
from gateway.adk.engine import CONFIRMATION_CALL, Engine
from gateway.audit.log import AuditLog
from gateway.auth import WARM_UP_USER
from gateway.cluster import Cluster, SingleNode
from gateway.context import DEFAULT_CONTEXT_ALLOW, Caller
from gateway.hub import dedupe
from gateway.hub.admission import Admission, Admitted
from gateway.hub.branches import Branching
from gateway.hub.busy import Busy, in_progress
from gateway.hub.client_state import DEFAULT_RULES, StateRules
from gateway.hub.dedupe import Duplicate
from gateway.hub.driving import Driver
from gateway.hub.expiry import Expiry, disarm
from gateway.hub.following import Followers
from gateway.hub.inputs import starts_turn
from gateway.hub.joining import Joiner
from gateway.hub.limits import Quota, RunSlots, SendBudget
from gateway.hub.listing import ThreadList
from gateway.hub.open_calls import OpenCall
from gateway.hub.outbox import Commit
from gateway.hub.planning import Plan, Planner
from gateway.hub.reattaching import Reattacher
from gateway.hub.refusals import (
    Claimed,
    HeldElsewhere,
    check_owner,
    draining,
    lease_lost,
    store_refusal,
    store_unavailable,
    taken_over,
)
from gateway.hub.states import ThreadState, Trigger, transition
from gateway.hub.takeover import Takeovers
from gateway.hub.thread_news import ThreadNews
from gateway.hub.threads import Run, Subscriber, Subscriptions, Thread
from gateway.hub.titles import Titler, title_model
from gateway.metrics import OFF, Metrics
from gateway.store import OpenedThread, QuarantinedThreadError, StoreError, ThreadPage, cut_off
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.leases import DeadLease, Fence
from gateway.store.recovery import Afterwards, Unfinished
from gateway.tools.declarations import DeclarationLog
from gateway.translate.translator import RunTranslator
from gateway.wire.threads import Change

log = logging.getLogger(__name__)

# How long a run in progress at shutdown may take to finish before it is cancelled.
SHUTDOWN_GRACE_SECONDS = 2.0
# How long a run cancelled at the end of that grace has to stop before the store closes.
STOPPING_SECONDS = 2.0


class Hub:
    """The threads of this process and their runs; see the module's docstring."""

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
        sends: SendBudget | None = None,
        model_timeout: float = 120.0,
        busy_policy: Busy = Busy.INTERRUPT,
        cluster: Cluster | None = None,
        state_rules: StateRules = DEFAULT_RULES,
        metrics: Metrics = OFF,
        titles: str = "first",
        branches_per_thread: int = 50,
    ) -> None:
        self.engine = engine
        # What operators scrape (``gateway.metrics``); counting nothing unless they asked.
        self.metrics = metrics
        metrics.watch_runs(lambda: self._running)
        # The processes this one runs threads with; on its own, a cluster of one.
        self.cluster: Cluster = cluster or SingleNode()
        self.quota = quota or Quota()
        # What one user's reattaches and history pages may have the gateway send.
        self.sends = sends or SendBudget(0, 0)
        # How much of a thread a reattach sends at most; older messages are paged in.
        self.snapshot_bytes = snapshot_bytes
        # How much of each thread's event log is kept for reattach by cursor.
        self.cursor_bytes = cursor_bytes
        # Runs in progress across all threads; unlimited unless the caller sets a cap.
        self.slots = slots or RunSlots(0, 0.0)
        self.audit = audit
        self.threads: dict[str, Thread] = {}
        self.subscriptions = Subscriptions()
        self.status_listeners: list[Callable[[bool], None]] = []
        self.followers = Followers(self._read_log)
        self.planner = Planner(
            engine,
            declarations=DeclarationLog(),
            audit=audit,
            approval_timeout=approval_timeout,
            context_allow=context_allow,
            state_rules=state_rules,
        )
        # Regenerate, edit and switch: the inputs that move a thread's branches.
        self.branching = Branching(
            engine,
            most=branches_per_thread,
            snapshot_bytes=snapshot_bytes,
            audit=audit,
            metrics=metrics,
        )
        self.driver = Driver(
            engine,
            self.followers,
            model_timeout=model_timeout,
            ended=self.ended,
            snapshot_bytes=snapshot_bytes,
        )
        # Dead holders' threads this process takes the lease of (``gateway.hub.takeover``).
        self.takeovers = Takeovers(
            engine,
            self.cluster,
            metrics,
            finish=partial(self.finish_cut_off, leased=True),
            read_again=self._read_again,
        )
        self.joiner = Joiner(
            engine,
            self.cluster,
            self.followers,
            snapshot_bytes=snapshot_bytes,
            take_over=self.takeovers.take_over,
            waiting_for=self.planner.waiting_for,
        )
        # Inputs taken in, acknowledged, and given their turn (``gateway.hub.admission``).
        self.admission = Admission(
            self.threads,
            self.cluster,
            self.slots,
            busy_policy,
            refuse_if_draining=self._refuse_if_draining,
            start=self._start,
            thread=self._thread,
            stop_run=self.stop_run,
            forget_if_unused=self._forget_if_unused,
            check_stored=partial(dedupe.check_stored, engine),
        )
        # Clients that come back shown their threads (``gateway.hub.reattaching``).
        self.reattacher = Reattacher(
            engine,
            self.cluster,
            self.threads,
            self.admission,
            self.joiner,
            self.followers,
            self.planner,
            sends=self.sends,
            metrics=metrics,
            snapshot_bytes=snapshot_bytes,
            thread=self._thread,
            owner=self._owner,
            forget_if_unused=self._forget_if_unused,
        )
        # Browser calls nobody answers, answered by a timeout (``gateway.hub.expiry``).
        self.expiry = Expiry(
            engine,
            self.cluster,
            self.planner,
            metrics,
            timeout=client_tool_timeout,
            lease=self.takeovers.lease,
            claim=lambda thread, run_id: self._claim(thread, run_id, None, leased=True),
            drive=self.driver.drive,
        )
        self._running = 0
        # Set by drain() (and stop()): from then on no run starts here.
        self.draining = False
        # Inputs refused since, for the drain's log line.
        self.refused_draining = 0
        # The thread door's verbs, and the changes to threads a user's connections hear of.
        self.news = ThreadNews(lambda user_id, ids: self.listing.summaries(user_id, ids))
        self.listing = ThreadList(engine, self.news, running=self._runs_here, erase=self.erase)
        self.news.elsewhere = self.cluster.thread_changed
        self.news.listening = self.cluster.watch_soon
        # Titles the model makes after a thread's first reply, with GATEWAY_TITLES=model.
        self.titler = Titler(
            engine.sessions,
            engine.app_name,
            title_model(engine.root_agent) if titles == "model" else None,
            changed=lambda user_id, thread_id: self.news.changed(user_id, thread_id, "updated"),
        )
        # Every write of a thread this process holds carries its lease (a fencing token).
        engine.sessions.fence_of = self.cluster.fence
        # Its releases and messages go in the store's transactions (its last frames').
        self.cluster.commit_with(engine.sessions.submit_cluster)
        engine.sessions.fenced_listeners.append(self.fenced)

    @property
    def busy(self) -> bool:
        return self._running > 0

    # --- the doors' verbs ----------------------------------------------------------------

    async def start(
        self,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
        caller: Caller | None = None,
        *,
        acknowledge: Callable[[p.Event], None] | None = None,
        admitted: Admitted | None = None,
    ) -> Run:
        """Claims the thread and starts the run; raises GatewayError before any event
        (``Admission.start``, which tells what the input meets, ``acknowledge`` and
        ``admitted``)."""
        return await self.admission.start(
            user_id, run_input, executor, caller, acknowledge=acknowledge, admitted=admitted
        )

    async def claim(
        self, caller: Caller, thread_id: str, run_id: str, executor: Subscriber | None, policy: Busy
    ) -> tuple[Run, OpenedThread]:
        """Makes a run of ``caller`` the thread's one run (typed or live): slot, lease, read, owner;
        busy is SESSION_BUSY for ``Busy.REJECT``, else ``Claimed`` or ``HeldElsewhere``."""
        self._refuse_if_draining()  # an input that waited its turn since before the drain
        user_id = caller.user_id
        await self.slots.take()
        leased = False
        try:
            # The lease first: the read after it sees all a run elsewhere stored.
            leased = await self.takeovers.lease(thread_id, user_id, run_id)
            if leased:  # its watchers here hear of the thread's later runs elsewhere
                await self.cluster.watch(user_id)
            if not leased:
                if policy is Busy.REJECT:
                    raise in_progress(thread_id)
                # Here: what a dead process left to do runs first (``Takeovers.lease``).
                here = self.threads.get(thread_id)
                raise Claimed() if here is not None and here.run is not None else HeldElsewhere()
            # A thread in hand is read beside the store's writer: its runs here have ended,
            # and a run ends only once its writes are committed.
            known = self.threads.get(thread_id)
            head = known.head if known is not None else None
            opened = await self.engine.open_thread(user_id, thread_id, known=known is not None)
            check_owner(opened.owner, user_id, thread_id)
            thread = self._held(user_id, thread_id)
            # Again: a run may have claimed it during the read; and one that ran its course
            # meanwhile may have stored what the read began too early to see.
            came_and_went = known is not None and (thread is not known or thread.head != head)
            if thread.run is not None or came_and_went:
                raise in_progress(thread_id) if policy is Busy.REJECT else Claimed()
            if thread.head is None:
                thread.head = opened.log_head
        except BaseException as error:
            self.slots.give_back()
            if leased:
                self.cluster.release(thread_id)
            if (refusal := store_refusal(error, thread_id)) is not None:
                raise refusal from None
            raise
        run = self._claim(thread, run_id, executor, holds_slot=True, leased=True)
        run.caller = caller
        return run, opened

    async def _start(
        self, caller: Caller, run_input: p.RunAgentInput, executor: Subscriber | None, policy: Busy
    ) -> Run:
        thread_id, user_id = run_input.thread_id, caller.user_id
        run, opened = await self.claim(caller, thread_id, run_input.run_id, executor, policy)
        thread = run.thread
        assert opened.session is not None  # the owner's
        try:
            if not opened.created:  # a new thread has run nothing
                await dedupe.check_stored(self.engine, user_id, run_input, opened.session)
            self.quota.check(
                opened.usage, new_thread=opened.created, new_turn=starts_turn(run_input)
            )
            plan = await self.branching.plan(self.planner, run, run_input, opened.session)
        except BaseException as error:
            try:
                if opened.created:  # a request refused leaves no empty thread behind
                    await self.engine.forget_thread(user_id, thread_id)
            except StoreError as lost:  # it stays empty: what the caller is told matters more
                log.warning("thread %s: the new thread was not forgotten: %s", thread_id, lost)
            finally:
                self._finish(run)
            if isinstance(error, StoreError) and not isinstance(error, QuarantinedThreadError):
                raise store_unavailable() from None
            raise
        if executor is not None:
            thread.watch(executor)
        # Known once planned: whether the run resumes or runs anything (RUNNING) at all.
        run.thread_state = plan.thread_state
        self.news.changed(user_id, thread_id, "created" if opened.created else "updated")
        run.task = asyncio.create_task(self.driver.drive(run, plan), name=f"run {run.run_id}")
        return run

    def finish_cut_off(self, unfinished: Unfinished, *, leased: bool = False) -> None:
        """Goes on with a thread a restart or a takeover cut off (``recovery.Unfinished``,
        from ``SessionService.cut_off`` or ``close_interrupted_thread``): resumes
        the invocation a person's answer was not acted on in yet, or asks the model again
        for the reply it owed to answers it was given, so the thread ends saying what the
        browser, the tool or the person did.

        The run is the thread's one run, with no executor and no client tools: a reattach
        follows it live, and the model cannot ask the browser for anything again.
        ``leased``: the caller took the thread's lease, and the run releases it.
        """
        user_id, thread_id = unfinished.user_id, unfinished.thread_id
        thread = self._held(user_id, thread_id)
        if thread.run is not None:
            if leased:
                self.cluster.release(thread_id)
            return
        run_id = f"{cut_off.FINISHING}{uuid.uuid4().hex[:12]}"
        run = self._claim(thread, run_id, None, leased=leased)
        run.finishing = unfinished  # cut off in turn, the thread goes on the same way
        metadata = {"runId": run.run_id, "context": {}}
        if unfinished.afterwards is Afterwards.RESUME:
            log.info("thread %s: resuming a person's answer its cut-off run left", thread_id)
            running = transition(ThreadState.IDLE, Trigger.RESUMED)
            plan = Plan(None, metadata, {}, None, running, resumes=unfinished.invocation_id)
        else:
            log.info("thread %s: asking again for the reply its cut-off run owed", thread_id)
            ask = types.Content(role="user", parts=[types.Part(text=cut_off.RESTARTED)])
            # Closed by the restart with its calls answered, the thread is idle until asked.
            running = transition(ThreadState.IDLE, Trigger.ASKED_AGAIN)
            plan = Plan(ask, metadata, {}, None, running)
        run.task = asyncio.create_task(self.driver.drive(run, plan))

    async def cancel(self, user_id: str, thread_id: str, run_id: str | None = None) -> bool:
        """Stops the thread's run (the run ``run_id`` only, if named), here or on the
        process that runs it; False when there was nothing to stop, ACCESS_DENIED on
        another user's thread."""
        if self.admission.cancel_admitted(user_id, thread_id, run_id):
            return True
        thread = self.threads.get(thread_id)
        if thread is None or thread.run is None:
            try:
                owner = await self._owner(thread_id)
                if owner is not None:
                    check_owner(owner, user_id, thread_id)
                return await self.cluster.cancel(thread_id, user_id, run_id)
            except StoreError:
                raise store_unavailable() from None
        check_owner(thread.user_id, user_id, thread_id)
        if run_id not in (None, thread.run.run_id):
            return False
        thread.run.abort.set()
        return True

    def _refuse_if_draining(self) -> None:
        if self.draining:
            self.refused_draining += 1
            raise draining()

    def stop_run(self, run: Run) -> bool:
        """Stops a run as a cancel does (its client left, a new message interrupts it);
        False when it had ended already (or paused: its stream was over), or was stopping."""
        if run.thread.run is not run or run.ended or run.abort.is_set():
            return False
        run.abort.set()
        return True

    def drain(self) -> int:
        """From now on no run starts here: an input is refused with SERVICE_UNAVAILABLE
        (``refusals.draining``), retryable on another process or after the restart, and a
        dead process's thread is left to a process that stays. The runs in progress go on;
        ``stop`` waits for them. Returns how many there are."""
        self.draining = True
        return len(self._in_progress())

    def _in_progress(self) -> list[asyncio.Task[None]]:
        return [
            thread.run.task
            for thread in self.threads.values()
            if thread.run is not None and thread.run.task is not None and not thread.run.task.done()
        ]

    async def _finished_within(self, grace: float) -> set[asyncio.Task[None]]:
        """Waits up to ``grace`` seconds for the runs in progress, and for those whose
        planning was over only meanwhile; returns the runs still going then."""
        deadline = asyncio.get_running_loop().time() + grace
        while tasks := self._in_progress():
            left = max(deadline - asyncio.get_running_loop().time(), 0.0)
            _, late = await asyncio.wait(tasks, timeout=left)
            if late:
                return late
        return set()

    async def stop(self, grace: float = SHUTDOWN_GRACE_SECONDS) -> int:
        """Stops the runs in progress before the store closes, so none fails on a closed
        store: each has ``grace`` seconds to finish; the rest stop where they are and keep
        what they streamed, which the next start closes as interrupted, as after a crash.
        Calls waiting on a browser stop waiting here: the store would be closed when their
        time came (they stay open in the thread), also those of runs that pause in the grace.
        Returns how many runs were stopped so."""
        self.expiry.stop(self.threads.values())
        self.draining = True
        await self.news.close()
        await self.titler.close()
        late = await self._finished_within(grace)
        if late:
            log.info("shutting down: %d runs still in progress stop where they are", len(late))
            for thread in self.threads.values():
                if (run := thread.run) is not None and run.task in late:
                    # Its lease stays: the process that takes it over closes the run.
                    run.leased, run.release = False, None
            for task in late:
                task.cancel()
            await asyncio.wait(late, timeout=STOPPING_SECONDS)
        return len(late)

    async def reattach(
        self,
        user_id: str,
        thread_id: str,
        subscriber: Subscriber,
        after: int | None = None,
        *,
        say_up_to_date: bool = True,
    ) -> Run | None:
        """Sends the thread as it stands, then its run live (``Reattacher.reattach``)."""
        await self.cluster.watch(user_id)  # before the reads: what they miss it is told of
        return await self.reattacher.reattach(
            user_id, thread_id, subscriber, after, say_up_to_date=say_up_to_date
        )

    async def rejoin(
        self, user_id: str, duplicate: Duplicate, subscriber: Subscriber, *, started: bool
    ) -> Run | None:
        """Answers an input sent again, which does not run (``Reattacher.rejoin``)."""
        await self.cluster.watch(user_id)  # before the reads: what they miss it is told of
        return await self.reattacher.rejoin(user_id, duplicate, subscriber, started=started)

    async def earlier(
        self, user_id: str, thread_id: str, before: int | None, limit: int | None = None
    ) -> ThreadPage:
        """A thread's messages before a snapshot's first one (``Reattacher.earlier``)."""
        return await self.reattacher.earlier(user_id, thread_id, before, limit)

    def unwatch(self, subscriber: Subscriber, thread_id: str) -> None:
        thread = self.threads.get(thread_id)
        if thread is not None and subscriber in thread.watchers:
            thread.watchers.remove(subscriber)
            thread.positions.pop(subscriber, None)
            self._forget_if_unused(thread)

    async def erase(self, user_id: str, thread_id: str) -> None:
        """Before a delete: stops the thread's run (here, or through the cluster) and its
        browser calls' timer, so nothing of the run writes the thread again here."""
        thread = self.threads.get(thread_id)
        if thread is None or thread.user_id != user_id:
            with contextlib.suppress(p.GatewayError, StoreError):
                await self.cluster.cancel(thread_id, user_id)
            return
        disarm(thread)
        if (run := thread.run) is not None:
            run.abort.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.done.wait(), STOPPING_SECONDS)
        self._forget_if_unused(thread)

    def _runs_here(self, thread_id: str) -> bool:
        thread = self.threads.get(thread_id)
        return thread is not None and thread.run is not None

    def leave(self, subscriber: Subscriber) -> None:
        """A connection closed: its runs go on, their events are stored, nobody is sent them."""
        for thread_id in self.subscriptions.pop(subscriber):
            if (thread := self.threads.get(thread_id)) is None:
                continue
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

    async def take_over(self, lease: DeadLease) -> None:
        """The cluster found a thread whose process died mid-run: closes that run, unless
        this process is draining (its close might ask the model again, a run cut short)."""
        if not self.draining:
            await self.takeovers.take_over(lease.user_id, lease.thread_id)

    def _read_again(self, thread_id: str) -> None:
        """The thread's log grew elsewhere while it was idle here: its head is read again."""
        if (thread := self.threads.get(thread_id)) is not None and thread.run is None:
            thread.head = None

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
        elif self.takeovers.stop(thread_id):
            log.info("a cancel sent to another process stops the takeover of %s", thread_id)

    def watched(self) -> set[str]:
        """The users of the threads this process has in hand (watched, or run, here), and
        those whose connections here hear of their threads' changes."""
        return {thread.user_id for thread in self.threads.values()} | self.news.listeners.keys()

    def committed(self, thread_id: str, seq: int) -> None:
        """A thread's log grew, on whichever process runs it: this process's watchers of
        it are sent what they have not seen (``gateway.hub.following``)."""
        if (thread := self.threads.get(thread_id)) is not None:
            self.followers.heard(thread, seq)

    async def _read_log(self, thread: Thread, after: int) -> FrameLog:
        return await self.engine.frames_after(thread.user_id, thread.thread_id, after)

    def _release(self, run: Run, after: Commit | None = None) -> Commit:
        run.leased = False
        run.release = None
        return self.cluster.release(run.thread.thread_id, after)

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        """A thread of the user changed on another process: their connections here hear it."""
        if change in ("created", "updated", "deleted"):
            self.news.heard(user_id, thread_id, cast(Change, change))

    def lost(self) -> None:
        """This process may have lost its leases: its runs stop, as a cancel stops them,
        and end telling their clients why."""
        for thread in self.threads.values():
            if (run := thread.run) is not None and run.leased and self.stop_run(run):
                run.stopped_by = lease_lost(thread.thread_id)

    def fenced(self, fence: Fence) -> None:
        """The database refused a write of the thread under ``fence``: another process took
        it over while this one stalled. Its run stops, every later write of it is refused
        (``SessionService``), and it ends telling its clients to reattach."""
        self.metrics.fenced()
        thread = self.threads.get(fence.thread_id)
        if thread is None or (run := thread.run) is None or run.ended:
            return
        log.error("%s stops: another process took its thread over while this one stalled", run)
        run.stopped_by = taken_over(thread.thread_id)
        run.abort.set()

    # --- claim and finish ----------------------------------------------------------------

    def _held(self, user_id: str, thread_id: str) -> Thread:
        """The thread in hand, made so if it is not (its subscribers named in the hub's)."""
        if (thread := self.threads.get(thread_id)) is None:
            thread = Thread(thread_id, user_id, subscriptions=self.subscriptions)
            self.threads[thread_id] = thread
        return thread

    async def _thread(self, user_id: str, thread_id: str) -> Thread:
        owner = await self._owner(thread_id)
        if owner is not None:
            check_owner(owner, user_id, thread_id)
        return self._held(user_id, thread_id)

    async def _owner(self, thread_id: str) -> str | None:
        """Whose a thread is, without a read if a run or watcher has it in memory."""
        thread = self.threads.get(thread_id)
        return thread.user_id if thread else await self.engine.thread_owner(thread_id)

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
        run.outbox.hurry = self.engine.hurry_writes
        run.trim = partial(self._trim_log, run)
        run.clock = None if thread.user_id == WARM_UP_USER else self.metrics.run_clock()
        if leased:
            run.leased = True
            run.release = partial(self._release, run)
        thread.run = run
        self._running += 1
        if self._running == 1:
            self._status_changed()
        return run

    def _translator(self, thread: Thread, run_id: str) -> RunTranslator:
        return RunTranslator(
            thread.thread_id,
            run_id,
            interrupt_for=lambda call_id, args, asked_at: self.planner.interrupt(
                OpenCall(call_id, CONFIRMATION_CALL, "", asked_at, args)
            ),
            subagents=self.engine.subagents(),
            usage=partial(self.engine.take_usage, run_id),
            predictions=self.engine.hosted.predict_state,
        )

    def _log_frames(
        self, thread: Thread, frames: list[LoggedFrame], *, rides: bool = False
    ) -> Commit:
        return self.engine.log_frames(thread.user_id, thread.thread_id, frames, rides=rides)

    def ended(self, run: Run) -> None:
        """The driver is done with the run: its last events are out."""
        # Armed before the run lets go of the thread: a thread nobody watches is kept
        # while its calls wait, so the hub's stop and a later input find that timer.
        if run.translator.pending:
            self.metrics.client_tools_awaited(len(run.translator.pending))
            self.expiry.arm(run.thread)
        if run.stopped_by is not None:
            # What it numbered may not be stored, and others may have written since: the
            # log's head is read again, and its watchers here are sent nothing more of the
            # thread until they reattach, as its end told them to.
            run.thread.head = None
        elif run.trim is not None:  # not trimmed with its last event (``Run.emit``)
            self._trim_log(run)
        left, leased = run.left, run.leased
        if left is not None:
            run.leased = False  # its lease goes to the run that finishes the thread
        self._finish(run)
        if left is not None:  # its worker died: the thread goes on as after a restart
            self.finish_cut_off(left, leased=leased)

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

    def _finish(self, run: Run) -> None:
        thread = run.thread
        if thread.run is run:
            thread.run = None
        if run.task is not None:  # it ran: idle now, or waiting on the user
            self.news.changed(thread.user_id, thread.thread_id, "updated")
            self.titler.after_run(thread.user_id, thread.thread_id)
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


def _trim_failed(trimmed: asyncio.Future[object]) -> None:
    # A log left untrimmed is trimmed by the thread's next run; the store logged the outage.
    if not trimmed.cancelled() and trimmed.exception() is not None:
        log.debug("a thread's log was not trimmed: %r", trimmed.exception())
