"""A worker process's side of the pipe: runs the invocations the main process starts.

Theory of operation. The worker connects to the main process's Unix socket, says
``Hello`` with its index, and then serves messages until the pipe closes, when it exits
(the main process is gone or let it go). Each ``Start`` becomes a task running one ADK
invocation on the worker's Runner, as the in-process engine would
(``gateway.adk.invocation``), over the ``RemoteSessions`` that hold the run's session;
every event the runner yields goes back as ``Yielded`` (a streamed chunk like the one
before it as ``Streamed``, its text: ``gateway.adk.workers.chunks``), within the run's credit window
(``gateway.adk.workers.credit``: no more than ``WINDOW`` events the hub has not taken),
and the task's last message is ``Finished`` (with what the usage and model-call plugins
counted) or ``Failed``.
Until a run has sent its first event, its steps (ADK's tasks too) and the pipe's reader go
first on the worker's loop, ahead of other runs' later steps (``first_turn``).
``Cancel`` sets the invocation's abort signal (ADK seals it); ``Stop`` cancels the task.
A run's model calls are watched here, where they are made: one that goes quiet for
``GATEWAY_MODEL_TIMEOUT`` is reported ``Stalled``, and the main process stops the run as
it stops one of its own (a cancel, then ``Stop`` if ADK does not stop in time).

The run's task first makes the run's caller its own (``gateway.context.asked_by``), as the
hub's run task does in process, so tools see who asks; binds the run's ids for its log
records (``gateway.logs``), which name this worker too; and continues the run's trace
(``gateway.tracing.continue_from``), so ADK's spans here are children of the hub's run span.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from contextlib import aclosing

from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import Session

from gateway import logs, timeline, tracing
from gateway.a2ui.catalogs import ClientCatalogs
from gateway.a2ui.surfaces import Surface, Surfaces
from gateway.adk.invocation import Invocation
from gateway.adk.resumability import refusal_in
from gateway.adk.usage import UsagePlugin
from gateway.adk.workers import first_turn
from gateway.adk.workers.channel import Channel, ChannelClosed
from gateway.adk.workers.chunks import Sent
from gateway.adk.workers.credit import Window
from gateway.adk.workers.first_turn import FirstTurn, FirstTurnLoop, go_first
from gateway.adk.workers.kept import Kept
from gateway.adk.workers.messages import (
    Appended,
    Cancel,
    Credit,
    Failed,
    Finished,
    FromMain,
    Hello,
    Stalled,
    Start,
    Stop,
    Streamed,
    SurfacesRead,
    Unkept,
    Yielded,
)
from gateway.adk.workers.relay import Relay
from gateway.adk.workers.remote_session import RemoteSessions
from gateway.context import Caller, asked_by
from gateway.models.calls import MODEL_FAILED, ModelCalls
from gateway.store.adk_json import parse_content, parse_session
from gateway.tools.client import ClientTool

__all__ = ["serve"]

log = logging.getLogger(__name__)


async def serve(
    path: str,
    index: int,
    runner: Runner,
    invocation: Invocation,
    sessions: RemoteSessions,
    usage: UsagePlugin | None = None,
    model_calls: ModelCalls | None = None,
    model_timeout: float = 0.0,
    recorded: Relay | None = None,
) -> None:
    """Serves the main process at ``path`` until the pipe closes; a model call of a run
    that sends nothing for ``model_timeout`` seconds (0: never) is reported ``Stalled``,
    and what the plugins record into ``recorded`` goes to the main process. A main
    process gone before the worker connects (it stopped while the worker started) leaves
    nothing to serve: one line says so, and the worker exits as after its pipe closed."""
    # The reader goes first: a run's Start and the answers its steps wait on come through
    # it (gateway.adk.workers.first_turn); the transport is made here, in its context.
    reading = go_first()
    try:
        reader, writer = await asyncio.open_unix_connection(path)
    except OSError as error:  # refused, or the socket's directory removed with the pool
        log.info("worker %d: the main process is gone (%s); stopping", index, error.strerror)
        await runner.close()
        return
    channel: Channel[FromMain] = Channel(reader, writer, FromMain)
    sessions.connect(channel.send)
    if recorded is not None:
        recorded.connect(channel.send)
    channel.send(Hello(index, os.getpid()))
    runs = _Runs(channel, runner, invocation, sessions, usage, model_calls, model_timeout)
    if timeline.on():  # what a run's steps up to its first event were made of, counted
        timeline.count_with(lambda step: _counts(step, runs, reading))
    log.info("worker %d (pid %d) serves runs (%s)", index, os.getpid(), _order())
    began = time.process_time()  # what serving costs a run, start-up and warm-up left out
    try:
        while True:
            runs.handle(await channel.receive())
    except ChannelClosed:
        log.info(
            "worker %d: the main process closed the pipe; stopping (%s; %s)",
            index,
            _order(),
            _cost(runs.started, time.process_time() - began),
        )
    finally:
        sessions.lost()
        await runs.stop_all()
        channel.close()
        await runner.close()


class _Runs:
    def __init__(
        self,
        channel: Channel[FromMain],
        runner: Runner,
        invocation: Invocation,
        sessions: RemoteSessions,
        usage: UsagePlugin | None,
        model_calls: ModelCalls | None,
        model_timeout: float,
    ) -> None:
        self.channel = channel
        self.runner = runner
        self.invocation = invocation
        self.sessions = sessions
        self.usage = usage
        self.model_calls = model_calls
        self.model_timeout = model_timeout
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.aborts: dict[int, asyncio.Event] = {}
        self.windows: dict[int, Window] = {}
        # The session's events of each thread whose last run here ended Finished
        # (``gateway.adk.workers.kept``): a Start takes its thread's, whole or not.
        self.kept: Kept[list[Event]] = Kept()
        self.started = 0  # runs started so far

    def handle(self, message: FromMain) -> None:
        match message:
            case Start():
                timeline.mark("worker_read", str(message.metadata.get("runId")))
                kept = self.kept.take((message.user_id, message.thread_id))
                if message.kept and not _holds(kept, message):
                    self.channel.send(Unkept(message.run), now=True)
                    return
                self.started += 1
                abort = self.aborts[message.run] = asyncio.Event()
                window = self.windows[message.run] = Window()
                held = kept if message.kept else None
                task = asyncio.create_task(self._run(message, abort, window, held))
                self.tasks[message.run] = task
            case Cancel():
                if message.run in self.aborts:
                    self.aborts[message.run].set()
            case Stop():
                if message.run in self.tasks:
                    self.tasks[message.run].cancel()
            case Appended() | SurfacesRead():
                self.sessions.answered(message)
            case Credit():
                if message.run in self.windows:
                    self.windows[message.run].grant(message.events)

    async def stop_all(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def _run(
        self, start: Start, abort: asyncio.Event, window: Window, kept: list[Event] | None
    ) -> None:
        """Runs the invocation; ``kept``: the events this worker kept of the thread, which
        the Start's session left out (``gateway.adk.workers.kept``)."""
        # Until its first event is sent, the run's steps (ADK's tasks too) go first on this
        # worker's loop, ahead of other runs' later steps (gateway.adk.workers.first_turn).
        starting = go_first()
        asked_by(_caller(start.caller))
        run_id = str(start.metadata.get("runId"))
        logs.bind(user=start.user_id, thread=start.thread_id, run=run_id)
        timeline.mark("worker_began")
        tracing.continue_from(start.traceparent)  # ADK's spans nest under the run's
        session: Session | None = None
        ending: Finished | Failed
        watch = self._watch(start.run, run_id)
        try:
            # Read in the try: a run whose session or message this side cannot parse (a
            # value nested past pydantic's limit) ends Failed, not without an end.
            session = parse_session(start.session)
            if kept is not None:
                session.events = [*kept, *session.events]
            self.sessions.hold(start.run, session, input_ahead=start.input_ahead)
            tools = {
                tool.name: ClientTool(tool.name, tool.description, tool.parameters)
                for tool in start.client_tools
            }
            message = parse_content(start.message) if start.message is not None else None
            async with aclosing(
                self.invocation.run(
                    self.runner,
                    user_id=start.user_id,
                    thread_id=start.thread_id,
                    message=message,
                    metadata=start.metadata,
                    client_tools=tools,
                    state_delta=start.state_delta,
                    catalogs=_catalogs(start.catalogs),
                    surfaces=_surfaces(start.surfaces),
                    abort_signal=abort,
                    invocation_id=start.invocation_id,
                )
            ) as events:
                first = True  # the run's first event (its first text, a call) goes at once
                chunks = Sent()  # a chunk like the last sent whole goes as its text
                async for event in events:
                    await window.spend()  # no further ahead of the hub than its window
                    # The hub asks what failed as it translates this event: it goes with it.
                    failure = self._failure(run_id) if event.error_code == MODEL_FAILED else None
                    yielded: Yielded | Streamed | None = None
                    if self.sessions.was_stored(session, event):
                        yielded = Yielded(start.run, stored=True, failure=failure)
                    else:
                        yielded = chunks.streamed(start.run, event, whole_anyway=bool(failure))
                    if yielded is None:
                        yielded = Yielded(start.run, _json(event), failure=failure)
                    if first:
                        timeline.mark("chunk_sent")
                    self.channel.send(yielded, now=first)
                    if first:
                        starting.end()
                    first = False
                    await self.channel.drain()
            ending = self._finished(start, run_id, session)
        except asyncio.CancelledError:
            ending = Failed(start.run, "CancelledError", "stopped by the main process")
        except ChannelClosed:
            return
        except Exception as error:  # the model or a tool raised, or a plugin refused
            refused = refusal_in(error)
            if refused is not None:
                ending = Failed(start.run, type(error).__name__, refused.message, refused.code)
            else:
                log.warning("run %s failed in this worker", run_id, exc_info=True)
                ending = Failed(start.run, type(error).__name__, str(error))
        finally:
            starting.end()
            if watch is not None:
                watch.cancel()
            if session is not None:
                self.sessions.release(start.run)
            self.tasks.pop(start.run, None)
            self.aborts.pop(start.run, None)
            self.windows.pop(start.run, None)
            if self.model_calls is not None:
                self.model_calls.forget(run_id)
        with contextlib.suppress(ChannelClosed):
            self.channel.send(ending)

    def _watch(self, run: int, run_id: str) -> asyncio.Task[None] | None:
        """Watches the run's model calls as the hub watches its own (``GATEWAY_MODEL_TIMEOUT``);
        the main process, told, stops the run as it would stop one of its own."""
        if self.model_calls is None or self.model_timeout <= 0:
            return None
        return asyncio.create_task(
            _report_stall(self.channel, self.model_calls, run, run_id, self.model_timeout)
        )

    def _finished(self, start: Start, run_id: str, session: Session) -> Finished:
        """The run's end; the worker keeps its session for the thread's next run here, and
        says what it holds (kept and sent in one step: in the pipe's order)."""
        usage = self.usage.take(run_id) if self.usage is not None else None
        self.kept.keep((start.user_id, start.thread_id), session.events, len(session.events))
        last = session.events[-1].id if session.events else None
        return Finished(
            start.run, usage, self._failure(run_id), kept=len(session.events), kept_last=last
        )

    def _failure(self, run_id: str) -> tuple[str, str, str, str] | None:
        """The provider's failure that ended a model call of the run, as a message holds it."""
        failed = self.model_calls.take_failure(run_id) if self.model_calls is not None else None
        if failed is None:
            return None
        code = failed.failure
        return (code.code.value, code.sentence, code.detail, failed.model)


