"""A provider failure a user will meet is a coded RUN_ERROR with a sentence, and one log line.

Each failure is what the local provider (``tests.support.providers``) does the way the real one
does it, under each provider's SDK: the connection refused, a 401, a 429 with retry-after,
a 500 before the stream and one in the middle of it, a chunk that is not JSON, a stream
that stalls. No error id and no traceback for any of them (those are for the unexpected),
and the thread's next turn works.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import pytest
from google.genai import errors as genai_errors

from gateway.models import endpoints
from gateway.models.failures import classify, retry_after
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.budgets import scaled
from tests.support.counting import counting
from tests.support.providers import Fault, Provider
from tests.support.providers.agents import navigator_on
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

# Long enough to be cut mid-stream.
LONG_REPLY = "자기소개를 길게 해 주세요"
STALL_SECONDS = 0.5


def warnings_and_worse(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("fault", "code", "sentence", "mid_stream"),
    [
        (Fault.UNAUTHORIZED, "AGENT_ERROR", "refused the gateway's credentials", False),
        (Fault.RATE_LIMITED, "RATE_LIMIT_EXCEEDED", "try again in 7 s", False),
        (Fault.SERVER_ERROR, "AGENT_ERROR", "The model provider failed (HTTP 500)", False),
        (Fault.FAILS_MID_STREAM, "AGENT_ERROR", "The model provider failed", True),
        (Fault.MALFORMED_CHUNK, "AGENT_ERROR", "could not read", True),
        (Fault.STALLS, "AGENT_ERROR", "The model sent nothing for 0.5 s", True),
    ],
    ids=["401", "429", "500", "500-mid-stream", "malformed-chunk", "stall"],
)
async def test_a_provider_failure_is_one_coded_error_and_one_log_line(
    provider: Provider,
    caplog: pytest.LogCaptureFixture,
    fault: Fault,
    code: str,
    sentence: str,
    mid_stream: bool,
) -> None:
    caplog.set_level(logging.INFO)
    async with (
        running_gateway(agent=navigator_on(provider), model_timeout=STALL_SECONDS) as gateway,
        gateway.socket() as ws,
    ):
        thread = new_id("t")
        caplog.clear()
        provider.fail_next(fault)
        started = time.perf_counter()
        events = await ws.run(user_input(thread, LONG_REPLY))
        elapsed = time.perf_counter() - started
        error = events[-1]
        assert error["type"] == "RUN_ERROR" and error["code"] == code, error
        assert sentence in error["message"] and "error id" not in error["message"]
        streamed = {"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"}
        assert any(e["type"] in streamed for e in events) is mid_stream
        [line] = warnings_and_worse(caplog)
        assert line.exc_info is None and line.name == "gateway.hub.driving"
        assert thread in line.getMessage() and provider.model_name in line.getMessage()
        if fault is Fault.STALLS:
            assert STALL_SECONDS <= elapsed < STALL_SECONDS + scaled(1.5)
            assert provider.abandoned == 1, "the stalled stream was closed"
        after = await ws.run(user_input(thread, "안녕"))
        assert outcome(after) == {"type": "success"} and text_of(after).startswith("안녕하세요")


async def test_a_model_that_cannot_be_reached_is_one_line_and_the_thread_goes_on(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_gateway(agent=navigator_on(provider)) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await provider.stop()
        caplog.clear()
        [run_started, error] = await ws.run(user_input(thread, "안녕"))
        assert run_started["type"] == "RUN_STARTED"
        assert error["code"] == "AGENT_ERROR"
        assert error["message"] == "The model cannot be reached right now; try again in a moment."
        [line] = warnings_and_worse(caplog)
        # httpx says ConnectError; aiohttp, which google-genai takes when it is installed,
        # ClientConnectorError.
        assert re.search("Connect(or)?Error", line.getMessage()) and line.exc_info is None
        await provider.start()
        after = await ws.run(user_input(thread, "안녕"))
        assert outcome(after) == {"type": "success"}


@pytest.mark.parametrize(
    ("headers", "body", "seconds"),
    [
        ({"retry-after-ms": "2500"}, None, 2.5),
        ({"retry-after": "12"}, None, 12.0),
        ({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"}, None, None),
        ({}, {"error": {"details": [{"retryDelay": "31s"}]}}, 31.0),
        ({"retry-after": "soon"}, None, None),
    ],
)
def test_retry_after_is_read_as_each_provider_says_it(
    headers: dict[str, str], body: Any, seconds: float | None
) -> None:
    class Response:
        def __init__(self) -> None:
            self.headers = headers

    error = genai_errors.ClientError(429, body or {"error": {"code": 429}}, None)
    error.response = Response()  # type: ignore[assignment]
    found = retry_after(error)
    if headers.get("retry-after", "").startswith("Wed"):
        assert found is not None and found > 365 * 24 * 3600
    else:
        assert found == seconds


def test_an_error_no_provider_raises_is_not_a_provider_failure() -> None:
    assert classify(KeyError("x")) is None
    assert classify(ConnectionError("a model of one's own")) is None


async def test_a_model_is_described_for_the_log_only_when_its_call_stalls(
    provider: Provider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The description a stall's log line names the model by reads its client: a call
    that goes on never makes it, on its way to its request (docs/performance.md,
    session 51); a stall still says which model and where."""
    async with (
        running_gateway(agent=navigator_on(provider), model_timeout=STALL_SECONDS) as gateway,
        gateway.socket() as ws,
    ):
        described = counting(monkeypatch, endpoints, "describe")  # its start's are its own
        thread = new_id("t")
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
        assert described == []
        caplog.clear()
        provider.fail_next(Fault.STALLS)
        await ws.run(user_input(thread, LONG_REPLY))
        assert len(described) == 1
        [line] = warnings_and_worse(caplog)
    assert f"{provider.model_name} at http://" in line.getMessage()


async def test_a_model_timeout_of_0_stops_nothing(provider: Provider) -> None:
    provider.pace = 0.02
    async with (
        running_gateway(agent=navigator_on(provider), model_timeout=0) as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(user_input(new_id("t"), "안녕"))
    assert outcome(events) == {"type": "success"}
