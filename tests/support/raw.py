"""A raw TCP client for the tests that play a slow, broken or hostile HTTP peer."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import time
from typing import Any

from tests.support.agui import sse_events
from tests.support.budgets import scaled


@dataclasses.dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def events(self) -> list[dict[str, Any]]:
        """The SSE events of the body."""
        return sse_events(self.body)


class RawClient:
    """One TCP connection to a loopback server, written to and read by hand."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, opened: float
    ) -> None:
        self.reader, self.writer = reader, writer
        # Before the connect: no server timer on the connection can have started earlier.
        self.opened = opened

    @classmethod
    async def open(cls, port: int) -> RawClient:
        opened = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, opened)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def response(self, timeout: float | None = None) -> Response:
        """Reads one HTTP/1.1 response (content-length or chunked body)."""
        async with asyncio.timeout(timeout or scaled(10)):
            head = await self.reader.readuntil(b"\r\n\r\n")
            status_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
            headers = {}
            for line in lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                body = await self.reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding") == "chunked":
                body = b""
                while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                    body += await self.reader.readexactly(size)
                    await self.reader.readexactly(2)
                await self.reader.readexactly(2)
            else:
                body = await self.reader.read()
        return Response(int(status_line.split()[1]), headers, body)

    async def closed_after(self, timeout: float, *, since_open: bool = False) -> float:
        """Seconds until the server closes (or resets) the connection, from now or, with
        ``since_open``, from before it was opened; reads are dropped."""
        started = self.opened if since_open else time.monotonic()
        async with asyncio.timeout(timeout):
            try:
                while await self.reader.read(65536):
                    pass
            except ConnectionResetError:
                pass
        return time.monotonic() - started

    def close(self) -> None:
        self.writer.transport.abort()


def request(
    method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> bytes:
    """The bytes of one HTTP/1.1 request; ``Content-Length`` is added for a body."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    fields = dict(headers or {})
    if body and "Transfer-Encoding" not in fields:
        fields.setdefault("Content-Length", str(len(body)))
    lines += [f"{name}: {value}" for name, value in fields.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def upgrade_head(path: str = "/ws?user=demo") -> bytes:
    """A WebSocket upgrade request, without the blank line that ends it."""
    key = base64.b64encode(os.urandom(16)).decode()
    return request(
        "GET",
        path,
        {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
        },
    )[:-2]
