"""Who is asking, at every door, in the mode GATEWAY_AUTH names.

- ``dev`` trusts the client: ``?user=`` on /ws and ``X-Gateway-User`` on HTTP (``?user=``
  there too, for plain links) name the user as sent; naming nobody makes you ``demo``.
- ``jwt`` trusts only a JWT that ``TokenVerifier`` accepts. HTTP doors read
  ``Authorization: Bearer <jwt>``. /ws reads the same header (clients that can set one),
  the subprotocol offer ``["agui", "bearer.<jwt>"]`` (the server selects ``agui``: a
  browser fails a handshake whose selected protocol it did not offer, and the token must
  not be echoed), or ``?ticket=`` from ``POST /ws-ticket``. In jwt mode ``?user=`` and
  ``X-Gateway-User`` may only name the caller.

In both modes /ws takes tickets, and the start-up warm-up's credential: a random secret of
this process, sent as a bearer token, good only as the warm-up user and only until the
warm-up is over.

A backend system is no user: it proves itself at its own door (``POST /tool-results``) with
the operator's service credential, ``GATEWAY_SERVICE_TOKEN`` sent as a bearer token. It
works the same in both modes (dev mode has no tokens a role could ride on) and no user's
credential is one; without it set, that door is closed.
"""

from __future__ import annotations

import hmac
import secrets
import urllib.parse
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from gateway import wire as p
from gateway.auth.identity import (
    SERVICE_USER,
    WARM_UP_USER,
    AuthSettingsError,
    Identity,
    Impersonation,
    Unauthorized,
    Via,
    checked_user,
)
from gateway.auth.tickets import TicketBook
from gateway.config import Settings

if TYPE_CHECKING:
    from gateway.auth.tokens import TokenVerifier

__all__ = [
    "SERVICE_USER",
    "WARM_UP_USER",
    "AuthSettingsError",
    "Authenticator",
    "Identity",
    "Impersonation",
    "Unauthorized",
    "query_param",
]

DEFAULT_USER = "demo"
# The shortest service credential taken: as long as an HS256 secret must be.
MIN_SERVICE_TOKEN_BYTES = 32
# The subprotocol the gateway speaks on /ws, and the prefix of one that carries a token.
SUBPROTOCOL = "agui"
TOKEN_SUBPROTOCOL = "bearer."


def query_param(scope: MutableMapping[str, Any], name: str) -> str | None:
    """The first value of a query parameter of a request or connection."""
    values = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def header(scope: MutableMapping[str, Any], name: bytes) -> str | None:
    """The one value of a request header; a repeated header is refused as ambiguous."""
    values = [bytes(v).decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name]
    if len(values) > 1:
        raise Unauthorized(f"Send the {name.decode()} header once.", "invalid_request")
    return values[0] if values else None


def selected_subprotocol(scope: MutableMapping[str, Any]) -> str | None:
    """What /ws answers an offer with: ``agui`` if offered, never a token."""
    return SUBPROTOCOL if SUBPROTOCOL in scope.get("subprotocols", ()) else None


