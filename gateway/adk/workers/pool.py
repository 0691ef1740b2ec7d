"""The main process's side: N worker processes that run invocations, and their pipes.

Theory of operation. ``start`` listens on a Unix socket in a private temporary directory
(``pipe_directory``, which also removes those of gateways that were killed), spawns the
workers (``spawn``: a callable the API gives, which starts one process for a socket path
and an index) and waits until each has said ``Hello``; a worker runs a warm-up
invocation before it does, so its first real run is not its slow one. On demand
(``GATEWAY_WORKERS=auto``) it starts none: ``to_worker`` says, run by run, whether the
main process runs the invocation itself or a worker does, and starts workers one at a time
as the load asks (``gateway.adk.workers.demand``); they stay until the gateway stops (a
burst that asked for them once will again, and a start costs more than an idle worker).
``run`` sends a run's ``Start`` to the worker with the fewest runs in flight and yields
the ADK events it sends back, parsed, as an in-process Runner would yield them; each
``Append`` of the run is stored here with the real ``SessionService`` on the session the
hub handed over (so the hub's copy stays current, as in process) before the worker is
told to go on.

A worker that dies closes its pipe: each of its runs raises ``WorkerLost`` (a
``RUN_INTERRUPTED`` GatewayError) and a new worker is started in its place, watched until
its Hello as a starting one is (``_watch_start``). One started in place of a dead one that
dies before its Hello, or says nothing for ``START_SECONDS``, is started again, up to
``START_ATTEMPTS`` times in a row; then its place is given up, and once every place is,
runs stay in this process. A run waiting for a worker waits for the next start, or fails
with ``WorkerLost`` once none is starting. A store
failure of an ``Append`` is raised to the hub as the store raised it, so the run ends
exactly as it would in process. One run's events are a queue the pipe's reader fills and
the run's consumer drains; the worker waits on each stored event, so a run never gets
ahead of its store, and sends no more than a credit window of events the hub has not
taken (``credit``), so a busy hub slows its workers instead of queueing without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import itertools
import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session

from gateway import timeline
from gateway import wire as p
from gateway.a2ui.surfaces import Surfaces
from gateway.adk.workers import placed
from gateway.adk.workers.channel import Channel, ChannelClosed, Counts, FrameTooLarge
from gateway.adk.workers.chunks import Whole
from gateway.adk.workers.credit import Taken
from gateway.adk.workers.demand import LOCAL_RUNS, place
from gateway.adk.workers.errors import RemoteFailure, WorkerLost, WorkersNotStarted
from gateway.adk.workers.kept import Account
from gateway.adk.workers.messages import (
    Append,
    Appended,
    Audited,
    CallSent,
    Cancel,
    Credit,
    Failed,
    Finished,
    FromWorker,
    Hello,
    ModelCalled,
    ReadSurfaces,
    Stalled,
    Start,
    Stop,
    Streamed,
    SurfacesRead,
    TokensUsed,
    Unkept,
    Yielded,
)
from gateway.adk.workers.pipe_directory import PipeDirectory
from gateway.adk.workers.processes import Spawn, WorkerProcess, watch_exit
from gateway.adk.workers.processes import end as _end
from gateway.adk.workers.processes import exit_of as _exit_of
from gateway.adk.workers.start import WorkerRun, start_of
from gateway.audit.plugin import ToolCallLog
from gateway.audit.records import AuditRecord
from gateway.metrics import OFF, Metrics
from gateway.models.calls import FailedCall, Stall
from gateway.models.failures import ModelFailure
from gateway.store.adk_json import parse_event
from gateway.store.session_json import session_json

if TYPE_CHECKING:
    from gateway.store import SessionService

__all__ = [
    "Spawn",
    "WorkerPool",
    "WorkerProcess",
    "WorkerRun",
]

log = logging.getLogger(__name__)

# Seconds a starting worker has to import the agent and say Hello.
START_SECONDS = 120.0
# Starts in a row of a worker in place of a dead one that end before its Hello, after which
# its place is given up (an agent that no longer imports would be spawned forever).
START_ATTEMPTS = 3
# Finished runs' usage and model failures kept for the hub to take, newest last.
KEPT_ENDINGS = 10_000
# Runs more than the least busy worker's that the worker keeping a thread's session may
# have and still take the thread's next run (``WorkerPool._keeping``).
KEEPING_SLACK = 2


_END = object()


@dataclasses.dataclass
class _Stream:
    """One run in flight: its session (the hub's) and what its worker sent, in order."""

    run_id: str
    session: Session
    read_surfaces: Callable[[], Awaitable[Surfaces]] | None
    queue: asyncio.Queue[object] = dataclasses.field(default_factory=asyncio.Queue)
    store_error: BaseException | None = None
    # The event last stored for the run: the worker's next Yielded, sent as a reference.
    stored: AdkEvent | None = None
    # The run's last streamed chunk sent whole: the next may come as its text (``chunks``).
    chunk: Whole | None = None
    # Whether the worker sent an event of the run yet (its first is marked: ``timeline``).
    yielded: bool = False
    # The run's Start, while it lacks the events its worker keeps: sent again whole if the
    # worker does not keep them after all (``Unkept``).
    start: Start | None = None
    # Whether its Start was sent again, whole (``Unkept``): counted by the timeline.
    resent: bool = False
    # The hub's context of the run (its span, its log ids), which its appends are stored
    # in, as ADK's own appends are in process: each commit is an event on the run's span.
    context: contextvars.Context = dataclasses.field(default_factory=contextvars.copy_context)


@dataclasses.dataclass
class _Worker:
    index: int
    process: WorkerProcess
    channel: Channel[FromWorker] | None = None
    runs: dict[int, _Stream] = dataclasses.field(default_factory=dict)
    reader: asyncio.Task[Any] | None = None
    started: float = dataclasses.field(default_factory=time.perf_counter)
    # Started on demand or in place of a dead one: what watches it until its Hello
    # (``WorkerPool._watch_start``).
    watch: asyncio.Task[None] | None = None
    # Its process has ended (``watch_exit``): no run goes to it, its pipe's end read or not.
    exited: bool = False
    unwatch: Callable[[], None] | None = None
    # The threads whose session the worker keeps (``gateway.adk.workers.kept``).
    kept: Account = dataclasses.field(default_factory=Account)


class WorkerPool:
    """``count`` worker processes running invocations for ``sessions``'s threads (with
    ``on_demand``, up to ``count``, started as the load asks); what their plugins record
    goes to ``audit`` and ``metrics`` (``gateway.adk.workers.relay``)."""

    def __init__(
        self,
        count: int,
        spawn: Spawn,
        sessions: SessionService,
        *,
        on_demand: bool = False,
        audit: ToolCallLog | None = None,
        metrics: Metrics = OFF,
    ) -> None:
        self.count = count
        self.on_demand = on_demand
        self._spawn = spawn
        self.sessions = sessions
        self.audit = audit
        self.metrics = metrics
        self._directory: PipeDirectory | None = None
        self._path = ""
        self._server: asyncio.Server | None = None
        self._workers: dict[int, _Worker] = {}
        self._runs = itertools.count(1)
        self._placings = itertools.count()  # ties between workers go to each in turn
        self._ready: dict[int, asyncio.Future[None]] = {}
        self._usage: dict[str, list[p.TokenUsage]] = {}
        self._failures: dict[str, FailedCall] = {}
        # Runs whose model a worker found stalled, or that the hub watches for it, by run id.
        self._stalls: dict[str, asyncio.Future[Stall]] = {}
        self._closing = False
        # The most events of one run held here that its hub had not taken yet (the credit
        # window bounds it: ``gateway.adk.workers.credit``), for tests and the load script.
        self.most_held = 0
        # What crossed the workers' pipes, both ways (for tests, the load script, /metrics).
        self.counts = Counts()
        # Starts sent without the events their worker keeps of the thread (``kept``); of
        # them, those it did not keep after all answer ``Unkept`` (in ``counts``).
        self.kept_starts = 0
        # The workers' appends being stored, and reads being made for them (a task each: the
        # pipe's reader never waits on the store).
        self._storing: set[asyncio.Task[None]] = set()
        # On demand: runs in flight in the main process, and whether workers may still start
        # (not after one failed to).
        self._here = 0
        self._may_start = on_demand
        # Eager: starts in a row that ended before their Hello, by worker index.
        self._failed_starts: dict[int, int] = {}
        # The message being handled: its place in the messages of its read, and how many
        # that read brought (``_connected``), for the timeline's counts.
        self._reading = (0, 0)

    async def start(self) -> None:
        """Starts the workers; returns once each is ready to run. On demand, starts none."""
        self._directory = PipeDirectory.make()  # and removes what killed gateways left
        self._path = os.path.join(self._directory.path, "pipe")
        self._server = await asyncio.start_unix_server(self._connected, path=self._path)
        self.metrics.watch_workers(lambda: len(self._ready_workers()))
        self.metrics.watch_pipes(self.counts)
        if self.on_demand:
            log.info(
                "invocations run in this process; up to %d worker processes start when %d or"
                " more runs are in flight (GATEWAY_WORKERS=auto, docs/multicore.md)",
                self.count,
                LOCAL_RUNS,
            )
            return
        started = time.perf_counter()
        for index in range(1, self.count + 1):
            self._start_worker(index)
        if (failed := await self._all_ready()) is not None:
            await self.close()
            raise WorkersNotStarted(failed)
        log.info(
            "%d worker processes run the agent's invocations (started in %.1f s)",
            self.count,
            time.perf_counter() - started,
        )

    async def close(self) -> None:
        """Lets the workers go: their pipes close and they exit; stragglers are killed."""
        self._closing = True
        if self._workers:  # on demand, none may have started: then there is nothing to say
            unkept = self.counts.received.get("Unkept", (0,))[0]
            log.info(
                "kept sessions: Starts sent without the events their worker kept: %d; of them"
                " answered Unkept and sent again whole: %d",
                self.kept_starts,
                unkept,
            )
        if self._server is not None:
            self._server.close()
        readers = [w.reader for w in self._workers.values() if w.reader is not None]
        for worker in self._workers.values():
            if worker.channel is not None:
                worker.channel.close()
        # A reader ends on its closed pipe (cancelled, asyncio's server would log it).
        if readers:
            await asyncio.wait(readers, timeout=5)
        loop = asyncio.get_running_loop()
        for worker in self._workers.values():
            await loop.run_in_executor(None, _end, worker.process)
        if self._directory is not None:
            self._directory.remove()

    def pids(self) -> list[int]:
        """The workers' process ids (for tests and the load script's CPU count)."""
        return [w.process.pid for w in self._workers.values() if w.process.pid is not None]

    def take_usage(self, run_id: str) -> list[p.TokenUsage] | None:
        return self._usage.pop(run_id, None)

    def take_failure(self, run_id: str) -> FailedCall | None:
        return self._failures.pop(run_id, None)

    def stalled(self, run_id: str) -> asyncio.Future[Stall]:
        """Done once the worker running the run says a model call of it went quiet
        (``GATEWAY_MODEL_TIMEOUT``, watched there); never for a run no worker runs."""
        if (watched := self._stalls.get(run_id)) is None:
            watched = self._stalls[run_id] = asyncio.get_running_loop().create_future()
        return watched

    def forget(self, run_id: str) -> None:
        """The run has ended: its stall is watched no more."""
        self._stalls.pop(run_id, None)

    def to_worker(self) -> bool:
        """Whether the next run's invocation goes to a worker (``run``) rather than running
        in this process (counted by ``here``): always with workers started up front; on
        demand, once the load asks and a worker is ready (``gateway.adk.workers.demand``),
        starting one if the load asks for more."""
        if not self.on_demand:
            return bool(self._workers)  # none once every worker's place was given up
        ready = self._ready_workers()
        placed = place(
            self._here,
            [len(worker.runs) for worker in ready],
            starting=len(ready) < len(self._workers),
            started=len(self._workers),
            most=self.count,
        )
        if placed.start_worker and self._may_start:
            self._start_on_demand()
        self.metrics.invocation_placed("worker" if placed.in_worker else "main")
        return placed.in_worker

    @contextlib.contextmanager
    def here(self) -> Iterator[None]:
        """Counts a run whose invocation runs in this process while it does."""
        self._here += 1
        try:
            yield
        finally:
            self._here -= 1

    async def run(
        self, order: WorkerRun, abort_signal: asyncio.Event | None
    ) -> AsyncGenerator[AdkEvent, None]:
        """The invocation's events, run in the least busy worker (or in the one that keeps
        the thread's session, if it is nearly as idle: ``_keeping``)."""
        least_busy, ready = await self._least_busy()
        worker = self._keeping(order, least_busy, ready)
        number = next(self._runs)
        stream = worker.runs[number] = _Stream(
            str(order.metadata.get("runId")), order.session, order.read_surfaces
        )
        assert worker.channel is not None
        channel = worker.channel
        ended = False
        cancel = asyncio.ensure_future(self._cancel_on(abort_signal, channel, number))
        taken = Taken()
        try:
            # What the worker keeps of the thread is taken by this Start, whole or not.
            thread = (order.user_id, order.thread_id)
            kept = worker.kept.started(number, thread, order.session.events)
            if timeline.on():
                counts = placed.counted(worker, ready, kept)  # the workers it was placed among
                timeline.mark("start_sent", stream.run_id, counts)
            start = start_of(number, order, kept)
            stream.start = start if kept else None
            try:
                channel.send(start, now=True)  # the run waits on nothing else
            except FrameTooLarge:
                worker.kept.ended(number)  # never sent: no end of it comes
                raise
            if kept:
                self.kept_starts += 1
            while True:
                item = await stream.queue.get()
                if stream.store_error is not None and (isinstance(item, AdkEvent) or item is _END):
                    # The input the worker sent ahead was refused: nothing after it counts.
                    ended = item is _END
                    raise stream.store_error
                if isinstance(item, AdkEvent):
                    if credit := taken.took():  # the worker may send as many more
                        with contextlib.suppress(ChannelClosed):  # its loss is queued
                            channel.send(Credit(number, credit))
                    yield item
                    continue
                if isinstance(item, RemoteFailure):  # not taken here: the worker stops it
                    raise item
                ended = True
                if item is _END:
                    return
                if isinstance(item, WorkerLost):
                    log.warning(
                        "worker %d died mid-run: run %s on thread %s is interrupted",
                        worker.index,
                        order.metadata.get("runId"),
                        order.thread_id,
                    )
                    raise item
                assert isinstance(item, Failed)
                if stream.store_error is not None:
                    raise stream.store_error
                if item.refusal is not None:
                    raise p.GatewayError(p.ErrorCode(item.refusal), item.text)
                raise RemoteFailure(f"{item.kind}: {item.text}")
        except ChannelClosed:
            ended = True
            raise WorkerLost() from None
        finally:
            cancel.cancel()
            worker.runs.pop(number, None)
            if not ended:  # the hub let go of the stream first: the worker stops the run
                with contextlib.suppress(ChannelClosed):
                    channel.send(Stop(number))

    # --- the workers --------------------------------------------------------------------

    def _start_worker(self, index: int) -> None:
        self._ready[index] = asyncio.get_running_loop().create_future()
        self._workers[index] = _Worker(index, self._spawn(self._path, index))

    def _start_on_demand(self) -> None:
        index = len(self._workers) + 1
        busy = self._here + sum(len(worker.runs) for worker in self._workers.values())
        log.info("starting worker %d of up to %d: %d runs in flight", index, self.count, busy)
        self._start_worker(index)
        self._watch(index)

    def _watch(self, index: int) -> None:
        self._workers[index].watch = asyncio.create_task(self._watch_start(index))

    async def _watch_start(self, index: int) -> None:
        """A starting worker (on demand, or in place of a dead one) that exits or takes too
        long before its Hello has failed to start: on demand it is given up, and so is
        starting others (runs stay in this process, as correct); eager, it is started
        again (``_start_failed``)."""
        ready, process = self._ready[index], self._workers[index].process
        exited = _exit_of(process)
        try:
            await asyncio.wait(
                {ready, exited}, timeout=START_SECONDS, return_when="FIRST_COMPLETED"
            )
            # By its sentinel: the process may not be reaped yet (``is_alive`` says yes).
            gone = exited.done()
        finally:
            exited.cancel()
        if ready.done() or self._closing:
            return
        why = "it exited" if gone else f"no word in {START_SECONDS:g} s"
        ready.cancel()  # wakes the runs waiting for it (``_least_busy``)
        if self.on_demand:
            self._may_start = False
            del self._workers[index], self._ready[index]
            log.warning(
                "worker %d did not start (%s); runs' invocations stay in this process",
                index,
                why,
            )
        else:
            self._start_failed(index, process, why)
        await asyncio.get_running_loop().run_in_executor(None, _end, process)

    def _start_failed(self, index: int, process: WorkerProcess, why: str) -> None:
        """An eager worker started in place of a dead one ended before its Hello: another
        is started, unless ``START_ATTEMPTS`` in a row have; then its place is given up,
        and once every place is, runs' invocations stay in this process (``to_worker``)."""
        failed = self._failed_starts[index] = self._failed_starts.get(index, 0) + 1
        if failed < START_ATTEMPTS:
            log.warning(
                "worker %d (pid %s) did not start (%s); starting another",
                index,
                process.pid,
                why,
            )
            self._start_worker(index)
            self._watch(index)
            return
        del self._workers[index], self._ready[index], self._failed_starts[index]
        log.error(
            "worker %d did not start %d times in a row (%s); its place is given up: %s",
            index,
            failed,
            why,
            f"{len(self._workers)} workers run invocations"
            if self._workers
            else "runs' invocations stay in this process",
        )

    async def _all_ready(self) -> str | None:
        """Waits until every worker has said Hello; else why not: one exited before it did
        (its agent failed to import, its script started a gateway of its own: what it
        logged says), or one said nothing for ``START_SECONDS``. Checked by each process's
        sentinel, so a start that cannot succeed fails at once, not after the timeout."""
        waiting = {index: _exit_of(self._workers[index].process) for index in self._workers}
        try:
            while not_ready := [i for i in waiting if not self._ready[i].done()]:
                pending = [self._ready[i] for i in not_ready] + [waiting[i] for i in not_ready]
                done, _ = await asyncio.wait(
                    pending, timeout=START_SECONDS, return_when="FIRST_COMPLETED"
                )
                if not done:
                    return f"worker {not_ready[0]} said nothing for {START_SECONDS:g} s"
                for index in not_ready:
                    if waiting[index].done() and not self._ready[index].done():
                        process = self._workers[index].process
                        # Ended, maybe not reaped yet: its exit code once it is.
                        await asyncio.get_running_loop().run_in_executor(None, process.join, 5)
                        code = process.exitcode
                        return f"worker {index} exited (exit code {code}) before it was ready"
        finally:
            for exited in waiting.values():
                exited.cancel()
        return None

    def _ready_workers(self) -> list[_Worker]:
        """The workers that said Hello and still live: one killed a moment ago may not have
        had its pipe's end read yet (a run sent to it would be lost), but its sentinel, read
        in the same turn, set ``exited`` (``watch_exit``): a flag, not a ``waitpid`` each."""
        return [
            worker
            for worker in self._workers.values()
            if worker.channel is not None and not worker.exited
        ]

    def _keeping(self, order: WorkerRun, least_busy: _Worker, ready: list[_Worker]) -> _Worker:
        """A worker of ``ready`` that keeps the thread's session (``gateway.adk.workers.kept``),
        if it has at most ``KEEPING_SLACK`` runs more than ``least_busy``: its Start then
        leaves those events out, and the worker parses none of them again."""
        thread = (order.user_id, order.thread_id)
        if least_busy.kept.holds(thread):
            return least_busy
        most = len(least_busy.runs) + KEEPING_SLACK
        for worker in ready:
            if worker.kept.holds(thread) and len(worker.runs) <= most:
                return worker
        return least_busy

    async def _least_busy(self) -> tuple[_Worker, list[_Worker]]:
        """The ready worker with the fewest runs (``placed.least_busy``: of several, the
        fewest starting, then each in turn), and the ready workers it was chosen from
        (``_keeping`` looks among the same: one look at the workers a run); when none is
        ready (all died at once), the first to be ready again, or WorkerLost once none is
        starting (a start that failed is tried again under a new future:
        ``_watch_start``) or none is in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_SECONDS
        while not (ready := self._ready_workers()):
            starting = [future for future in self._ready.values() if not future.done()]
            if not starting or (left := deadline - loop.time()) <= 0:
                raise WorkerLost()
            await asyncio.wait(starting, timeout=left, return_when="FIRST_COMPLETED")
        return placed.least_busy(ready, next(self._placings)), ready

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        channel: Channel[FromWorker] = Channel(reader, writer, FromWorker, self.counts)
        try:
            hello = await channel.receive()
        except ChannelClosed:
            channel.close()
            return
        if (refused := _refusal(hello, self._workers)) is not None:
            log.warning("a process that is no worker of ours connected: %s; closed", refused)
            channel.close()
            return
        assert isinstance(hello, Hello)
        worker = self._workers[hello.index]
        worker.channel = channel
        worker.unwatch = watch_exit(worker.process, partial(setattr, worker, "exited", True))
        worker.reader = asyncio.current_task()
        ready = self._ready[worker.index]
        if not ready.done():
            ready.set_result(None)
        self._failed_starts.pop(worker.index, None)
        log.info(
            "worker %d (pid %d) is ready, %.1f s after it was started",
            worker.index,
            hello.pid,
            time.perf_counter() - worker.started,
        )
        try:
            while True:
                read = await channel.receive_all()
                for at, message in enumerate(read):
                    self._reading = (at, len(read))  # for the timeline's counts
                    try:
                        self._received(worker, message)
                    except Exception:  # one message's fault is its run's, never the worker's
                        self._not_taken(worker, message)
        except ChannelClosed:
            pass
        finally:
            channel.close()
            self._lost(worker)

    def _received(self, worker: _Worker, message: FromWorker) -> None:
        match message:
            case Yielded():
                stream = worker.runs.get(message.run)
                if stream is not None and message.failure is not None:
                    self._keep_failure(stream, message.failure)
                if stream is not None and message.stored:
                    if stream.stored is None:  # taken as any other faulted message
                        raise ValueError("an event said stored, and nothing of the run was")
                    self._yielded(stream, stream.stored)
                elif stream is not None:
                    event = parse_event(message.event, dumped=True)
                    if event.partial:  # the run's next chunks may come as Streamed
                        stream.chunk = Whole(event)
                    self._yielded(stream, event)
            case Streamed():
                if (stream := worker.runs.get(message.run)) is not None:
                    if stream.chunk is None:  # taken as any other faulted message
                        raise ValueError("a chunk came as its text, and none of the run whole")
                    self._yielded(stream, stream.chunk.rebuilt(message))
            case Append():
                stream = worker.runs.get(message.run)
                assert worker.channel is not None
                if stream is None:  # the hub let go of the run: nothing more of it is stored
                    worker.channel.send(Appended(message.run, message.call, "the run is over"))
                else:
                    self._answer(self._store(worker.channel, stream, message), stream)
            case ReadSurfaces():
                stream = worker.runs.get(message.run)
                assert worker.channel is not None
                self._answer(self._read_surfaces(worker.channel, stream, message), stream)
            case Stalled():
                if (stream := worker.runs.get(message.run)) is not None:
                    stalled = self.stalled(stream.run_id)
                    if not stalled.done():
                        stalled.set_result(Stall(message.model, message.seconds))
            case Finished():
                stream = worker.runs.get(message.run)
                trusted = stream is not None and stream.store_error is None
                worker.kept.finished(
                    message.run,
                    message.kept,
                    message.kept_last,
                    stream.session.events if stream is not None and trusted else None,
                )
                if stream is not None:
                    self._keep_ending(stream, message)
                    stream.queue.put_nowait(_END)
            case Failed():
                worker.kept.ended(message.run)  # the worker keeps nothing of it
                if (stream := worker.runs.get(message.run)) is not None:
                    stream.queue.put_nowait(message)
            case Unkept():
                self._unkept(worker, message)
            case Audited():
                if self.audit is not None:
                    self.audit.record(AuditRecord.from_row(tuple(message.row)))
            case CallSent():
                if self.audit is not None:
                    self.audit.note_sent(message.call_id)
            case ModelCalled():
                self.metrics.model_called(message.model, message.seconds, message.failed)
            case TokensUsed():
                self.metrics.tokens_used(message.model, message.input_tokens, message.output_tokens)
            case Hello():
                log.warning("worker %d said hello twice", worker.index)

    def _yielded(self, stream: _Stream, event: AdkEvent) -> None:
        """The run's next event, for the hub to take."""
        stream.queue.put_nowait(event)
        self.most_held = max(self.most_held, stream.queue.qsize())
        if not stream.yielded:
            stream.yielded = True
            if timeline.on():  # where in its read it was, and whether its Start went twice
                at, read = self._reading
                resent = float(stream.resent)
                levels = (("=before", at), ("=read", read), ("=resent", resent))
                timeline.mark("chunk_read", stream.run_id, levels)

    def _not_taken(self, worker: _Worker, message: FromWorker) -> None:
        """A message of the worker's this process could not take (an event it cannot
        parse, a failure it does not know): the run it belongs to ends as if its invocation
        had raised, and the worker stops it; the worker and its other runs go on. The run's
        later messages find it gone, as after the hub let go of it."""
        run = getattr(message, "run", None)
        stream = worker.runs.pop(run, None) if isinstance(run, int) else None
        log.warning(
            "worker %d sent a %s this process could not take%s",
            worker.index,
            type(message).__name__,
            f"; run {stream.run_id} ends with the agent's error" if stream else "; dropped",
            exc_info=True,
        )
        if stream is not None:
            stream.queue.put_nowait(
                RemoteFailure(
                    f"worker {worker.index} sent a {type(message).__name__} of the run"
                    " this process could not take"
                )
            )

    def _answer(self, answering: Coroutine[Any, Any, None], stream: _Stream | None) -> None:
        """Answers a worker's request in a task of its own (the pipe's reader never waits),
        in the context of the run that asked."""
        task = asyncio.create_task(answering, context=stream.context if stream else None)
        self._storing.add(task)
        task.add_done_callback(self._storing.discard)

    async def _read_surfaces(
        self, channel: Channel[FromWorker], stream: _Stream | None, asked: ReadSurfaces
    ) -> None:
        answer = SurfacesRead(asked.run, asked.call, error="the run is over")
        if stream is not None and stream.read_surfaces is not None:
            try:
                answer = SurfacesRead(asked.run, asked.call, (await stream.read_surfaces()).live)
            except Exception as failure:  # the store's; the run fails as in one process
                log.warning(
                    "run %s: its thread's A2UI surfaces were not read: %s", stream.run_id, failure
                )
                answer = SurfacesRead(asked.run, asked.call, error=type(failure).__name__)
        with contextlib.suppress(ChannelClosed):
            try:
                channel.send(answer)
            except FrameTooLarge as failure:  # the run fails, as on a read that failed
                log.warning("a worker's run was not sent its thread's A2UI surfaces: %s", failure)
                channel.send(SurfacesRead(asked.run, asked.call, error=type(failure).__name__))

    async def _store(self, channel: Channel[FromWorker], stream: _Stream, append: Append) -> None:
        error = None
        try:
            event = parse_event(append.event, dumped=True)
            # The worker's text is ADK's dump of the event: the row is it (not dumped again).
            text = append.event.decode()
            await self.sessions.append_event(stream.session, event, parsed_from=text)
            stream.stored = event
        except Exception as failure:  # the store's, raised to the hub as it was
            stream.store_error = failure
            error = type(failure).__name__
        with contextlib.suppress(ChannelClosed):
            channel.send(Appended(append.run, append.call, error))

    def _unkept(self, worker: _Worker, unkept: Unkept) -> None:
        """The worker did not keep what the run's Start left out: the Start again, whole."""
        log.info("worker %d did not keep a thread's session; sent whole", worker.index)
        stream = worker.runs.get(unkept.run)
        if stream is None or stream.start is None:
            worker.kept.ended(unkept.run)  # not started there: no end of it comes
        if stream is None:  # let go of already
            return
        if stream.start is None:  # taken as any other faulted message
            raise ValueError("a run's Start said unkept, and it left nothing out")
        whole = msgspec.structs.replace(
            stream.start, session=session_json(stream.session), kept=0, kept_last=None
        )
        stream.start, stream.resent = None, True
        assert worker.channel is not None
        worker.channel.send(whole, now=True)

    def _keep_ending(self, stream: _Stream, finished: Finished) -> None:
        """Keeps what the worker's plugins counted of the run for ``take_usage`` and
        ``take_failure``, by the hub's run id."""
        if finished.usage:
            _keep(self._usage, stream.run_id, finished.usage)
        if finished.failure is not None:
            self._keep_failure(stream, finished.failure)

    def _keep_failure(self, stream: _Stream, failed: tuple[str, str, str, str]) -> None:
        code, sentence, detail, model = failed
        failure = ModelFailure(p.ErrorCode(code), sentence, detail)
        _keep(self._failures, stream.run_id, FailedCall(failure, model))

    def _lost(self, worker: _Worker) -> None:
        for stream in worker.runs.values():
            stream.queue.put_nowait(WorkerLost())
        worker.runs.clear()
        worker.channel = None
        if worker.unwatch is not None:
            worker.unwatch()
        if self._closing:
            return
        pid = worker.process.pid
        log.warning("worker %d (pid %s) is gone; starting another", worker.index, pid)
        asyncio.get_running_loop().run_in_executor(None, _end, worker.process)
        self._start_worker(worker.index)
        self._watch(worker.index)

    async def _cancel_on(
        self, abort_signal: asyncio.Event | None, channel: Channel[FromWorker], number: int
    ) -> None:
        if abort_signal is None:
            return
        await abort_signal.wait()
        with contextlib.suppress(ChannelClosed):
            channel.send(Cancel(number))


def _keep(kept: dict[str, Any], run_id: str, value: object) -> None:
    kept[run_id] = value
    while len(kept) > KEPT_ENDINGS:
        del kept[next(iter(kept))]


def _refusal(hello: FromWorker, workers: Mapping[int, _Worker]) -> str | None:
    """Why a process's first message is not the Hello of the process started for its
    place, if it is not: one given up for saying nothing in time may still connect while
    its replacement starts, and must not take the replacement's place."""
    if not isinstance(hello, Hello):
        return f"its first message was a {type(hello).__name__}"
    said = f"pid {hello.pid} said Hello as worker {hello.index}"
    worker = workers.get(hello.index)
    if worker is None:
        return f"{said}, which is not starting"
    if worker.channel is not None:
        return f"{said}, which said it already"
    if hello.pid != worker.process.pid:
        return f"{said}, which was started as pid {worker.process.pid}"
    return None
