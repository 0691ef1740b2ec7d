"""Models by name, for ``GATEWAY_MODEL``: a Gemini name, ``openai/<model>``, or
``script:<file>`` (an offline model that plays a script file: ``gateway.models.script``).

A name replaces the model of every LlmAgent the gateway hosts (``Hosted.model``), so an
agent written for one provider can be tried on another, or offline, without editing it.
"""

from __future__ import annotations

import os

from google.adk.models.base_llm import BaseLlm

from gateway.models import ModelError


def build(name: str, *, pace_ms: float = 0.0) -> BaseLlm | str:
    """'gemini-…' needs GOOGLE_API_KEY (or Vertex AI); 'openai/<m>' needs the openai extra
    and OPENAI_API_KEY (OPENAI_BASE_URL points it at any OpenAI-compatible server);
    'script:<file>' reads the file, and streams its text ``pace_ms`` apart."""
    if name.startswith("script:"):
        from gateway.models.script import ScriptLlm

        path = name.removeprefix("script:")
        if not path:
            raise ModelError("GATEWAY_MODEL=script: needs a file, as in script:turns.json")
        return ScriptLlm.from_file(path, pace_ms=pace_ms)
    if name.startswith("openai/"):
        try:
            from google.adk.integrations.openai import OpenAILlm

            from gateway.models.chat_completions import ChatCompletionsClient
        except ImportError as error:
            raise ModelError(
                f"GATEWAY_MODEL={name} needs the openai extra: "
                f"pip install 'agent-gateway[openai]' ({error})"
            ) from None
        if not os.environ.get("OPENAI_API_KEY"):
            raise ModelError(
                f"GATEWAY_MODEL={name} needs OPENAI_API_KEY (any value for a server that "
                "takes none) and, for a server other than OpenAI's, OPENAI_BASE_URL"
            )
        from gateway.models.connections import kept_alive_client

        # No retries behind the person's back: the run's RUN_ERROR says when to try again.
        # One connection kept from call to call (the SDK's own client closes each one);
        # requests sent as ADK builds them and chunks read by pydantic (chat_completions).
        client = ChatCompletionsClient(max_retries=0, http_client=kept_alive_client())
        return OpenAILlm(model=name.removeprefix("openai/"), client=client)
    if name.startswith("gemini"):
        if not (os.environ.get("GOOGLE_API_KEY") or os.environ.get("GOOGLE_GENAI_USE_VERTEXAI")):
            raise ModelError(f"GATEWAY_MODEL={name} needs GOOGLE_API_KEY (or Vertex AI settings)")
        from gateway.models.gemini import GeminiLlm

        # ADK's Gemini, its requests built and its chunks read with less (gemini).
        return GeminiLlm(model=name)
    raise ModelError(
        f"GATEWAY_MODEL={name!r}: use a Gemini name such as 'gemini-2.5-flash' or "
        "'openai/<model>', or 'script:<file>' to play a script offline (the demo also "
        "knows 'scripted')"
    )