class Authenticator:
    """Finds the identity of a request or connection; refuses with a sentence."""

    def __init__(self, settings: Settings) -> None:
        self.mode = settings.auth
        self.verifier: TokenVerifier | None = None
        if settings.auth == "jwt":
            # PyJWT (and cryptography, 9 MiB together at start-up) only for a gateway that
            # checks tokens; ADK's first run loads cryptography for its OAuth helpers anyway.
            from gateway.auth.tokens import TokenVerifier

            self.verifier = TokenVerifier(settings)
        self.tickets = TicketBook(
            settings.ws_ticket_seconds, settings.ws_tickets_max, leeway=settings.jwt_leeway
        )
        self._warm_up: str | None = secrets.token_urlsafe(32)
        self._service_token = settings.service_token.encode()
        if self._service_token and len(self._service_token) < MIN_SERVICE_TOKEN_BYTES:
            raise AuthSettingsError(
                f"GATEWAY_SERVICE_TOKEN must be at least {MIN_SERVICE_TOKEN_BYTES} bytes; "
                "make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'."
            )

    @property
    def warm_up_credential(self) -> str | None:
        """The warm-up's bearer credential; None once the warm-up is over."""
        return self._warm_up

    def end_warm_up(self) -> None:
        self._warm_up = None

    async def identify(self, scope: MutableMapping[str, Any]) -> Identity:
        """The caller's identity; ``Unauthorized`` (401) or ACCESS_DENIED (403) if refused."""
        bearer = _bearer(header(scope, b"authorization"), strict=self.mode == "jwt")
        if bearer and self._is_warm_up(bearer) and scope["type"] == "websocket":
            return Identity(WARM_UP_USER, via="warm-up")
        identity = await self._credential(scope, bearer)
        if identity is None:
            return self._claimed(scope)
        claimed = _claimed_user(scope)
        if claimed is not None and claimed != identity.user:
            raise Impersonation(identity)
        return identity

    def identify_service(self, scope: MutableMapping[str, Any]) -> Identity:
        """A backend system, proven by the service credential; refused with a sentence."""
        if not self._service_token:
            raise p.GatewayError(
                p.ErrorCode.ACCESS_DENIED,
                "This door is closed: the operator has set no GATEWAY_SERVICE_TOKEN.",
            )
        bearer = _bearer(header(scope, b"authorization"), strict=True)
        if bearer is None:
            raise Unauthorized(
                "Send the service credential as Authorization: Bearer <GATEWAY_SERVICE_TOKEN>.",
                None,
            )
        if not hmac.compare_digest(bearer.encode("latin-1"), self._service_token):
            raise Unauthorized("This is not the service credential; a user's token is not one.")
        return Identity(SERVICE_USER, via="service")

    def _is_warm_up(self, bearer: str) -> bool:
        live = self._warm_up
        return live is not None and hmac.compare_digest(bearer.encode("latin-1"), live.encode())

    async def _credential(
        self, scope: MutableMapping[str, Any], bearer: str | None
    ) -> Identity | None:
        """The identity a credential proves; None in dev mode when none was sent."""
        offered: list[str] = []
        ticket = None
        if scope["type"] == "websocket":
            protocols = scope.get("subprotocols", ())
            offered = [
                s[len(TOKEN_SUBPROTOCOL) :] for s in protocols if s.startswith(TOKEN_SUBPROTOCOL)
            ]
            if offered and SUBPROTOCOL not in protocols:
                raise Unauthorized(
                    f'Offer the subprotocol "{SUBPROTOCOL}" beside "bearer.<token>": the '
                    "server selects it, and browsers fail a handshake without one.",
                    "invalid_request",
                )
            ticket = query_param(scope, "ticket")
        tokens: list[tuple[str, Via]] = [(token, "subprotocol") for token in offered]
        if self.verifier is not None and bearer:
            tokens.append((bearer, "bearer"))
        if len(tokens) + (ticket is not None) > 1:
            raise Unauthorized(
                "Send one credential: a bearer header, a bearer subprotocol or a ticket.",
                "invalid_request",
            )
        if ticket is not None:
            identity = self.tickets.redeem(ticket)
            if identity is None:
                raise Unauthorized(
                    "The ticket is unknown, used or expired; get a new one from POST /ws-ticket."
                )
            return identity
        if self.verifier is None:
            return None
        if not tokens:
            raise Unauthorized(_sign_in(scope), None)
        token, via = tokens[0]
        return await self.verifier.verify(token, via)

    def _claimed(self, scope: MutableMapping[str, Any]) -> Identity:
        """dev mode: the user the client names, as it names them."""
        claimed = _claimed_user(scope)
        source = "?user=" if scope["type"] == "websocket" else "X-Gateway-User or ?user="
        user = checked_user(claimed or DEFAULT_USER, source, "invalid_request")
        return Identity(user, via="dev")


def _bearer(value: str | None, *, strict: bool) -> str | None:
    """The token of an ``Authorization: Bearer`` header; other schemes refused if ``strict``."""
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if strict:
        raise Unauthorized("Send the token as Authorization: Bearer <token>.", "invalid_request")
    return None


def _claimed_user(scope: MutableMapping[str, Any]) -> str | None:
    """The user ``?user=`` or (on HTTP, first) ``X-Gateway-User`` names, if any."""
    claimed = query_param(scope, "user")
    if scope["type"] == "http":
        # HTTP clients name the user in a header; the query is a fallback for plain links.
        claimed = header(scope, b"x-gateway-user") or claimed
    return claimed


def _sign_in(scope: MutableMapping[str, Any]) -> str:
    if scope["type"] == "websocket":
        return (
            "Sign in: send Authorization: Bearer <token>, offer the subprotocols "
            f'"{SUBPROTOCOL}" and "bearer.<token>", or connect with ?ticket= from '
            "POST /ws-ticket."
        )
    return "Sign in: send Authorization: Bearer <token>."
