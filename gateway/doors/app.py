"""The ASGI app: its lifespan and routes, a thin shell over the hub.

Start-up opens the hub (through the ``startup`` its caller gives), builds once what every
door is given (``gateway.doors.shared``: never this app), then, as the server's app, warms
up through its own socket (``gateway.doors.warmup``) while it probes the models; /ping
says Healthy only after both. Routing matches the path below where the gateway is mounted
and hands each request to its door: /ws to ``gateway.doors.websocket``, POST /invocations
to ``gateway.doors.sse``, GET /invocations (a thread's stream resumed) to
``gateway.doors.sse_replay``, GET /ping, /livez and /readyz (/ready) to
``gateway.doors.ping``, GET /tools, /me, /history, /capabilities and POST /ws-ticket to
``gateway.doors.json_doors``, /threads and /threads/{id} (list, read, change, delete,
export a user's threads) to ``gateway.doors.threads``, a backend system's POST /tool-results to
``gateway.doors.tool_results``, a Prometheus scrape, GET /metrics, to
``gateway.doors.scrape``, and the npm package's files, GET /packages/agui-websocket/..., to
``gateway.doors.package``. CORS covers the
browsers' HTTP doors (``gateway.doors.cors``); any other GET may be a file of the hosted web
client (``gateway.doors.static``).

Every error a client can cause becomes a RUN_ERROR with a code from the AgentCore table
(with that HTTP status on the SSE door) and leaves the connection usable. A caller who is
refused at the door gets the HTTP status (401 with ``WWW-Authenticate: Bearer``, or 403)
before anything else: on /ws a refused upgrade, never an accept-then-close.

Shutdown drains first (``gateway.doors.drain``): runs in progress finish, their clients
streaming, within ``GATEWAY_DRAIN_SECONDS``, before the store closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec

from gateway import config, garbage
from gateway import wire as p
from gateway.adk import capabilities
from gateway.auth import Authenticator, redact
from gateway.config import Settings
from gateway.doors import cors, json_doors, package, ping, scrape, threads, tool_results, warmup
from gateway.doors.access import shown
from gateway.doors.asgi import Message, Receive, Scope, Send, refuse, respond
from gateway.doors.drain import Drain
from gateway.doors.ping import Ping
from gateway.doors.shared import Shared
from gateway.doors.sse import Invocation
from gateway.doors.sse_replay import Resume
from gateway.doors.static import page_file
from gateway.doors.websocket import WebSocketSession
from gateway.hub.hub import Hub
from gateway.hub.limits import RateLimiter
from gateway.metrics import OFF, Metrics
from gateway.models.endpoints import endpoints
from gateway.models.health import ModelHealth

log = logging.getLogger(__name__)

# The HTTP doors and the method each takes; CORS covers these, not the web client's files.
DOORS = {
    "/ping": "GET",
    "/livez": "GET",
    "/readyz": "GET",
    "/ready": "GET",
    "/tools": "GET",
    # POST runs; GET resumes a thread's stream (``gateway.doors.sse_replay``).
    "/invocations": "GET, POST",
    "/me": "GET",
    "/ws-ticket": "POST",
    "/history": "GET",
    # ag-ui-adk's path for an agent at the root, and for one at /invocations.
    "/capabilities": "GET",
    "/invocations/capabilities": "GET",
}


class Gateway:
    """The ASGI application; ``startup`` is given by the caller that owns the engine."""

    def __init__(
        self,
        settings: Settings,
        startup: Callable[[], Awaitable[Hub]],
        shutdown: Callable[[], Awaitable[None]],
        metrics: Metrics = OFF,
    ) -> None:
        self.settings = settings
        # Built here, so settings it cannot work with stop start-up before anything listens.
        self.auth = Authenticator(settings)
        scrape.check_settings(settings)
        # What GET /metrics exposes; the hub and the store count into the same.
        self.metrics = metrics
        redact.install()
        self._startup = startup
        self._shutdown = shutdown
        self.hub: Hub | None = None
        # What the doors are given, once the hub is up: never this app.
        self.shared: Shared | None = None
        self.ping: Ping | None = None
        self.draining: Drain | None = None
        self.models: ModelHealth | None = None
        # GET /capabilities, once the hosted agent is known.
        self.capabilities = b"{}"
        # GET /packages/agui-websocket/...: the npm package, from the gateway's package data.
        self.npm_package = package.NpmPackage.bundled()
        # Set once the warm-up is over; /ping says Healthy only then.
        self.ready = asyncio.Event()
        self.rates = RateLimiter(settings.user_rate, settings.user_burst, metrics=metrics)
        # Browser origins allowed besides the gateway's own host, on every door.
        self.origins = config.allowed_origins(settings)
        self._warming: asyncio.Task[None] | None = None
        self._probing: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        path = route_path(scope)
        door = "ws" if kind == "websocket" else "http"
        self.metrics.connection_opened(door)
        try:
            if kind == "websocket" and path == "/ws":
                assert self.shared is not None
                await WebSocketSession(self.shared, scope, receive, send).serve()
            elif kind == "http":
                await self._http(scope, receive, send, path)
            elif kind == "websocket":
                await send({"type": "websocket.close", "code": 4404})
        finally:
            self.metrics.connection_closed(door)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except BaseException as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
                # It runs through the listener, which uvicorn opens only after this.
                self._warming = asyncio.create_task(self._warm(), name="warm-up")
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @contextlib.asynccontextmanager
    async def lifespan(self, _host: object = None) -> AsyncIterator[None]:
        """Start-up and shutdown for a gateway mounted in another ASGI app, whose server
        runs only the host's lifespan: ``Starlette(..., lifespan=gateway.lifespan)``.

        There is no warm-up through the socket (the gateway does not know where it is
        mounted): the first runs pay their first-call costs.
        """
        await self.start()
        self.auth.end_warm_up()
        await self._check_models()
        self.ready.set()
        try:
            yield
        finally:
            await self.stop()

    async def start(self) -> None:
        if self.settings.auth == "dev":
            log.warning(
                "GATEWAY_AUTH=dev trusts the client: whoever reaches %s:%d is whichever "
                "user ?user= or X-Gateway-User names; use GATEWAY_AUTH=jwt beyond a demo",
                self.settings.host,
                self.settings.port,
            )
        if self.metrics.enabled:
            log.info(
                "metrics at GET /metrics, %s",
                "for the bearer of GATEWAY_METRICS_TOKEN"
                if self.settings.metrics_token
                else "open to whoever reaches the port (no GATEWAY_METRICS_TOKEN)",
            )
        try:
            self.hub = await self._startup()
            self.draining = Drain(self.hub, self.settings.drain_seconds)
            self.shared = Shared(
                self.hub, self.settings, self.auth, self.rates, self.origins, self.draining
            )
            self.models = ModelHealth(
                endpoints(self.hub.engine.root_agent), self.settings.model_probe_interval
            )
            self.ping = Ping(self.hub, self.models, self.ready, self.draining)
            engine = self.hub.engine
            self.capabilities = msgspec.json.encode(
                capabilities.document(
                    engine.root_agent,
                    engine.catalog,
                    self.settings,
                    services=engine.services.described(),
                    resumable=engine.resumable,
                    predictions=engine.hosted.predict_state,
                )
            )
        except BaseException as exc:
            log.error("start-up failed: %s", exc)
            raise

    async def drain(self) -> None:
        """Stops taking runs and lets those in progress finish (``gateway.doors.drain``);
        the server's shutdown calls it before closing anything, ``stop`` in any case."""
        if self.draining is not None:
            await self.draining.run()

    async def stop(self) -> None:
        for task in (self._warming, self._probing):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.drain()
        await self._shutdown()

    async def _check_models(self) -> None:
        """Probes the models once, then every interval: /ping is Healthy only if they answer."""
        assert self.models is not None
        if not self.settings.model_probe_interval or not self.models.endpoints:
            return
        await self.models.check()
        self._probing = asyncio.create_task(self.models.watch(), name="model probes")

    async def _warm(self) -> None:
        # The first probe of the models goes while the warm-up runs; /ping waits for both.
        probed = asyncio.create_task(self._check_models(), name="first model probe")
        try:
            await self._warm_up()
            await probed
        finally:
            probed.cancel()  # stopped meanwhile
        # ADK's import graph makes a full collection cost tens of ms: what start-up built is
        # frozen, and the collector set for the steady state.
        garbage.settle()
        self.ready.set()
        assert self.hub is not None
        hosted = self.hub.engine.hosted
        # Where a person tries the agent: the hosted app's page, else the gateway's own.
        log.info(
            "ready on %s:%d; %s for %s at http://%s:%d/",
            self.settings.host,
            self.settings.port,
            "its web page" if hosted.web is not None else "the gateway's chat page",
            hosted.app_name,
            self.settings.host,
            self.settings.port,
        )

    async def _warm_up(self) -> None:
        assert self.hub is not None
        credential = self.auth.warm_up_credential
        assert credential is not None
        try:
            if self.settings.warm_up_runs:
                seconds = await warmup.warm_up(self.hub, self.settings, credential)
                log.info("warmed up in %.0f ms", seconds * 1000)
        except Exception as exc:  # a cold first run is slower, never a reason not to serve
            log.warning("warm-up skipped (%s); the first runs will be slower", exc)
        finally:
            self.auth.end_warm_up()

    async def _http(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """Routes a request; one that fails unexpectedly is answered INTERNAL_ERROR, if it
        can still be answered, never with a bare 500 and the exception's text."""
        answered = False

        async def send_once_started(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            method = (
                DOORS.get(path)
                or threads.methods(path)
                or ("GET" if package.serves(path) else None)
            )
            if method is None:
                await self._route(scope, receive, send_once_started, path)
            elif not cors.origin_allowed(scope, self.origins):
                log.warning(
                    "refused %s %s from origin %s", scope["method"], path, shown(cors.origin(scope))
                )
                await refuse(send_once_started, cors.FOREIGN_ORIGIN)
            elif cors.is_preflight(scope):
                await cors.answer_preflight(scope, send_once_started, method)
            else:
                await self._route(scope, receive, cors.with_cors(scope, send_once_started), path)
        except Exception:
            failure = p.unexpected(f"{scope['method']} {scope['path']}")
            if not answered:
                await refuse(send, failure)

    async def _route(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        method = scope["method"]
        assert self.shared is not None and self.ping is not None
        if path in ping.READINESS and method == "GET":
            await self.ping.answer(send)
        elif path == "/livez" and method == "GET":
            await ping.alive(send)
        elif path == "/tools" and method == "GET":
            await json_doors.tools(self.shared.hub, send)
        elif path == "/invocations" and method == "POST":
            await Invocation(self.shared, scope, receive, send).serve()
        elif path == "/invocations" and method == "GET":
            await Resume(self.shared, scope, receive, send).serve()
        elif path == "/me" and method == "GET":
            await json_doors.me(self.shared, scope, send)
        elif path == "/ws-ticket" and method == "POST":
            await json_doors.ws_ticket(self.shared, scope, send)
        elif path == "/tool-results" and method == "POST":  # no browser's: not in DOORS
            await tool_results.tool_result(self.shared, scope, receive, send)
        elif path == "/history" and method == "GET":
            await json_doors.history(self.shared, scope, send)
        elif threads.methods(path) is not None:
            await threads.serve(self.shared, scope, receive, send, path)
        elif path in ("/capabilities", "/invocations/capabilities") and method == "GET":
            await json_doors.capabilities(self.shared, self.capabilities, scope, send)
        elif path == "/metrics" and method == "GET":  # a scraper's, no browser's: not in DOORS
            await scrape.scrape(self.metrics, self.settings.metrics_token, scope, send)
        elif package.serves(path) and method == "GET":
            await self.npm_package.answer(path, send)
        elif path in DOORS or package.serves(path):
            await respond(
                send,
                405,
                b"method not allowed",
                b"text/plain",
                [(b"allow", DOORS.get(path, "GET").encode())],
            )
        elif method == "GET" and (found := self._web_file(path)) is not None:
            body, content_type = found
            await respond(send, 200, body, content_type.encode())
        else:
            await respond(send, 404, b"not found", b"text/plain")

    def _web_file(self, path: str) -> tuple[bytes, str] | None:
        assert self.hub is not None
        return page_file(self.hub.engine.hosted.web, path)


def route_path(scope: Scope) -> str:
    """The path below where the gateway is mounted (``root_path``, set by a host app's
    ``Mount`` or uvicorn's ``--root-path``), which is where every route is matched."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path
