"""A request body read within bounds: its media type, its size and its time.

A body the gateway refuses is still read to its end (up to ``DISCARD_LIMIT`` bytes, within
the same time) before the answer goes out: a server that closes a connection with unread
bytes makes the kernel reset it, and the client then never reads the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from http import HTTPStatus
from typing import Any

from gateway import wire as p

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

# The most of a refused body read and dropped so its client can read the answer.
DISCARD_LIMIT = 64 << 20
JSON = "application/json"


class BodyRefused(p.GatewayError):
    """VALIDATION_ERROR with the HTTP status that says what is wrong (408, 413, 415)."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(p.ErrorCode.VALIDATION_ERROR, message)
        self.status = status


def http_status(error: p.GatewayError) -> int:
    return error.status if isinstance(error, BodyRefused) else error.code.http_status


class RequestBody:
    """The body of one HTTP request, read through ASGI ``receive`` before a deadline."""

    def __init__(
        self,
        scope: MutableMapping[str, Any],
        receive: Receive,
        *,
        max_bytes: int,
        timeout: float,
        takes: str = "POST /invocations takes a RunAgentInput",
        bound: str = "(GATEWAY_MAX_FRAME_BYTES). Send less history: the thread's store"
        " already holds it.",
    ) -> None:
        # What the refusals say: what the door takes, and what bounds its size.
        self.takes, self.bound = takes, bound
        self.headers = {bytes(k).lower(): bytes(v) for k, v in scope.get("headers", ())}
        self.receive = receive
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.deadline = asyncio.get_running_loop().time() + timeout
        self.size = 0
        self.ended = False
        self.asked = False  # receive was called: uvicorn has sent any 100 Continue

    async def json(self) -> bytes:
        """The whole body of a JSON request, or BodyRefused (415, 413, 408)."""
        self._check_type()
        declared = self._declared_length()
        if declared is not None and declared > self.max_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout_at(self.deadline):
                while not self.ended:
                    chunk = await self._next()
                    if self.size > self.max_bytes:
                        raise self._too_large()
                    chunks.append(chunk)
        except TimeoutError:
            raise BodyRefused(
                HTTPStatus.REQUEST_TIMEOUT,
                f"The request body did not arrive within {self.timeout:g} s "
                "(GATEWAY_BODY_TIMEOUT); send it at once, or less of it.",
            ) from None
        return b"".join(chunks)

    async def settle(self) -> bool:
        """Reads and drops what is left of the body, within bounds; whether it all arrived.

        When it did, the connection can serve another request; otherwise the answer must
        close it. A client waiting for ``100 Continue`` that was never sent sends no body.
        """
        if self.ended:
            return True
        if not self.asked and self.headers.get(b"expect", b"").lower() == b"100-continue":
            return False
        declared = self._declared_length()
        if declared is not None and declared > DISCARD_LIMIT:
            return False
        try:
            async with asyncio.timeout_at(self.deadline):
                while not self.ended and self.size <= DISCARD_LIMIT:
                    await self._next()
        except TimeoutError:
            return False
        return self.ended

    async def _next(self) -> bytes:
        self.asked = True
        message = await self.receive()
        if message["type"] == "http.disconnect":
            self.ended = True  # nothing more will come; the answer has nowhere to go
            return b""
        chunk: bytes = message.get("body", b"")
        self.size += len(chunk)
        self.ended = not message.get("more_body", False)
        return chunk

    def _check_type(self) -> None:
        media, *params = self.headers.get(b"content-type", b"").decode("latin-1").split(";")
        charsets = [
            value.strip().strip('"').lower()
            for name, _, value in (param.partition("=") for param in params)
            if name.strip().lower() == "charset"
        ]
        if media.strip().lower() != JSON or any(c not in ("utf-8", "utf8") for c in charsets):
            raise BodyRefused(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"{self.takes} as JSON: send it with "
                "Content-Type: application/json (charset utf-8, if any).",
            )

    def _declared_length(self) -> int | None:
        raw = self.headers.get(b"content-length")
        return int(raw) if raw is not None and raw.isdigit() else None

    def _too_large(self) -> BodyRefused:
        return BodyRefused(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"Request body is larger than {self.max_bytes} bytes {self.bound}",
        )
