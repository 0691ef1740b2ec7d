"""A Gemini model's streamed requests built, and its chunks read, with the least of
google-genai's own work in their way.

ADK's ``Gemini`` calls ``client.aio.models.generate_content_stream(model=, contents=,
config=)`` with the ``Content``s and ``GenerateContentConfig`` it built for the call. Before
the request leaves, google-genai copies the config twice (``model_copy(deep=True)``, for its
automatic function calling and MCP sessions, which ADK's declarations never use), validates
the three values again as one ``_GenerateContentParameters`` (the contents against a union
of types, each ``Content`` read attribute by attribute for each member: the cost grows
with the thread's history), and walks them with its generated ``_to_mldev`` /
``_to_vertex`` transformers. The walk reads every field through ``getv``, which on a
pydantic model scans all of the model's fields before it falls back to ``getattr``. On a
2-core machine at load 3, that is 1.7 ms before the demo's first request can leave, and
50 ms after 20 turns of history (``scripts/bench_gemini.py``). Each chunk is then read
into a ``GenerateContentResponse`` by ``_from_response``, which walks it once to drop
fields the SDK does not know, then validates it: 180 µs a chunk that every chunk waits for.

``GeminiLlm`` is ADK's ``Gemini`` whose client's ``aio.models`` is ``LeanModels``:

- the request is built by the same transformers, given the values as plain dicts
  (``model_dump``, done by pydantic's core), on which ``getv`` is a dict lookup; the body,
  its key order, its URL and ``http_options`` are the SDK's own (a test compares the bytes).
  A config's part of the body (its instruction, tools, settings), which an agent sends the
  same call after call, is built once and kept: the walk over the tools' declarations was
  ~0.25 ms of a quiet start's ~0.4 ms of building (``_config_on_wire``).
  It is sent by the client's own ``async_request_streamed``: the same headers, auth (an API
  key or Vertex AI's credentials), retries, errors (``gateway.models.failures`` reads them)
  and SSE framing, and an error event mid-stream still raises the SDK's ``APIError``;
- each chunk goes through the SDK's ``_from_mldev`` / ``_from_vertex`` (a dict walk) and is
  validated once by pydantic; a chunk it refuses (a field this SDK does not know, a value of
  the wrong type) is read the SDK's way, as before;
- the stream follows continuation tokens as the SDK does (its own ``StreamContinuation``).

A call with anything else goes the SDK's own way: a config given as a dict, a tool that is
a Python function or an MCP session (the SDK calls those itself), a response schema (the
SDK parses the reply into it), contents that are not ``Content``s, or a field whose
transformer treats a dict differently from a model (``speech_config``).
"""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import pydantic
from google.adk.models.google_llm import Gemini
from google.adk.utils._event_loop_cache import PerLoopCachedProperty
from google.genai import Client, _common, models, types
from google.genai._common import set_value_by_path as setv
from google.genai._transformers import t_model

from gateway.models import proxy_lookup

__all__ = ["GeminiLlm", "LeanModels", "named", "request"]

log = logging.getLogger(__name__)

# Config fields whose transformer reads a dict otherwise than a model (a schema, a voice),
# or that change how the SDK reads the reply (into a schema, with fields it does not know):
# such a call goes the SDK's way.
_THE_SDKS_WAY = frozenset(
    {"response_schema", "response_json_schema", "speech_config", "include_all_fields"}
)
# Config fields that are the request's options, not its body.
_OPTIONS = {"http_options": True}
# How many configs' wire forms a client keeps (``_config_on_wire``): one an agent, and the
# few agents that may share a model.
CONFIGS_KEPT = 16


