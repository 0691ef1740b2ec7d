"""What a Gemini model call costs before its request leaves, and each chunk on its way in:
google-genai's own way against the gateway's (``gateway/models/gemini.py``), in the same run.

The request is one ADK builds for the demo agent (its instruction, its four tools, the
user's words), alone and after a thread's history of ``--turns`` turns (each a question, a
call, its result and the answer, the call signed as Gemini signs them). Each side is
timed from ``generate_content_stream`` to the request's hand-off to the client's
``async_request_streamed`` (which is stopped there: no network), the two sides taking turns
call by call so that a neighbour's burst lands on both. Chunks: the Gemini API's text
chunk, read into a ``GenerateContentResponse`` the SDK's way (``_from_mldev`` then
``_from_response``) and the gateway's (``_from_mldev`` then one validation). Each round
prints its medians and the ratio SDK / gateway; then the medians of the rounds.

    .venv/bin/python -m scripts.bench_gemini                    # 3 rounds of 200 calls
    .venv/bin/python -m scripts.bench_gemini --turns 40 --calls 50
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from google.genai import Client, _api_client, models, types

from gateway.examples.navigator.agent import INSTRUCTION, build_agent, load_catalog
from gateway.models.gemini import LeanModels, chunk_of

WARM_UP = 10
CHUNK = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "안녕하세요! "}]}, "index": 0}],
    "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1, "totalTokenCount": 10},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r",
}


class Handed(Exception):
    """The request reached the client's hand-off: the side's work is done."""


async def handed(*args: Any, **kwargs: Any) -> Any:
    raise Handed


def demo_request(turns: int) -> tuple[list[types.Content], types.GenerateContentConfig]:
    """The contents and config ADK sends for the demo agent after ``turns`` turns."""
    agent = build_agent("gemini-2.5-flash", load_catalog())
    declarations = [
        tool._get_declaration()  # what ADK itself declares to the model
        for tool in agent.tools
        if hasattr(tool, "_get_declaration")
    ]
    config = types.GenerateContentConfig(
        system_instruction=INSTRUCTION,
        tools=[types.Tool(function_declarations=[d for d in declarations if d is not None])],
        http_options=types.HttpOptions(headers={"x-goog-api-client": "google-adk/bench"}),
    )
    contents: list[types.Content] = []
    for turn in range(turns):
        call = types.FunctionCall(name="find_screen", args={"query": f"업무 요청 {turn}"})
        found = {"screens": [{"screenId": "MNU-3120", "screenName": "업무 요청 목록"}]}
        answer = types.FunctionResponse(name="find_screen", response=found)
        contents += [
            types.Content(
                role="user", parts=[types.Part(text=f"업무 요청 목록 화면 열어줘 {turn}")]
            ),
            types.Content(
                role="model",
                parts=[types.Part(function_call=call, thought_signature=b"signed-%d" % turn)],
            ),
            types.Content(role="user", parts=[types.Part(function_response=answer)]),
            types.Content(role="model", parts=[types.Part(text="이동했습니다. " * 8)]),
        ]
    contents.append(types.Content(role="user", parts=[types.Part(text="안녕")]))
    return contents, config


async def until_handed(
    models_: models.AsyncModels, contents: list[types.Content], config: types.GenerateContentConfig
) -> float:
    started = time.perf_counter()
    try:
        stream = await models_.generate_content_stream(
            model="gemini-2.5-flash", contents=contents, config=config
        )
        await anext(aiter(stream))
    except Handed:
        return time.perf_counter() - started
    raise RuntimeError("the request was not handed to the client")


async def requests(turns: int, calls: int) -> dict[str, float]:
    client = Client(api_key="bench-key")
    sides = {"sdk": client.aio.models, "gateway": LeanModels(client._api_client)}
    contents, config = demo_request(turns)
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    for call in range(WARM_UP + calls):
        for name, side in sides.items():
            # ADK builds a new config for each call; so does the bench.
            took = await until_handed(side, contents, config.model_copy(deep=True))
            if call >= WARM_UP:
                seconds[name].append(took)
    return {name: statistics.median(values) for name, values in seconds.items()}


def chunks(reads: int) -> dict[str, float]:
    def sdks() -> Any:
        read = models._GenerateContentResponse_from_mldev(dict(CHUNK))
        kwargs: dict[str, object] = {
            "config": {"response_schema": None, "response_json_schema": None}
        }
        return types.GenerateContentResponse._from_response(response=read, kwargs=kwargs)

    def gateways() -> Any:
        return chunk_of(models._GenerateContentResponse_from_mldev(dict(CHUNK)))

    assert sdks() == gateways()
    sides: dict[str, Callable[[], Any]] = {"sdk": sdks, "gateway": gateways}
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(reads):
        for name, read in sides.items():
            started = time.perf_counter()
            read()
            seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in seconds.items()}


def line(title: str, figures: dict[str, float], unit: float, shown: str) -> str:
    return (
        f"    {title}: google-genai {figures['sdk'] * unit:.0f} {shown}, gateway "
        f"{figures['gateway'] * unit:.0f} {shown} ({figures['sdk'] / figures['gateway']:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    parser.add_argument("--calls", type=int, default=200, help="model calls a side a round")
    parser.add_argument("--turns", type=int, default=20, help="turns of history (20)")
    args = parser.parse_args()
    _api_client.BaseApiClient.async_request_streamed = handed  # type: ignore[method-assign]
    results: list[tuple[dict[str, float], dict[str, float], dict[str, float]]] = []
    for number in range(1, args.rounds + 1):
        first = asyncio.run(requests(0, args.calls))
        later = asyncio.run(requests(args.turns, max(args.calls // 4, 1)))
        read = chunks(args.calls * 10)
        results.append((first, later, read))
        report(f"round {number}", first, later, read, args.turns)
    if len(results) > 1:
        medians = [
            {
                side: statistics.median(r[index][side] for r in results)
                for side in ("sdk", "gateway")
            }
            for index in range(3)
        ]
        first, later, read = medians
        report(f"medians of {len(results)} rounds", first, later, read, args.turns)


def report(
    title: str,
    first: dict[str, float],
    later: dict[str, float],
    read: dict[str, float],
    turns: int,
) -> None:
    print(f"  {title}:")
    print(line("a thread's first request, to its hand-off, p50", first, 1e6, "µs"))
    print(line(f"after {turns} turns, p50", later, 1e6, "µs"))
    print(line("a text chunk read, p50", read, 1e6, "µs"))


if __name__ == "__main__":
    main()
