"""POST /invocations refuses bodies it will not run with an answer the client can read:
too large (413), too slow (408), not JSON (415), each a RUN_ERROR VALIDATION_ERROR."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.agui import new_id, outcome, user_input
from tests.support.raw import RawClient, Response, request
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
async def small() -> AsyncIterator[RunningGateway]:
    """A gateway whose body limit is the default and whose body timeout is short."""
    async with running_gateway(body_timeout=1.0) as gateway:
        yield gateway


def oversized(size: int) -> bytes:
    return b'{"threadId": "' + b"x" * size + b'"}'


def refused(answer: Response, status: int, says: str) -> None:
    assert answer.status == status
    assert answer.headers["content-type"] == "text/event-stream"
    [event] = answer.events()
    assert event["type"] == "RUN_ERROR" and event["code"] == "VALIDATION_ERROR"
    assert says in event["message"]


@pytest.mark.parametrize("size", [2_000_000, 20_000_000])
async def test_an_oversized_body_gets_a_readable_413_even_when_the_client_closes(
    small: RunningGateway, size: int
) -> None:
    # "Connection: close" is what made the server reset the connection before the answer.
    client = await RawClient.open(small.port)
    await client.send(
        request("POST", "/invocations", {**JSON, "Connection": "close"}, oversized(size))
    )
    refused(await client.response(), 413, "GATEWAY_MAX_FRAME_BYTES")
    client.close()


@pytest.mark.parametrize("size", [2_000_000, 20_000_000])
async def test_after_an_oversized_body_the_connection_serves_the_next_request(
    small: RunningGateway, size: int
) -> None:
    client = await RawClient.open(small.port)
    await client.send(request("POST", "/invocations", JSON, oversized(size)))
    answer = await client.response()
    refused(answer, 413, "larger than 1048576 bytes")
    assert answer.headers.get("connection") != "close"
    await client.send(request("GET", "/ping"))
    assert (await client.response()).status == 200
    client.close()


async def test_an_oversized_chunked_body_gets_a_413(small: RunningGateway) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(40):
            yield b"x" * 65536

    async with httpx.AsyncClient(timeout=20) as client:
        response = await client.post(small.http + "/invocations", content=chunks(), headers=JSON)
    assert response.status_code == 413
    assert b'"code":"VALIDATION_ERROR"' in response.content


async def test_a_client_waiting_for_100_continue_is_answered_before_it_sends_the_body(
    small: RunningGateway,
) -> None:
    client = await RawClient.open(small.port)
    headers = {**JSON, "Content-Length": "20000000", "Expect": "100-continue"}
    await client.send(request("POST", "/invocations", headers))
    answer = await client.response()
    refused(answer, 413, "GATEWAY_MAX_FRAME_BYTES")
    assert answer.headers["connection"] == "close"
    assert await client.closed_after(2) < 2


async def test_a_body_that_trickles_in_gets_a_408_when_its_time_is_up(
    small: RunningGateway,
) -> None:
    client = await RawClient.open(small.port)
    body = json.dumps(user_input(new_id("t"), "안녕")).encode()
    await client.send(request("POST", "/invocations", {**JSON, "Content-Length": "9999"}))
    for byte in body[:5]:
        await client.send(bytes([byte]))
        await asyncio.sleep(0.1)
    answer = await client.response(timeout=3)
    refused(answer, 408, "GATEWAY_BODY_TIMEOUT")
    assert answer.headers["connection"] == "close"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",  # what an HTML form can send across sites without a preflight
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/jsonx",
        None,
    ],
)
async def test_only_json_bodies_start_a_run(
    gateway: RunningGateway, content_type: str | None
) -> None:
    thread = new_id("t")
    headers = {} if content_type is None else {"Content-Type": content_type}
    client = await RawClient.open(gateway.port)
    await client.send(
        request("POST", "/invocations", headers, json.dumps(user_input(thread, "안녕")).encode())
    )
    refused(await client.response(), 415, "Content-Type: application/json")
    client.close()
    assert gateway.app.hub is not None and thread not in gateway.app.hub.threads


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON; charset=UTF-8", "application/json;"]
)
async def test_json_with_or_without_a_utf8_charset_runs(
    gateway: RunningGateway, content_type: str
) -> None:
    client = await RawClient.open(gateway.port)
    body = json.dumps(user_input(new_id("t"), "안녕")).encode()
    await client.send(request("POST", "/invocations", {"Content-Type": content_type}, body))
    answer = await client.response()
    assert answer.status == 200
    assert outcome(answer.events()) == {"type": "success"}
    client.close()
