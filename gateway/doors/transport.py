"""uvicorn's HTTP/1.1 and WebSocket protocols with the limits uvicorn lacks.

uvicorn times out an idle keep-alive connection and pings WebSockets, but nothing bounds a
connection that never finishes its request head (its keep-alive timer starts only after a
first response), a body still trickling in after the answer, an upgrade the app never
accepts, or a frozen peer whose unread bytes keep ``transport.close()`` waiting forever; and
its ``limit_concurrency`` lets WebSocket upgrades through and counts only at request time.
These subclasses add, per connection:

- a cap on open connections, checked when one is accepted: over it, a 503 with a sentence
  is written at once, the write side is shut, and what the client sends is read and dropped
  for a moment so it gets to read the answer (closing with unread bytes would reset it);
- a deadline for a complete request head (``header_timeout``), answered with a 408;
- a deadline for the rest of a body the app answered without reading (``body_timeout``);
  the app bounds the bodies it reads itself (``sse.Invocation``);
- a deadline from the upgrade request to its accept (``ws_handshake_timeout``), answered
  with a 503, and a hard close of a WebSocket whose peer stopped answering pings or never
  lets a close finish;
- upgrade header lines as long as ``WS_HEADER_LINE_BYTES``: websockets reads 8 KiB, and
  answers a longer line (a token over 8 KiB) with a bare 400 before the door sees it, where
  the HTTP doors refuse the same token with a 401, its challenge, a log line and an audit
  row. An upgrade the engine still cannot read gets a log line.

And one thing uvicorn's ASGI has no message for: several text frames written to the socket
at once (``SEND_TEXTS``, an ASGI extension the WebSocket door asks for in the scope). A
send per frame is a syscall per frame, and each wakes the client: a send-queue batch (a
tool call's three events, a reply's start and its text) costs one of each instead.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import ClassVar, cast

import h11
import websockets.http11
from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request
from websockets.protocol import State

from gateway.config import Settings

log = logging.getLogger(__name__)

# How long a refused connection is read and dropped so its client can read the 503.
REFUSED_LINGER_SECONDS = 1.0
# Refused connections lingering at once; past this, a new one is reset without an answer.
REFUSED_LINGER_LIMIT = 1024
RETRY_AFTER_SECONDS = 5
# The longest upgrade header line read whole: h11 read the head first, and the header
# deadline bounds it; a bearer token past MAX_TOKEN_BYTES then reaches the door's refusal.
WS_HEADER_LINE_BYTES = 64 << 10
# The ASGI extension (in a WebSocket's scope) and message type by which an app sends
# several text frames in one write: ``{"type": SEND_TEXTS, "texts": [bytes, ...]}``, each
# item a frame's UTF-8 text. The extension's ``now`` writes them in the app's own turn of
# the loop, where a send is a step of the app's writer task in a later one
# (``WebSocketProtocol._send_now``).
SEND_TEXTS = "gateway.websocket.send_texts"
# Writes the frames the callable gives, now; False (not calling it) when it cannot.
SendNow = Callable[[Callable[[], list[bytes] | None]], bool]


def protocols(settings: Settings) -> tuple[type[HttpProtocol], type[WebSocketProtocol]]:
    """The protocol classes for ``uvicorn.Config(http=..., ws=...)``, bound to ``settings``.

    uvicorn builds one instance a connection and passes it only uvicorn's own config, so the
    limits travel on the class.
    """

    class Http(HttpProtocol):
        pass

    class WebSocket(WebSocketProtocol):
        pass

    Http.settings, Http.lingering, WebSocket.settings = settings, set(), settings
    # The engine reads the module's limit at each parse (WEBSOCKETS_MAX_LINE_LENGTH at import).
    websockets.http11.MAX_LINE_LENGTH = max(websockets.http11.MAX_LINE_LENGTH, WS_HEADER_LINE_BYTES)
    return Http, WebSocket


def plain_response(status: HTTPStatus, sentence: str, *extra: tuple[str, str]) -> bytes:
    """A complete HTTP/1.1 response that closes the connection, written outside h11."""
    body = sentence.encode()
    headers = [
        ("content-type", "text/plain; charset=utf-8"),
        ("content-length", str(len(body))),
        ("connection", "close"),
        *extra,
    ]
    head = f"HTTP/1.1 {status.value} {status.phrase}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers)
    return head.encode("latin-1") + b"\r\n" + body


class Wait(enum.Enum):
    """What an HTTP connection is being timed for; an idle keep-alive is uvicorn's."""

    HEAD = enum.auto()  # a request head that has not fully arrived
    DISCARD = enum.auto()  # the rest of a body the app answered without reading


