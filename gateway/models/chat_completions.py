"""An ``openai/<model>``'s requests sent as ADK builds them, and its chunks read, with the
least of the SDK's own work in their way.

ADK's ``OpenAILlm`` builds a chat completion's parameters as plain JSON values (dicts,
lists, strings) and calls ``client.chat.completions.create(**parameters)``. Before it
sends, the SDK's ``create`` walks every value against the parameters' typed dicts, to
rename a key that has an alias and format a date or a file: chat completions' parameters
have neither, so the walk gives back what it was given. It is still the largest part of
the time between the model call and its request leaving: ~0.7 ms a call for the demo's
four tools on a quiet 2-core machine, a few ms under load, and more as a thread's history
grows, all of it before the first token can start (``scripts/bench_providers.py``).

``ChatCompletionsClient`` is the SDK's ``AsyncOpenAI`` whose ``chat.completions.create``
sends such parameters as they are, through the client's own ``post`` (the SDK's way to
send a request it has no method for): the same URL, body, headers, timeouts, errors
(``APIStatusError`` and the rest, which ``gateway.models.failures`` reads) and the same
stream framing. Which parameters qualify is read once from the SDK's own types
(``sent_as_is``), so an SDK that one day renames or formats one sends it its own way
again; a call with anything else (``extra_headers``, a parameter that has an alias)
goes through ``create`` as before.

Its streamed chunks are built with less, too: the SDK builds each one with its own
lenient ``construct``, ~150 µs a chunk in Python that every chunk waits
for on its way to the person; pydantic's validator builds the same ``ChatCompletionChunk``
in ~10 µs (``Chunk``). A chunk it refuses (a provider's own finish reason, a field of
the wrong type) is built the SDK's way, as before, so nothing a provider sends is read
differently; SSE framing, ``[DONE]`` and a provider's error event stay the SDK's.

Its body goes out as the SDK writes it (``openapi_dumps``: UTF-8, no spaces), encoded by
msgspec instead of the standard library's ``json`` with the SDK's encoder class: the same
bytes for the plain values ADK builds (a number with an exponent is written ``1e-7`` where
``json`` writes ``1e-07``), ~0.1 ms sooner on the way to the first byte (~25 µs in a warm
loop, four times that between two runs' worth of other work). A body with anything else in
it (an object only the SDK's encoder knows, a number JSON cannot say, which the SDK refuses)
is the SDK's to encode, as before, and so is every body of a client with a provider runtime
(which may rewrite a request's body before it goes).

And each request's URL is the base URL joined with the same path: the SDK parses the path
and builds the joined URL again for every request (~0.1 ms before the first byte can
leave, httpx's URL parsing); ``ChatCompletionsClient`` keeps the last one it built, for as
long as its base URL stays the same.
"""

from __future__ import annotations

import functools
import logging
import math
import typing
from typing import Any

import httpx
import msgspec
import pydantic
import typing_extensions
from openai import AsyncOpenAI, AsyncStream, RequestOptions
from openai._compat import cached_property
from openai._models import construct_type
from openai.resources.chat import AsyncChat, AsyncCompletions
from openai.resources.chat.completions.completions import validate_response_format
from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params

__all__ = ["ChatCompletionsClient", "Chunk", "encoded", "sent_as_is"]

log = logging.getLogger(__name__)

# What ``create`` adds to a request's options besides the defaults: the key alone, as an
# admin key set in the environment would otherwise go out too. An SDK whose requests
# have no such options takes none.
_OPTIONS: RequestOptions = (
    {"security": {"bearer_auth": True}} if "security" in RequestOptions.__annotations__ else {}
)


