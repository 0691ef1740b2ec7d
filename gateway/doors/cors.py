"""Which browser origins may use the gateway, and CORS on its HTTP doors.

One rule for every door: a request or upgrade that carries no ``Origin`` (not a browser),
or the origin of the host it connected to (its scheme, host and port), or one of
``GATEWAY_ALLOWED_ORIGINS``, may go on; any other origin gets 403 ``ACCESS_DENIED``, on /ws
instead of the upgrade and on the HTTP doors instead of the answer, preflights included,
and never a CORS header. An allowed origin is echoed (never ``*``), with ``Vary: Origin`` on
every answer of a door.

No answer says ``Access-Control-Allow-Credentials``: no auth mode reads what a browser
holds for a site (cookies, HTTP auth). dev names the user in ``X-Gateway-User`` or
``?user=`` and jwt in ``Authorization``, which a page sets itself; allowing credentials
would only let a page ride the cookies of a host app that mounts the gateway.
"""

from __future__ import annotations

import urllib.parse

from gateway import wire as p
from gateway.doors.asgi import Message, Scope, Send, header

FOREIGN_ORIGIN = p.GatewayError(
    p.ErrorCode.ACCESS_DENIED,
    "This page's origin may not use the gateway: serve the page from the gateway's own "
    "host, or add its origin to GATEWAY_ALLOWED_ORIGINS.",
)

# Request headers a page may send: what @ag-ui/client's HttpAgent sends (Content-Type,
# Accept), the credentials of each auth mode, and the AgentCore session header the doors log.
ALLOWED_HEADERS = frozenset(
    {
        "accept",
        "authorization",
        # A resumable stream's cursor (``gateway.doors.sse_replay``), as EventSource names it.
        "last-event-id",
        "content-type",
        "x-gateway-user",
        "x-amzn-bedrock-agentcore-runtime-session-id",
    }
)
# Response headers a page may read besides the safelisted ones: a 401's challenge, a
# 503's wait, and the file name of a thread's export (``gateway.doors.threads``).
EXPOSED_HEADERS = b"www-authenticate, retry-after, content-disposition"
# How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours).
MAX_AGE_SECONDS = 600
VARY = (b"vary", b"origin")


def origin_allowed(scope: Scope, allowed: frozenset[str]) -> bool:
    """Whether a request's or connection's ``Origin`` may use it: none (not a browser),
    the host the client connected to, or one of ``GATEWAY_ALLOWED_ORIGINS``."""
    sent = origin(scope)
    if sent is None:
        return True
    sent = sent.lower().rstrip("/")
    if sent in allowed:
        return True
    host = header(scope, b"host")
    parts = urllib.parse.urlsplit(sent)
    if host is None or parts.scheme != _served_scheme(scope) or not parts.hostname:
        return False
    return _authority(parts.scheme, parts.netloc) == _authority(parts.scheme, host.lower())


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}
# The page scheme that is the gateway's own, by the scheme it was reached with: a page on
# http:// is another site than the gateway on https:// (or wss://), and the other way round.
_PAGE_SCHEMES = {"http": "http", "ws": "http", "https": "https", "wss": "https"}


def _served_scheme(scope: Scope) -> str | None:
    """The scheme of the gateway's own pages on this connection; behind a proxy that ends
    TLS, https only as uvicorn reads it from a trusted proxy's X-Forwarded-Proto."""
    default = "ws" if scope.get("type") == "websocket" else "http"
    return _PAGE_SCHEMES.get(str(scope.get("scheme") or default))


def _authority(scheme: str, netloc: str) -> str:
    """``host[:port]`` without the scheme's default port, as browsers leave it out."""
    return netloc.removesuffix(_DEFAULT_PORTS[scheme])


def is_preflight(scope: Scope) -> bool:
    """A browser asking whether it may send a request: OPTIONS naming the method."""
    return (
        scope["method"] == "OPTIONS"
        and origin(scope) is not None
        and header(scope, b"access-control-request-method") is not None
    )


def origin(scope: Scope) -> str | None:
    return header(scope, b"origin")


async def answer_preflight(scope: Scope, send: Send, method: str) -> None:
    """204 to an allowed origin's preflight for a door taking ``method``."""
    headers = preflight_headers(scope, method)
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def preflight_headers(scope: Scope, method: str) -> list[tuple[bytes, bytes]]:
    """A preflight's answer: the method, the requested headers that are allowed, and
    nothing about the others (the browser then refuses to send them)."""
    requested = header(scope, b"access-control-request-headers") or ""
    names = [name.strip().lower() for name in requested.split(",")]
    allowed = sorted({name for name in names if name in ALLOWED_HEADERS})
    headers = [
        VARY,
        *_echo(scope),
        (b"access-control-allow-methods", method.encode()),
        (b"access-control-max-age", b"%d" % MAX_AGE_SECONDS),
    ]
    if allowed:
        headers.append((b"access-control-allow-headers", ", ".join(allowed).encode()))
    return headers


def with_cors(scope: Scope, send: Send) -> Send:
    """``send`` with the CORS headers of an allowed request added to its answer's start."""
    extra = [VARY, *_echo(scope)]
    if len(extra) > 1:
        extra.append((b"access-control-expose-headers", EXPOSED_HEADERS))

    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *extra]
        await send(message)

    return send_with_cors


def _echo(scope: Scope) -> list[tuple[bytes, bytes]]:
    sent = origin(scope)
    if sent is None:
        return []
    return [(b"access-control-allow-origin", sent.encode("latin-1"))]
