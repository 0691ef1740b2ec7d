"""An ``openai/<model>``'s requests go out as the SDK's ``create`` would send them, without
the SDK's walk over them: the same bytes and headers, the same answer, the same errors."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable
from typing import Annotated, Any

import httpx
import openai
import pydantic
import pytest
from google.adk.integrations.openai import OpenAILlm
from google.adk.models.llm_request import LlmRequest
from google.genai import types
from openai import AsyncOpenAI
from openai._utils import PropertyInfo
from openai._utils._json import openapi_dumps
from typing_extensions import TypedDict

from gateway.models import chat_completions, names
from gateway.models.chat_completions import ChatCompletionsClient, sent_as_is
from gateway.models.failures import classify
from tests.support.counting import counting
from tests.support.llm_requests import FIND_SCREEN, call_and_result, image

pytestmark = pytest.mark.unit

CHUNKS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
    {"choices": [{"index": 0, "delta": {"content": "이동했습니다"}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}},
]
COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "이동했습니다"},
            "finish_reason": "stop",
        }
    ],
}


def answer(request: httpx.Request) -> httpx.Response:
    if not json.loads(request.content).get("stream"):
        return httpx.Response(200, json=COMPLETION)
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    lines = [f"data: {json.dumps(head | chunk)}\n\n" for chunk in CHUNKS] + ["data: [DONE]\n\n"]
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def streaming(chunks: list[dict[str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    def reply(request: httpx.Request) -> httpx.Response:
        head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        lines = [f"data: {json.dumps(head | chunk)}\n\n" for chunk in chunks]
        body = "".join([*lines, "data: [DONE]\n\n"]).encode()
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return reply


def client_of(
    kind: type[AsyncOpenAI], sent: list[httpx.Request], reply: Callable[..., httpx.Response]
) -> AsyncOpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return reply(request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return kind(api_key="sk-test", base_url="http://provider/v1", max_retries=0, http_client=http)


def conversation() -> LlmRequest:
    """Every kind of value ADK's OpenAILlm puts in a request: instructions, text, an image,
    a call and its result, tools, a forced tool choice, a JSON schema, sampling, stops."""
    call, result = call_and_result()
    picture = image()
    find = FIND_SCREEN
    schema = {"title": "Reply", "type": "object", "properties": {"text": {"type": "string"}}}
    return LlmRequest(
        contents=[
            types.Content(role="user", parts=[types.Part(text="화면 열어줘"), picture]),
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="user", parts=[types.Part(function_response=result)]),
        ],
        config=types.GenerateContentConfig(
            system_instruction="You open screens.",
            tools=[types.Tool(function_declarations=[find])],
            tool_config=types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(mode="ANY")
            ),
            response_schema=schema,
            temperature=0.2,
            top_p=0.9,
            stop_sequences=["END"],
            max_output_tokens=512,
        ),
    )


async def called(kind: type[AsyncOpenAI], *, stream: bool) -> tuple[httpx.Request, str]:
    """The request ADK's OpenAILlm sends through a client of ``kind``, and the text it read."""
    sent: list[httpx.Request] = []
    model = OpenAILlm(model="local-model", client=client_of(kind, sent, answer))
    responses = [r async for r in model.generate_content_async(conversation(), stream=stream)]
    final = responses[-1]
    assert final.content is not None and final.content.parts
    (request,) = sent
    return request, final.content.parts[0].text or ""


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_adks_request_goes_out_as_the_sdks_create_sends_it(stream: bool) -> None:
    ours, our_text = await called(ChatCompletionsClient, stream=stream)
    theirs, their_text = await called(AsyncOpenAI, stream=stream)
    assert (ours.method, ours.url) == (theirs.method, theirs.url)
    # The same JSON (the SDK's create orders its keys its own way).
    assert json.loads(ours.content) == json.loads(theirs.content)
    assert dict(ours.headers) == dict(theirs.headers)
    assert ours.headers["authorization"] == "Bearer sk-test"
    assert our_text == their_text == "이동했습니다"