class GeminiLlm(Gemini):
    """ADK's ``Gemini``; its client's streamed requests go out through ``LeanModels``,
    without aiohttp's lookups in a thread when there is nothing to find (``proxy_lookup``)."""

    @PerLoopCachedProperty
    def api_client(self) -> Client:
        # ADK's own client, built its own way (the function under ADK's per-loop cache).
        client: Client = Gemini.__dict__["api_client"].func(self)
        aio = getattr(client, "aio", None)
        if self.client is None and type(getattr(aio, "_models", None)) is models.AsyncModels:
            aio._models = LeanModels(client._api_client)  # type: ignore[union-attr]
            proxy_lookup.install(client._api_client)
        else:
            log.debug("a Gemini client of its own, or an SDK without aio._models: left as is")
        return client


class LeanModels(models.AsyncModels):
    """google-genai's ``AsyncModels`` whose ``generate_content_stream`` builds and reads
    with less; anything unusual goes the SDK's own way."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        # The configs sent lately, on the wire (``request``).
        self._configs: dict[bytes, dict[str, Any]] = {}

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: types.ContentListUnion | types.ContentListUnionDict,
        config: types.GenerateContentConfigOrDict | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        if not _declarations_only(config):
            return await super().generate_content_stream(
                model=model, contents=contents, config=config
            )
        # The SDK's own loop over continuation tokens, each hop sent by the method below.
        return self._generate_content_stream_with_continuation(
            model=model, contents=contents, config=config
        )

    async def _generate_content_stream(
        self,
        *,
        model: str,
        contents: types.ContentListUnion | types.ContentListUnionDict,
        config: types.GenerateContentConfigOrDict | None = None,
    ) -> Any:  # the SDK's says Awaitable; what it gives, awaited, is the chunks' iterator
        built = request(self._api_client, model, contents, config, self._configs)
        if built is None:
            return await super()._generate_content_stream(
                model=model, contents=contents, config=config
            )
        path, body = built
        options = config.http_options if isinstance(config, types.GenerateContentConfig) else None
        stream = await self._api_client.async_request_streamed("post", path, body, options)
        return self._chunks(stream)

    async def _chunks(self, stream: Any) -> AsyncIterator[types.GenerateContentResponse]:
        from_wire = (
            models._GenerateContentResponse_from_vertex
            if self._api_client.vertexai
            else models._GenerateContentResponse_from_mldev
        )
        async for response in stream:
            read = from_wire(json.loads(response.body) if response.body else {})
            chunk = chunk_of(read)
            chunk.sdk_http_response = types.HttpResponse(headers=response.headers)
            self._api_client._verify_response(chunk)
            yield chunk


def named(model: str) -> GeminiLlm | None:
    """The gateway's Gemini for a model ``name`` ADK would give its own ``Gemini`` (a
    registry that names another class for it keeps that class); None for any other."""
    from google.adk.models.registry import LLMRegistry

    try:
        resolved = LLMRegistry.resolve(model)
    except Exception:  # unknown, or its extra is not installed: ADK says so when it runs
        return None
    return GeminiLlm(model=model) if resolved is Gemini else None


def chunk_of(read: dict[str, Any]) -> types.GenerateContentResponse:
    """A chunk (as ``_from_mldev`` / ``_from_vertex`` gave it) validated by pydantic, or,
    if it refuses, read the SDK's way (which drops the fields it does not know)."""
    try:
        return types.GenerateContentResponse.model_validate(read)
    except pydantic.ValidationError as refused:
        log.debug("a Gemini chunk is read the SDK's way: %s", refused.errors()[0]["msg"])
        return types.GenerateContentResponse._from_response(response=read, kwargs={})


