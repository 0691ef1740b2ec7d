"""GET /metrics: the gateway's Prometheus exposition, behind a credential of its own.

With ``GATEWAY_METRICS=off`` (the default) the door is not there: 404, as any unknown
path. With ``on`` it answers the text format Prometheus scrapes (``gateway.metrics``
defines every metric). Who may scrape is not a user: the scraper sends
``GATEWAY_METRICS_TOKEN`` as a bearer credential, compared in constant time, and a user's
token does not open the door. The credential is required when users authenticate by
token (``GATEWAY_AUTH=jwt``, the gateway listening on every interface); with ``dev``, which
listens on this machine, it may be left unset and the door is open.
"""

from __future__ import annotations

import hmac

from gateway.auth import AuthSettingsError, Unauthorized
from gateway.config import Settings
from gateway.doors.asgi import Scope, Send, header, refuse, respond
from gateway.metrics import CONTENT_TYPE, Metrics

MIN_TOKEN_BYTES = 16


def check_settings(settings: Settings) -> None:
    """Refuses, before anything listens, metrics that anyone reaching the port could read."""
    token = settings.metrics_token.encode()
    if settings.metrics == "on" and not token and settings.auth == "jwt":
        raise AuthSettingsError(
            "GATEWAY_METRICS=on with GATEWAY_AUTH=jwt needs GATEWAY_METRICS_TOKEN, the "
            "credential your scraper sends; make one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'."
        )
    if token and len(token) < MIN_TOKEN_BYTES:
        raise AuthSettingsError(
            f"GATEWAY_METRICS_TOKEN must be at least {MIN_TOKEN_BYTES} bytes; make one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'."
        )


async def scrape(metrics: Metrics, token: str, scope: Scope, send: Send) -> None:
    """Answers a scrape, or refuses it 401 with a sentence; 404 while metrics are off."""
    if not metrics.enabled:
        await respond(send, 404, b"not found", b"text/plain")
        return
    if token:
        offered = header(scope, b"authorization") or ""
        scheme, _, credential = offered.strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode("latin-1"), token.encode()
        ):
            await refuse(
                send,
                Unauthorized(
                    "Send the metrics credential as Authorization: Bearer <GATEWAY_METRICS_TOKEN>.",
                    None,
                ),
            )
            return
    await respond(send, 200, metrics.exposition(), CONTENT_TYPE.encode())
