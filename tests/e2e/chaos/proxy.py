"""A TCP proxy on 127.0.0.1 that can cut every connection through it at once.

The page loads from the proxy's port, so its HTTP requests and its /ws go through it. ``cut``
ends every open connection on both sides, the way a dropped network or a dying load
balancer does: "rst" resets them (SO_LINGER 0, so bytes in flight are thrown away), "fin"
closes them in order. The proxy keeps accepting new connections, so a client reconnects
by itself; while the upstream is down (a gateway being restarted) a new connection is
closed at once, as a refused one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Literal

CutMode = Literal["rst", "fin"]

CHUNK = 64 << 10


class CuttableProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``upstream``; see the module docstring."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = 0
        self.accepted = 0
        self.cuts = 0
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut("rst")
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    @property
    def open_connections(self) -> int:
        return len(self._pairs)

    def cut(self, mode: CutMode) -> int:
        """Ends every connection open now, both sides; returns how many."""
        pairs, self._pairs = list(self._pairs), set()
        for page_side, gateway_side in pairs:
            for writer in (page_side, gateway_side):
                _end(writer, mode)
        self.cuts += 1
        return len(pairs)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            _end(writer, "rst")
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        pipes = [
            asyncio.create_task(_pipe(reader, up_writer)),
            asyncio.create_task(_pipe(up_reader, writer)),
        ]
        self._tasks.update(pipes)
        try:
            # Either side ending ends the connection, as a real middlebox's idle close would.
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if pair in self._pairs:
                self._pairs.discard(pair)
                for side in pair:
                    _end(side, "fin")
            for pipe in pipes:
                pipe.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)
            self._tasks.difference_update(pipes)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()


def _end(writer: asyncio.StreamWriter, mode: CutMode) -> None:
    if writer.transport.is_closing():
        return
    if mode == "rst":
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    else:
        writer.close()
