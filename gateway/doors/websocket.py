"""/ws: one WebSocket connection carrying runs, answers, cancels, reattaches and live (voice)
turns (``gateway.doors.voice``, docs/voice.md) both ways."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import dataclasses
import logging
import time
import uuid
from collections.abc import Coroutine
from typing import Any, cast

from gateway import logs, timeline, tracing
from gateway import wire as p
from gateway.auth import WARM_UP_USER, Unauthorized, query_param, selected_subprotocol
from gateway.context import Caller
from gateway.doors import cors
from gateway.doors.access import DENIALS, Access
from gateway.doors.asgi import Receive, Scope, Send, header, refusal
from gateway.doors.drain import CLOSE_CODE, CLOSE_REASON
from gateway.doors.send_queue import Outgoing
from gateway.doors.shared import Shared
from gateway.doors.transport import SEND_TEXTS, SendNow
from gateway.doors.voice import Voice
from gateway.hub.admission import Admitted
from gateway.hub.dedupe import Duplicate
from gateway.hub.inputs import needed_part
from gateway.hub.refusals import draining
from gateway.hub.threads import Run
from gateway.wire import live, versions
from gateway.wire.notices import nothing_to_cancel, standalone

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Named:
    """An input a refusal names: its thread and its runId."""

    thread_id: str
    run_id: str


@dataclasses.dataclass
class Refused:
    """Frames refused (a full queue, a rate limit), told of in one error when its turn comes;
    it names the inputs among them as a refusal of one input does (``REFUSED_RUN_ID``)."""

    first: p.GatewayError
    frames: int = 0
    # The inputs among them, each once, in order: the first ``REFUSED_NAMED`` of a flood.
    inputs: list[Named] = dataclasses.field(default_factory=list)

    def count(self, frame: object) -> None:
        """Counts ``frame`` refused, and names it if it is an input."""
        self.frames += 1
        run_id, thread_id = getattr(frame, "run_id", None), getattr(frame, "thread_id", None)
        if isinstance(run_id, str) and isinstance(thread_id, str):
            named = Named(thread_id, run_id)
            if len(self.inputs) < REFUSED_NAMED and named not in self.inputs:
                self.inputs.append(named)

    def to_event(self) -> p.RunError:
        message = f"{self.first.message} {self.frames} frame(s) were refused."
        error = p.RunError(message=message, code=self.first.code.value)
        if self.inputs:  # the first's runId goes in as a lone refusal's does (``_refusal``)
            error.metadata = {p.REFUSED_RUN_IDS: [named.run_id for named in self.inputs]}
        return error


@dataclasses.dataclass(frozen=True)
class Taken:
    """An input admitted as it was read (its RUN_STARTED out already), or refused then;
    its run starts in its turn (docs/first-event.md)."""

    request: p.RunAgentInput
    admitted: Admitted | None
    refused: p.GatewayError | None = None
    # Its runId was found admitted or running on its thread as it was read: not run again.
    duplicate: Duplicate | None = None


@dataclasses.dataclass(frozen=True)
class Restart:
    """The gateway drains: the connection closes once the run it follows has ended."""


@dataclasses.dataclass(frozen=True)
class ThreadNewsDue:
    """Changes to the user's threads wait to be sent (``gateway.hub.thread_news``)."""


# What a connection's worker handles in order: a run, a reattach, a live turn, an error, a
# notice, the drain's turn, or the user's thread changes.
Work = (
    p.RunAgentInput
    | Taken
    | p.Reattach
    | live.LiveStart
    | p.GatewayError
    | list[p.Event]
    | Refused
    | Restart
    | ThreadNewsDue
)

# How long thread changes wait for a run another connection streams here to end.
NEWS_RETRY_SECONDS = 0.25

# Frames one connection may have waiting behind its current run, whatever their size.
QUEUED_FRAMES_LIMIT = 32
# The inputs one error for several refused frames names at most (``Refused``): a flood's
# error stays small, and a client keeps fewer inputs to send again than this.
REFUSED_NAMED = 32

# Runs of closed connections being started, held until they have (a task needs a holder).
_LEFT_BEHIND: set[asyncio.Future[Run]] = set()


