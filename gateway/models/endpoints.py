"""Where a hosted agent's models are, and how to ask each, for free, whether it answers.

A probe spends no tokens: an OpenAI-compatible endpoint (ADK's ``OpenAILlm``) is asked
for its models list, ``GET {base_url}/models``; Gemini (ADK's ``Gemini``, which a model
name such as ``gemini-2.5-flash`` becomes) for the model's description,
``GET {base_url}/v1beta/models/{model}`` (Vertex AI: the publisher model). Each goes with
the model's own client, so its key and base URL are the ones runs use. Any other model
(the demo's scripted one, a ``BaseLlm`` of your own, LiteLLM) is not probed.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.base_llm import BaseLlm
from google.adk.models.google_llm import Gemini
from google.genai import types

from gateway.adk.hosting import agent_tools, first_line, llm_agents

__all__ = [
    "PROBE_TIMEOUT_SECONDS",
    "Endpoint",
    "called",
    "describe",
    "described",
    "endpoints",
    "model_of",
]

log = logging.getLogger(__name__)

# How long a probe waits for its answer.
PROBE_TIMEOUT_SECONDS = 5.0
# Where google-genai sends Gemini API requests unless told otherwise.
GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com/"


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """A model as runs reach it: ``probe`` raises what a run would meet if it is down."""

    model: str
    # What a probe sends, for the log and the README: "GET <url>".
    request: str
    probe: Callable[[], Awaitable[None]] = dataclasses.field(compare=False)


def endpoints(root: BaseAgent) -> list[Endpoint]:
    """The probed endpoints of every model the App's agents call, each once."""
    found: dict[tuple[str, str], Endpoint] = {}
    for model in _models(root):
        endpoint = _endpoint(model)
        if endpoint is not None:
            found.setdefault((endpoint.model, endpoint.request), endpoint)
    return list(found.values())


def model_of(context: CallbackContext) -> str:
    """The model a callback's agent calls, described for a log line."""
    return described(called(context))


def described(model: BaseLlm | None) -> str:
    """``describe(model)``; "the model" for a call whose agent has none."""
    return describe(model) if model is not None else "the model"


def model_name(context: CallbackContext) -> str:
    """The name of the model a callback's agent calls (a metric's label), or "unknown"."""
    model = called(context)
    return model.model if model is not None else "unknown"


def called(context: CallbackContext) -> BaseLlm | None:
    """The model a callback's agent calls, if it has one."""
    try:
        model = getattr(context._invocation_context.agent, "canonical_model", None)
    except ValueError:  # no model anywhere up the tree
        return None
    return model if isinstance(model, BaseLlm) else None


def describe(model: BaseLlm) -> str:
    """``openai/<model> at <base url>``, ``<gemini model> at <base url>``, or its name."""
    url = _base_url(model)
    name = f"openai/{model.model}" if _is_openai(model) else model.model
    return f"{name} at {url}" if url else name


def _models(root: BaseAgent) -> Iterator[BaseLlm]:
    trees = [root, *agent_tools(root).values()]
    for tree in trees:
        for agent in llm_agents(tree):
            try:
                yield agent.canonical_model
            except ValueError:  # an agent with no model anywhere up its tree: ADK says so
                continue


def _endpoint(model: BaseLlm) -> Endpoint | None:
    url = _base_url(model)
    if _is_openai(model) and url:
        return Endpoint(describe(model), f"GET {url.rstrip('/')}/models", _openai_probe(model))
    if isinstance(model, Gemini):
        request = f"GET {(url or GEMINI_DEFAULT_URL).rstrip('/')}/v1beta/models/{model.model}"
        return Endpoint(describe(model), request, _gemini_probe(model))
    return None


def _openai_probe(model: Any) -> Callable[[], Awaitable[None]]:
    async def probe() -> None:
        # The model's own client (its key, base URL, headers); ADK keeps it private.
        client = model._openai_client.with_options(timeout=PROBE_TIMEOUT_SECONDS, max_retries=0)
        page = await client.models.list()
        listed = {entry.id for entry in page.data}
        if listed and model.model not in listed:
            log.warning(
                "the endpoint of openai/%s does not list that model (it lists %s)",
                model.model,
                ", ".join(sorted(listed)[:10]),
            )

    return probe


def _gemini_probe(model: Gemini) -> Callable[[], Awaitable[None]]:
    async def probe() -> None:
        options = types.HttpOptions(timeout=int(PROBE_TIMEOUT_SECONDS * 1000))
        await model.api_client.aio.models.get(
            model=model.model, config=types.GetModelConfig(http_options=options)
        )

    return probe


def _base_url(model: BaseLlm) -> str:
    """The base URL the model's client sends to; "" when it has no client yet (no key)."""
    try:
        if _is_openai(model):
            return str(model._openai_client.base_url)  # type: ignore[attr-defined]
        if isinstance(model, Gemini):
            options = model.api_client._api_client._http_options
            return str(options.base_url or GEMINI_DEFAULT_URL)
    except Exception as error:  # the SDK refuses to build a client: its sentence says why
        log.debug("no client for %s: %s", model.model, first_line(error))
    return ""


def _is_openai(model: BaseLlm) -> bool:
    """Asked of every model at start: it never imports the openai SDK to answer. That is
    ~800 modules and ~18 MiB of RSS a gateway would hold for nothing; a model that is an
    ``OpenAILlm`` was built after its module was imported."""
    adk_openai = sys.modules.get("google.adk.integrations.openai._openai_llm")
    return adk_openai is not None and isinstance(model, adk_openai.OpenAILlm)
