"""The shell every offline model shares: a decision in, ADK ``LlmResponse`` chunks out.

An offline model decides its next step from the request alone (``OfflineLlm.reply``): words
to say, or function calls to make. This shell streams the words in word-sized chunks,
``pace_ms`` apart, then the whole text as the final response, or yields the calls in one
response, the way a real model's streamed answer reaches ADK.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import re
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from google.adk.models import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from gateway import timeline

__all__ = ["Call", "OfflineLlm", "Reply", "Say"]


@dataclasses.dataclass(frozen=True)
class Say:
    """Words that end the model's turn."""

    text: str


@dataclasses.dataclass(frozen=True)
class Call:
    """Function calls, made together, as (tool name, arguments)."""

    calls: Sequence[tuple[str, dict[str, Any]]]


Reply = Say | Call

_CHUNK = re.compile(r"\S+\s*")


class OfflineLlm(BaseLlm, abc.ABC):
    """An ADK model that needs no network and no key: ``reply`` decides, this streams."""

    pace_ms: float = 0.0

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=False)

    @abc.abstractmethod
    def reply(self, llm_request: LlmRequest) -> Reply:
        """The next step, from what the request shows the model."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        reply = self.reply(llm_request)
        prompt_words = sum(
            len((part.text or "").split())
            for content in llm_request.contents
            for part in content.parts or ()
        )
        if isinstance(reply, Call):
            parts = [
                types.Part(function_call=types.FunctionCall(name=name, args=args))
                for name, args in reply.calls
            ]
            yield LlmResponse(
                content=types.Content(role="model", parts=parts),
                usage_metadata=_usage(prompt_words, len(parts)),
            )
            return
        if stream:
            for chunk in _CHUNK.findall(reply.text):
                # Sleeping even at pace 0 yields to the loop, so a cancel lands mid-reply.
                await asyncio.sleep(self.pace_ms / 1000)
                timeline.mark("model_woke")  # the pace's timer, as late as the loop ran it
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=chunk)]),
                    partial=True,
                )
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=reply.text)]),
            partial=False,
            turn_complete=True,
            usage_metadata=_usage(prompt_words, len(reply.text.split())),
        )


def _usage(prompt: int, reply: int) -> types.GenerateContentResponseUsageMetadata:
    """Token counts as words: ADK's telemetry expects a model to report usage."""
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=reply, total_token_count=prompt + reply
    )