class WebSocketSession:
    """One /ws connection: runs processed in order, cancels jumping the queue.

    A connection follows one thread at a time, the one of its latest run or reattach, so
    the runs it is sent never overlap and its stream stays a valid AG-UI stream. What it
    holds is bounded in bytes both ways: frames waiting for earlier runs
    (``receive_buffer_bytes``, and ``QUEUED_FRAMES_LIMIT`` of them) and events waiting for
    the client to read (``send_buffer_bytes``). Nothing it is sent can stop it working: a
    frame that fails unexpectedly gets a RUN_ERROR INTERNAL_ERROR and the next one is read.
    When the gateway drains (``gateway.doors.drain``) it closes with 1012 once the run it
    follows has ended and what it was sent is answered.

    Most connections sit idle most of the time, and a gateway holds thousands: the work
    waiting is a plain deque, and its worker task runs only while there is some (started
    by the first item, ending when the deque is empty), so an idle connection holds no
    ``asyncio.Queue`` (four deques) and no parked worker (issue 32: ≤ 25 KiB an idle socket).
    """

    def __init__(self, shared: Shared, scope: Scope, receive: Receive, send: Send) -> None:
        self.hub = shared.hub
        self.settings = shared.settings
        self.rates = shared.rates
        self.origins = shared.origins
        self.shutdown = shared.drain
        self.draining = False
        self.scope, self.receive, self.send = scope, receive, send
        self.send_queue: Outgoing[p.Event | live.AudioOut | None] = Outgoing(
            self.settings.send_buffer_bytes
        )
        self.inbox: collections.deque[tuple[Work, int]] = collections.deque()
        # The task working through the inbox while it has work; None or done when idle.
        self.worker: asyncio.Task[None] | None = None
        # Each worker runs in the connection's context (its log fields), whoever queued.
        self.context = contextvars.copy_context()
        # Set once the connection is gone: nothing queued after that is worked on.
        self.closed = False
        self.queued_bytes = 0
        self.refused: Refused | None = None
        self.user = ""
        self.access = Access(
            shared.auth, shared.hub.audit, scope, "ws", "connect", shared.hub.metrics
        )
        self.following: str | None = None
        self.close_code = 1000
        self.close_reason = ""
        # The client instance it speaks for (``?clientId=``), across its reconnects.
        self.client: str | None = None
        # Whether anything was sent yet: only a stream's first event may be a lone RUN_ERROR.
        self.streamed = False
        # Its live turn, once it sends liveStart (docs/voice.md).
        self.voice = Voice(shared.hub, shared.settings, shared.live_users)
        # Changes to the user's threads not sent yet, the latest per thread, and whether
        # their turn is queued.
        self.news: dict[str, p.Custom] = {}
        self.news_due = False
        # Whether the stream sent is between runs: where a change may go, in a run of its own.
        self.between_runs = True
        # The input being started whose RUN_STARTED the hub sent already: a refusal ends it.
        self.acknowledged: str | None = None
        # The run id of the RUN_STARTED sent as its input was admitted, and when that was,
        # until it is written to the socket.
        self.started_early: tuple[str, float] | None = None

    def deliver(self, event: p.Event) -> None:
        self.streamed = True
        if isinstance(event, p.RunStarted | p.RunFinished | p.RunError):
            self.between_runs = not isinstance(event, p.RunStarted)
        # What a person waits for: the run's acknowledgement, a reply's first words.
        now = isinstance(event, p.RunStarted) or self.send_queue.starts_text(event)
        if self.send_queue.offer(event):
            # It can reconnect and reattach: the store has everything it missed.
            log.warning("closing a connection of %s that fell behind", self.user)
        elif now:
            self._write_now()

    def _write_now(self) -> None:
        """Writes what is queued in this turn of the loop, where the writer task would in
        the next: under load a turn is tens of milliseconds (docs/first-event.md). Only
        while the writer waits for events, so the order holds; else it is the writer's."""
        # Where the server offers it (read here: one more attribute a session grew every
        # idle connection's dict past its next size, ~1 KiB).
        offered = self.scope.get("extensions", {}).get(SEND_TEXTS) or {}
        send_now: SendNow | None = offered.get("now")
        if send_now is None:
            return
        taken: list[tuple[p.Event, bytes]] = []

        def take() -> list[bytes] | None:
            frames = self.send_queue.take()
            if frames is None:
                return None
            taken.extend(cast("list[tuple[p.Event, bytes]]", frames))
            return [data for _, data in taken]

        if send_now(take):
            self._sent(taken)

    def deliver_audio(self, chunk: live.AudioOut) -> None:
        if self.send_queue.offer(chunk):
            log.warning("closing a connection of %s that fell behind the agent's speech", self.user)

    async def serve(self) -> None:
        message = await self.receive()
        if message["type"] != "websocket.connect":
            return
        if not cors.origin_allowed(self.scope, self.origins):
            log.warning("refused a /ws upgrade from origin %s", header(self.scope, b"origin"))
            await self._refuse_upgrade(cors.FOREIGN_ORIGIN)
            return
        if self.shutdown.begun:  # its client tries again, reaching a process that is up
            self.shutdown.refused_connections += 1
            await self._refuse_upgrade(draining())
            return
        try:
            identity = await self.access.identify()
        except p.GatewayError as error:
            await self._refuse_upgrade(error)
            return
        self.user = identity.user
        logs.bind(user=self.user)
        self.context = contextvars.copy_context()
        if (client := query_param(self.scope, "clientId")) is not None:
            try:
                self.client = p.client_instance(client)
            except p.GatewayError as error:
                await self._refuse_upgrade(error)
                return
        await self.send(
            {"type": "websocket.accept", "subprotocol": selected_subprotocol(self.scope)}
        )
        thread_id = query_param(self.scope, "threadId")
        if thread_id:
            try:
                reattach = p.reattach_to(thread_id)
                if (after := query_param(self.scope, "after")) is not None:
                    reattach.after = p.cursor(after, "?after=")
                self._queue(reattach, 0)
            except p.GatewayError as error:
                self._queue(error, 0)
        expiry = self._expire_at(identity.expires_at)
        if query_param(self.scope, "threads") == "live":  # asked for: stock clients are not
            self.hub.news.listen(self.user, self)
        writer = asyncio.create_task(self._write())
        self.shutdown.connections.add(self)
        if self.shutdown.begun:  # it began while this one was being accepted
            self.drain()
        try:
            await self._read()
        finally:
            self.voice.leave()
            self.shutdown.connections.discard(self)
            self.hub.news.forget(self.user, self)
            if expiry is not None:
                expiry.cancel()
            self.hub.leave(self)
            self.closed = True
            worker = self.worker
            if worker is not None:
                worker.cancel()
            self.send_queue.end()
            if worker is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
            with contextlib.suppress(Exception):
                await writer
            for item, _ in self.inbox:  # inputs admitted as read whose turn never came
                if isinstance(item, Taken) and item.admitted is not None:
                    if item.admitted.early:  # told it began: it starts all the same
                        self._start_left_behind(item)
                    else:
                        self.hub.admission.withdraw(item.admitted)
            # Nothing waits for these any more: free them now, not at a full collection.
            self.send_queue.clear()
            self.inbox.clear()

    def thread_news(self, events: dict[str, p.Custom]) -> None:
        """Changes to the user's threads, for a connection that asked (``?threads=live``):
        sent in their turn, between runs, each in a run of its own on its thread
        (``notices.standalone``)."""
        self.news.update(events)
        if not self.news_due:
            self.news_due = True
            self._enqueue(ThreadNewsDue(), 0)

    def _send_news(self) -> None:
        if not self.between_runs:
            # A run streams here (another connection's, or followed from another process):
            # its events must not be cut into.
            loop = asyncio.get_running_loop()
            loop.call_later(NEWS_RETRY_SECONDS, self._enqueue, ThreadNewsDue(), 0)
            return
        self.news_due = False
        news, self.news = self.news, {}
        for thread_id, event in news.items():
            for framed in standalone(thread_id, [event]):
                self.deliver(framed)

    def _expire_at(self, expires_at: float | None) -> asyncio.TimerHandle | None:
        """A connection lives no longer than its credential (with the verification leeway)."""
        if expires_at is None:
            return None
        delay = expires_at + self.settings.jwt_leeway - time.time()
        return asyncio.get_running_loop().call_later(max(delay, 0.0), self._expired)

    def drain(self) -> None:
        """The gateway drains: queues the close behind what the connection already has."""
        if not self.draining:
            self.draining = True
            # A live turn could hold the drain for minutes: it ends now, its words stored,
            # and the client starts the next one on a process that stays.
            self.voice.end()
            self._enqueue(Restart(), 0)

    def _expired(self) -> None:
        # Its runs go on: a new connection with a new token reattaches to them.
        self.deliver(
            Unauthorized(
                "Your token has expired; reconnect with a new one and reattach to the thread."
            ).to_event()
        )
        self.close_code = 1008
        self.send_queue.end()

    async def _refuse_upgrade(self, error: p.GatewayError) -> None:
        """Answers the upgrade with the refusal's HTTP status, challenge and RUN_ERROR body."""
        if "websocket.http.response" not in self.scope.get("extensions", {}):
            # A server without the extension: its own 403, the nearest it allows.
            await self.send({"type": "websocket.close", "code": 1008})
            return
        status, headers, body = refusal(error)
        await self.send(
            {"type": "websocket.http.response.start", "status": status, "headers": headers}
        )
        await self.send({"type": "websocket.http.response.body", "body": body})

    async def _read(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
                if live.is_audio(data):  # docs/voice.md
                    if refused := self.voice.audio(data):
                        self._refuse(refused)  # one error, however many frames
                    continue
            try:
                await self._take(data)
            except Exception:
                self._queue(p.unexpected(f"a frame from {self.user}"), 0)

    async def _take(self, data: str | bytes) -> None:
        """Acts on one upstream frame: a cancel at once, anything else in its turn."""
        if wait := self.rates.allow(self.user):
            self._refuse(self.rates.refusal(wait))
            return
        if len(data) > self.settings.max_frame_bytes:
            self._queue(_too_large(len(data), self.settings.max_frame_bytes), 0)
            return
        try:
            frame = p.decode_upstream(data)
        except p.GatewayError as error:
            self._queue(error, 0)
            return
        if isinstance(frame, p.Cancel):
            # A cancel acts now, ahead of queued runs; only its notice waits its turn.
            try:
                cancelled = await self.hub.cancel(self.user, frame.thread_id, frame.run_id)
            except p.GatewayError as error:  # another user's thread, or its process unreachable
                self.access.record_cancel(frame.thread_id, False, error)
                self._queue(error, 0)
                return
            self.access.record_cancel(frame.thread_id, cancelled)
            if not cancelled:
                self._queue(nothing_to_cancel(frame.thread_id, frame.run_id), 0)
        elif isinstance(frame, live.LiveStop):
            # Like a cancel, it acts now; the live turn's end is its answer.
            if refused := self.voice.stop(frame):
                self._queue(refused, 0)
        elif isinstance(frame, live.LiveToolResult):
            # The live turn waits on it now: it cannot wait behind the turn itself.
            if refused := await self.voice.answer(frame):
                self._refuse(refused)
        elif isinstance(frame, live.LiveResume):
            # An approval the live turn waits on: like a result, it acts now.
            refused = await self.voice.decide(frame)
            overruled = self.voice.turn.run.overruled if self.voice.turn else None
            self.access.record_answers(frame.thread_id, frame.resume, refused, overruled)
            if refused:
                self._refuse(refused)
        elif isinstance(frame, p.RunAgentInput) and self.voice.takes(frame):
            # Typed into the live turn: it goes to the model now, not after the turn.
            if refused := self.voice.say(frame):
                self._refuse(refused, frame)
        elif isinstance(frame, p.RunAgentInput):
            timeline.mark("read", frame.run_id)
            # A queued input keeps only what the run reads, not the history a client resends.
            request = needed_part(frame)
            if self._idle() and not self._full(len(data)):
                # Admitted now, not a turn later in the worker: its RUN_STARTED is on its
                # way before the loop runs other runs' work again (docs/first-event.md).
                self._queue(self._take_input(request), len(data))
            else:
                self._queue(request, len(data))
        else:
            self._queue(frame, len(data))

    def _queue(self, work: Work, size: int) -> None:
        """Queues work for its turn, or refuses it when the queue is full."""
        if self._full(size):
            self._refuse(_queue_full(), work)
            return
        self.queued_bytes += size
        self._enqueue(work, size)

    def _full(self, size: int) -> bool:
        return (
            len(self.inbox) >= QUEUED_FRAMES_LIMIT
            or self.queued_bytes + size > self.settings.receive_buffer_bytes
        )

    def _idle(self) -> bool:
        """Nothing waits or is worked on: an input read now is the connection's next work."""
        return not self.closed and not self.inbox and (self.worker is None or self.worker.done())

    def _take_input(self, request: p.RunAgentInput) -> Taken:
        """Admits an input as it is read (``Admission.admit``), as the worker would next."""
        try:
            request = self._negotiated(request)
            admitted = self.hub.admission.admit(self.user, request, self, self._acknowledge)
        except p.GatewayError as error:  # an undeclarable version, or a refusal
            return Taken(request, None, error)
        except Duplicate as duplicate:
            return Taken(request, None, duplicate=duplicate)
        return Taken(request, admitted)

    def _negotiated(self, request: p.RunAgentInput) -> p.RunAgentInput:
        """The input in the version it declares, which the connection speaks from here on
        (its latest input's); GatewayError for one this gateway does not speak."""
        self.send_queue.dialect, request = versions.negotiate(request)
        return request

    def _refuse(self, error: p.GatewayError, frame: object = None) -> None:
        """Counts a frame refused (``frame``, where it was read); however many there are,
        one error waits in the queue."""
        if self.refused is None:
            self.refused = Refused(error)
            self._enqueue(self.refused, 0)
        self.refused.count(frame.request if isinstance(frame, Taken) else frame)

    def _enqueue(self, work: Work, size: int) -> None:
        """Puts work in line, and a worker on it if none is working."""
        if self.closed:
            return
        self.inbox.append((work, size))
        if self.worker is None or self.worker.done():
            self._start_worker()

    def _start_worker(self) -> None:
        self.worker = asyncio.create_task(self._work(), context=self.context)

    async def _work(self) -> None:
        """Works through the inbox in order, and ends once it is empty (the next item
        queued starts another): no task waits on an idle connection."""
        while self.inbox:
            item, size = self.inbox.popleft()
            self.queued_bytes -= size
            try:
                await self._handle(item)
            except Exception:
                self._refusal(p.unexpected(f"a frame from {self.user}").to_event())
            del item  # the next wait must not keep a finished input alive
            if self.draining and not self.inbox:
                self.close_code, self.close_reason = CLOSE_CODE, CLOSE_REASON
                self.send_queue.end()
                self.closed = True  # what comes after the close is not acted on
                return

    async def _handle(self, item: Work) -> None:
        if isinstance(item, p.GatewayError):
            self._refusal(item.to_event())
        elif isinstance(item, Refused):
            self.refused = None
            self._refusal(item.to_event(), item.inputs[0] if item.inputs else None)
        elif isinstance(item, list):
            for event in item:
                self.deliver(event)
        elif isinstance(item, Restart):
            await self._followed_run_ended()
        elif isinstance(item, live.LiveStart):
            await self._live(item)
        elif isinstance(item, ThreadNewsDue):
            self._send_news()
        elif isinstance(item, Taken):
            await self._run(item.request, item)
        else:
            await self._run(item)

    async def _live(self, frame: live.LiveStart) -> None:
        """Opens a live turn, then waits for it to end, as for a run (docs/voice.md)."""
        logs.bind(thread=frame.thread_id, run=frame.run_id)
        try:
            caller = self.access.caller or Caller(self.user)
            turn = await self.voice.start(frame, self, caller)
        except p.GatewayError as error:
            log.info("liveStart on thread %s refused: %s", frame.thread_id, error.code.value)
            if error.code in DENIALS:  # audited as a run refused so is
                self.access.record(
                    "live",
                    thread_id=frame.thread_id,
                    outcome=error.code.value,
                    detail=error.message,
                )
            self._refusal(error.to_event(), frame)
            return
        if self.following not in (None, frame.thread_id):
            self.hub.unwatch(self, self.following)
        self.following = frame.thread_id
        await turn.run.done.wait()

    async def _run(self, request: p.RunAgentInput | p.Reattach, taken: Taken | None = None) -> None:
        """Starts a run or reattaches, then waits for the run it follows to end; ``taken``:
        the input was admitted as it was read."""
        logs.bind(thread=request.thread_id, run=getattr(request, "run_id", None))
        try:
            if isinstance(request, p.Reattach):
                run = await self.hub.reattach(
                    self.user, request.thread_id, self, after=request.after
                )
            else:
                if taken is None:
                    request = self._negotiated(request)
                elif taken.refused is not None:
                    raise taken.refused
                elif taken.duplicate is not None:
                    raise taken.duplicate
                tracing.asked_from(header(self.scope, b"traceparent"), request.forwarded_props)
                starting = self.hub.start(
                    self.user,
                    request,
                    self,
                    self.access.caller,
                    acknowledge=self._acknowledge,
                    admitted=taken.admitted if taken is not None else None,
                )
                if taken is not None and taken.admitted is not None and taken.admitted.early:
                    run = await self._started_whatever_comes(starting)
                else:
                    run = await starting
                self.acknowledged = None
        except p.GatewayError as error:
            self._audit(request, error)
            self._refusal(error.to_event(), request)
            return
        except Duplicate as duplicate:
            # Sent again, not run again: shown the thread as a reattach shows it.
            started = self.acknowledged == duplicate.run_id
            self.acknowledged = None
            try:
                run = await self.hub.rejoin(self.user, duplicate, self, started=started)
            except p.GatewayError as error:
                self._audit(request, error)
                self._refusal(error.to_event(), request)
                return
        self._audit(request, None, run)
        if isinstance(request, p.Reattach):
            self.voice.rejoin(run, self)  # its client's live turn, if it has one, goes on here
        if self.following not in (None, request.thread_id):
            self.hub.unwatch(self, self.following)
        self.following = request.thread_id
        if run is not None:
            await run.done.wait()

    async def _started_whatever_comes(self, start: Coroutine[Any, Any, Run]) -> Run:
        """The run of an input whose RUN_STARTED went out as it was admitted: the client
        was told it began, so it starts even if this connection closes first (a run goes
        on when its connection closes; its client reattaches and follows it,
        docs/first-event.md). A browser's answer would otherwise be lost, its tab waiting
        for the run it was told of."""
        starting = asyncio.ensure_future(start)
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            _LEFT_BEHIND.add(starting)
            starting.add_done_callback(self._left_behind)
            raise

    def _start_left_behind(self, taken: Taken) -> None:
        """Starts an input acknowledged early that was still queued when the connection
        closed (see ``_started_whatever_comes``)."""
        starting = asyncio.ensure_future(
            self.hub.start(
                self.user, taken.request, self, self.access.caller, admitted=taken.admitted
            )
        )
        _LEFT_BEHIND.add(starting)
        starting.add_done_callback(self._left_behind)

    def _left_behind(self, starting: asyncio.Future[Run]) -> None:
        """A run started for this closed connection: it is no longer its executor."""
        _LEFT_BEHIND.discard(starting)
        if starting.cancelled() or starting.exception() is not None:
            return  # refused: nobody is left to tell
        log.info("%s began after its connection closed; it goes on", starting.result())
        self.hub.leave(self)

    def _acknowledge(self, event: p.Event) -> None:
        """The hub admitted the input: its RUN_STARTED goes out now, before the thread is
        read or planned (docs/first-event.md), and the thread followed so far is left, so
        nothing of its runs comes into this one's."""
        if isinstance(event, p.RunStarted):
            self.acknowledged = event.run_id
            self.started_early = (event.run_id, time.perf_counter())
            if self.following not in (None, event.thread_id):
                self.hub.unwatch(self, self.following)
            self.following = event.thread_id
        self.deliver(event)

    async def _followed_run_ended(self) -> None:
        """Waits for the run of the thread the connection follows, whoever started it."""
        thread = self.hub.threads.get(self.following) if self.following else None
        if thread is not None and thread.run is not None:
            await thread.run.done.wait()

    def _refusal(
        self,
        error: p.RunError,
        request: p.RunAgentInput | p.Reattach | live.LiveStart | Named | None = None,
    ) -> None:
        """Tells of a frame refused between runs: alone as the stream's first event, else in
        a run of its own, since a RUN_ERROR after a run's end says that run failed (AG-UI 1.0)
        and nothing but RUN_STARTED may follow a RUN_ERROR. The error names the input's
        runId (``REFUSED_RUN_ID``), if it had one: a lone refusal is of no run, and a client
        that sent several inputs (again, after a reload) tells which one it answers."""
        asked = getattr(request, "run_id", None)
        if asked is not None:
            error.metadata = {**(error.metadata or {}), p.REFUSED_RUN_ID: asked}
        if self.acknowledged is not None:
            self.acknowledged = None  # admitted, then refused: the error ends its run
        elif self.streamed:
            thread_id = request.thread_id if request is not None else self.following or ""
            run_id = asked or f"refused-{uuid.uuid4().hex[:12]}"
            self.deliver(
                p.RunStarted(
                    thread_id=thread_id, run_id=run_id, protocol_version=p.PROTOCOL_VERSION
                )
            )
        self.deliver(error)

    def _audit(
        self,
        request: p.RunAgentInput | p.Reattach,
        error: p.GatewayError | None,
        run: Run | None = None,
    ) -> None:
        """Audits a request once the hub decided it (``run``: what it started)."""
        if isinstance(request, p.Reattach):
            self.access.record_reattach(request.thread_id, error)
        else:
            self.access.record_input(request, error, run.overruled if run else None)

    async def _write(self) -> None:
        # A batch's text frames in one write, where the server takes them so.
        together = SEND_TEXTS in self.scope.get("extensions", {})
        while True:
            texts: list[tuple[p.Event, bytes]] = []
            for event, data in await self.send_queue.batch():
                if event is not None and not isinstance(event, live.AudioOut):
                    texts.append((event, data))
                    continue
                await self._send_texts(texts, together)
                texts = []
                if event is None:
                    with contextlib.suppress(Exception):
                        await self.send(
                            {
                                "type": "websocket.close",
                                "code": self.close_code,
                                "reason": self.close_reason,
                            }
                        )
                    return
                await self.send({"type": "websocket.send", "bytes": data})
            await self._send_texts(texts, together)

    async def _send_texts(self, texts: list[tuple[p.Event, bytes]], together: bool) -> None:
        if not texts:
            return
        if together:
            await self.send({"type": SEND_TEXTS, "texts": [data for _, data in texts]})
        else:
            for _, data in texts:
                await self.send({"type": "websocket.send", "text": data.decode()})
        self._sent(texts)

    def _sent(self, texts: list[tuple[p.Event, bytes]]) -> None:
        if timeline.on():
            _timed_out(texts)
        if self.started_early is not None:
            for event, _ in texts:
                if isinstance(event, p.RunStarted):
                    self._timed(event)

    def _timed(self, started: p.RunStarted) -> None:
        """An early RUN_STARTED is out: its time since the input was admitted is the
        client's wait for it (``gateway_run_started_seconds``)."""
        assert self.started_early is not None
        run_id, admitted_at = self.started_early
        if started.run_id == run_id:
            self.started_early = None
            if self.user != WARM_UP_USER:
                self.hub.metrics.run_started(time.perf_counter() - admitted_at)


def _timed_out(texts: list[tuple[p.Event, bytes]]) -> None:
    """Marks the RUN_STARTED and first texts written (``gateway.timeline``)."""
    for event, _ in texts:
        if isinstance(event, p.RunStarted):
            timeline.mark("acknowledged", event.run_id)
        elif isinstance(event, p.TextMessageContent):
            timeline.written(event.message_id)


def _queue_full() -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.RATE_LIMIT_EXCEEDED,
        f"This connection already has {QUEUED_FRAMES_LIMIT} frames or its byte limit"
        " (GATEWAY_RECEIVE_BUFFER_BYTES) waiting for earlier runs; wait for a run to"
        " finish before sending the next.",
    )


def _too_large(size: int, limit: int) -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"Frame is {size} bytes; the limit is {limit} (GATEWAY_MAX_FRAME_BYTES). "
        "Send less history: the thread's store already holds it.",
    )
