"""A test model that plays a script: its turns' thoughts and text streamed word by word, then
each turn whole with its token usage, recording every request it is sent.

Also the agents and models made of it that several test modules run: ``thinker`` (an agent
that thinks before it speaks) and ``FlakyLlm`` (the demo's scripted model, failing on a
word).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

from gateway.examples.navigator.scripted import ScriptedLlm

# What each call of a Speaker reports: a prompt, a reply with thoughts beside it (Gemini's way).
USAGE = {"prompt_token_count": 10, "candidates_token_count": 4, "thoughts_token_count": 3}


def say(text: str) -> types.Part:
    return types.Part(text=text)


def think(text: str, signature: bytes | None = None) -> types.Part:
    return types.Part(text=text, thought=True, thought_signature=signature)


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


class Speaker(BaseLlm):
    """Plays ``turns`` in order, one per model call: the last one again once they run out,
    or (``cycle``) the whole script again, for a script that is one conversation's.

    A turn is the parts of one model response: thoughts and text are streamed first, a word
    every ``pace`` seconds (so parallel agents interleave), then the whole turn comes as the
    final response with ``USAGE``.
    """

    model: str = "speaker"
    turns: list[list[types.Part]]
    pace: float = 0.004
    cycle: bool = False
    requests: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append([c.model_copy(deep=True) for c in llm_request.contents])
        calls = len(self.requests)
        turn = self.turns[
            (calls - 1) % len(self.turns) if self.cycle else min(calls, len(self.turns)) - 1
        ]
        for part in turn:
            for word in re.findall(r"\S+\s*", part.text or ""):
                await asyncio.sleep(self.pace)
                chunk = types.Part(text=word, thought=part.thought)
                yield LlmResponse(content=types.Content(role="model", parts=[chunk]), partial=True)
        yield LlmResponse(
            content=types.Content(role="model", parts=[p.model_copy() for p in turn]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(**USAGE),
        )


def thinker(*turns: list[types.Part], tools: list[Any] | None = None) -> LlmAgent:
    return LlmAgent(
        name="thinker", model=Speaker(turns=[list(t) for t in turns]), tools=tools or []
    )


class FlakyLlm(ScriptedLlm):
    """Scripted, except that it raises when the user says 'explode'."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        if any(part.text == "explode" for part in last):
            raise ConnectionError("model endpoint unreachable")
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def texts_by_message(events: list[dict[str, Any]], kind: str = "TEXT") -> dict[str, str]:
    """Each streamed message's text, by message id (``kind``: TEXT or REASONING)."""
    texts: dict[str, str] = {}
    for event in events:
        if event["type"] == f"{kind}_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    return texts


def openers(events: list[dict[str, Any]], kind: str = "TEXT") -> dict[str, dict[str, Any]]:
    """The first START event of each message, by message id."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["type"] == f"{kind}_MESSAGE_START":
            found.setdefault(event["messageId"], event)
    return found


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]
