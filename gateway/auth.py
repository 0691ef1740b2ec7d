"""Who is asking. ``dev`` mode trusts ``?user=`` on /ws and ``X-Gateway-User`` on HTTP
(``?user=`` there too, for plain links)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import MutableMapping
from typing import Any

from gateway import protocol as p
from gateway.config import Settings

DEFAULT_USER = "demo"
_USER_ID = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


def query_param(scope: MutableMapping[str, Any], name: str) -> str | None:
    """The first value of a query parameter of a request or connection."""
    values = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def identify(settings: Settings, scope: MutableMapping[str, Any]) -> str:
    """The user id of a connection or request, or UNAUTHORIZED."""
    claimed = query_param(scope, "user")
    if scope["type"] == "http":
        # HTTP clients name the user in a header; the query is a fallback for plain links.
        claimed = next(
            (
                bytes(value).decode("latin-1")
                for key, value in scope.get("headers", ())
                if key.lower() == b"x-gateway-user"
            ),
            claimed,
        )
    user = claimed or DEFAULT_USER
    if not _USER_ID.fullmatch(user):
        raise p.GatewayError(
            p.ErrorCode.UNAUTHORIZED,
            "User ids are 1-64 letters, digits or . _ @ -; check ?user= or X-Gateway-User.",
        )
    return user