class ChatCompletionsClient(AsyncOpenAI):
    """``AsyncOpenAI`` whose chat completions go out as ADK built them."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        sent_as_is()  # read now (~8 ms), not in the way of a person's first request
        # The last URL prepared: the base URL it was joined to, the path, the URL.
        self._prepared: tuple[httpx.URL, str, httpx.URL] | None = None

    def _prepare_url(self, url: str) -> httpx.URL:
        prepared = self._prepared
        # The base URL may be replaced (``client.base_url = ...``): then it is joined again.
        if prepared is not None and prepared[0] is self._base_url and prepared[1] == url:
            return prepared[2]
        joined = super()._prepare_url(url)
        self._prepared = (self._base_url, url, joined)
        return joined

    @cached_property
    def chat(self) -> AsyncChat:
        return _Chat(self)

    @property
    def user_agent(self) -> str:
        # The SDK names its client class here; a provider sees the SDK's usual name.
        return super().user_agent.replace(type(self).__name__, AsyncOpenAI.__name__, 1)


class _Chat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:
        return _Completions(self._client)


class _Completions(AsyncCompletions):
    async def create(self, **parameters: Any) -> Any:
        if not parameters.keys() <= sent_as_is():
            others = sorted(parameters.keys() - sent_as_is())
            log.debug("a chat completion with %s goes the SDK's own way", ", ".join(others))
            return await super().create(**parameters)
        validate_response_format(parameters.get("response_format"))
        stream = bool(parameters.get("stream"))
        # A provider runtime may rewrite the body as a mapping: it gets the parameters.
        rewritten = getattr(self._client, "_provider_runtime", None) is not None
        body = parameters if rewritten else encoded(parameters)
        # Bytes go as the request's content, where the SDK sends them as they are (as
        # bytes given as ``body``, which it sends the same but warns of at every request).
        sent = {"content": body} if isinstance(body, bytes) else {"body": body}
        return await self._client.post(
            "/chat/completions",
            **sent,
            options=_OPTIONS,
            cast_to=ChatCompletion,
            stream=stream,
            stream_cls=AsyncStream[Chunk],
        )


class Chunk:
    """How a stream's chunk is built: the SDK's streams build theirs with a class's
    ``build`` when it has one (its ``ModelBuilderProtocol``)."""

    @classmethod
    def build(cls, *, response: httpx.Response, data: object) -> ChatCompletionChunk | Any:
        try:
            return ChatCompletionChunk.model_validate(data)
        except pydantic.ValidationError as refused:  # the SDK's way takes what pydantic won't
            log.debug("a chunk is built the SDK's way: %s", refused.errors()[0]["msg"])
            return construct_type(type_=ChatCompletionChunk, value=data)


def encoded(parameters: dict[str, Any]) -> dict[str, Any] | bytes:
    """The request's body as the SDK's ``openapi_dumps`` writes it, or ``parameters`` as
    they are for the SDK to encode when msgspec cannot say the same: an object it does not
    know, or a number that is not finite among the parameters (the SDK refuses those,
    where msgspec would write ``null``)."""
    if any(isinstance(value, float) and not math.isfinite(value) for value in parameters.values()):
        return parameters
    try:
        return msgspec.json.encode(parameters)
    except (TypeError, ValueError, OverflowError):
        return parameters


@functools.cache
def sent_as_is(
    parameters: type = completion_create_params.CompletionCreateParamsStreaming,
) -> frozenset[str]:
    """The ``parameters`` (a typed dict of the SDK's) its walk passes through unchanged:
    no alias and no format anywhere in their types."""
    hints = typing.get_type_hints(parameters, include_extras=True)
    return frozenset(name for name, hint in hints.items() if _unchanged(hint, set()))


def _unchanged(hint: Any, seen: set[Any]) -> bool:
    """Whether values of ``hint`` come out of the SDK's walk as they went in."""
    for said in getattr(hint, "__metadata__", ()):  # Annotated[..., PropertyInfo(...)]
        if getattr(said, "alias", None) or getattr(said, "format", None):
            return False
    if typing_extensions.is_typeddict(hint):
        if hint in seen:
            return True
        seen.add(hint)
        hints = typing.get_type_hints(hint, include_extras=True).values()
        return all(_unchanged(inner, seen) for inner in hints)
    return all(_unchanged(inner, seen) for inner in typing.get_args(hint))
