"""CORS on the HTTP doors: a page on an allowed origin may call them from the browser, a
page on any other origin gets 403 and no CORS header, as /ws refuses its upgrade."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from gateway.doors.app import DOORS
from tests.support.agui import new_id, outcome, sse_events, user_input
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

ALLOWED = "https://app.example.com"
FOREIGN = "https://evil.example"


@pytest.fixture(scope="module")
async def listed() -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=f"{ALLOWED}, http://localhost:3000") as gateway:
        yield gateway


async def preflight(
    gateway: RunningGateway, path: str, origin: str, method: str, headers: str = ""
) -> httpx.Response:
    asked = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        asked["Access-Control-Request-Headers"] = headers
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.options(gateway.http + path, headers=asked)


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


async def test_an_allowed_origins_preflight_for_invocations_is_answered(
    listed: RunningGateway,
) -> None:
    # What @ag-ui/client's HttpAgent sends, with a bearer token and a header nobody allows.
    response = await preflight(
        listed, "/invocations", ALLOWED, "POST", "content-type, Authorization, accept, x-evil"
    )
    assert response.status_code == 204 and response.content == b""
    assert cors_headers(response) == {
        "access-control-allow-origin": ALLOWED,
        "access-control-allow-methods": "GET, POST",
        "access-control-allow-headers": "accept, authorization, content-type",
        "access-control-max-age": "600",
    }
    assert response.headers["vary"] == "origin"


@pytest.mark.parametrize("path", sorted(DOORS))
async def test_every_http_door_answers_a_preflight_with_its_method(
    listed: RunningGateway, path: str
) -> None:
    response = await preflight(listed, path, "http://localhost:3000", DOORS[path])
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert response.headers["access-control-allow-methods"] == DOORS[path]
    assert "access-control-allow-headers" not in response.headers  # none were asked for


async def test_an_allowed_origins_run_streams_with_its_origin_echoed(
    listed: RunningGateway,
) -> None:
    async with httpx.AsyncClient(timeout=20) as client:
        response = await client.post(
            listed.http + "/invocations",
            content=json.dumps(user_input(new_id("t"), "안녕")).encode(),
            headers={"Origin": ALLOWED, "Content-Type": "application/json"},
        )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert response.headers["vary"] == "origin"
    assert "access-control-allow-credentials" not in response.headers
    events = sse_events(response.content)
    assert outcome(events) == {"type": "success"}


async def test_a_401_lets_the_page_read_its_challenge(listed: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(
            listed.http + "/me", headers={"Origin": ALLOWED, "X-Gateway-User": "no way"}
        )
    assert response.status_code == 401 and response.headers["www-authenticate"]
    assert response.headers["access-control-allow-origin"] == ALLOWED
    exposed = response.headers["access-control-expose-headers"].split(", ")
    assert "www-authenticate" in exposed


@pytest.mark.parametrize("origin", [FOREIGN, "null", "https://app.example.com.evil.example"])
async def test_a_foreign_origins_preflight_is_refused_without_cors_headers(
    listed: RunningGateway, origin: str
) -> None:
    response = await preflight(listed, "/invocations", origin, "POST", "content-type")
    assert response.status_code == 403 and not cors_headers(response)
    event = response.json()
    assert event["type"] == "RUN_ERROR" and event["code"] == "ACCESS_DENIED"
    assert "GATEWAY_ALLOWED_ORIGINS" in event["message"]


async def test_a_foreign_origins_request_is_refused_before_it_acts(listed: RunningGateway) -> None:
    thread = new_id("t")
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(
            listed.http + "/invocations",
            content=json.dumps(user_input(thread, "안녕")).encode(),
            headers={"Origin": FOREIGN, "Content-Type": "application/json"},
        )
        assert response.status_code == 403 and not cors_headers(response)
        assert response.json()["code"] == "ACCESS_DENIED"
        # Nothing ran: the thread was never made.
        history = await client.get(
            listed.http + "/history", params={"threadId": thread, "before": "1"}
        )
    assert history.status_code == 400 and "no thread" in history.json()["message"]


async def test_the_gateways_own_origin_and_non_browsers_need_no_listing() -> None:
    async with running_gateway() as gateway, httpx.AsyncClient(timeout=10) as client:
        own = await client.get(gateway.http + "/ping", headers={"Origin": gateway.http})
        plain = await client.get(gateway.http + "/ping")
        other = await client.get(gateway.http + "/ping", headers={"Origin": ALLOWED})
    assert own.status_code == 200 and plain.status_code == 200
    assert "access-control-allow-origin" not in plain.headers
    assert plain.headers["vary"] == "origin"  # a cache must not hand it to a page elsewhere
    assert other.status_code == 403


async def test_a_wrong_method_on_a_door_says_which_it_takes(listed: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.delete(listed.http + "/invocations")
    assert response.status_code == 405 and response.headers["allow"] == "GET, POST"
