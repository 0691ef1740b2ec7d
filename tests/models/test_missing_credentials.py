"""A provider failure an operator has to fix says so: no credentials (google-genai cannot
build its client), an unknown model name and a quota used up each become a sentence saying
what to fix, and
the half-built client's orphaned close is no traceback in the log; a request's and a model
call's INFO lines show only at DEBUG."""

from __future__ import annotations

import asyncio
import gc
import json
import logging

import google.auth.exceptions
import httpx
import pytest
from google.adk.models.llm_request import LlmRequest
from google.genai import Client, types
from google.genai import errors as genai_errors

from gateway import wire as p
from gateway.models import sdk_noise
from gateway.models.failures import NO_CREDENTIALS, classify
from gateway.models.gemini import GeminiLlm

pytestmark = pytest.mark.unit

WITHOUT_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")


def keyless_client_error(monkeypatch: pytest.MonkeyPatch, **options: object) -> Exception:
    for name in WITHOUT_KEYS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises((ValueError, google.auth.exceptions.DefaultCredentialsError)) as raised:
        Client(**options)  # type: ignore[arg-type]
    return raised.value


@pytest.mark.parametrize("options", [{}, {"vertexai": True}])
def test_no_credentials_says_what_the_operator_has_to_set(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, object]
) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    error = keyless_client_error(monkeypatch, **options)
    failure = classify(error)
    assert failure is not None
    assert (failure.code, failure.sentence) == (p.ErrorCode.AGENT_ERROR, NO_CREDENTIALS)
    assert "GOOGLE_API_KEY" in failure.sentence
    assert failure.detail.startswith("no credentials: ")


def test_no_google_credentials_for_vertex_ai_is_the_same_sentence() -> None:
    failure = classify(google.auth.exceptions.DefaultCredentialsError("no ADC found"))
    assert failure is not None and failure.sentence == NO_CREDENTIALS


def test_a_value_error_of_anything_else_is_not_a_provider_failure() -> None:
    assert classify(ValueError("bad input")) is None


def test_an_unknown_model_name_says_to_check_the_name() -> None:
    body = {
        "error": {"code": 404, "message": "models/gemini-9 is not found", "status": "NOT_FOUND"}
    }
    failure = classify(genai_errors.ClientError(404, body))
    assert failure is not None
    assert "check the model name" in failure.sentence
    assert "models/gemini-9 is not found" in failure.detail


def test_a_quota_used_up_says_so_and_a_rate_limit_does_not() -> None:
    def refusal(message: str) -> str:
        body = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
        failure = classify(genai_errors.ClientError(429, body))
        assert failure is not None and failure.code == p.ErrorCode.RATE_LIMIT_EXCEEDED
        return failure.sentence

    quota = refusal("You exceeded your current quota, please check your plan and billing.")
    assert "quota for the gateway is used up" in quota and "raise the quota" in quota
    assert "quota" not in refusal("Too many requests.")


async def test_the_half_built_clients_orphaned_close_logs_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sdk_noise.install_log_filter()
    caplog.set_level(logging.ERROR, logger="asyncio")
    keyless_client_error(monkeypatch)
    gc.collect()  # its __del__ schedules aclose() on this loop
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()  # the failed task, its exception never retrieved, is logged when collected
    assert not [r for r in caplog.records if "BaseApiClient" in r.getMessage()]


def test_any_other_orphaned_task_is_still_logged() -> None:
    record = logging.LogRecord(
        "asyncio", logging.ERROR, __file__, 1, "Task exception was never retrieved", (), None
    )
    record.exc_info = (AttributeError, AttributeError("x"), None)
    assert sdk_noise.HalfBuiltClientClose().filter(record)