def request(
    api_client: Any,
    model: str,
    contents: object,
    config: object,
    kept: dict[bytes, dict[str, Any]] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """The path and body google-genai would stream ``contents`` to ``model`` with, built
    from plain dicts; None for a request it has to build its own way. ``kept``: the
    configs this client sent lately, on the wire (``_config_on_wire``)."""
    if not (isinstance(contents, list) and contents):
        return None
    given = [content for content in contents if isinstance(content, types.Content)]
    if len(given) != len(contents):
        return None
    if not (config is None or isinstance(config, types.GenerateContentConfig)):
        return None
    if config is not None and not _built_alike(config):
        return None
    if api_client.vertexai:
        to_wire, content_to_wire = (
            models._GenerateContentConfig_to_vertex,
            models._Content_to_vertex,
        )
    else:
        to_wire, content_to_wire = models._GenerateContentConfig_to_mldev, models._Content_to_mldev
    # The SDK's ``_GenerateContentParameters_to_*``, in its order, on dicts.
    body: dict[str, Any] = {}
    setv(body, ["_url", "model"], t_model(api_client, model))
    root = {"model": model}
    body["contents"] = [
        content_to_wire(content.model_dump(exclude_none=True), body, root) for content in given
    ]
    body = _json_ready(body)
    if config is not None:
        body.update(_config_on_wire(api_client, config, root, to_wire, kept))
    path = "{model}:streamGenerateContent?alt=sse".format_map(body["_url"])
    if query := body.get("_query"):
        path = f"{path}?{urlencode(query)}"
    body.pop("config", None)
    return path, body


def _config_on_wire(
    api_client: Any,
    config: types.GenerateContentConfig,
    root: dict[str, Any],
    to_wire: Any,
    kept: dict[bytes, dict[str, Any]] | None,
) -> dict[str, Any]:
    """What ``config`` adds to a request's body, ready for JSON: its ``generationConfig``,
    and what the SDK's transformer sets beside it (the instruction, the tools, safety
    settings), in the order it sets them.

    An agent sends the same config call after call (its history is in the contents), and
    the transformer's walk over its tools' declarations is most of a request's building;
    the last ``CONFIGS_KEPT`` are kept in ``kept`` by their dump's pickle, which tells apart
    whatever the walk could write differently (``1`` from ``1.0`` and ``True``, bytes from
    text). Not kept when extra body fields are set: the SDK merges those into the body's
    own dicts, which would then be the kept ones."""
    dumped = config.model_dump(exclude_none=True, exclude=_OPTIONS)
    if kept is None or not _unmerged(api_client, config):
        kept, key = None, None
    else:
        key = _key_of(root["model"], dumped)
    if kept is not None and key in kept:
        return kept[key]
    wire: dict[str, Any] = {}
    setv(wire, ["generationConfig"], to_wire(api_client, dumped, wire, root))
    wire = _json_ready(wire)
    if kept is not None and key is not None:
        if len(kept) >= CONFIGS_KEPT:
            del kept[next(iter(kept))]
        kept[key] = wire
    return wire


def _key_of(model: str, dumped: dict[str, Any]) -> bytes | None:
    try:
        return pickle.dumps((model, dumped), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # nothing to keep it by
        return None


def _unmerged(api_client: Any, config: types.GenerateContentConfig) -> bool:
    """Whether no extra body fields will be merged into this request's body."""
    options = (getattr(api_client, "_http_options", None), config.http_options)
    return not any(getattr(option, "extra_body", None) for option in options)


def _json_ready(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the SDK makes it ready for ``json.dumps`` (key by key: each of its keys
    is made ready on its own, so a body's parts may be made ready apart)."""
    return _common.encode_unserializable_types(_common.convert_to_dict(body))


def _built_alike(config: types.GenerateContentConfig) -> bool:
    """Whether the SDK's transformers build the same from ``config`` as from its dict."""
    if not _declarations_only(config) or getattr(config, "should_return_http_response", None):
        return False
    return all(getattr(config, name, None) is None for name in _THE_SDKS_WAY)


def _declarations_only(config: object) -> bool:
    """Whether the SDK's automatic function calling and MCP sessions have nothing to do
    with ``config``: no tools, or tools that only declare (ADK runs the functions)."""
    if config is None:
        return True
    if not isinstance(config, types.GenerateContentConfig):
        return False
    return all(isinstance(tool, types.Tool) and not tool.mcp_servers for tool in config.tools or ())
