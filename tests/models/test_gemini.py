"""A Gemini model's streamed requests go out as google-genai would send them, without its
copies and walks over pydantic models, and its chunks read into the same ``LlmResponse``s:
the same bytes and headers, the same reading, the same errors."""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pydantic
import pytest
from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.genai import errors, types

from gateway.models import gemini, names
from gateway.models.failures import classify
from gateway.models.gemini import GeminiLlm, LeanModels
from tests.support.llm_requests import FIND_SCREEN, call_and_result, image

pytestmark = pytest.mark.unit

SIGNATURE = b"\x00signed\xff"


def frame(candidates: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"candidates": candidates, "modelVersion": "gemini-2.5-flash", "responseId": "r"} | more


def said(parts: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": parts}, "index": 0} | more


USAGE = {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 14}
# Thoughts, text, a call signed with the model's thought signature, a citation (which the
# SDK renames on the way in), grounding, usage with its details, a finish reason, and a
# field this SDK does not know.
RICH = [
    frame([said([{"text": "**Choosing**", "thought": True}])]),
    frame([said([{"text": "화면을 "}])], usageMetadata=USAGE),
    frame(
        [
            said(
                [{"text": "찾았습니다"}],
                citationMetadata={"citationSources": [{"startIndex": 0, "uri": "https://a"}]},
            )
        ]
    ),
    frame(
        [
            said(
                [
                    {
                        "functionCall": {"name": "find_screen", "args": {"query": "업무"}},
                        "thoughtSignature": base64.b64encode(SIGNATURE).decode(),
                    }
                ],
                groundingMetadata={"webSearchQueries": ["업무 요청"]},
                finishReason="STOP",
                avgLogprobs=-0.5,
            )
        ],
        usageMetadata=USAGE
        | {"thoughtsTokenCount": 2, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}]},
    ),
    frame([said([{"text": ""}])], usageMetadata=USAGE | {"xVendorTokens": 1}),
]


