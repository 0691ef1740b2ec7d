"""The service credential a backend system proves itself with (``POST /tool-results``)."""

from __future__ import annotations

import pytest

from gateway import wire as p
from gateway.auth import SERVICE_USER, Authenticator, AuthSettingsError, Unauthorized
from gateway.config import Settings

pytestmark = pytest.mark.unit

TOKEN = "k" * 32


def scope(authorization: str | None) -> dict[str, object]:
    headers = [(b"authorization", authorization.encode())] if authorization else []
    return {"type": "http", "headers": headers, "path": "/tool-results"}


@pytest.mark.parametrize("mode", ["dev", "jwt"])
def test_the_credential_proves_the_service_in_either_mode(mode: str) -> None:
    settings = Settings(auth=mode, service_token=TOKEN, jwt_secret="j" * 32)
    identity = Authenticator(settings).identify_service(scope(f"Bearer {TOKEN}"))
    assert (identity.user, identity.via) == (SERVICE_USER, "service")


def test_anything_else_is_refused_with_what_to_send() -> None:
    auth = Authenticator(Settings(service_token=TOKEN))
    with pytest.raises(Unauthorized, match="Bearer <GATEWAY_SERVICE_TOKEN>"):
        auth.identify_service(scope(None))
    with pytest.raises(Unauthorized, match="not the service credential"):
        auth.identify_service(scope("Bearer " + "x" * 32))
    with pytest.raises(Unauthorized, match="Authorization: Bearer"):
        auth.identify_service(scope(f"Basic {TOKEN}"))


def test_without_a_credential_set_the_door_is_closed() -> None:
    with pytest.raises(p.GatewayError, match="GATEWAY_SERVICE_TOKEN") as refused:
        Authenticator(Settings()).identify_service(scope(f"Bearer {TOKEN}"))
    assert refused.value.code is p.ErrorCode.ACCESS_DENIED


def test_a_short_credential_stops_start_up() -> None:
    with pytest.raises(AuthSettingsError, match="at least 32 bytes"):
        Authenticator(Settings(service_token="short"))
