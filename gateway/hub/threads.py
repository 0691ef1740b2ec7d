"""A thread in memory: who watches it, its one run, and what waits on it; and that run.

A thread is an ADK session; what it has said and what it waits on is read from the store
(``gateway.hub.open_calls``), so a restart loses nothing. What lives here is what only
this process knows: the connections that watch the thread (``Subscriber``), the run it
runs now (``Run``: the two name each other, so they live together), the browser answers
that came before the rest of their batch, the inputs waiting their turn, the timer that
expires unanswered browser calls, and where each watcher is in the thread's log
(``gateway.hub.eventlog``) while another process runs it (``gateway.hub.following``).

Events go to a watcher through ``Thread.send``: while its replay from the log is being
read, what it is sent meanwhile waits, to go out after the replay.

A run's events go to the thread's watchers (every connection that ran or reattached on it),
except the live TOOL_CALL events of a client tool, which go only to the run's executor: the
connection whose input started or continued the run. Observers learn of those calls from
snapshots, so no client can execute one twice.

A run belongs to the client instance of that connection (``?clientId=``, a browser tab
across its reloads), not to the connection: when the instance comes back on a new
connection and reattaches, the new connection is the executor from then on.

Every event a run emits is numbered in the thread's log (``gateway.hub.eventlog``) and held in
the outbox until its frame commits (streamed text excepted: ``gateway.hub.outbox``); a client
tool's live calls are logged for the owner instance only, and what only observers are sent
(the user's message, the browser's results) is logged for everyone but the owner.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Protocol

from google.adk.events import Event as AdkEvent

from gateway import tracing
from gateway import wire as p
from gateway.context import Caller
from gateway.hub import eventlog
from gateway.hub.outbox import Commit, Outbox
from gateway.hub.states import ThreadState
from gateway.hub.text_bursts import TextBurst
from gateway.metrics import RunClock
from gateway.store.frames import LoggedFrame
from gateway.store.recovery import Unfinished
from gateway.translate.translator import Phase, RunTranslator


class LogsFrames(Protocol):
    """Stores frames of a thread's log and returns their commit; ``rides``: nobody waits
    for it (streamed text sent ahead), so it may wait for the store's next write."""

    def __call__(self, frames: list[LoggedFrame], *, rides: bool = False) -> Commit: ...


class Subscriber(Protocol):
    """Who is sent a thread's events: a WebSocket connection, an SSE request."""

    # The client instance it speaks for; None: only itself (a stock client, an SSE request).
    @property
    def client(self) -> str | None: ...

    def deliver(self, event: p.Event) -> None: ...


class Subscriptions:
    """The threads each subscriber was made a watcher, a joiner or the executor of, by id:
    what a closing connection is taken out of (``Hub.leave``) without a walk over every
    thread in hand, which at a thousand connections closing at once (a balancer's reset, a
    drain) would hold the loop for each of them. A thread unwatched stays named until the
    subscriber leaves: at most the threads one connection ever touched."""

    def __init__(self) -> None:
        self._threads: dict[Subscriber, set[str]] = {}

    def add(self, subscriber: Subscriber, thread_id: str) -> None:
        self._threads.setdefault(subscriber, set()).add(thread_id)

    def pop(self, subscriber: Subscriber) -> set[str]:
        return self._threads.pop(subscriber, set())


@dataclasses.dataclass
class Thread:
    thread_id: str
    user_id: str
    watchers: list[Subscriber] = dataclasses.field(default_factory=list)
    run: Run | None = None
    # Browser answers that arrived before the rest of their batch: call id -> response.
    early: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    early_messages: dict[str, p.ToolMessage] = dataclasses.field(default_factory=dict)
    expiry: asyncio.TimerHandle | None = None
    # Inputs waiting for the run to end (``gateway.hub.busy``), in turn behind ``turns``.
    waiting: int = 0
    turns: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    # The number of the last frame of its log given out; None until read from the store.
    head: int | None = None
    # Watchers whose replay from the log is being read: what they are sent meanwhile
    # waits here, to go out after the replay.
    replaying: dict[Subscriber, list[p.Event]] = dataclasses.field(default_factory=dict)
    # The newest number of its log another process said is committed (``gateway.hub.following``).
    heard: int = 0
    # Set, then replaced, each time ``heard`` grows: what waits for a number wakes (``hears``).
    _news: asyncio.Event = dataclasses.field(default_factory=asyncio.Event, repr=False)
    # While another process runs it: the number of the last frame each watcher was sent.
    positions: dict[Subscriber, int] = dataclasses.field(default_factory=dict)
    # The hub's, shared by its threads: each subscriber added here is named in it.
    subscriptions: Subscriptions = dataclasses.field(
        default_factory=Subscriptions, repr=False, compare=False
    )

    def hear(self, seq: int) -> None:
        """The thread's log holds frames up to ``seq``: what waits for it wakes."""
        if seq > self.heard:
            self.heard = seq
            news, self._news = self._news, asyncio.Event()
            news.set()

    async def hears(self, seq: int) -> None:
        """Returns once ``heard`` reaches ``seq`` (the caller bounds the wait)."""
        while self.heard < seq:
            await self._news.wait()

    def watch(self, subscriber: Subscriber) -> None:
        if subscriber not in self.watchers:
            self.watchers.append(subscriber)
            self.subscriptions.add(subscriber, self.thread_id)

    def send(self, watcher: Subscriber, event: p.Event) -> None:
        held = self.replaying.get(watcher)
        if held is None:
            watcher.deliver(event)
        else:
            held.append(event)