async def test_httpx_logs_a_request_only_when_the_log_is_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sdk_noise.install_log_filter()

    async def requested() -> list[str]:
        caplog.clear()
        answer = httpx.MockTransport(lambda request: httpx.Response(200))
        async with httpx.AsyncClient(transport=answer) as client:
            await client.post("http://127.0.0.1:9/v1/chat/completions")
        return [r.getMessage() for r in caplog.records if r.name == sdk_noise.REQUESTS_LOGGER]

    caplog.set_level(logging.INFO, logger=sdk_noise.REQUESTS_LOGGER)
    assert await requested() == []
    caplog.set_level(logging.DEBUG, logger=sdk_noise.REQUESTS_LOGGER)
    assert any("HTTP Request: POST" in line for line in await requested())
    caplog.set_level(logging.INFO, logger=sdk_noise.REQUESTS_LOGGER)
    caplog.clear()
    logging.getLogger(sdk_noise.REQUESTS_LOGGER).warning("retrying")
    assert [r.getMessage() for r in caplog.records] == ["retrying"]  # warnings are said
    # An INFO line that comes another way than ``info`` meets the filter.
    logging.getLogger(sdk_noise.REQUESTS_LOGGER).log(logging.INFO, "a request")
    assert [r.getMessage() for r in caplog.records] == ["retrying"]


def test_a_request_line_not_said_is_never_made(caplog: pytest.LogCaptureFixture) -> None:
    """The line of each request is kept from being made at all, not dropped once made: a
    record costs its caller's frame found and its fields read, on the way to the first
    token (docs/performance.md, session 51)."""
    sdk_noise.install_log_filter()
    sdk_noise.install_log_filter()  # once is enough, twice changes nothing
    made: list[str] = []
    factory = logging.getLogRecordFactory()

    def counted(*args: object, **kwargs: object) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        made.append(record.name)
        return record

    logging.setLogRecordFactory(counted)
    try:
        for name in (sdk_noise.REQUESTS_LOGGER, sdk_noise.MODEL_CALLS_LOGGER):
            caplog.set_level(logging.INFO, logger=name)
            logging.getLogger(name).info("a request")
            assert made == []
            caplog.set_level(logging.DEBUG, logger=name)
            logging.getLogger(name).info("a request")
            assert made == [name]
            made.clear()
            # Said, it is the INFO line it was, naming its caller.
            record = caplog.records[-1]
            assert (
                record.levelno == logging.INFO
                and record.funcName == "test_a_request_line_not_said_is_never_made"
            )
        # Their level checks are the logging module's own (ADK asks one at every chunk).
        assert not any(
            "isEnabledFor" in vars(logging.getLogger(n))
            for n in (sdk_noise.REQUESTS_LOGGER, sdk_noise.MODEL_CALLS_LOGGER)
        )
        # Another logger's INFO lines are its own business.
        caplog.set_level(logging.INFO, logger="httpcore")
        logging.getLogger("httpcore").info("a connection")
        assert made == ["httpcore"]
    finally:
        logging.setLogRecordFactory(factory)


async def test_adks_gemini_logs_a_model_call_only_when_the_log_is_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sdk_noise.install_log_filter()
    sse = {"content-type": "text/event-stream"}
    frame = {"candidates": [{"content": {"role": "model", "parts": [{"text": "네"}]}}]}
    reply = f"data: {json.dumps(frame)}\r\n\r\n".encode()
    answer = httpx.MockTransport(lambda request: httpx.Response(200, headers=sse, content=reply))
    options = {"async_client_args": {"transport": answer}}
    model = GeminiLlm(
        model="gemini-2.5-flash", client_kwargs={"api_key": "gk", "http_options": options}
    )
    asked = LlmRequest(
        model="gemini-2.5-flash",
        contents=[types.Content(role="user", parts=[types.Part(text="네")])],
    )

    async def called() -> list[str]:
        caplog.clear()
        _ = [r async for r in model.generate_content_async(asked, stream=True)]
        return [r.getMessage() for r in caplog.records if r.name == sdk_noise.MODEL_CALLS_LOGGER]

    caplog.set_level(logging.INFO, logger=sdk_noise.MODEL_CALLS_LOGGER)
    assert await called() == []
    caplog.set_level(logging.DEBUG, logger=sdk_noise.MODEL_CALLS_LOGGER)
    assert any("Sending out request" in line for line in await called())
