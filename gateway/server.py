"""The ASGI app: /ws, POST /invocations, GET /ping, GET /tools, GET /me, POST /ws-ticket.
A thin shell over the hub.

Every error a client can cause becomes a RUN_ERROR with a code from the AgentCore table
(with that HTTP status on the SSE door) and leaves the connection usable. A caller who is
refused at the door gets the HTTP status (401 with ``WWW-Authenticate: Bearer``, or 403)
before anything else: on /ws a refused upgrade, never an accept-then-close.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec

from gateway import config, logs, warmup
from gateway import protocol as p
from gateway.auth import Authenticator, Unauthorized, query_param, redact, selected_subprotocol
from gateway.body import RequestBody, http_status
from gateway.config import Settings
from gateway.door import Door
from gateway.hub import Hub, needed_part, notice, standalone
from gateway.limits import RateLimiter
from gateway.outgoing import Outgoing
from gateway.screens import catalog as screens
from gateway.static import web_file

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# /ping during start-up, before the warm-up is over.
STARTING = msgspec.json.encode({"status": "Starting"})
FOREIGN_ORIGIN = p.GatewayError(
    p.ErrorCode.ACCESS_DENIED,
    "This page's origin may not open the gateway's WebSocket: serve the page from the "
    "gateway's own host, or add its origin to GATEWAY_ALLOWED_ORIGINS.",
)


class Ping:
    """GET /ping: Healthy or HealthyBusy; the timestamp moves only when the status does.

    While the store cannot commit, nothing a run says can be kept: 503 Unhealthy, until a
    commit succeeds again. AgentCore's contract names only Healthy and HealthyBusy, so
    Unhealthy travels with a status code any health checker reads as a failure.
    """

    def __init__(self, hub: Hub) -> None:
        self.busy = False
        self.can_commit = hub.engine.sessions.can_commit
        self.changed_at = int(time.time())
        hub.status_listeners.append(self._on_status)
        hub.engine.sessions.health_listeners.append(self._on_store_health)

    def _on_status(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.changed_at = int(time.time())

    def _on_store_health(self, can_commit: bool) -> None:
        if can_commit != self.can_commit:
            self.can_commit = can_commit
            self.changed_at = int(time.time())

    @property
    def http_status(self) -> int:
        return 200 if self.can_commit else 503

    def body(self) -> bytes:
        status = "HealthyBusy" if self.busy else "Healthy"
        if not self.can_commit:
            status = "Unhealthy"
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
        # Built here, so settings it cannot work with stop start-up before anything listens.
        self.auth = Authenticator(settings)
        redact.install()
        self._startup = startup
        self._shutdown = shutdown
        self.hub: Hub | None = None
        self.ping: Ping | None = None
        # Set once the warm-up is over; /ping says Healthy only then.
        self.ready = asyncio.Event()
        self.rates = RateLimiter(settings.user_rate, settings.user_burst)
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
                if self.settings.auth == "dev":
                    log.warning(
                        "GATEWAY_AUTH=dev trusts the client: whoever reaches %s:%d is whichever "
                        "user ?user= or X-Gateway-User names; use GATEWAY_AUTH=jwt beyond a demo",
                        self.settings.host,
                        self.settings.port,
                    )
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
        credential = self.auth.warm_up_credential
        assert credential is not None
        try:
            seconds = await warmup.warm_up(self.hub, self.settings, credential)
        except Exception as exc:  # a cold first run is slower, never a reason not to serve
            log.warning("warm-up skipped (%s); the first runs will be slower", exc)
        else:
            log.info("model %s warmed in %.0f ms", self.settings.model, seconds * 1000)
        finally:
            self.auth.end_warm_up()
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
            await _respond(send, self.ping.http_status, self.ping.body(), b"application/json")
        elif path == "/tools" and method == "GET":
            tools = [entry.declaration() for entry in self.hub.engine.catalog.client_entries()]
            await _respond(send, 200, msgspec.json.encode({"tools": tools}), b"application/json")
        elif path == "/invocations" and method == "POST":
            await Invocation(
                self.hub, self.settings, self.rates, self.auth, scope, receive, send
            ).serve()
        elif path == "/me" and method == "GET":
            await self._me(scope, send)
        elif path == "/ws-ticket" and method == "POST":
            await self._ws_ticket(scope, send)
        elif path == "/history" and method == "GET":
            await self._history(scope, send)
        elif path in ("/ping", "/tools", "/invocations", "/me", "/ws-ticket", "/history"):
            await _respond(send, 405, b"method not allowed", b"text/plain")
        elif method == "GET" and (found := web_file(path)) is not None:
            body, content_type = found
            await _respond(send, 200, body, content_type.encode())
        else:
            await _respond(send, 404, b"not found", b"text/plain")

    async def _me(self, scope: Scope, send: Send) -> None:
        """The signed-in user and the screens they may open, for the web client's menu."""
        assert self.hub is not None
        try:
            identity = await Door(self.auth, self.hub.audit, scope, "http", "profile").identify()
        except p.GatewayError as error:
            await _refuse(send, error)
            return
        profile = screens.load().profile(identity.user)
        await _respond(send, 200, msgspec.json.encode(profile), b"application/json")

    async def _history(self, scope: Scope, send: Send) -> None:
        """GET /history?threadId=T&before=N: the messages before a snapshot's first one.

        A reattach to a long thread sends only its latest part, with a ``gateway.history``
        event naming where the rest begins; each page names the one before it.
        """
        assert self.hub is not None
        try:
            identity = await Door(self.auth, self.hub.audit, scope, "http", "history").identify()
            self.rates.check(identity.user)
            thread_id = p.reattach_to(query_param(scope, "threadId") or "").thread_id
            page = await self.hub.earlier(identity.user, thread_id, _cursor(scope))
        except p.GatewayError as error:
            await _refuse(send, error)
            return
        except Exception:
            await _refuse(send, p.unexpected("a GET /history"))
            return
        body = msgspec.json.encode(
            {"threadId": thread_id, "messages": page.messages, "earlier": page.earlier}
        )
        await _respond(send, 200, body, b"application/json")

    async def _ws_ticket(self, scope: Scope, send: Send) -> None:
        """POST /ws-ticket: a single-use ticket for ``/ws?ticket=``, for the caller."""
        assert self.hub is not None
        try:
            identity = await Door(self.auth, self.hub.audit, scope, "http", "ticket").identify()
            ticket = self.auth.tickets.issue(identity)
        except p.GatewayError as error:
            await _refuse(send, error)
            return
        body = msgspec.json.encode({"ticket": ticket, "expiresIn": self.settings.ws_ticket_seconds})
        # A credential: no cache may keep it.
        await _respond(send, 200, body, b"application/json", [(b"cache-control", b"no-store")])


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", b"%d" % len(body)),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def challenge(error: p.GatewayError) -> list[tuple[bytes, bytes]]:
    """The ``WWW-Authenticate`` header a refusal carries: every 401 has one (RFC 7235)."""
    if isinstance(error, Unauthorized):
        return [(b"www-authenticate", error.challenge())]
    return []


