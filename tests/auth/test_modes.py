"""The auth modes at start-up: dev says it trusts the client, jwt refuses to start without
a key, and the warm-up works in both without leaving a door open."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gateway.__main__ import main
from gateway.auth import WARM_UP_USER
from gateway.config import Settings
from gateway.doors import warmup
from gateway.examples.navigator.agent import APP_NAME
from gateway.hub.hub import Hub
from tests.support import ROOT
from tests.support.auth import JWT, bearer
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server


async def test_dev_mode_says_in_one_line_at_start_that_it_trusts_the_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.doors.app"):
        async with running_gateway() as gateway:
            port = gateway.port
    [line] = [r.getMessage() for r in caplog.records if "trusts the client" in r.getMessage()]
    assert f"127.0.0.1:{port}" in line and "GATEWAY_AUTH=jwt" in line and "\n" not in line


async def test_jwt_mode_does_not_say_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.doors.app"):
        async with running_gateway(**JWT):
            pass
    assert not [r for r in caplog.records if "trusts the client" in r.getMessage()]


def test_jwt_mode_without_a_key_does_not_start(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--auth", "jwt", "--db", ":memory:"])
    assert str(stopped.value) == (
        "agent-gateway: GATEWAY_AUTH=jwt needs a key to check tokens with: set "
        "GATEWAY_JWT_SECRET, GATEWAY_JWT_PUBLIC_KEY, GATEWAY_JWT_JWKS_URL or "
        "GATEWAY_JWT_JWKS_FILE."
    )


async def test_no_client_may_claim_the_warm_up_user_in_dev_mode() -> None:
    async with running_gateway(warm_up_runs=3) as gateway:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://127.0.0.1:{gateway.port}/ws?user={WARM_UP_USER}"):
                pass
        assert refused.value.response.status_code == 401
        async with httpx.AsyncClient() as client:
            me = await client.get(gateway.http + "/me", headers={"X-Gateway-User": WARM_UP_USER})
        assert me.status_code == 401 and "reserved" in me.json()["message"]


@pytest.mark.parametrize("mode", ["dev", "jwt"])
async def test_the_warm_up_signs_in_with_a_credential_that_dies_with_it(
    mode: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    credentials: list[str] = []
    real_warm_up = warmup.warm_up

    async def warm_up(hub: Hub, settings: Settings, credential: str) -> float:
        credentials.append(credential)
        return await real_warm_up(hub, settings, credential)

    monkeypatch.setattr(warmup, "warm_up", warm_up)
    settings: dict[str, Any] = JWT if mode == "jwt" else {}
    with caplog.at_level(logging.INFO, logger="gateway.doors.app"):
        async with running_gateway(**settings, warm_up_runs=3) as gateway:
            assert gateway.app.auth.warm_up_credential is None
            # After the warm-up its credential makes nobody the warm-up user.
            scope = {
                "type": "websocket",
                "headers": [(b"authorization", f"Bearer {credentials[0]}".encode())],
            }
            if mode == "dev":
                assert (await gateway.app.auth.identify(scope)).user == "demo"
            else:
                with pytest.raises(InvalidStatus) as refused:
                    url = f"ws://127.0.0.1:{gateway.port}/ws"
                    async with connect(url, additional_headers=bearer(credentials[0])):
                        pass
                assert refused.value.response.status_code == 401
            assert gateway.app.hub is not None
            sessions = gateway.app.hub.engine.sessions
            listed = await sessions.list_sessions(app_name=APP_NAME, user_id=WARM_UP_USER)
            assert listed.sessions == []
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("warmed up in") for m in messages), messages
    assert not any("warm-up skipped" in m for m in messages)


@pytest.mark.process
def test_a_gateway_that_checks_no_tokens_never_loads_pyjwt() -> None:
    """PyJWT and cryptography are 9 MiB of a start-up: only jwt mode needs them there."""
    probe = (
        "import sys; from gateway.api import create_app; from gateway.config import Settings; "
        "create_app(None, Settings(), environ=False); "
        "loaded = {'jwt', 'cryptography'} & set(sys.modules); "
        "assert not loaded, loaded"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
