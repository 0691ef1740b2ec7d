"""Traces: one OpenTelemetry span per run, with ADK's own spans and the gateway's beneath it.

Theory of operation. ``configure`` installs the OpenTelemetry SDK's tracer provider with
an OTLP/HTTP exporter when the standard ``OTEL_*`` variables ask for traces (an
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER=otlp|console``); with none of them, or ``OTEL_SDK_DISABLED=true``,
nothing is installed and every span below is OpenTelemetry's no-op. A host that set a
tracer provider of its own keeps it: the gateway's spans go wherever the host's go.

A run's driver task opens the run's span, ``gateway_run`` (``run_span``), and keeps it
current for the whole run. ADK reads the current context when an invocation starts, and
every task the run starts copies it, so ADK's spans (``invoke_workflow``, ``invoke_agent``,
``generate_content {model}`` for each model call, ``execute_tool {name}``) nest under the
run, and each commit of the run's stored events is a ``store_commit`` event, with its
writes and seconds, on the span that wrote them. A browser's answer to a client tool ends
the wait its call began in the run before: the run that carries the answer records a
``client_tool_wait {name}`` span, from the call's asking to now.

A frontend's trace goes on through the gateway: the door reads a W3C ``traceparent``
from the request's headers (POST /invocations, the /ws upgrade) and from the input's
``forwardedProps.traceparent`` (one /ws connection carries many runs, each its own), and
``asked_from`` hands it to the run about to start in a context variable, as
``gateway.context.asked_by`` hands the caller. A value that is not a valid traceparent is
ignored: the run starts a trace of its own, and nobody is refused for it.

A run whose invocation runs in a worker process (``docs/multicore.md``) hands the worker
its span as a traceparent (``traceparent``); the worker, whose tracer provider exports by
the same ``OTEL_*``, starts the invocation under it (``continue_from``), so ADK's spans nest
under the run's there as here.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger(__name__)

# A proxy: it follows whichever provider is installed, before or after this import.
tracer = trace.get_tracer("gateway")

# The version-00 form of W3C Trace Context; a later version's first four fields read so too.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
# Longer than any traceparent a client means: a later version's extra fields are ignored.
_TRACEPARENT_MAX = 256
_propagator = TraceContextTextMapPropagator()

# The trace the run about to start continues, set by its door; None: a trace of its own.
_parent: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "gateway_trace_parent", default=None
)

DEFAULT_SERVICE_NAME = "agent-gateway"


def configure(environ: Mapping[str, str] = os.environ) -> bool:
    """Installs the SDK's tracer provider with the exporter ``OTEL_*`` asks for; True when
    spans are exported (by the host's provider, if it set one). ``environ`` decides whether;
    the SDK reads the exporter's own settings (headers, timeout) from the process's."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter_name = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if exporter_name == "none" or not (exporter_name or endpoint):
        return False
    if exporter_name not in ("", "otlp", "console"):
        log.warning("traces are off: OTEL_TRACES_EXPORTER=%s is not otlp or console", exporter_name)
        return False
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        log.info("traces: the host's tracer provider exports the gateway's spans")
        return True
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    exporter: SpanExporter
    if exporter_name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        exporter = ConsoleSpanExporter()
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "traces are off: OTEL_* asks for OTLP, and the exporter is not installed "
                "(pip install 'agent-gateway[otel]')"
            )
            return False
        exporter = OTLPSpanExporter()  # it reads the endpoint, headers and timeout itself
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the gateway's default name.
    named = "OTEL_SERVICE_NAME" in environ or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {"service.name": DEFAULT_SERVICE_NAME})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    where = "the console" if exporter_name == "console" else endpoint or "localhost:4318"
    log.info("traces: spans are exported to %s (OTEL_*)", where)
    return True


def flush(timeout: float = 3.0) -> None:
    """Exports the spans still batched, waiting at most ``timeout`` seconds: the server
    calls it as it shuts down, since uvicorn ends the process by the signal that stopped
    it, which runs no exit handler (the SDK's own flush among them)."""
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None and not force_flush(int(timeout * 1000)):
        log.warning("traces: spans still batched after %.0f s were dropped at shutdown", timeout)


