"""The ASGI app: /ws, POST /invocations, GET /ping, GET /tools. A thin shell over the hub.

Every error a client can cause becomes a RUN_ERROR with a code from the AgentCore table
(with that HTTP status on the SSE door) and leaves the connection usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec

from gateway import protocol as p
from gateway import warmup
from gateway.auth import identify, query_param
from gateway.config import Settings
from gateway.hub import Hub, notice, standalone
from gateway.outgoing import Outgoing
from gateway.screens import catalog as screens
from gateway.static import web_file

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# A connection that stops reading may fall this many events behind before it is closed.
SEND_QUEUE_LIMIT = 10_000
# /ping during start-up, before the warm-up is over.
STARTING = msgspec.json.encode({"status": "Starting"})


class Ping:
    """GET /ping: Healthy or HealthyBusy; the timestamp moves only when the status does."""

    def __init__(self, hub: Hub) -> None:
        self.busy = False
        self.changed_at = int(time.time())
        hub.status_listeners.append(self._on_status)

    def _on_status(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.changed_at = int(time.time())

    def body(self) -> bytes:
        status = "HealthyBusy" if self.busy else "Healthy"
        return msgspec.json.encode({"status": status, "time_of_last_update": self.changed_at})


class Gateway:
    """The ASGI application; ``startup`` is given by the caller that owns the engine."""

    def __init__(
        self,
        settings: Settings,
        startup: Callable[[], Awaitable[Hub]],
        shutdown: Callable[[], Awaitable[None]],
    ) -> None:
        self.settings = settings
        self._startup = startup
        self._shutdown = shutdown
        self.hub: Hub | None = None
        self.ping: Ping | None = None
        # Set once the warm-up is over; /ping says Healthy only then.
        self.ready = asyncio.Event()
        self._warming: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket" and scope["path"] == "/ws":
            await WebSocketSession(self, scope, receive, send).serve()
        elif kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 4404})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self.hub = await self._startup()
                    self.ping = Ping(self.hub)
                except BaseException as exc:
                    log.error("start-up failed: %s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
                # It runs through the listener, which uvicorn opens only after this.
                self._warming = asyncio.create_task(self._warm(), name="warm-up")
            elif message["type"] == "lifespan.shutdown":
                if self._warming is not None:
                    self._warming.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._warming
                await self._shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _warm(self) -> None:
        assert self.hub is not None
        try:
            seconds = await warmup.warm_up(self.hub, self.settings)
        except Exception as exc:  # a cold first run is slower, never a reason not to serve
            log.warning("warm-up skipped (%s); the first runs will be slower", exc)
        else:
            log.info("model %s warmed in %.0f ms", self.settings.model, seconds * 1000)
        # ADK's import graph makes a full collection cost tens of ms; freeze what start-up built.
        gc.collect()
        gc.freeze()
        self.ready.set()
        log.info("ready on %s:%d", self.settings.host, self.settings.port)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        assert self.hub is not None and self.ping is not None
        if path == "/ping" and method == "GET" and not self.ready.is_set():
            await _respond(send, 503, STARTING, b"application/json")
        elif path == "/ping" and method == "GET":
            await _respond(send, 200, self.ping.body(), b"application/json")
        elif path == "/tools" and method == "GET":
            tools = [entry.declaration() for entry in self.hub.engine.catalog.client_entries()]
            await _respond(send, 200, msgspec.json.encode({"tools": tools}), b"application/json")
        elif path == "/invocations" and method == "POST":
            await Invocation(self.hub, self.settings, scope, receive, send).serve()
        elif path == "/me" and method == "GET":
            await self._me(scope, send)
        elif path in ("/ping", "/tools", "/invocations", "/me"):
            await _respond(send, 405, b"method not allowed", b"text/plain")
        elif method == "GET" and (found := web_file(path)) is not None:
            body, content_type = found
            await _respond(send, 200, body, content_type.encode())
        else:
            await _respond(send, 404, b"not found", b"text/plain")

    async def _me(self, scope: Scope, send: Send) -> None:
        """The signed-in user and the screens they may open, for the web client's menu."""
        try:
            user = identify(self.settings, scope)
        except p.GatewayError as error:
            await _respond(send, 401, p.encode(error.to_event()), b"application/json")
            return
        await _respond(
            send, 200, msgspec.json.encode(screens.load().profile(user)), b"application/json"
        )


async def _respond(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})


def sse_frame(event: p.Event) -> bytes:
    return b"data: " + p.encode(event) + b"\n\n"


class QueueSubscriber:
    """Collects a run's events for one consumer, without blocking the run."""

    def __init__(self) -> None:
        self.queue: Outgoing[p.Event] = Outgoing()

    def deliver(self, event: p.Event) -> None:
        self.queue.put(event)