class HttpProtocol(H11Protocol):
    settings: ClassVar[Settings]
    # The refused connections still being read and dropped.
    lingering: ClassVar[set[Refused]]
    # The connection's one deadline and what it waits for; uvicorn's __init__ stays as is.
    deadline: asyncio.TimerHandle | None = None
    waiting: Wait | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.settings.max_connections:
            self._refuse(transport)
            return
        super().connection_made(transport)
        self._time()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timing()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._time()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._time()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._stop_timing()
        super().handle_websocket_upgrade(event)

    def _refuse(self, transport: asyncio.Transport) -> None:
        if len(self.lingering) >= REFUSED_LINGER_LIMIT:
            transport.abort()
            return
        sentence = (
            f"The gateway is serving its limit of {self.settings.max_connections} connections "
            f"(GATEWAY_MAX_CONNECTIONS); try again in a few seconds."
        )
        transport.write(
            plain_response(
                HTTPStatus.SERVICE_UNAVAILABLE, sentence, ("retry-after", str(RETRY_AFTER_SECONDS))
            )
        )
        transport.write_eof()
        refused = Refused(self.lingering, self.loop)
        transport.set_protocol(refused)
        refused.connection_made(transport)

    def _waiting(self) -> Wait | None:
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return None  # closing, or upgraded to a WebSocket
        theirs, ours = self.conn.their_state, self.conn.our_state
        if theirs is h11.IDLE and self.timeout_keep_alive_task is None:
            return Wait.HEAD
        if theirs is h11.SEND_BODY and ours in (h11.DONE, h11.MUST_CLOSE):
            return Wait.DISCARD
        return None

    def _time(self) -> None:
        """Arms the deadline for what the connection now waits for; a deadline runs once."""
        waiting = self._waiting()
        if waiting is self.waiting:
            return
        self._stop_timing()
        if waiting is None:
            return
        seconds = (
            self.settings.header_timeout if waiting is Wait.HEAD else self.settings.body_timeout
        )
        self.waiting = waiting
        self.deadline = self.loop.call_later(seconds, self._expire)

    def _stop_timing(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline, self.waiting = None, None

    def _expire(self) -> None:
        waiting = self.waiting
        self.deadline, self.waiting = None, None
        if self.transport.is_closing():
            return
        if waiting is Wait.HEAD:
            sentence = (
                f"The request head did not arrive within {self.settings.header_timeout:g} s "
                "(GATEWAY_HEADER_TIMEOUT); the connection is closed."
            )
            self.transport.write(plain_response(HTTPStatus.REQUEST_TIMEOUT, sentence))
        self.transport.close()


class Refused(asyncio.Protocol):
    """A connection over the cap after its 503: reads and drops until the client closes."""

    def __init__(self, lingering: set[Refused], loop: asyncio.AbstractEventLoop) -> None:
        self.lingering = lingering
        self.loop = loop
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.lingering.add(self)
        self.timer = self.loop.call_later(
            REFUSED_LINGER_SECONDS, cast(asyncio.Transport, transport).abort
        )

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool:
        return False  # the client has read the answer and closed: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.lingering.discard(self)
        if self.timer is not None:
            self.timer.cancel()


class WebSocketProtocol(WebSocketsSansIOProtocol):
    settings: ClassVar[Settings]
    deadline: asyncio.TimerHandle | None = None  # of the handshake

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.deadline = self.loop.call_later(
            self.settings.ws_handshake_timeout, self._handshake_expired
        )

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        super().connection_lost(exc)

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if not self.close_sent:  # an upgrade accepted by the engine: the app gets a scope
            self.scope["extensions"][SEND_TEXTS] = {"now": self._send_now}

    def _handshake_expired(self) -> None:
        self.deadline = None
        if self.handshake_complete or self.transport.is_closing():
            return
        if self.initial_response is None:  # the app has not begun an answer of its own
            sentence = (
                f"The WebSocket upgrade was not accepted within "
                f"{self.settings.ws_handshake_timeout:g} s (GATEWAY_WS_HANDSHAKE_TIMEOUT)."
            )
            # The app accepts at once unless its event loop is far behind: an overload sign.
            log.warning(
                "refused a /ws upgrade from %s with a 503: not accepted within %g s"
                " (GATEWAY_WS_HANDSHAKE_TIMEOUT)",
                self.client[0] if self.client else "-",
                self.settings.ws_handshake_timeout,
            )
            self.conn.send_response(self.conn.reject(HTTPStatus.SERVICE_UNAVAILABLE, sentence))
            self.transport.write(b"".join(self.conn.data_to_send()))
        # From now on the app's sends meet a disconnected client, as after a lost connection.
        self.handshake_complete = self.close_sent = self.disconnected = True
        self.queue.put_nowait({"type": "websocket.disconnect", "code": 1006})
        self.transport.close()

    def handle_handshake_exception(self) -> None:
        log.info(
            "refused a /ws upgrade from %s that the protocol engine cannot read: %s",
            self.client[0] if self.client else "-",
            type(self.conn.handshake_exc).__name__,
        )
        super().handle_handshake_exception()

    async def send(self, message: ASGISendEvent) -> None:
        if message["type"] == SEND_TEXTS:
            await self._send_texts(cast("list[bytes]", cast("dict[str, object]", message)["texts"]))
            return
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            # uvicorn leaves this unset after an HTTP answer and then logs the refusal as an
            # application error ("returned without completing handshake").
            self.handshake_complete = True

    async def _send_texts(self, texts: list[bytes]) -> None:
        """The frames in one write; out of the open state, one send each, as uvicorn
        answers a send there (a disconnect, or its error for a send after the close)."""
        await self.writable.wait()
        if self.disconnected:
            raise ClientDisconnected()
        if not (self.handshake_complete and self.initial_response is None and not self.close_sent):
            for text in texts:
                await super().send({"type": "websocket.send", "text": text.decode()})
            return
        try:
            for text in texts:
                self.conn.send_text(text)
        except InvalidState:
            raise ClientDisconnected() from None
        self.transport.write(b"".join(self.conn.data_to_send()))

    def _send_now(self, take: Callable[[], list[bytes] | None]) -> bool:
        """Writes the frames ``take`` gives in one write, in this turn of the loop, if the
        connection is open and its socket takes writes (not paused by flow control); else
        False, without calling ``take``: the app's writer sends them its own way."""
        if not (
            self.writable.is_set()
            and not self.disconnected
            and self.handshake_complete
            and self.initial_response is None
            and not self.close_sent
            and self.conn.state is State.OPEN
        ):
            return False
        texts = take()
        if not texts:
            return False
        for text in texts:
            self.conn.send_text(text)
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()
        # The peer answers no ping: a frozen one never drains what close() waits to flush.
        self.transport.abort()

    async def run_asgi(self) -> None:
        await super().run_asgi()
        # The connection is closing or about to; a peer that never lets it finish is cut off.
        self.loop.call_later(self.close_timeout + 1, self._reap)

    def _reap(self) -> None:
        if not self.disconnected:
            self.transport.abort()