def streaming(frames: list[dict[str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    def reply(request: httpx.Request) -> httpx.Response:
        body = "".join(f"data: {json.dumps(f, ensure_ascii=False)}\r\n\r\n" for f in frames)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body.encode()
        )

    return reply


def options(sent: list[httpx.Request], reply: Callable[..., httpx.Response]) -> dict[str, Any]:
    """google-genai's client settings that send through httpx to ``reply``."""

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return reply(request)

    return {"async_client_args": {"transport": httpx.MockTransport(handler)}}


VERTEX = {"vertexai": True, "project": "p", "location": "us-central1"}
BACKENDS = {"gemini-api": {"api_key": "gk-test"}, "vertex-ai": VERTEX}


def model_of(
    kind: type[Gemini],
    sent: list[httpx.Request],
    reply: Callable[..., httpx.Response],
    backend: str = "gemini-api",
) -> Gemini:
    settings: dict[str, Any] = dict(BACKENDS[backend], http_options=options(sent, reply))
    if backend == "vertex-ai":
        from google.oauth2.credentials import Credentials

        settings["credentials"] = Credentials(token="ya29.test")  # type: ignore[no-untyped-call]
    return kind(model="gemini-2.5-flash", client_kwargs=settings)


def conversation(**config: Any) -> LlmRequest:
    """Every kind of value ADK's Gemini puts in a request: instructions, text, an image, a
    signed thought, a call and its result, declared tools (a schema and a JSON schema) and
    a search tool, a forced tool choice, thinking, safety, sampling, stops."""
    call, result = call_and_result()
    picture = image(b"\x89PNG\x00")
    find = FIND_SCREEN
    navigate = types.FunctionDeclaration(
        name="navigateToScreen",
        parameters=types.Schema(
            type=types.Type.OBJECT,
            properties={"screenId": types.Schema(type=types.Type.STRING, enum=["MNU-3120"])},
            required=["screenId"],
        ),
    )
    settings: dict[str, Any] = {
        "system_instruction": "You open screens.",
        "tools": [
            types.Tool(function_declarations=[find]),
            types.Tool(google_search=types.GoogleSearch()),
            types.Tool(function_declarations=[navigate]),
        ],
        "tool_config": types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY
            )
        ),
        "thinking_config": types.ThinkingConfig(include_thoughts=True, thinking_budget=512),
        "safety_settings": [
            types.SafetySetting(
                category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
                threshold=types.HarmBlockThreshold.BLOCK_ONLY_HIGH,
            )
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "max_output_tokens": 512,
        "labels": {"team": "screens"},
        "http_options": types.HttpOptions(headers={"x-request-tag": "s40"}),
    }
    return LlmRequest(
        model="gemini-2.5-flash",
        contents=[
            types.Content(role="user", parts=[types.Part(text="화면 열어줘"), picture]),
            types.Content(
                role="model",
                parts=[
                    types.Part(text="Looking", thought=True),
                    types.Part(function_call=call, thought_signature=SIGNATURE),
                ],
            ),
            types.Content(role="user", parts=[types.Part(function_response=result)]),
        ],
        config=types.GenerateContentConfig(**(settings | config)),
    )


async def responses_through(
    kind: type[Gemini],
    frames: list[dict[str, Any]],
    *,
    backend: str = "gemini-api",
    request: LlmRequest | None = None,
) -> tuple[list[httpx.Request], list[dict[str, Any]]]:
    """The requests ADK's Gemini sent through a model of ``kind``, and what it read."""
    sent: list[httpx.Request] = []
    model = model_of(kind, sent, streaming(frames), backend)
    responses = [
        r.model_dump()
        async for r in model.generate_content_async(request or conversation(), stream=True)
    ]
    return sent, [without_adks_ids(response) for response in responses]


def without_adks_ids(response: dict[str, Any]) -> dict[str, Any]:
    """ADK gives a call without an id a random one of its own."""
    for part in (response.get("content") or {}).get("parts") or []:
        if (part.get("function_call") or {}).get("id", "").startswith("adk-"):
            part["function_call"]["id"] = "adk-"
    return response


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_adks_request_goes_out_byte_for_byte_as_google_genai_sends_it(backend: str) -> None:
    ours, _ = await responses_through(GeminiLlm, RICH, backend=backend)
    theirs, _ = await responses_through(Gemini, RICH, backend=backend)
    [mine], [sdks] = ours, theirs
    assert (mine.method, mine.url) == (sdks.method, sdks.url)
    assert mine.content == sdks.content
    assert dict(mine.headers) == dict(sdks.headers)
    assert mine.headers["x-request-tag"] == "s40"
    body = json.loads(mine.content)
    # What ADK relies on is there: the signature goes back, tools merge, thinking is asked.
    signed = body["contents"][1]["parts"][1]
    assert base64.urlsafe_b64decode(signed["thoughtSignature"]) == SIGNATURE
    assert [sorted(tool) for tool in body["tools"]] == [["googleSearch"], ["functionDeclarations"]]
    assert body["generationConfig"]["thinkingConfig"]["include_thoughts"] is True
    if backend == "vertex-ai":
        assert mine.headers["authorization"] == "Bearer ya29.test"
        assert "/projects/p/locations/us-central1/" in str(mine.url)
    else:
        assert mine.headers["x-goog-api-key"] == "gk-test"


async def test_a_stream_reads_into_the_same_llm_responses() -> None:
    _, ours = await responses_through(GeminiLlm, RICH)
    _, theirs = await responses_through(Gemini, RICH)
    assert ours == theirs
    final = ours[-1]
    [thought, text, call, _] = final["content"]["parts"]
    assert thought["thought"] and text["text"] == "화면을 찾았습니다"
    assert call["function_call"]["args"] == {"query": "업무"}
    assert call["thought_signature"] == SIGNATURE
    assert final["grounding_metadata"]["web_search_queries"] == ["업무 요청"]
    assert any((r["usage_metadata"] or {}).get("thoughts_token_count") == 2 for r in ours)
    assert final["finish_reason"] == types.FinishReason.STOP
    assert any(r["citation_metadata"] for r in ours)


async def test_a_request_skips_google_genais_copies_and_model_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("google-genai built the request its own way")

    monkeypatch.setattr(types, "_GenerateContentParameters", refused)
    monkeypatch.setattr(types.GenerateContentConfig, "model_copy", refused)
    _, responses = await responses_through(GeminiLlm, RICH)
    assert responses[-1]["content"]["parts"][1]["text"] == "화면을 찾았습니다"


async def requests_of(kind: type[Gemini], requests: list[LlmRequest]) -> list[httpx.Request]:
    """What one model of ``kind`` sent for each of ``requests``, one after the other."""
    sent: list[httpx.Request] = []
    model = model_of(kind, sent, streaming(RICH))
    for each in requests:
        _ = [r async for r in model.generate_content_async(each, stream=True)]
    return sent


async def test_a_config_sent_again_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[dict[str, Any]] = []
    walk = gemini.models._GenerateContentConfig_to_mldev

    def counted(api_client: Any, config: dict[str, Any], *rest: Any) -> Any:
        walked.append(config)
        return walk(api_client, config, *rest)

    monkeypatch.setattr(gemini.models, "_GenerateContentConfig_to_mldev", counted)
    # ADK builds each call's config anew; the third says 1 where the first two say 1.0, the
    # fourth is another agent's, the fifth the first's again.
    calls = [
        conversation(),
        conversation(),
        conversation(temperature=1),
        conversation(system_instruction="You open other screens."),
        conversation(),
    ]
    same = [conversation(temperature=t) for t in (0.2, 0.2, 1, 0.2, 0.2)]
    same[3].config.system_instruction = "You open other screens."  # type: ignore[union-attr]
    theirs = await requests_of(Gemini, same)
    walked.clear()
    ours = await requests_of(GeminiLlm, calls)
    assert [r.content for r in ours] == [r.content for r in theirs]
    assert [len(walked)] == [3]  # the first, the 1, the other agent's
    assert json.loads(ours[2].content)["generationConfig"]["temperature"] == 1
    assert json.loads(ours[0].content)["generationConfig"]["temperature"] == 0.2


async def test_a_config_with_extra_body_fields_is_walked_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[object] = []
    walk = gemini.models._GenerateContentConfig_to_mldev
    monkeypatch.setattr(
        gemini.models,
        "_GenerateContentConfig_to_mldev",
        lambda *given: walked.append(given) or walk(*given),
    )

    def extra() -> LlmRequest:
        request = conversation()
        options = types.HttpOptions(extra_body={"generationConfig": {"seed": 7}})
        request.config.http_options = options  # type: ignore[union-attr]
        return request

    theirs = await requests_of(Gemini, [extra(), extra(), conversation(), conversation()])
    walked.clear()
    ours = await requests_of(GeminiLlm, [extra(), extra(), conversation(), conversation()])
    assert [r.content for r in ours] == [r.content for r in theirs]
    # The SDK merged the seed into the body's dicts: none of them was kept for later calls.
    assert len(walked) == 3
    assert "seed" not in json.loads(ours[3].content)["generationConfig"]


async def test_chunks_are_validated_once_and_a_refused_one_is_read_the_sdks_way(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=gemini.__name__)
    read_the_sdks_way: list[dict[str, Any]] = []
    sdks_way = types.GenerateContentResponse._from_response

    def from_response(*, response: dict[str, Any], kwargs: dict[str, Any]) -> Any:
        read_the_sdks_way.append(copy.deepcopy(response))
        return sdks_way(response=response, kwargs=kwargs)

    monkeypatch.setattr(types.GenerateContentResponse, "_from_response", from_response)
    await responses_through(GeminiLlm, RICH)
    # Only the chunk with the field this SDK does not know.
    [refused] = read_the_sdks_way
    assert refused["usage_metadata"]["xVendorTokens"] == 1
    assert "a Gemini chunk is read the SDK's way" in caplog.text


class Reply(pydantic.BaseModel):
    text: str


def tool(query: str) -> str:
    """A Python function google-genai would call itself."""
    return query


@pytest.mark.parametrize(
    "config",
    [
        {"response_schema": Reply, "response_mime_type": "application/json", "tools": None},
        {"tools": [tool]},
    ],
    ids=["response-schema", "callable-tool"],
)
async def test_anything_else_goes_the_sdks_own_way(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    sdks_way = types._GenerateContentParameters

    def parameters(**values: Any) -> Any:
        built.append(values)
        return sdks_way(**values)

    monkeypatch.setattr(types, "_GenerateContentParameters", parameters)
    reply = [frame([said([{"text": '{"text": "hi"}'}], finishReason="STOP")])]
    request = conversation(**config)
    ours, mine = await responses_through(GeminiLlm, reply, request=request)
    assert built, "the SDK built the request"
    theirs, sdks = await responses_through(Gemini, reply, request=conversation(**config))
    assert [r.content for r in ours] == [r.content for r in theirs]
    assert mine == sdks


async def test_a_continued_stream_follows_its_token_as_the_sdk_does() -> None:
    token = base64.b64encode(b"more").decode()
    hops = [
        [frame([said([{"text": "앞 "}], finishReason="CONTINUATION", continuationToken=token)])],
        [frame([said([{"text": "뒤"}], finishReason="STOP")])],
    ]

    def reply(request: httpx.Request) -> httpx.Response:
        return streaming(hops[1 if b"continuationToken" in request.content else 0])(request)

    seen: dict[type[Gemini], tuple[list[httpx.Request], list[Any]]] = {}
    for kind in (GeminiLlm, Gemini):
        sent: list[httpx.Request] = []
        model = model_of(kind, sent, reply)
        responses = [
            r.model_dump() async for r in model.generate_content_async(conversation(), stream=True)
        ]
        seen[kind] = (sent, responses)
    (ours, mine), (theirs, sdks) = seen[GeminiLlm], seen[Gemini]
    assert [r.content for r in ours] == [r.content for r in theirs] and len(ours) == 2
    assert mine == sdks
    assert mine[-1]["content"]["parts"][0]["text"] == "앞 뒤"


def refusing(status: int) -> Callable[[httpx.Request], httpx.Response]:
    def refuse(request: httpx.Request) -> httpx.Response:
        error = {"code": status, "message": "no", "status": "REFUSED"}
        if status == 429:
            error["details"] = [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
            ]
        return httpx.Response(status, json={"error": error})

    return refuse


def fails_mid_stream(request: httpx.Request) -> httpx.Response:
    error = {"error": {"code": 500, "message": "An internal error.", "status": "INTERNAL"}}
    body = f"data: {json.dumps(RICH[1])}\r\n\r\ndata: {json.dumps(error)}\r\n\r\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


@pytest.mark.parametrize(
    "reply",
    [refusing(401), refusing(429), refusing(500), fails_mid_stream],
    ids=["401", "429", "500", "mid-stream"],
)
async def test_a_providers_refusal_is_google_genais_error(
    reply: Callable[[httpx.Request], httpx.Response],
) -> None:
    failures = []
    for kind in (GeminiLlm, Gemini):
        model = model_of(kind, [], reply)
        with pytest.raises(errors.APIError) as raised:
            _ = [r async for r in model.generate_content_async(conversation(), stream=True)]
        failures.append((type(raised.value), raised.value.code, classify(raised.value)))
    ours, theirs = failures
    assert ours == theirs and ours[2] is not None


def test_a_gemini_name_builds_the_lean_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "gk-test")
    built = names.build("gemini-2.5-flash")
    assert isinstance(built, GeminiLlm) and built.model == "gemini-2.5-flash"
    assert isinstance(built.api_client.aio.models, LeanModels)


def test_a_client_of_ones_own_is_left_as_it_is() -> None:
    from google.genai import Client

    mine = Client(api_key="gk-test")
    model = GeminiLlm(model="gemini-2.5-flash", client=mine)
    assert model.api_client is mine and not isinstance(mine.aio.models, LeanModels)


def test_an_agent_written_with_a_gemini_name_runs_on_the_lean_model() -> None:
    """Without GATEWAY_MODEL: the name becomes the gateway's GeminiLlm; a model object of
    the author's own, or a name ADK gives another class, stays as it was."""
    from google.adk.agents import LlmAgent

    from gateway.adk.hosting import Hosted, prepare
    from gateway.tools.client import ClientToolset

    theirs = Gemini(model="gemini-2.5-pro")
    agents = [
        LlmAgent(name="named", model="gemini-2.5-flash"),
        LlmAgent(name="own", model=theirs),
        LlmAgent(name="other", model="claude-3-5-sonnet"),
        LlmAgent(name="unknown", model="my-own-model"),
        LlmAgent(name="inherits"),
    ]
    root = LlmAgent(name="root", model="gemini-2.5-flash", sub_agents=agents)
    prepare(Hosted(root), ClientToolset(None))
    named, own, other, unknown, inherits = agents
    assert isinstance(named.model, GeminiLlm) and named.model.model == "gemini-2.5-flash"
    assert own.model is theirs
    assert (other.model, unknown.model) == ("claude-3-5-sonnet", "my-own-model")
    assert inherits.model == "" and isinstance(inherits.canonical_model, GeminiLlm)