class Invocation:
    """POST /invocations: one RunAgentInput in, one SSE stream of its run out."""

    def __init__(
        self, hub: Hub, settings: Settings, scope: Scope, receive: Receive, send: Send
    ) -> None:
        self.hub, self.settings = hub, settings
        self.scope, self.receive, self.send = scope, receive, send

    async def serve(self) -> None:
        subscriber = QueueSubscriber()
        try:
            user = identify(self.settings, self.scope)
            run_input = p.decode_input(await self._body())
            if _asks_to_cancel(run_input):
                await self._cancel(user, run_input.thread_id)
                return
            await self.hub.start(user, run_input, subscriber)
        except p.GatewayError as error:
            await self._stream_start(error.code.http_status)
            await self._stream([error.to_event()], more=False)
            return
        await self._stream_start(200)
        try:
            while True:
                events = await subscriber.queue.batch()
                last = isinstance(events[-1], p.RunFinished | p.RunError)
                await self._stream(events, more=not last)
                if last:
                    return
        finally:
            # A request follows one run: it stops watching the thread when its stream ends.
            self.hub.leave(subscriber)

    async def _cancel(self, user: str, thread_id: str) -> None:
        """The SSE door's cancel: a short stream saying what happened."""
        if await self.hub.cancel(user, thread_id):
            said = notice("CANCEL_REQUESTED", f"The run on thread {thread_id!r} is being stopped.")
            events = standalone(thread_id, [said])
        else:
            events = _nothing_to_cancel(thread_id)
        await self._stream_start(200)
        await self._stream(events, more=False)

    async def _body(self) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.settings.max_frame_bytes:
                raise p.GatewayError(
                    p.ErrorCode.VALIDATION_ERROR,
                    f"Request body is larger than {self.settings.max_frame_bytes} bytes.",
                )
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _stream_start(self, status: int) -> None:
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def _stream(self, events: list[p.Event], *, more: bool) -> None:
        body = b"".join(sse_frame(event) for event in events)
        await self.send({"type": "http.response.body", "body": body, "more_body": more})


# What a connection's worker handles in order: a run, a reattach, an error, or a notice.
Work = p.RunAgentInput | p.Reattach | p.GatewayError | list[p.Event]


class WebSocketSession:
    """One /ws connection: runs processed in order, cancels jumping the queue.

    A connection follows one thread at a time, the one of its latest run or reattach, so
    the runs it is sent never overlap and its stream stays a valid AG-UI stream.
    """

    def __init__(self, gateway: Gateway, scope: Scope, receive: Receive, send: Send) -> None:
        assert gateway.hub is not None
        self.hub = gateway.hub
        self.settings = gateway.settings
        self.scope, self.receive, self.send = scope, receive, send
        self.outbox: Outgoing[p.Event | None] = Outgoing()
        self.inbox: asyncio.Queue[Work] = asyncio.Queue()
        self.user = ""
        self.following: str | None = None
        self.closing = False

    def deliver(self, event: p.Event) -> None:
        if self.closing:
            return
        if len(self.outbox) >= SEND_QUEUE_LIMIT:
            # It can reconnect and reattach: the store has everything it missed.
            log.warning("closing a connection of %s that stopped reading", self.user)
            self.closing = True
            self.outbox.put(None)
            return
        self.outbox.put(event)

    async def serve(self) -> None:
        message = await self.receive()
        if message["type"] != "websocket.connect":
            return
        try:
            self.user = identify(self.settings, self.scope)
        except p.GatewayError as error:
            await self.send({"type": "websocket.close", "code": 4401, "reason": error.message})
            return
        await self.send({"type": "websocket.accept"})
        thread_id = query_param(self.scope, "threadId")
        if thread_id:
            self.inbox.put_nowait(p.Reattach(thread_id=thread_id))
        writer = asyncio.create_task(self._write())
        worker = asyncio.create_task(self._work())
        try:
            await self._read()
        finally:
            self.hub.leave(self)
            worker.cancel()
            self.outbox.put(None)
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            with contextlib.suppress(Exception):
                await writer

    async def _read(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if len(data) > self.settings.max_frame_bytes:
                self.inbox.put_nowait(_too_large(len(data), self.settings.max_frame_bytes))
                continue
            try:
                frame = p.decode_upstream(data)
            except p.GatewayError as error:
                self.inbox.put_nowait(error)
                continue
            if isinstance(frame, p.Cancel):
                # A cancel acts now, ahead of queued runs; only its notice waits its turn.
                if not await self.hub.cancel(self.user, frame.thread_id):
                    self.inbox.put_nowait(_nothing_to_cancel(frame.thread_id))
            else:
                self.inbox.put_nowait(frame)

    async def _work(self) -> None:
        while True:
            item = await self.inbox.get()
            if isinstance(item, p.GatewayError):
                self.deliver(item.to_event())
            elif isinstance(item, list):
                for event in item:
                    self.deliver(event)
            else:
                await self._run(item)

    async def _run(self, request: p.RunAgentInput | p.Reattach) -> None:
        """Starts a run or reattaches, then waits for the run it follows to end."""
        try:
            if isinstance(request, p.Reattach):
                run = await self.hub.reattach(self.user, request.thread_id, self)
            else:
                run = await self.hub.start(self.user, request, self)
        except p.GatewayError as error:
            self.deliver(error.to_event())
            return
        if self.following not in (None, request.thread_id):
            self.hub.unwatch(self, self.following)
        self.following = request.thread_id
        if run is not None:
            await run.done.wait()

    async def _write(self) -> None:
        while True:
            for event in await self.outbox.batch():
                if event is None:
                    with contextlib.suppress(Exception):
                        await self.send({"type": "websocket.close", "code": 1000})
                    return
                await self.send({"type": "websocket.send", "text": p.encode(event).decode()})


def _nothing_to_cancel(thread_id: str) -> list[p.Event]:
    message = f"Thread {thread_id!r} has no run in progress; nothing was cancelled."
    return standalone(thread_id, [notice("NOTHING_TO_CANCEL", message)])


def _asks_to_cancel(run_input: p.RunAgentInput) -> bool:
    """``forwardedProps: {"gateway": {"cancel": true}}`` is the SSE door's cancel frame."""
    props = run_input.forwarded_props
    gateway = props.get("gateway") if isinstance(props, dict) else None
    return isinstance(gateway, dict) and gateway.get("cancel") is True


def _too_large(size: int, limit: int) -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"Frame is {size} bytes; the limit is {limit} (GATEWAY_MAX_FRAME_BYTES). "
        "Send less history: the thread's store already holds it.",
    )
