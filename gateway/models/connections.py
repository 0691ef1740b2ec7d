"""A provider's connection kept for the next model call, although its SDK closes each
stream one step before the stream's end.

OpenAI's SDK stops reading a chat-completions stream at its ``data: [DONE]`` line and closes
the response there, before the HTTP body's own end (the chunked encoding's last, empty
chunk) has been read. httpx cannot tell such a connection is idle, so it closes it: every
model call then opens a new TCP connection, and to a real provider a new TLS session,
before its request can leave (5 ms on loopback on a 2-core machine, tens over TLS), while
a client that reads its streams to their end sends on the connection it already has.

``kept_alive_client`` is the httpx client the gateway gives the models it builds. Its
transport hands out responses that remember how their text ended: one closed right after
its ``[DONE]`` is read to its end in the background, a few bytes that are already on their
way, and its connection goes back to the pool for the next call. Nobody waits for it: the
run's final event does not wait, and a call that starts before it is done opens another
connection, as every call did before. A response closed anywhere else (a cancelled run,
a failed stream) closes its connection at once, as before: that is how a provider learns
to stop generating. The finishing read is bounded in time and bytes; past either, the
connection is closed.

Its responses' cookies are read only from responses that set one. httpx hands every
response to the standard library's cookie jar, which wraps the response and its request
in urllib's shapes to look for ``Set-Cookie`` headers: ~0.1 ms of every model call, spent
after the response's head arrives and before its first chunk can be read, for headers a
provider's stream never sends. A response that does set a cookie is read as before.

And a request leaves in one write. httpcore writes a request's head, then its body, each
its own write to the socket and each followed by a turn of the event loop (anyio's
checkpoint): the provider has nothing to act on until the second arrives, and under load
a turn is long. The connections the client opens (``JoinedWrites``) hold a request's
head until the next write, which takes it along, or until the connection is read (a
request without a body), so head and body go out together; a body written in pieces
writes its later pieces as before.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpcore
import httpx

__all__ = [
    "FINISH_BYTES",
    "FINISH_SECONDS",
    "JoinedWrites",
    "KeptAlive",
    "SetCookiesOnly",
    "kept_alive_client",
]

log = logging.getLogger(__name__)

# The end of an OpenAI-style event stream: the last line its SDK reads.
STREAM_END = b"data: [DONE]"
# How long a stream's end may take to arrive after its [DONE], and how much of it there may
# be, before its connection is closed rather than kept.
FINISH_SECONDS = 2.0
FINISH_BYTES = 4096


class KeptAlive(httpx.AsyncBaseTransport):
    """An httpx transport whose responses closed after their stream's ``[DONE]`` keep
    their connection."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport
        # Responses being read to their end; held so that their tasks are not collected.
        self._finishing: set[asyncio.Task[None]] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._transport.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Finishing(response.stream, self._finishing)
        return response

    async def aclose(self) -> None:
        for task in list(self._finishing):
            task.cancel()
        await asyncio.gather(*self._finishing, return_exceptions=True)
        await self._transport.aclose()


def kept_alive_client(**options: Any) -> httpx.AsyncClient:
    """The OpenAI SDK's default httpx client (its timeouts, limits and redirects) on a
    ``KeptAlive`` transport; ``options`` go to the client."""
    from openai import DEFAULT_CONNECTION_LIMITS, DefaultAsyncHttpxClient

    http = httpx.AsyncHTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
    # httpx's transport takes no network backend: its pool's own, which it reads as it connects.
    http._pool._network_backend = JoinedWrites(http._pool._network_backend)
    client = DefaultAsyncHttpxClient(transport=KeptAlive(http), **options)
    # httpx's setter would copy the cookies into a plain ``Cookies``: its own attribute.
    client._cookies = SetCookiesOnly(client.cookies)
    return client


class SetCookiesOnly(httpx.Cookies):
    """A client's cookies, that reads a response's only when its head sets one."""

    def extract_cookies(self, response: httpx.Response) -> None:
        # The jar looks at these two headers alone (``CookieJar.make_cookies``).
        if "set-cookie" in response.headers or "set-cookie2" in response.headers:
            super().extract_cookies(response)


class _Finishing(httpx.AsyncByteStream):
    """A response's body, as the SDK reads it; closed after ``[DONE]``, read to its end
    in the background first."""

    def __init__(self, stream: httpx.AsyncByteStream, finishing: set[asyncio.Task[None]]):
        self._stream = stream
        self._chunks = stream.__aiter__()
        self._finishing = finishing
        # The last bytes read, enough to see the stream's end line in them.
        self._tail = b""
        # Whether the body was read to its end: then its connection is idle already.
        self._ended = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            self._ended = True
            raise
        self._tail = (self._tail + chunk)[-len(STREAM_END) - 8 :]
        return chunk

    async def aclose(self) -> None:
        if self._ended or not self._tail.rstrip().endswith(STREAM_END):
            await self._stream.aclose()
            return
        task = asyncio.get_running_loop().create_task(self._finish())
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def _finish(self) -> None:
        """Reads what is left of the body (the chunked encoding's end), then closes: an
        idle connection goes back to the pool, any other is closed."""
        try:
            read = 0
            async with asyncio.timeout(FINISH_SECONDS):
                async for chunk in self._chunks:
                    read += len(chunk)
                    if read > FINISH_BYTES:
                        log.debug("a stream went on after its [DONE]: its connection is closed")
                        break
        except (httpx.HTTPError, TimeoutError) as error:
            log.debug("a stream's end did not come after its [DONE] (%r)", error)
        finally:
            await self._stream.aclose()


class JoinedWrites(httpcore.AsyncNetworkBackend):
    """httpcore's network ``backend``, whose connections send a request's head with the
    write after it (see the module's docstring)."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(
            host, port, timeout, local_address=local_address, socket_options=socket_options
        )
        return _JoinedStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_unix_socket(path, timeout, socket_options)
        return _JoinedStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class _JoinedStream(httpcore.AsyncNetworkStream):
    """A connection whose first write after a read (a request's head) waits for the next
    write or read, and goes out with the next write."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        # The head held, and its write's timeout; None: nothing held.
        self._held: tuple[bytes, float | None] | None = None
        # Whether the next write starts a request: nothing was written since the last read.
        self._starts = True

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:  # a request's end, with nothing to send (a length said it)
            return
        if self._starts:
            self._starts = False
            self._held = (buffer, timeout)
            return
        if self._held is not None:
            head, self._held = self._held[0], None
            buffer = head + buffer
        await self._stream.write(buffer, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush()
        self._starts = True
        return await self._stream.read(max_bytes, timeout)

    async def _flush(self) -> None:
        if self._held is not None:
            (head, timeout), self._held = self._held, None
            await self._stream.write(head, timeout)

    async def aclose(self) -> None:
        self._held = None  # a request not sent: the connection goes with it
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        await self._flush()
        tls = await self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _JoinedStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)
