"""What every door of the ASGI app shares: the ASGI types, HTTP answers and refusals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gateway import wire as p
from gateway.auth import Unauthorized

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# What a refusal worth retrying at once elsewhere (a draining process) asks a client to wait.
RETRY_AFTER_SECONDS = 1


async def respond(
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
    """The header a refusal carries: ``WWW-Authenticate`` on every 401 (RFC 7235),
    ``Retry-After`` on a 503 (``retry_after``)."""
    if isinstance(error, Unauthorized):
        return [(b"www-authenticate", error.challenge())]
    return retry_after(error)


def retry_after(error: p.GatewayError) -> list[tuple[bytes, bytes]]:
    """The ``Retry-After`` header of a refusal by a process that is going away."""
    if error.code is p.ErrorCode.SERVICE_UNAVAILABLE:
        return [(b"retry-after", b"%d" % RETRY_AFTER_SECONDS)]
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


async def refuse(send: Send, error: p.GatewayError) -> None:
    status, headers, body = refusal(error)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def header(scope: Scope, name: bytes) -> str | None:
    """A request header's first value (``name`` in lower case), or None."""
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None
