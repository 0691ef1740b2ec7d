"""Gemini's requests through aiohttp skip its two lookups in a thread (a proxy in the
environment, a netrc file) when there is nothing to find, and go out byte for byte as
google-genai sends them, a server's cookie sent back whichever session they go by; with
anything to find they look, the SDK's way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from gateway.models import proxy_lookup
from gateway.models.gemini import GeminiLlm

pytestmark = pytest.mark.server

FRAME = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "네"}]}, "index": 0}],
    "modelVersion": "gemini-2.5-flash",
}
REPLY = f"data: {json.dumps(FRAME)}\r\n\r\n".encode()


class Provider:
    """A loopback Gemini API that keeps each request's bytes as they came."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while head := await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b"":
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            self.requests.append(head + await reader.readexactly(length))
            # A cookie, which the next request sends back whichever session it goes by.
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nset-cookie: seen=1\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(REPLY), REPLY)
            )
            await writer.drain()
        writer.close()


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    served = Provider()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await served.serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    served.port = server.sockets[0].getsockname()[1]
    async with server:
        yield served


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """aiohttp's lookups, by kind, in an environment with nothing to find (a home of the
    test's own, no proxy named)."""
    for name in ("NETRC", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    for scheme in ("http", "https", "ws", "wss", "all", "no"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    looked: list[str] = []
    proxy, netrc = aiohttp.client.get_env_proxy_for_url, aiohttp.ClientSession._get_netrc_auth

    def proxy_looked(url: Any) -> Any:
        looked.append("proxy")
        return proxy(url)

    def netrc_looked(self: aiohttp.ClientSession, host: str) -> Any:
        looked.append("netrc")
        return netrc(self, host)

    monkeypatch.setattr(aiohttp.client, "get_env_proxy_for_url", proxy_looked)
    monkeypatch.setattr(aiohttp.ClientSession, "_get_netrc_auth", netrc_looked)
    yield looked


def model(kind: type[Gemini], provider: Provider) -> Gemini:
    http_options = {"base_url": f"http://localhost:{provider.port}"}  # a name keeps cookies
    return kind(
        model="gemini-2.5-flash", client_kwargs={"api_key": "gk", "http_options": http_options}
    )


def asked() -> LlmRequest:
    return LlmRequest(
        model="gemini-2.5-flash",
        contents=[types.Content(role="user", parts=[types.Part(text="화면 열어줘")])],
        config=types.GenerateContentConfig(system_instruction="You open screens."),
    )


async def answered(gemini: Gemini) -> str:
    said = [r async for r in gemini.generate_content_async(asked(), stream=True)]
    return "".join(p.text or "" for p in said[-1].content.parts)  # type: ignore[union-attr]


async def test_with_nothing_to_find_a_request_does_not_look_and_goes_as_the_sdk_sends_it(
    provider: Provider, lookups: list[str]
) -> None:
    assert proxy_lookup.nothing_to_find()
    theirs = model(Gemini, provider)
    assert [await answered(theirs), await answered(theirs)] == ["네", "네"]
    assert sorted(lookups) == ["netrc", "netrc", "proxy", "proxy"]
    lookups.clear()
    ours = model(GeminiLlm, provider)
    assert [await answered(ours), await answered(ours)] == ["네", "네"]
    assert lookups == []
    sdks, mine = provider.requests[:2], provider.requests[2:]
    assert mine == sdks
    assert b"Cookie: seen=1" in mine[1]  # the first reply's cookie, sent back


@pytest.mark.parametrize("named", ["proxy", "netrc"])
async def test_with_anything_to_find_a_request_looks_the_sdks_way(
    named: str, provider: Provider, lookups: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = model(GeminiLlm, provider)
    assert await answered(ours) == "네" and lookups == []
    # Named once the client was made: the next request obeys it.
    if named == "proxy":  # for https, which this http request does not take
        monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    else:
        (Path.home() / ".netrc").write_text("machine elsewhere login me password secret\n")
    assert not proxy_lookup.nothing_to_find()
    assert await answered(ours) == "네"
    assert sorted(lookups) == ["netrc", "proxy"]
    first, then = provider.requests
    assert b"cookie: seen=1" in then.lower()
    assert then.lower().replace(b"cookie: seen=1\r\n", b"") == first.lower()