def refusal(error: p.GatewayError) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A refused request's answer: the code's status, its headers, the RUN_ERROR as JSON."""
    body = p.encode(error.to_event())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        *challenge(error),
    ]
    return error.code.http_status, headers, body


async def _refuse(send: Send, error: p.GatewayError) -> None:
    status, headers, body = refusal(error)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class QueueSubscriber:
    """Collects a run's events for one consumer, without blocking the run.

    A consumer that falls more than ``limit_bytes`` behind is cut off: its queue ends with
    None and takes nothing more.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.queue: Outgoing[p.Event | None] = Outgoing(limit_bytes)
        self.cut_off = False

    def deliver(self, event: p.Event) -> None:
        if not self.cut_off and not _put(self.queue, event):
            log.warning("cutting off a stream that fell %d bytes behind", self.queue.size)
            self.cut_off = True
            self.queue.put(None)


def _put(queue: Outgoing[p.Event | None], event: p.Event) -> bool:
    """Queues an event for a client; False if it cannot take it (full, or not encodable)."""
    try:
        return queue.put(event)
    except Exception:  # an event the encoder refuses: the client could not follow the stream
        p.unexpected(f"encoding a {type(event).__name__} event")
        return False


class Invocation:
    """POST /invocations: one RunAgentInput in, one SSE stream of its run out."""

    def __init__(
        self,
        hub: Hub,
        settings: Settings,
        rates: RateLimiter,
        auth: Authenticator,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        self.hub, self.settings, self.rates = hub, settings, rates
        self.door = Door(auth, hub.audit, scope, "sse", "run")
        self.scope, self.receive, self.send = scope, receive, send

    async def serve(self) -> None:
        subscriber = QueueSubscriber(self.settings.send_buffer_bytes)
        body = RequestBody(
            self.scope,
            self.receive,
            max_bytes=self.settings.max_frame_bytes,
            timeout=self.settings.body_timeout,
        )
        run_input: p.RunAgentInput | None = None
        try:
            user = (await self.door.identify()).user
            logs.bind(user=user)
            self.rates.check(user)
            run_input = p.decode_input(await body.json())
            logs.bind(thread=run_input.thread_id, run=run_input.run_id)
            if _asks_to_cancel(run_input):
                await self._cancel(user, run_input.thread_id)
                return
            await self.hub.start(user, run_input, subscriber)
        except p.GatewayError as error:
            if run_input is not None:
                self.door.record_input(run_input, error)
            await self._refuse(error, body)
            return
        except Exception:
            await self._refuse(p.unexpected("a POST /invocations"), body)
            return
        self.door.record_input(run_input, None)
        await self._stream_start(200)
        try:
            while True:
                frames = await subscriber.queue.batch()
                last = frames[-1][0]
                end = last is None or isinstance(last, p.RunFinished | p.RunError)
                await self._stream([data for _, data in frames], more=not end)
                if end:
                    return
        finally:
            # A request follows one run: it stops watching the thread when its stream ends.
            self.hub.leave(subscriber)
            subscriber.queue.clear()

    async def _refuse(self, error: p.GatewayError, body: RequestBody) -> None:
        # A refused body is read to its end first, or the answer closes the connection.
        keep_alive = await body.settle()
        await self._stream_start(http_status(error), challenge(error), close=not keep_alive)
        await self._stream([p.encode(error.to_event())], more=False)

    async def _cancel(self, user: str, thread_id: str) -> None:
        """The SSE door's cancel: a short stream saying what happened."""
        cancelled = await self.hub.cancel(user, thread_id)
        self.door.record_cancel(thread_id, cancelled)
        if cancelled:
            said = notice("CANCEL_REQUESTED", f"The run on thread {thread_id!r} is being stopped.")
            events = standalone(thread_id, [said])
        else:
            events = _nothing_to_cancel(thread_id)
        await self._stream_start(200)
        await self._stream([p.encode(event) for event in events], more=False)

    async def _stream_start(
        self, status: int, extra: list[tuple[bytes, bytes]] | None = None, *, close: bool = False
    ) -> None:
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *(extra or ()),
        ]
        if close:
            headers.append((b"connection", b"close"))
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def _stream(self, encoded: list[bytes], *, more: bool) -> None:
        body = b"".join(b"data: " + data + b"\n\n" for data in encoded if data)
        await self.send({"type": "http.response.body", "body": body, "more_body": more})


