"""Model providers on a loopback port that speak the real wire formats, for tests and benches.

``ChatCompletions`` is an OpenAI-compatible server (``POST /v1/chat/completions`` as SSE
chunks, ``GET /v1/models``), as vLLM, Ollama or a LiteLLM proxy serve it; ``GeminiApi`` is
the Gemini API (``POST /v1beta/models/M:streamGenerateContent?alt=sse``,
``GET /v1beta/models/M``). Both decide what to say with the demo's scripted brain
(``gateway.examples.navigator.scripted.respond``) read from the conversation on the wire,
so everything between the gateway and the socket is the real thing: ADK's adapter, the
provider's SDK, HTTP. Each can be told to fail its next generation the ways a provider
does (``Fault``), and counts what it was sent.
"""

from tests.support.providers.chat_completions import ChatCompletions
from tests.support.providers.gemini_api import GeminiApi
from tests.support.providers.provider import Fault, Provider

__all__ = ["ChatCompletions", "Fault", "GeminiApi", "Provider"]
