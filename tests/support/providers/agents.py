"""The demo agent on a local provider, built as ``GATEWAY_MODEL`` builds it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from google.adk.agents import LlmAgent
from google.genai import types

from gateway.adk.hosting import Hosted
from gateway.config import Settings
from gateway.examples.navigator import agent as navigator
from tests.support.providers.gemini_api import GeminiApi
from tests.support.providers.provider import Provider


def navigator_on(provider: Provider) -> Callable[[Settings], Hosted]:
    """The demo with ``GATEWAY_MODEL`` naming the provider's model; on Gemini it asks for
    the model's thoughts, as an agent that shows them does."""

    def hosted(settings: Settings) -> Hosted:
        made = navigator.hosted(dataclasses.replace(settings, model=provider.model_name))
        if isinstance(provider, GeminiApi):
            assert isinstance(made.agent, LlmAgent)
            thinking = types.ThinkingConfig(include_thoughts=True)
            made.agent.generate_content_config = types.GenerateContentConfig(
                thinking_config=thinking
            )
        return made

    return hosted