@dataclasses.dataclass
class Refused:
    """Frames refused (a full queue, a rate limit), told of in one error when its turn comes."""

    first: p.GatewayError
    frames: int = 0

    def to_event(self) -> p.RunError:
        message = f"{self.first.message} {self.frames} frame(s) were refused."
        return p.RunError(message=message, code=self.first.code.value)


# What a connection's worker handles in order: a run, a reattach, an error, or a notice.
Work = p.RunAgentInput | p.Reattach | p.GatewayError | list[p.Event] | Refused

# Frames one connection may have waiting behind its current run, whatever their size.
QUEUED_FRAMES_LIMIT = 32


class WebSocketSession:
    """One /ws connection: runs processed in order, cancels jumping the queue.

    A connection follows one thread at a time, the one of its latest run or reattach, so
    the runs it is sent never overlap and its stream stays a valid AG-UI stream. What it
    holds is bounded in bytes both ways: frames waiting for earlier runs
    (``receive_buffer_bytes``, and ``QUEUED_FRAMES_LIMIT`` of them) and events waiting for
    the client to read (``send_buffer_bytes``). Nothing it is sent can stop it working: a
    frame that fails unexpectedly gets a RUN_ERROR INTERNAL_ERROR and the next one is read.
    """

    def __init__(self, gateway: Gateway, scope: Scope, receive: Receive, send: Send) -> None:
        assert gateway.hub is not None
        self.hub = gateway.hub
        self.settings = gateway.settings
        self.rates = gateway.rates
        self.scope, self.receive, self.send = scope, receive, send
        self.outbox: Outgoing[p.Event | None] = Outgoing(self.settings.send_buffer_bytes)
        self.inbox: asyncio.Queue[tuple[Work, int]] = asyncio.Queue()
        self.queued_bytes = 0
        self.refused: Refused | None = None
        self.user = ""
        self.door = Door(gateway.auth, gateway.hub.audit, scope, "ws", "connect")
        self.following: str | None = None
        self.closing = False
        self.close_code = 1000

    def deliver(self, event: p.Event) -> None:
        if self.closing:
            return
        if not _put(self.outbox, event):
            # It can reconnect and reattach: the store has everything it missed.
            log.warning("closing a connection of %s that fell behind", self.user)
            self.closing = True
            self.outbox.put(None)

    async def serve(self) -> None:
        message = await self.receive()
        if message["type"] != "websocket.connect":
            return
        if not origin_allowed(self.scope, config.allowed_origins(self.settings)):
            log.warning("refused a /ws upgrade from origin %s", _header(self.scope, b"origin"))
            await self._refuse_upgrade(FOREIGN_ORIGIN)
            return
        try:
            identity = await self.door.identify()
        except p.GatewayError as error:
            await self._refuse_upgrade(error)
            return
        self.user = identity.user
        logs.bind(user=self.user)
        await self.send(
            {"type": "websocket.accept", "subprotocol": selected_subprotocol(self.scope)}
        )
        thread_id = query_param(self.scope, "threadId")
        if thread_id:
            try:
                self._queue(p.reattach_to(thread_id), 0)
            except p.GatewayError as error:
                self._queue(error, 0)
        expiry = self._expire_at(identity.expires_at)
        writer = asyncio.create_task(self._write())
        worker = asyncio.create_task(self._work())
        try:
            await self._read()
        finally:
            if expiry is not None:
                expiry.cancel()
            self.hub.leave(self)
            worker.cancel()
            self.outbox.put(None)
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            with contextlib.suppress(Exception):
                await writer
            # Nothing waits for these any more: free them now, not at a full collection.
            self.outbox.clear()
            while not self.inbox.empty():
                self.inbox.get_nowait()

    def _expire_at(self, expires_at: float | None) -> asyncio.TimerHandle | None:
        """A connection lives no longer than its credential (with the verification leeway)."""
        if expires_at is None:
            return None
        delay = expires_at + self.settings.jwt_leeway - time.time()
        return asyncio.get_running_loop().call_later(max(delay, 0.0), self._expired)

    def _expired(self) -> None:
        # Its runs go on: a new connection with a new token reattaches to them.
        self.deliver(
            Unauthorized(
                "Your token has expired; reconnect with a new one and reattach to the thread."
            ).to_event()
        )
        self.close_code = 1008
        self.closing = True
        self.outbox.put(None)

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
            cancelled = await self.hub.cancel(self.user, frame.thread_id)
            self.door.record_cancel(frame.thread_id, cancelled)
            if not cancelled:
                self._queue(_nothing_to_cancel(frame.thread_id), 0)
        elif isinstance(frame, p.RunAgentInput):
            # A queued input keeps only what the run reads, not the history a client resends.
            self._queue(needed_part(frame), len(data))
        else:
            self._queue(frame, len(data))

    def _queue(self, work: Work, size: int) -> None:
        """Queues work for its turn, or refuses it when the queue is full."""
        full = (
            self.inbox.qsize() >= QUEUED_FRAMES_LIMIT
            or self.queued_bytes + size > self.settings.receive_buffer_bytes
        )
        if full:
            self._refuse(_queue_full())
            return
        self.queued_bytes += size
        self.inbox.put_nowait((work, size))

    def _refuse(self, error: p.GatewayError) -> None:
        """Counts a frame refused; however many there are, one error waits in the queue."""
        if self.refused is None:
            self.refused = Refused(error)
            self.inbox.put_nowait((self.refused, 0))
        self.refused.frames += 1

    async def _work(self) -> None:
        while True:
            item, size = await self.inbox.get()
            self.queued_bytes -= size
            try:
                await self._handle(item)
            except Exception:
                self.deliver(p.unexpected(f"a frame from {self.user}").to_event())
            del item  # the next wait must not keep a finished input alive

    async def _handle(self, item: Work) -> None:
        if isinstance(item, p.GatewayError):
            self.deliver(item.to_event())
        elif isinstance(item, Refused):
            self.refused = None
            self.deliver(item.to_event())
        elif isinstance(item, list):
            for event in item:
                self.deliver(event)
        else:
            await self._run(item)

    async def _run(self, request: p.RunAgentInput | p.Reattach) -> None:
        """Starts a run or reattaches, then waits for the run it follows to end."""
        logs.bind(thread=request.thread_id, run=getattr(request, "run_id", None))
        try:
            if isinstance(request, p.Reattach):
                run = await self.hub.reattach(self.user, request.thread_id, self)
            else:
                run = await self.hub.start(self.user, request, self)
        except p.GatewayError as error:
            self._audit(request, error)
            self.deliver(error.to_event())
            return
        self._audit(request, None)
        if self.following not in (None, request.thread_id):
            self.hub.unwatch(self, self.following)
        self.following = request.thread_id
        if run is not None:
            await run.done.wait()

    def _audit(self, request: p.RunAgentInput | p.Reattach, error: p.GatewayError | None) -> None:
        if isinstance(request, p.Reattach):
            self.door.record_reattach(request.thread_id, error)
        else:
            self.door.record_input(request, error)

    async def _write(self) -> None:
        while True:
            for event, data in await self.outbox.batch():
                if event is None:
                    with contextlib.suppress(Exception):
                        await self.send({"type": "websocket.close", "code": self.close_code})
                    return
                await self.send({"type": "websocket.send", "text": data.decode()})


