"""ADK's own telemetry, built only for a span that records it, and without content by default.

Theory of operation. ADK (2.13) describes each model call in OpenTelemetry's GenAI terms
whether or not anyone records the span it describes: as the call starts it converts the
whole request (every message, the system instruction, each tool's JSON schema) into
attribute values, and for each streamed chunk it converts the answer so far again. With
no tracer provider installed, or for a span the sampler dropped, the span does not record
and all of it is thrown away; and when message content is not captured, the answer's
messages are thrown away at the span's end even from a span that records. Profiled on the
expenses example, that work was a fifth of a plain Runner's CPU per run.

``spare_unrecorded`` wraps the functions of ``google.adk.telemetry.tracing`` that do it
(ADK calls them through that module, so replacing them there reaches every call), and
``use_inference_span`` so that the request's builder knows the run's setting:

- ``trace_inference_result``, each chunk: nothing for a span that does not record, nor for
  a chunk of text when its text is not kept and it carries no finish reason, tokens, cache
  or grounding;
- ``set_operation_details_attributes_from_request``, each call: only under a recording span,
  and only the tool definitions when the run's ``TelemetryConfig`` captures no content (the
  messages would be dropped at the span's end; converting them grows with the thread);
- ``set_operation_details_attributes_from_response``, each chunk: the answer's messages only
  when the run's ``TelemetryConfig`` captures content (logs or spans), else the finish
  reasons and token counts alone, which is all ADK keeps of it then;
- ``maybe_log_completion_details``, each call's end: nothing for a span that does not record.

What a recording span carries is unchanged. The sampler is honoured before any of it is
built, since a sampled-out span is one that does not record. The wrapping is the
process's: a host's own Runners are spared the same work, and lose nothing a recording
span would carry (only ADK's completion log record for a call whose span does not record).

``let_go_of_scopes`` breaks the one reference cycle a run leaves behind. ADK publishes each
agent invocation's and each workflow's scope (its token totals) in an OpenTelemetry
context that carries the scope itself, kept on the scope (``scope.otel_context``): a cycle
a run, six objects the collector alone can free, the only cyclic garbage of a gateway's
process (docs/first-event.md, session 51). As each scope's block ends, after ADK has
flushed its metrics, the scope's context goes back to the empty one it was made with, and
the run's scopes, contexts and token totals are freed as the run lets go of them.

``RUN_TELEMETRY`` is the ``RunConfig.telemetry`` of every run the gateway starts, its
environment read once (left unset, ADK reads seven variables again for each streamed
chunk). Message content stays out of ADK's spans (tool arguments and results, prompts and
answers) unless the operator asks for it with OpenTelemetry's
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` or ADK's
``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS``: a trace is read by more people than a thread.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

from google.adk.telemetry import _instrumentation as adk_instrumentation
from google.adk.telemetry import node_tracing as adk_node_tracing
from google.adk.telemetry import tracing as adk_tracing
from google.adk.telemetry._experimental_semconv import (
    _build_response_common_attributes,
    _resolve_tool_definitions,
)
from google.adk.telemetry.context import (
    ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS,
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    ContentCapturingMode,
    TelemetryConfig,
)
from google.genai import types
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_TOOL_DEFINITIONS,
)

log = logging.getLogger(__name__)

# The variables by which an operator asks for message content in ADK's telemetry.
CONTENT_VARIABLES = (
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS,
)


def run_telemetry(environ: Mapping[str, str] = os.environ) -> TelemetryConfig:
    """ADK's telemetry settings for the gateway's runs: content captured only if
    ``environ`` asks for it by one of ``CONTENT_VARIABLES`` (then ADK reads them)."""
    if any(name in environ for name in CONTENT_VARIABLES):
        return TelemetryConfig()
    return TelemetryConfig(capture_message_content=ContentCapturingMode.NO_CONTENT)


RUN_TELEMETRY = run_telemetry()
# What ADK falls back to for a run that names no TelemetryConfig.
_DEFAULT = TelemetryConfig()

# Whether the call being recorded keeps its messages: set, from the run's TelemetryConfig,
# as its span opens and around each ``trace_inference_result``; read by the builders.
_content_kept: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "gateway_adk_content_kept", default=True
)

# What each wrapped name was before ``spare_unrecorded``; its keys, what was wrapped.
_originals: dict[str, Callable[..., Any]] = {}


def _recording(span: Any) -> bool:
    inner = getattr(span, "span", span)  # ADK's GenerateContentSpan holds the span
    return inner is not None and bool(inner.is_recording())


def _keeps(config: TelemetryConfig) -> tuple[bool, bool]:
    """Whether ``config`` keeps the answer's messages, and whether it logs every chunk
    (ADK's stable semantic conventions do; the experimental ones, its default, do not)."""
    content = config.should_add_content_to_logs or config.should_add_content_to_experimental_spans
    return content, not config.should_use_experimental_genai_semconv


# Every run the gateway starts carries RUN_TELEMETRY: its answers, worked out once
# (each property of a TelemetryConfig is a few pydantic lookups, for each chunk).
_RUN_KEEPS = _keeps(RUN_TELEMETRY)


def _says_more(llm_response: Any) -> bool:
    """Whether a chunk carries what ADK records of it even without content: why the model
    stopped, tokens, a context cache or grounding."""
    return (
        llm_response.finish_reason is not None
        or llm_response.usage_metadata is not None
        or getattr(llm_response, "cache_metadata", None) is not None
        or getattr(llm_response, "grounding_metadata", None) is not None
    )


def _keeps_for(invocation_context: Any) -> tuple[bool, bool]:
    """``_keeps`` for the run's TelemetryConfig."""
    config = getattr(getattr(invocation_context, "run_config", None), "telemetry", None)
    return _RUN_KEEPS if config is RUN_TELEMETRY else _keeps(config or _DEFAULT)


class _InferenceSpan:
    """ADK's ``use_inference_span``, entered with the run's content setting known to the
    request's builder (``_from_request``), which runs as the span opens."""

    def __init__(
        self,
        original: Callable[..., Any],
        llm_request: Any,
        invocation_context: Any,
        model_response_event: Any,
    ) -> None:
        self._span = original(llm_request, invocation_context, model_response_event)
        self._content = _keeps_for(invocation_context)[0]

    async def __aenter__(self) -> Any:
        token = _content_kept.set(self._content)
        try:
            return await self._span.__aenter__()
        finally:
            _content_kept.reset(token)

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._span.__aexit__(*exc_info)


def _trace_inference_result(
    original: Callable[..., None], invocation_context: Any, span: Any, llm_response: Any
) -> None:
    if not _recording(span):
        return
    content, every_chunk = _keeps_for(invocation_context)
    if not (content or every_chunk or _says_more(llm_response)):
        return  # a streamed chunk of text, whose text is not kept: nothing to record
    token = _content_kept.set(content)
    try:
        original(invocation_context, span, llm_response)
    finally:
        _content_kept.reset(token)


def _from_request(original: Callable[..., None], attributes: Any, llm_request: Any) -> None:
    # ADK calls it with the call's generate_content span current.
    if not trace.get_current_span().is_recording():
        return
    if _content_kept.get():
        original(attributes, llm_request)
    else:  # the tools' names and kinds are all ADK keeps of a request without content
        tools = [_named(tool) for tool in llm_request.config.tools or []]
        attributes[GEN_AI_TOOL_DEFINITIONS] = [entry for entry in chain(*tools) if entry]


def _named(tool: Any) -> list[dict[str, Any]]:
    """A tool's definitions as ADK keeps them without content: each function's name and
    description, and the kind of each other tool (``google_search``...); their parameters,
    which ADK would convert and then drop, are left out from the start."""
    if not isinstance(tool, types.Tool):
        return [dict(definition) for definition in _resolve_tool_definitions([tool])]
    named = [
        {
            "name": declaration.name or type(declaration).__name__,
            "description": declaration.description,
            "parameters": None,
            "type": "function",
        }
        for declaration in tool.function_declarations or ()
    ]
    kinds = [name for name in type(tool).model_fields if name != "function_declarations"]
    return named + [{"name": k, "type": k} for k in kinds if getattr(tool, k) is not None]


def _from_response(
    original: Callable[..., None], llm_response: Any, attributes: Any, common: Any
) -> None:
    if _content_kept.get():
        original(llm_response, attributes, common)
    else:
        common.update(_build_response_common_attributes(llm_response))


def _completion_details(original: Callable[..., None], span: Any, *args: Any) -> None:
    if _recording(span):
        original(span, *args)


_WRAPPERS: dict[str, Callable[..., Any]] = {
    "use_inference_span": _InferenceSpan,
    "trace_inference_result": _trace_inference_result,
    "set_operation_details_attributes_from_request": _from_request,
    "set_operation_details_attributes_from_response": _from_response,
    "maybe_log_completion_details": _completion_details,
}


def spare_unrecorded() -> None:
    """Wraps ADK's attribute builders so that they work only for what is recorded; once
    per process, whoever calls it first (``runner_for`` does, in a worker too)."""
    if _originals:
        return
    for name, wrapper in _WRAPPERS.items():
        original = getattr(adk_tracing, name, None)
        if original is None:  # another ADK: its telemetry is left as it is
            log.debug("ADK's telemetry has no %s: left as it is", name)
            continue
        _originals[name] = original
        setattr(adk_tracing, name, functools.partial(wrapper, original))


# What a scope's context is before ADK publishes it, and again once its block has ended.
_UNPUBLISHED = Context()


def _unpublished(scope: Any) -> None:
    if scope is not None and getattr(scope, "otel_context", None) is not None:
        scope.otel_context = _UNPUBLISHED


class _AgentInvocation:
    """ADK's ``record_agent_invocation``, whose scope lets go of its context as it ends."""

    def __init__(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._block = original(*args, **kwargs)
        self._scope: Any = None

    async def __aenter__(self) -> Any:
        self._scope = await self._block.__aenter__()
        return self._scope

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self._block.__aexit__(*exc_info)
        finally:
            _unpublished(self._scope)


class _WorkflowSpan:
    """ADK's ``_use_invoke_workflow_span``, whose scope lets go of its context as it ends."""

    def __init__(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._block = original(*args, **kwargs)
        self._scope: Any = None

    def __enter__(self) -> Any:
        _span, context = entered = self._block.__enter__()
        self._scope = adk_instrumentation._workflow_scope(context)
        return entered

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self._block.__exit__(*exc_info)
        finally:
            _unpublished(self._scope)


# Where each scope is opened: ADK calls both through their modules, so replacing them
# there reaches every call (``record_invocation`` and the workflow nodes, the agents).
_SCOPES: dict[tuple[Any, str], Callable[..., Any]] = {
    (adk_instrumentation, "record_agent_invocation"): _AgentInvocation,
    (adk_node_tracing, "_use_invoke_workflow_span"): _WorkflowSpan,
}


# What each wrapped opener was before ``let_go_of_scopes``, by module and name.
_scope_originals: dict[str, Callable[..., Any]] = {}


def let_go_of_scopes() -> None:
    """Wraps where ADK opens its agents' and workflows' scopes so that each lets go of
    its context as it ends; once per process (``runner_for`` calls it, in a worker too)."""
    if _scope_originals:
        return
    if not _scopes_published():
        log.debug("ADK's telemetry keeps no scope on its context: left as it is")
        return
    for (module, name), wrapper in _SCOPES.items():
        original = getattr(module, name, None)
        if original is None:
            log.debug("ADK's telemetry has no %s.%s: left as it is", module.__name__, name)
            continue
        _scope_originals[f"{module.__name__}.{name}"] = original
        setattr(module, name, functools.partial(wrapper, original))


def _scopes_published() -> bool:
    """Whether the installed ADK keeps each scope's context on the scope, and finds a
    workflow's scope in its context, as ``let_go_of_scopes`` expects."""
    kinds = ("_AgentInvocationScope", "_WorkflowScope")
    return callable(getattr(adk_instrumentation, "_workflow_scope", None)) and all(
        "otel_context"
        in getattr(getattr(adk_instrumentation, kind, None), "__dataclass_fields__", {})
        for kind in kinds
    )
