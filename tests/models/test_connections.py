"""A provider's connection is kept from one model call to the next: a thread's turns reach
the provider over the connection the first one opened, while a stream that stops early
(a cancel) or whose end never comes still closes its connection; and a request leaves
in one write, and a response is read for cookies only when it sets one."""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import re
from collections.abc import AsyncIterator

import httpcore._backends.anyio as anyio_backend
import httpx
import pytest
from google.genai import _api_client as genai_client

from gateway.models import connections
from gateway.models.connections import kept_alive_client
from tests.support.agui import new_id, text_of, user_input
from tests.support.budgets import eventually, scaled
from tests.support.counting import counting
from tests.support.providers import GeminiApi, Provider
from tests.support.providers.agents import navigator_on
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_a_threads_turns_reach_the_provider_over_one_connection(provider: Provider) -> None:
    await three_turns_over_one_connection(provider)


@pytest.mark.parametrize("provider", [GeminiApi], ids=["gemini"], indirect=True)
async def test_gemini_keeps_its_connection_on_httpx_too(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deployment's venv has no aiohttp (ag-ui-adk brings it to this one), and then
    google-genai sends with httpx."""
    monkeypatch.setattr(genai_client, "has_aiohttp", False)
    await three_turns_over_one_connection(provider)


async def three_turns_over_one_connection(provider: Provider) -> None:
    async with running_gateway(agent=navigator_on(provider)) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        for words in ("안녕", "고마워", "안녕"):
            assert text_of(await ws.run(user_input(thread, words)))
    assert len(provider.senders) == 3
    assert len(set(provider.senders)) == 1, f"one connection a call: {provider.senders}"


class OneStream:
    """An OpenAI-style server on a loopback port that streams ``body`` and then either ends
    the response or holds it open; it notes when each connection is closed."""

    def __init__(self, body: list[bytes], *, ends: bool) -> None:
        self.body, self.ends = body, ends
        self.connections = 0
        self.closed = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
                await reader.readexactly(int(length[1]) if length else 0)
                writer.write(HEAD + b"".join(chunk(piece) for piece in self.body))
                if self.ends:
                    writer.write(b"0\r\n\r\n")
                await writer.drain()
        self.closed.set()
        writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"http://127.0.0.1:{port}/v1/chat/completions"


async def read_until_done(url: str, client: object) -> None:
    """As OpenAI's SDK reads a stream: up to its [DONE], then closes the response."""
    assert hasattr(client, "stream")
    async with client.stream("POST", url, json={}) as response:
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                break


async def test_a_stream_closed_at_its_done_leaves_its_connection_for_the_next() -> None:
    server = OneStream([b'data: {"choices": []}\n\n', b"data: [DONE]\n\n"], ends=True)
    async with server.running() as url, kept_alive_client() as client:
        await read_until_done(url, client)
        await eventually(lambda: not client._transport._finishing, 5, what="the end was read")
        await read_until_done(url, client)
    assert server.connections == 1


async def test_a_stream_read_to_its_end_keeps_its_connection_with_nothing_left_to_read() -> None:
    server = OneStream([b'data: {"choices": []}\n\n', b"data: [DONE]\n\n"], ends=True)
    async with server.running() as url, kept_alive_client() as client:
        for _ in range(2):
            async with client.stream("POST", url, json={}) as response:
                assert [line async for line in response.aiter_lines() if line][-1] == "data: [DONE]"
            assert not client._transport._finishing
    assert server.connections == 1


async def test_a_stream_whose_end_never_comes_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connections, "FINISH_SECONDS", 0.2)
    server = OneStream([b"data: [DONE]\n\n"], ends=False)
    async with server.running() as url, kept_alive_client() as client:
        await read_until_done(url, client)
        await asyncio.wait_for(server.closed.wait(), scaled(5))


async def test_a_stream_closed_before_its_done_closes_its_connection_at_once() -> None:
    server = OneStream([b'data: {"choices": []}\n\n'], ends=False)
    async with server.running() as url, kept_alive_client() as client:
        async with client.stream("POST", url, json={}) as response:
            async for _ in response.aiter_lines():
                break
        # No finishing read: the connection is closed as the response is.
        assert not client._transport._finishing
        await asyncio.wait_for(server.closed.wait(), scaled(5))


def cookie_setting(request: httpx.Request) -> httpx.Response:
    """A provider's answer, with a cookie when the request asks for one."""
    headers = {"set-cookie": "route=a; Path=/"} if request.url.path == "/cookie" else {}
    return httpx.Response(200, headers=headers, content=b"data: [DONE]\n\n")


async def test_a_response_that_sets_no_cookie_is_not_read_for_cookies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The standard library's cookie jar is handed only the responses that set a cookie."""
    handed = counting(monkeypatch, http.cookiejar.CookieJar, "extract_cookies")
    mounts = {"http://provider": httpx.MockTransport(cookie_setting)}
    async with kept_alive_client(mounts=mounts) as client:
        for _ in range(3):
            await client.post("http://provider/v1/chat/completions", json={})
        assert handed == [] and not client.cookies
        await client.post("http://provider/cookie", json={})
        assert len(handed) == 1
        # A cookie a response sets is kept, and sent with the next request, as before.
        assert client.cookies.get("route") == "a"
        sent = await client.post("http://provider/v1/chat/completions", json={})
        assert sent.request.headers["cookie"] == "route=a"


async def test_a_request_leaves_in_one_write_its_head_with_its_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The provider is sent each request whole at once, not its head and then its body."""
    written = counting(monkeypatch, anyio_backend.AnyIOStream, "write")
    server = OneStream([b"data: [DONE]\n\n"], ends=True)
    async with server.running() as url, kept_alive_client() as client:
        for body in ({"model": "m", "stream": True}, {"model": "m", "messages": ["안녕"] * 300}):
            answer = await client.post(url, json=body)
            assert answer.text == "data: [DONE]\n\n"
            (sent,) = [call.args[1] for call in written]
            head, _, content = sent.partition(b"\r\n\r\n")
            assert head.startswith(b"POST /v1/chat/completions HTTP/1.1")
            assert json.loads(content) == body
            written.clear()
        # Nothing to join: a request without a body goes as its answer is read.
        assert (await client.get(url)).text == "data: [DONE]\n\n"
        (sent,) = [call.args[1] for call in written]
        assert sent.startswith(b"GET /v1/chat/completions") and sent.endswith(b"\r\n\r\n")
    assert server.connections == 1