def _queue_full() -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.RATE_LIMIT_EXCEEDED,
        f"This connection already has {QUEUED_FRAMES_LIMIT} frames or its byte limit"
        " (GATEWAY_RECEIVE_BUFFER_BYTES) waiting for earlier runs; wait for a run to"
        " finish before sending the next.",
    )


def origin_allowed(scope: Scope, allowed: frozenset[str]) -> bool:
    """Whether a connection's ``Origin`` may use it: none (not a browser), the host the
    client connected to, or one of ``GATEWAY_ALLOWED_ORIGINS``."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    origin = origin.lower().rstrip("/")
    if origin in allowed:
        return True
    host = _header(scope, b"host")
    parts = urllib.parse.urlsplit(origin)
    if host is None or parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return False
    return _authority(parts.scheme, parts.netloc) == _authority(parts.scheme, host.lower())


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def _authority(scheme: str, netloc: str) -> str:
    """``host[:port]`` without the scheme's default port, as browsers leave it out."""
    return netloc.removesuffix(_DEFAULT_PORTS[scheme])


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _cursor(scope: Scope) -> int:
    raw = query_param(scope, "before") or ""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):  # below SQLite's 2**63
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            "?before= must be the `before` of a gateway.history event or the `earlier` of a"
            " page: a whole number.",
        )
    return int(raw)


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
