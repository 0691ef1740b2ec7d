"""A model's thoughts stream as AG-UI reasoning, never as text, and earlier turns' thoughts
are not replayed to it; ADK's token usage reaches RUN_FINISHED (and RUN_ERROR) as AG-UI 1.0
TokenUsage, every model call of the run counted once."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

from gateway import wire as p
from gateway.adk.thoughts import without_earlier_thoughts
from gateway.adk.usage import token_usage
from tests.support.agui import new_id, text_of, user_input
from tests.support.servers import post_run, running_gateway
from tests.support.speakers import (
    USAGE,
    Speaker,
    call,
    of_type,
    say,
    texts_by_message,
    think,
    thinker,
)

pytestmark = pytest.mark.server


def look_up(city: str) -> dict[str, str]:
    """Looks a city's weather up."""
    return {"city": city, "weather": "sunny"}


async def test_thoughts_stream_as_reasoning_and_never_as_text() -> None:
    agent = thinker([think("The user greets me. "), say("Hello there!")])
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "hi", tools=[]))
        assert text_of(events) == "Hello there!"
        [reasoning] = texts_by_message(events, "REASONING").items()
        [(reply_id, _)] = texts_by_message(events).items()
        assert reasoning == ("rs-" + reply_id, "The user greets me. ")
        kinds = [e["type"] for e in events if e["type"].startswith("REASONING")]
        assert kinds[:2] == ["REASONING_START", "REASONING_MESSAGE_START"]
        assert kinds[-2:] == ["REASONING_MESSAGE_END", "REASONING_END"]

        await ws.send({"type": "reattach", "threadId": thread})
        messages = (await ws.until_end())[1]["messages"]
        assert [(m["role"], m["id"]) for m in messages[1:]] == [
            ("reasoning", "rs-" + reply_id),
            ("assistant", reply_id),
        ]
        assert messages[1]["content"] == "The user greets me. "

    async with running_gateway(agent=thinker([think("Hmm. "), say("Hi!")])) as gateway:
        status, _, events, _ = await post_run(gateway, user_input(new_id("t"), "hi", tools=[]))
    assert status == 200
    assert text_of(events) == "Hi!"
    assert list(texts_by_message(events, "REASONING").values()) == ["Hmm. "]


async def test_a_model_is_not_sent_back_the_thoughts_of_earlier_turns() -> None:
    agent = thinker(
        [think("First, greet. "), say("Hello!")],
        [
            think("They want weather. "),
            think("signed ", signature=b"sig"),
            call("look_up", city="Seoul"),
        ],
        [say("Sunny in Seoul.")],
        tools=[look_up],
    )
    model = agent.model
    assert isinstance(model, Speaker)
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.run(user_input(thread, "hi", tools=[]))
        events = await ws.run(user_input(thread, "weather in Seoul?", tools=[]))
    assert text_of(events) == "Sunny in Seoul."

    def thoughts(contents: list[types.Content]) -> list[str]:
        return [part.text or "" for c in contents for part in c.parts or () if part.thought]

    first, second, third = model.requests
    assert thoughts(first) == []
    assert thoughts(second) == []  # the first turn's thought stays with the client
    # Within a turn (a tool call and its result) the model gets its thoughts back.
    assert thoughts(third) == ["They want weather. ", "signed "]


def test_signed_thoughts_always_go_back() -> None:
    contents = [
        types.Content(role="user", parts=[types.Part(text="hi")]),
        types.Content(role="model", parts=[think("unsigned"), think("signed", b"s"), say("ok")]),
        types.Content(role="model", parts=[think("only a thought")]),
        types.Content(role="user", parts=[types.Part(text="again")]),
    ]
    kept = without_earlier_thoughts(contents)
    assert [[part.text for part in c.parts or ()] for c in kept] == [
        ["hi"],
        ["signed", "ok"],
        ["again"],
    ]


async def test_run_finished_carries_the_runs_token_usage_agent_tools_included() -> None:
    expert = LlmAgent(name="expert", model=Speaker(turns=[[say("42")]]))
    agent = thinker(
        [call("expert", request="answer?")],
        [think("Got it. "), say("It is 42.")],
        tools=[AgentTool(expert)],
    )
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "answer?", tools=[]))
        [finished] = of_type(events, "RUN_FINISHED")
        # Three calls of the "speaker" model: the root's two and the AgentTool's one.
        calls = 3
        input_tokens = calls * USAGE["prompt_token_count"]
        output_tokens = calls * (USAGE["candidates_token_count"] + USAGE["thoughts_token_count"])
        assert finished["usage"] == [
            {
                "model": "speaker",
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": input_tokens + output_tokens,
                "reasoningTokens": calls * USAGE["thoughts_token_count"],
            }
        ]
        # The next run counts only its own calls.
        events = await ws.run(user_input(new_id("t"), "again", tools=[]))
        assert of_type(events, "RUN_FINISHED")[0]["usage"][0]["inputTokens"] == 10


def broken_tool() -> dict[str, str]:
    """Always fails."""
    raise RuntimeError("the tool broke")


async def test_run_error_carries_the_usage_of_the_calls_made_before_it() -> None:
    agent = thinker([call("broken_tool")], tools=[broken_tool])
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "go", tools=[]))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AGENT_ERROR"
    assert events[-1]["usage"][0]["inputTokens"] == USAGE["prompt_token_count"]


def usage(**counts: Any) -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(**counts)


def test_usage_follows_ag_uis_accounting_whatever_the_adapter() -> None:
    # Gemini: thoughts beside candidates; tool-use prompt and cached input inside the input.
    gemini = usage(
        prompt_token_count=100,
        tool_use_prompt_token_count=5,
        cached_content_token_count=40,
        candidates_token_count=20,
        thoughts_token_count=30,
        total_token_count=155,
    )
    assert token_usage(gemini, "gemini-2.5-flash") == p.TokenUsage(
        model="gemini-2.5-flash",
        input_tokens=105,
        output_tokens=50,
        total_tokens=155,
        reasoning_tokens=30,
        cached_input_tokens=40,
    )
    # ADK's OpenAI adapter: reasoning already inside the completion count.
    openai = usage(
        prompt_token_count=100,
        candidates_token_count=50,
        thoughts_token_count=30,
        total_token_count=150,
    )
    assert token_usage(openai) == p.TokenUsage(
        input_tokens=100, output_tokens=50, total_tokens=150, reasoning_tokens=30
    )
    # A count that is no count is left out, never sent.
    odd = usage(prompt_token_count=7)
    odd.candidates_token_count = -3
    assert token_usage(odd) == p.TokenUsage(input_tokens=7, total_tokens=7)
    assert token_usage(usage()) is None
