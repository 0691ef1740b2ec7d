"""A model's thoughts from earlier turns are not replayed to it.

What ADK 2.13 does: the contents it sends a model keep the agent's own thought parts
(``Part.thought``) from every earlier turn; other agents' thoughts are dropped unless
``RunConfig.include_thoughts_from_other_agents``. Each adapter then replays them its way:
Gemini takes them as they are, LiteLLM as ``reasoning_content`` (Anthropic as signed
thinking blocks), and the OpenAI Chat Completions adapter (``GATEWAY_MODEL=openai/...``)
as assistant text "Thought: ...", which the model then reads as something it said.

What providers require: reasoning models served OpenAI-style (DeepSeek, Qwen3 on vLLM or
Ollama) drop the reasoning of earlier turns from their prompt, and DeepSeek refuses it;
within a turn, between a tool call and its result, DeepSeek and Anthropic need it back;
a thought signature (Gemini, Anthropic) must always go back as it came.

So ``ThoughtsPlugin`` removes, before every model call, the unsigned thought parts that
precede the latest user message, and keeps the current turn's thoughts and every signed
part. The client sees every thought as AG-UI reasoning regardless (``gateway.translate.streaming``).
"""

from __future__ import annotations

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

__all__ = ["ThoughtsPlugin", "without_earlier_thoughts"]


def without_earlier_thoughts(contents: list[types.Content]) -> list[types.Content]:
    """``contents`` without the unsigned thoughts of turns before the latest user message."""
    latest_turn = next(
        (
            index
            for index in range(len(contents) - 1, -1, -1)
            if contents[index].role == "user"
            and any(part.text and not part.thought for part in contents[index].parts or ())
        ),
        0,
    )
    kept: list[types.Content] = []
    for index, content in enumerate(contents):
        if index >= latest_turn or not any(_replayed_thought(p) for p in content.parts or ()):
            kept.append(content)
            continue
        parts = [part for part in content.parts or () if not _replayed_thought(part)]
        if parts:
            kept.append(content.model_copy(update={"parts": parts}))
    return kept


def _replayed_thought(part: types.Part) -> bool:
    return bool(
        part.thought
        and not part.thought_signature
        and part.function_call is None
        and part.function_response is None
    )


class ThoughtsPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="agent_gateway_thoughts")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        llm_request.contents = without_earlier_thoughts(llm_request.contents)
        return None