# The steps of a run whose timeline marks carry the worker's counts (``first_turn.counts``).
COUNTED = frozenset({"worker_began", "model_called", "model_woke", "model_chunk", "chunk_sent"})


def _counts(step: str, runs: _Runs, reading: FirstTurn) -> list[tuple[str, float]]:
    """The counts a mark of ``step`` carries: the loop's and the run's own (until its
    first event), the pipe's reader's (``reading``: it goes first too, for every run's
    messages, so of the other callbacks a start waits behind, these are not other
    starts'), the runs in flight here, and what the run waited for from the main process."""
    counted = first_turn.counts(step) if step in COUNTED else []
    if counted:
        counted += [
            ("reader", reading.ran),
            ("reader_cpu", 1000 * reading.cpu),
            ("=runs", len(runs.tasks)),
            *runs.sessions.asked(),
        ]
    return counted


def _order() -> str:
    """The order the worker's loop runs runs' steps in, for its log lines."""
    loop = asyncio.get_running_loop()
    if isinstance(loop, FirstTurnLoop):
        return f"a run's start goes first: {loop.went_first} steps so far"
    return "first come, first served"


def _cost(runs: int, cpu: float) -> str:
    """What the worker's process spent serving, a run: its log line's figure."""
    if not runs:
        return "no runs served"
    return f"runs served: {runs}, {1000 * cpu / runs:.2f} ms of CPU a run"


