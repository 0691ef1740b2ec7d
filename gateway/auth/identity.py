"""Who a caller is once a door has checked, and how a door says no (RFC 6750)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Literal

from gateway import wire as p
from gateway.context import Caller

# How an identity was established; "dev" means only that the client said so.
Via = Literal["dev", "bearer", "subprotocol", "ticket", "warm-up", "service"]

# The start-up warm-up's own user: no client may claim it.
WARM_UP_USER = "__warmup__"
# Who a backend system is, once the service credential proved it (``POST /tool-results``).
SERVICE_USER = "__service__"
# Letters, digits and the separators issuers put in subjects (auth0|…, user@org, a:b).
_USER_ID = re.compile(r"[A-Za-z0-9_.@|:+-]{1,128}")
# What RFC 6750 allows inside a quoted error_description.
_DESCRIPTION_UNSAFE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")

BearerError = Literal["invalid_request", "invalid_token"]


class AuthSettingsError(ValueError):
    """The auth settings cannot work; the message is one sentence saying what to set."""


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
    """A caller: the user id the hub and the store know, their org and roles, the token's
    claims the operator maps (``GATEWAY_JWT_CLAIMS``), and until when the credential holds
    (Unix seconds; None: as long as the connection)."""

    user: str
    org: str | None = None
    roles: frozenset[str] = frozenset()
    via: Via = "dev"
    expires_at: float | None = None
    claims: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def caller(self) -> Caller:
        """What a run's tools and callbacks are told of this identity (``gateway.context``)."""
        return Caller(self.user, self.org, self.roles, self.claims)


class Unauthorized(p.GatewayError):
    """UNAUTHORIZED, with the ``WWW-Authenticate`` challenge the HTTP answer carries.

    ``error`` is None when no credential was sent at all, as RFC 6750 section 3.1 asks.
    """

    def __init__(self, message: str, error: BearerError | None = "invalid_token") -> None:
        super().__init__(p.ErrorCode.UNAUTHORIZED, message)
        self.error = error

    def challenge(self) -> bytes:
        value = 'Bearer realm="agent-gateway"'
        if self.error is not None:
            description = _DESCRIPTION_UNSAFE.sub("'", self.message)
            value += f', error="{self.error}", error_description="{description}"'
        return value.encode("ascii")


class Impersonation(p.GatewayError):
    """ACCESS_DENIED: a credential of one user naming another with ?user= or X-Gateway-User.

    It keeps the caller's identity: the audit says who tried.
    """

    def __init__(self, identity: Identity) -> None:
        super().__init__(
            p.ErrorCode.ACCESS_DENIED,
            "?user= or X-Gateway-User names another user than your credential; "
            "drop it or name yourself.",
        )
        self.identity = identity


def checked_user(user: str, source: str, error: BearerError) -> str:
    """``user`` if it is a user id a client may be; UNAUTHORIZED naming ``source`` if not."""
    if not _USER_ID.fullmatch(user):
        raise Unauthorized(
            f"User ids are 1-128 letters, digits or . _ @ | : + -; check {source}.", error
        )
    if user == WARM_UP_USER:
        raise Unauthorized(f"{WARM_UP_USER!r} is reserved for the gateway itself; check {source}.")
    return user