@dataclasses.dataclass
class Run:
    thread: Thread
    run_id: str
    executor: Subscriber | None
    translator: RunTranslator
    # A slot of the gateway's cap on runs in progress, given back when the run ends.
    holds_slot: bool = False
    abort: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    # The last stored event the run has streamed, so a reattach snapshot can catch up.
    last_event_id: str | None = None
    outbox: Outbox = dataclasses.field(default_factory=Outbox)
    # The latest chunk of the message whose streamed text is stored, until its final
    # event replaces it.
    streaming: AdkEvent | None = None
    # Its streamed text held while the model keeps sending it, while its stream is read.
    burst: TextBurst | None = None
    # Reattached subscribers whose snapshot waits in the outbox.
    joining: list[Subscriber] = dataclasses.field(default_factory=list)
    # The client instance of the input that started the run; it stays when its connection goes.
    owner: str | None = None
    # Stores frames of the thread's log, returning their commit; None: the run is not logged.
    log: LogsFrames | None = None
    # The number of its RUN_STARTED in the thread's log, once numbered.
    first_seq: int | None = None
    # The number of the last frame of the log its outbox let out to the thread's watchers
    # (from the head before its first one): a frame above it may be committed yet still
    # wait there (``gateway.hub.joining``). None until it numbers a frame.
    routed: int | None = None
    # It holds the thread's lease in the cluster (``gateway.cluster``) until it ends.
    leased: bool = False
    # Trims the thread's log to its newest bytes, queued with its last event's frames so
    # that one commit stores both; the hub's ``ended`` calls it if that never came.
    trim: Callable[[], None] | None = None
    # Lets go of the lease after its last event's frames (the store's commit of them, given),
    # in their transaction where it can; that event goes out once it is let go of, so that
    # a client told the run ended may send its next input to any process at once.
    release: Callable[[Commit | None], Commit] | None = None
    # The state it leaves its thread in (``gateway.hub.states``): its plan's, then the one
    # its end moves the thread to if it ran the agent; None until it is planned.
    thread_state: ThreadState | None = None
    # Who asked for it, for its tools (``gateway.context.caller``); None: the gateway did.
    caller: Caller | None = None
    # What its input said (``gateway.hub.dedupe``): the same runId sent again must say it.
    said: str | None = None
    # The approval answers its input brought that planning did not take as sent (ignored,
    # or expired into a rejection), by interrupt id: the code of their notice, for the audit.
    overruled: dict[str, str] = dataclasses.field(default_factory=dict)
    # What stopped it from outside, told as its end instead of "cancelled": its process
    # lost the thread's lease, or another process took the thread over (``Hub.fenced``).
    stopped_by: p.GatewayError | None = None
    # Times its events as they go out, for ``gateway.metrics``; None: not timed.
    clock: RunClock | None = None
    # The subscriber sent its RUN_STARTED when its input was admitted, before the thread
    # was read (``Admission.start``): the RUN_STARTED it logs is not sent to it again.
    acknowledged: Subscriber | None = None
    # What the death of its worker process left the thread to go on with (the model to ask
    # again, an answer to resume): the hub starts that run once this one has ended.
    left: Unfinished | None = None
    # What it goes on with itself, if it is the gateway's own run (``Hub.finish_cut_off``):
    # cut off in turn, it is what the thread goes on with again.
    finishing: Unfinished | None = None

    def __post_init__(self) -> None:
        if self.executor is not None:
            self.owner = self.executor.client
            self.thread.subscriptions.add(self.executor, self.thread.thread_id)

    @property
    def ended(self) -> bool:
        """Its last events are made, though they may still wait in the outbox."""
        return self.translator.phase is Phase.ENDED

    def __str__(self) -> str:
        return f"run {self.run_id} on thread {self.thread.thread_id}"

    def fail(self, error: p.GatewayError) -> None:
        """Ends the run with RUN_ERROR, carrying the error's code and sentence."""
        tracing.failed(error.code)
        self.emit(self.translator.fail(error.code, error.message))

    def emit(
        self,
        events: Iterable[p.Event],
        *,
        observers_only: bool = False,
        after: Commit | None = None,
        streamed: bool = False,
    ) -> None:
        """Numbers and logs events, then delivers them after those emitted before, once
        their frames and ``after`` are committed; ``streamed`` (a chunk of streamed text):
        without waiting for those commits, as far as the outbox allows."""
        batch = list(events)
        if not batch:
            return
        if self.clock is not None:
            self.clock.saw(batch)
        unstored = len(batch) if streamed else 0
        # Streamed text that goes out ahead of its commit: nobody waits for its frames,
        # which ride the store's next write (``GroupCommit.submit``).
        rides = bool(unstored) and self.outbox.goes_ahead(unstored)
        logged = self._log(batch, observers_only, rides) if self.log is not None else None
        ends = isinstance(batch[-1], p.RunFinished | p.RunError)
        if ends and self.trim is not None and logged is not None and self.stopped_by is None:
            trim, self.trim = self.trim, None
            trim()
        if self.release is not None and ends:
            # The lease goes after the run's last frames, in their commit where it can.
            release, self.release = self.release, None
            logged = _both(logged, release(logged))
        self.outbox.send(
            partial(self._route, batch, observers_only), after, logged, unstored=unstored
        )

    def _log(self, batch: list[p.Event], observers_only: bool, rides: bool) -> Commit | None:
        thread = self.thread
        if thread.head is None:
            return None  # not read: the hub reads the head before a run emits
        frames = []
        if self.routed is None:
            self.routed = thread.head
        for event in batch:
            thread.head += 1
            eventlog.numbered(event, thread.head)
            if isinstance(event, p.RunStarted) and self.first_seq is None:
                self.first_seq = thread.head
            only_for = (self.owner or "") if self._executor_only(event) else None
            not_for = self.owner if observers_only else None
            frames.append(eventlog.frame(event, only_for=only_for, not_for=not_for))
        assert self.log is not None
        return self.log(frames, rides=rides)

    def join(
        self, subscriber: Subscriber, catch_up: list[p.Event], *, executes: bool = False
    ) -> None:
        """Makes ``subscriber`` a watcher at this point of the run, ``catch_up`` first;
        ``executes``: the run's executor too.

        ``catch_up`` shows the run as of now; events emitted before, still in the outbox,
        are in it, so the subscriber is sent only those emitted after (and, as executor,
        only the client calls made after: ``catch_up`` names those made before).
        """
        self.joining.append(subscriber)
        self.thread.subscriptions.add(subscriber, self.thread.thread_id)
        self.outbox.send(partial(self._admit, subscriber, catch_up, executes))

    def _admit(self, subscriber: Subscriber, catch_up: list[p.Event], executes: bool) -> None:
        if subscriber not in self.joining:
            return  # it left before its turn came
        self.joining.remove(subscriber)
        for event in catch_up:
            subscriber.deliver(event)
        self.thread.watch(subscriber)
        if executes:
            self.executor = subscriber

    def _route(self, events: list[p.Event], observers_only: bool) -> None:
        if self.routed is not None and (seq := eventlog.seq_of(events[-1])) is not None:
            self.routed = seq
        for event in events:
            private = self._executor_only(event)
            told = self.acknowledged if isinstance(event, p.RunStarted) else None
            if self.executor is not None and not observers_only and self.executor is not told:
                self.thread.send(self.executor, event)
            if private:
                continue
            for watcher in self.thread.watchers:
                if watcher is not self.executor and watcher is not told:
                    self.thread.send(watcher, event)

    def _executor_only(self, event: p.Event) -> bool:
        if isinstance(event, p.ToolCallStart | p.ToolCallArgs | p.ToolCallEnd):
            return event.tool_call_id in self.translator.client_calls
        return False


def _both(commit: Commit | None, release: Commit) -> Commit:
    """A commit done once ``commit`` and ``release`` are (whether they failed or not)."""
    if commit is None or commit.done():
        return release
    both: Commit = asyncio.get_running_loop().create_future()

    def settle(_: object) -> None:
        if commit.done() and release.done() and not both.done():
            both.set_result(None)

    commit.add_done_callback(settle)
    release.add_done_callback(settle)
    return both