async def _report_stall(
    channel: Channel[FromMain], model_calls: ModelCalls, run: int, run_id: str, timeout: float
) -> None:
    stall = await model_calls.stalled(run_id, timeout)
    log.info(
        "run %s: %s sent nothing for %.1f s; the main process is told",
        run_id,
        stall.model,
        stall.seconds,
    )
    with contextlib.suppress(ChannelClosed):
        channel.send(Stalled(run, stall.model, stall.seconds))


def _holds(kept: list[Event] | None, start: Start) -> bool:
    """Whether ``kept`` is what the main process says this worker keeps of the thread:
    its ``start.kept`` events, the last ``start.kept_last``."""
    events = kept or []
    return len(events) == start.kept and events[-1].id == start.kept_last


def _catalogs(given: dict[str, list[str] | None] | None) -> ClientCatalogs | None:
    if given is None:
        return None
    return ClientCatalogs({id: frozenset(c) if c is not None else None for id, c in given.items()})


def _surfaces(live: dict[str, Surface] | None) -> Surfaces | None:
    if live is None:
        return None
    surfaces = Surfaces()
    surfaces.live = live
    return surfaces


def _caller(fields: dict[str, object] | None) -> Caller | None:
    if fields is None:
        return None
    roles = fields.get("roles") or ()
    claims = fields.get("claims") or {}
    assert isinstance(roles, list | tuple | frozenset) and isinstance(claims, dict)
    return Caller(
        user_id=str(fields["user_id"]),
        org=str(fields["org"]) if fields.get("org") is not None else None,
        roles=frozenset(str(role) for role in roles),
        claims=claims,
    )


def _json(event: Event) -> bytes:
    return event.model_dump_json(exclude_none=True, by_alias=True).encode()
