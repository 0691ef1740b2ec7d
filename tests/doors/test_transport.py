"""Connections that never finish, never answer or never stop: each is cut off in bounded time,
and a full server says so with a 503 instead of dropping connections silently."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gateway import wire as p
from gateway.config import Settings
from gateway.doors.transport import SEND_TEXTS, protocols
from gateway.doors.websocket import WebSocketSession
from tests.support.agui import AgUiSocket, new_id, outcome, user_input
from tests.support.budgets import scaled
from tests.support.raw import RawClient, request, upgrade_head
from tests.support.servers import RunningGateway, free_port, running_gateway

pytestmark = pytest.mark.server

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


async def test_a_request_head_that_never_ends_gets_a_408_then_is_closed() -> None:
    async with running_gateway(header_timeout=0.5) as gateway:
        client = await RawClient.open(gateway.port)
        await client.send(b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # Trickling more header lines does not buy more time.
        for _ in range(3):
            await asyncio.sleep(0.1)
            await client.send(b"X-Slow: 1\r\n")
        answer = await client.response(timeout=3)
        assert answer.status == 408
        assert b"GATEWAY_HEADER_TIMEOUT" in answer.body
        assert await client.closed_after(1) < 1


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout() -> None:
    async with running_gateway(header_timeout=0.5) as gateway:
        client = await RawClient.open(gateway.port)
        # From before the connect: a busy test loop may come back to it after the server's
        # timer has run a while.
        seconds = await client.closed_after(3, since_open=True)
        assert 0.4 < seconds < scaled(1.5)


async def test_a_keep_alive_connection_serves_requests_then_closes_when_idle() -> None:
    async with running_gateway(keepalive_timeout=1, header_timeout=30) as gateway:
        client = await RawClient.open(gateway.port)
        for _ in range(2):
            await client.send(request("GET", "/ping"))
            assert (await client.response()).status == 200
        seconds = await client.closed_after(3)
        assert 0.8 < seconds < scaled(2)


async def test_a_body_the_app_answered_without_reading_is_cut_off_after_the_body_timeout() -> None:
    async with running_gateway(body_timeout=0.5) as gateway:
        client = await RawClient.open(gateway.port)
        await client.send(request("POST", "/ping", {"Content-Length": "100000"}) + b"{")
        assert (await client.response()).status == 405
        for _ in range(3):  # a trickle does not extend it
            await asyncio.sleep(0.1)
            await client.send(b"x")
        assert await client.closed_after(3) < 1


async def test_over_the_connection_cap_http_and_websocket_get_a_503_with_a_sentence() -> None:
    async with running_gateway(max_connections=3, header_timeout=30) as gateway:
        held = [await RawClient.open(gateway.port) for _ in range(3)]
        await asyncio.sleep(0.1)
        refused = await RawClient.open(gateway.port)
        await refused.send(request("GET", "/ping"))
        answer = await refused.response()
        assert answer.status == 503 and answer.headers["retry-after"] == "5"
        assert b"limit of 3 connections (GATEWAY_MAX_CONNECTIONS)" in answer.body
        assert await refused.closed_after(2) < 2
        with pytest.raises(InvalidStatus) as upgrade:
            async with connect(gateway.ws_url()):
                pass
        assert upgrade.value.response.status_code == 503
        for client in held:
            client.close()
        await asyncio.sleep(0.1)
        async with gateway.socket() as ws:  # room again
            assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


async def test_a_websocket_peer_that_answers_no_ping_is_closed_within_interval_plus_timeout() -> (
    None
):
    async with running_gateway(ws_ping_interval=0.3, ws_ping_timeout=0.3) as gateway:
        client = await RawClient.open(gateway.port)
        await client.send(upgrade_head() + b"\r\n")
        head = await client.reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101")
        ping = await asyncio.wait_for(client.reader.readexactly(2), 2)
        assert ping[0] == 0x89, "the server pings"
        assert await client.closed_after(3) < 1


# --- what the gateway's app never does, played by a stub app --------------------------------


@contextlib.asynccontextmanager
async def stub_server(app: App, **overrides: Any) -> AsyncIterator[tuple[int, uvicorn.Server]]:
    """uvicorn with the gateway's protocols around ``app``, on a free loopback port."""
    settings = Settings(host="127.0.0.1", port=free_port(), **overrides)
    http, ws = protocols(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=http,
        ws=ws,
        lifespan="off",
        log_config=None,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_timeout,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield settings.port, server
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


async def test_an_upgrade_the_app_never_accepts_gets_a_503_after_the_handshake_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    late: list[BaseException] = []

    async def never_accepts(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await asyncio.sleep(1)
        try:
            await send({"type": "websocket.accept"})
        except BaseException as exc:  # what the app meets once the client is gone
            late.append(exc)

    async with stub_server(never_accepts, ws_handshake_timeout=0.3) as (port, _):
        with pytest.raises(InvalidStatus) as upgrade:
            async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=3):
                pass
        assert upgrade.value.response.status_code == 503
        assert b"GATEWAY_WS_HANDSHAKE_TIMEOUT" in upgrade.value.response.body
        # The operator sees it: an app accepts at once unless its loop is far behind.
        said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any("refused a /ws upgrade from 127.0.0.1 with a 503" in line for line in said)
        await asyncio.sleep(1)
    assert [type(exc).__name__ for exc in late] == ["ClientDisconnected"]


async def test_a_frozen_reader_with_unsent_bytes_is_cut_off_after_the_ping_timeout() -> None:
    """Its unread bytes would keep uvicorn's ``transport.close()`` waiting for ever."""

    async def floods(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        with contextlib.suppress(Exception):
            while True:
                await send({"type": "websocket.send", "text": "x" * 65536})

    async with stub_server(floods, ws_ping_interval=0.3, ws_ping_timeout=0.3) as (port, server):
        frozen = socket.create_connection(("127.0.0.1", port))
        frozen.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        frozen.sendall(upgrade_head("/ws") + b"\r\n")
        try:
            await asyncio.sleep(0.2)
            assert len(server.server_state.connections) == 1
            for _ in range(30):
                await asyncio.sleep(0.1)
                if not server.server_state.connections:
                    break
            assert not server.server_state.connections, "the frozen peer is still connected"
        finally:
            frozen.close()


class _Writes:
    """A connection's transport that keeps what is written to it, and writes it."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def test_a_batch_of_text_frames_is_one_write_to_the_socket() -> None:
    """A send-queue batch costs the server one syscall and the client one wake-up."""
    offered: list[bool] = []
    go = asyncio.Event()

    async def batches(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        offered.append(SEND_TEXTS in scope["extensions"])
        await send({"type": "websocket.accept"})
        await go.wait()
        await send({"type": SEND_TEXTS, "texts": [b'{"n":1}', "업무 요청".encode(), b'{"n":3}']})
        await receive()  # the client's close

    async with (
        stub_server(batches) as (port, server),
        connect(f"ws://127.0.0.1:{port}/ws") as ws,
    ):
        [connection] = server.server_state.connections
        kept = _Writes(connection.transport)  # type: ignore[attr-defined]
        connection.transport = kept  # type: ignore[attr-defined]
        go.set()
        received = [await asyncio.wait_for(ws.recv(), scaled(3)) for _ in range(3)]
        writes = len(kept.written)
    assert offered == [True]
    assert received == ['{"n":1}', "업무 요청", '{"n":3}']
    assert writes == 1


async def test_a_batch_sent_after_the_close_fails_as_a_send_does() -> None:
    failures: list[str] = []

    async def closes_then_batches(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 1000})
        try:
            await send({"type": SEND_TEXTS, "texts": [b"late"]})
        except Exception as error:
            failures.append(type(error).__name__)

    async with stub_server(closes_then_batches) as (port, _):
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.recv(), scaled(3))
        for _ in range(50):
            if failures:
                break
            await asyncio.sleep(0.02)
    assert failures in (["RuntimeError"], ["ClientDisconnected"])


async def _door_writes(gateway: RunningGateway, ws: AgUiSocket) -> _Writes:
    """The writes to ``ws``'s socket from now on, once a first run made it the door's."""
    await ws.run(user_input(new_id("t"), "hello"))
    [connection] = [c for c in gateway.server.server_state.connections if hasattr(c, "conn")]
    kept = _Writes(connection.transport)  # type: ignore[attr-defined]
    connection.transport = kept  # type: ignore[attr-defined]
    return kept


async def test_the_websocket_door_writes_a_tool_calls_events_at_once() -> None:
    """A call's START, ARGS and END are emitted together: they reach the client in one write."""
    async with running_gateway() as gateway, gateway.socket() as ws:
        kept = await _door_writes(gateway, ws)
        events = await ws.run(user_input(new_id("t"), "open the work request list"))
        writes = len(kept.written)
    assert [e["type"] for e in events].count("TOOL_CALL_START") >= 2
    assert writes < len(events) - 4


async def test_a_runs_start_and_its_first_words_are_written_as_they_are_delivered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client's acknowledgement and a reply's first chunk are written in the turn of the
    loop that delivers them, not a turn later, when the connection's writer task would get
    its step (under load a turn is tens of milliseconds: docs/first-event.md)."""
    seen: list[tuple[str, bool]] = []  # each such event, and whether it was out on delivery
    kept: _Writes | None = None
    deliver = WebSocketSession.deliver

    def watched(session: WebSocketSession, event: p.Event) -> None:
        deliver(session, event)
        if kept is not None and isinstance(event, p.RunStarted | p.TextMessageContent):
            seen.append((type(event).__name__, p.encode(event) in b"".join(kept.written)))

    monkeypatch.setattr(WebSocketSession, "deliver", watched)
    async with running_gateway() as gateway, gateway.socket() as ws:
        kept = await _door_writes(gateway, ws)
        events = await ws.run(user_input(new_id("t"), "hello"))
    assert outcome(events)["type"] == "success"
    assert seen[0] == ("RunStarted", True)
    assert ("TextMessageContent", True) in seen[:2], seen