async def test_a_chat_completion_skips_the_sdks_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway's ``openai/<model>`` never asks the SDK to walk its parameters again."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    built = names.build("openai/local-model")
    assert isinstance(built, OpenAILlm)
    client = built._openai_client
    assert isinstance(client, ChatCompletionsClient)

    async def walked(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the SDK walked a chat completion's parameters")

    monkeypatch.setattr(
        "openai.resources.chat.completions.completions.async_maybe_transform", walked
    )
    sent: list[httpx.Request] = []
    model = OpenAILlm(model="local-model", client=client_of(type(client), sent, answer))
    responses = [r async for r in model.generate_content_async(conversation(), stream=True)]
    assert responses[-1].content is not None and len(sent) == 1


async def test_the_body_is_the_sdks_bytes_encoded_by_msgspec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the SDK's ``openapi_dumps`` would write, byte for byte, without its ``json``."""
    dumped = counting(monkeypatch, openai._base_client, "openapi_dumps")
    bodies = counting(monkeypatch, chat_completions, "encoded")
    sent: list[httpx.Request] = []
    model = OpenAILlm(model="local-model", client=client_of(ChatCompletionsClient, sent, answer))
    _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
    (request,), (call,) = sent, bodies
    assert request.content == openapi_dumps(call.args[0])
    assert "화면 열어줘" in request.content.decode()  # as UTF-8, as the SDK writes it
    assert dumped == []


async def test_the_encoded_body_goes_without_the_sdks_warning() -> None:
    """Bytes go as the request's content, the SDK's way to send them: the SDK warns of bytes
    given as a body at every request (a warning made and filtered on the way to the first
    byte, ~20-40 µs in a running gateway), and sends the same request either way."""
    sent: list[httpx.Request] = []
    model = OpenAILlm(model="local-model", client=client_of(ChatCompletionsClient, sent, answer))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
    assert [str(w.message) for w in warned] == []
    (request,) = sent
    assert request.headers["content-type"] == "application/json"
    assert request.headers["content-length"] == str(len(request.content))


class Shown(pydantic.BaseModel):
    id: int


@pytest.mark.parametrize(
    "parameters",
    [
        {"model": "m", "temperature": float("nan")},  # the SDK refuses it; msgspec: null
        {"model": "m", "metadata": {"card": Shown(id=3)}},  # only the SDK's encoder knows it
    ],
    ids=["not finite", "an object"],
)
def test_what_msgspec_cannot_say_the_same_is_the_sdks_to_encode(
    parameters: dict[str, Any],
) -> None:
    assert chat_completions.encoded(parameters) is parameters


def delta(choice: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": choice, "finish_reason": finish}]}


# Text, two calls whose arguments come in pieces, interleaved, a vendor's own field, a
# finish reason no OpenAI model sends, and the usage with its details.
RICH = [
    delta({"role": "assistant", "content": "화면을 "})
    | {"system_fingerprint": "fp", "x_vendor": 1},
    delta({"content": "찾았습니다"}),
    delta({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "find", "arguments": ""}}]}),
    delta(
        {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "open", "arguments": "{"}}]}
    ),
    delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": "업무"}'}}]}),
    delta({"tool_calls": [{"index": 1, "function": {"arguments": '"id": 3}'}}]}),
    delta({}, finish="eos"),
    {
        "choices": [],
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": 4,
            "total_tokens": 13,
            "prompt_tokens_details": {"cached_tokens": 2},
            "completion_tokens_details": {"reasoning_tokens": 1},
        },
    },
]


async def responses_through(kind: type[AsyncOpenAI], chunks: list[dict[str, Any]]) -> list[Any]:
    model = OpenAILlm(model="local-model", client=client_of(kind, [], streaming(chunks)))
    return [r.model_dump() async for r in model.generate_content_async(conversation(), stream=True)]


async def test_a_stream_reads_as_the_sdks_own_reading_of_it() -> None:
    ours = await responses_through(ChatCompletionsClient, RICH)
    assert ours == await responses_through(AsyncOpenAI, RICH)
    final = ours[-1]
    assert [p["function_call"]["args"] for p in final["content"]["parts"][1:]] == [
        {"q": "업무"},
        {"id": 3},
    ]
    assert final["usage_metadata"]["cached_content_token_count"] == 2


async def test_chunks_are_built_by_pydantics_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's own construct (~15x slower) builds only what the validator refuses."""
    constructed = counting(monkeypatch, chat_completions, "construct_type")
    await responses_through(ChatCompletionsClient, RICH)
    # The one chunk with a finish reason outside OpenAI's list.
    assert [call.kwargs["value"] for call in constructed] == [
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        | delta({}, finish="eos")
    ]


async def test_anything_else_goes_the_sdks_own_way(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=chat_completions.__name__)
    sent: list[httpx.Request] = []
    client = client_of(ChatCompletionsClient, sent, answer)
    completion = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"x-trace": "1"}
    )
    assert completion.choices[0].message.content == "이동했습니다"
    assert sent[0].headers["x-trace"] == "1"
    assert "with extra_headers goes the SDK's own way" in caplog.text


class Card(TypedDict, total=False):
    card_id: Annotated[str, PropertyInfo(alias="cardID")]


class Parameters(TypedDict, total=False):
    plain: str
    cards: list[Card]
    when: Annotated[str, PropertyInfo(format="iso8601")]


def test_the_sdks_types_are_read_when_the_client_is_built() -> None:
    """Not when a person's first request is on its way."""
    sent_as_is.cache_clear()
    ChatCompletionsClient(api_key="sk-test", base_url="http://provider/v1")
    assert sent_as_is.cache_info().currsize == 1


def test_a_parameter_the_sdk_would_rename_or_format_is_not_sent_as_is() -> None:
    assert sent_as_is(Parameters) == {"plain"}
    # Chat completions have neither today: every parameter ADK sends goes as it is.
    assert {"messages", "tools", "tool_choice", "response_format", "stream_options"} <= (
        sent_as_is()
    )


@pytest.mark.parametrize(
    ("status", "error"),
    [(401, openai.AuthenticationError), (429, openai.RateLimitError), (500, openai.APIError)],
)
async def test_a_providers_refusal_is_the_sdks_error(status: int, error: type[Exception]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        body = {"error": {"message": "no", "type": "refused"}}
        return httpx.Response(status, json=body, headers={"retry-after": "7"})

    for kind in (ChatCompletionsClient, AsyncOpenAI):
        model = OpenAILlm(model="local-model", client=client_of(kind, [], refuse))
        with pytest.raises(error) as raised:
            _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
        failure = classify(raised.value)
        assert failure is not None and "no (refused)" in failure.detail


async def test_a_requests_url_is_joined_once_while_the_base_url_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    joined = counting(monkeypatch, AsyncOpenAI, "_prepare_url")
    sent: list[httpx.Request] = []
    client = client_of(ChatCompletionsClient, sent, answer)
    model = OpenAILlm(model="local-model", client=client)
    for _ in range(3):
        _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
    assert len(joined) == 1
    client.base_url = "http://elsewhere/v2"  # type: ignore[assignment]
    _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
    assert len(joined) == 2
    here, elsewhere = "http://provider/v1/chat/completions", "http://elsewhere/v2/chat/completions"
    assert [str(request.url) for request in sent] == [here, here, here, elsewhere]