def parent_from(traceparent: object) -> Context | None:
    """The trace a W3C ``traceparent`` names, as a parent for a span; None for anything
    that is not one (hostile or mistaken input is ignored, never refused)."""
    if not isinstance(traceparent, str) or len(traceparent) > _TRACEPARENT_MAX:
        return None
    value = traceparent.strip()
    if not _TRACEPARENT.match(value):
        return None
    context = _propagator.extract({"traceparent": value})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None  # all zeros, version ff, or a malformed tail: the propagator's rules
    return context


def asked_from(header: str | None, forwarded_props: object) -> None:
    """The run about to start in this task continues ``forwardedProps.traceparent``, else
    the request's ``traceparent`` header, else a trace of its own."""
    given = forwarded_props.get("traceparent") if isinstance(forwarded_props, dict) else None
    parent = parent_from(given) or parent_from(header)
    if parent is None and (given is not None or header is not None):
        log.debug("a traceparent that is not W3C Trace Context was ignored")
    _parent.set(parent)


def traceparent() -> str | None:
    """The current span as a W3C ``traceparent``, for work that goes on in another process
    (a worker's invocation, ``docs/multicore.md``); None when no span is recorded."""
    if current_span() is None:
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


def continue_from(traceparent: str | None) -> None:
    """Spans started from here on in this task (and the tasks it starts) are children of
    ``traceparent``'s span, another process's, if it names one. For a task of its own: the
    context it changes is the task's copy, gone with it."""
    if (parent := parent_from(traceparent)) is not None:
        otel_context.attach(parent)


@contextlib.contextmanager
def run_span(run_id: str, thread_id: str, user_id: str) -> Iterator[trace.Span]:
    """The run's span, current in the run's task to its end; its parent is the trace its
    door was asked to continue (``asked_from``), if any."""
    attributes = {
        "gateway.run_id": run_id,
        "gateway.thread_id": thread_id,
        "gen_ai.conversation.id": thread_id,
        "enduser.id": user_id,
    }
    with tracer.start_as_current_span(
        "gateway_run", context=_parent.get(), attributes=attributes
    ) as span:
        yield span


def failed(code: str) -> None:
    """Marks the current span (in a run's task, the run's) failed, with the error code its
    clients were told; the sentence stays out of the trace, as it may quote the user."""
    span = trace.get_current_span()
    span.set_attribute("error.type", str(code))
    span.set_status(trace.Status(trace.StatusCode.ERROR, str(code)))


def current_span() -> trace.Span | None:
    """The span work started now belongs to, when it is recorded; None otherwise, so that
    code that keeps it costs nothing with traces off."""
    span = trace.get_current_span()
    return span if span.is_recording() else None


def client_tool_waits(calls: Iterable[tuple[str, str, float]]) -> None:
    """Records, under the current span, the waits of client tool calls answered now: each
    ``(name, call id, asked at in epoch seconds)`` from its asking to now."""
    for name, call_id, asked_at in calls:
        attributes = {"gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id}
        span = tracer.start_span(
            f"client_tool_wait {name}", attributes=attributes, start_time=int(asked_at * 1e9)
        )
        span.end()


def store_commit(writers: Iterable[trace.Span], started_ns: int, writes: int) -> None:
    """Records one commit of ``writes`` writes, started at ``started_ns`` and ending now,
    as an event on each span whose work it committed (a commit serves many runs at once).

    An event, not a span of its own: a run's three commits as spans were three of its seven,
    and tracing's cost is per span (the SDK's on the event loop, the exporter's encoding).
    A writer's span that has ended (its run cancelled while the commit ran) takes none."""
    attributes = {
        "gateway.store.writes": writes,
        "gateway.store.commit_seconds": (time.time_ns() - started_ns) / 1e9,
    }
    for writer in writers:
        if writer.is_recording():
            writer.add_event("store_commit", attributes, started_ns)
