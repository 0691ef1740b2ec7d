"""/ws lets a browser in only from the gateway's own host or an allowed origin, so a page on
another site cannot act for the user; clients that send no Origin (not browsers) pass."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from gateway.doors.cors import origin_allowed
from tests.support.agui import AgUiSocket, new_id, outcome, user_input
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

ALLOWED = "https://app.example.com"


@pytest.fixture(scope="module")
async def listed() -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=f"{ALLOWED}, http://localhost:3000") as gateway:
        yield gateway


async def turn(gateway: RunningGateway, origin: str | None) -> None:
    async with connect(gateway.ws_url(), origin=None if origin is None else Origin(origin)) as ws:
        events = await AgUiSocket(ws).run(user_input(new_id("t"), "안녕"))
        assert outcome(events) == {"type": "success"}


@pytest.mark.parametrize("origin", [None, "same-host", ALLOWED, "HTTPS://APP.EXAMPLE.COM"])
async def test_no_origin_the_own_host_or_an_allowed_origin_may_connect(
    listed: RunningGateway, origin: str | None
) -> None:
    await turn(listed, f"http://127.0.0.1:{listed.port}" if origin == "same-host" else origin)


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",  # sandboxed frames and file:// pages
        "http://127.0.0.1:1",  # the same host on another port is another site
        "https://app.example.com.evil.example",
    ],
)
async def test_a_foreign_origin_gets_a_403_instead_of_an_upgrade(
    listed: RunningGateway, origin: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(listed.ws_url(), origin=Origin(origin)):
            pass
    assert refused.value.response.status_code == 403
    event = json.loads(refused.value.response.body)
    assert event["type"] == "RUN_ERROR" and event["code"] == "ACCESS_DENIED"
    assert "GATEWAY_ALLOWED_ORIGINS" in event["message"]
    await asyncio.sleep(0.05)
    # A refusal is the gateway working, not an application error in uvicorn's log.
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        ("http://gw.example", "gw.example:80", "http", True),  # default ports left out or not
        ("https://gw.example:443", "gw.example", "https", True),
        ("https://gw.example", "gw.example:8443", "https", False),
        ("ftp://gw.example", "gw.example", "http", False),
        ("http://gw.example", None, "http", False),
        # The own host is its scheme too: http:// and https:// pages are different sites.
        ("http://gw.example", "gw.example", "https", False),
        ("http://gw.example", "gw.example", "wss", False),
        ("https://gw.example", "gw.example", "http", False),
        ("https://gw.example", "gw.example", "ws", False),
        ("https://gw.example", "gw.example", "wss", True),
        ("http://gw.example", "gw.example", "ws", True),
        ("http://gw.example", "gw.example", None, True),  # ASGI's default: http, or ws
    ],
)
def test_the_own_host_is_its_scheme_host_and_port(
    origin: str, host: str | None, scheme: str | None, allowed: bool
) -> None:
    headers = [(b"origin", origin.encode())]
    if host is not None:
        headers.append((b"host", host.encode()))
    for kind in ("http", "websocket"):
        scope = {"type": kind, "headers": headers, **({"scheme": scheme} if scheme else {})}
        assert origin_allowed(scope, frozenset()) is allowed
