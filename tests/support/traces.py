"""Where a test reads the spans a gateway made: in this process, or over OTLP/HTTP.

- ``recorded_spans``: the spans of an in-process gateway (``running_gateway``). OpenTelemetry
  takes one tracer provider per process, so the first call installs an SDK provider with an
  in-memory exporter for the test process's lifetime; each call starts from an empty list.
- ``OtlpReceiver``: a tiny OTLP/HTTP collector on a loopback port, for a real
  ``agent-gateway`` process: it accepts ``POST /v1/traces`` (protobuf, gzip or not), decodes
  each request with ``opentelemetry-proto`` and keeps the spans, as a collector would.
- ``worker_spans`` and ``finished_spans``: with ``GATEWAY_WORKERS`` ADK's spans are made in
  the worker processes, which export by ``OTEL_*``; ``worker_spans`` points them at a
  receiver, and ``finished_spans`` gives this process's spans and theirs as one tree.
- ``of_threads``: the spans of a test's own threads' runs. The recorder is the process's,
  and the tests of an xdist worker share one event loop: a gateway another test left
  serving (the session's ``gateway``, a module's) goes on with runs whose client went away
  and ends their spans into it while a later test records. A test that counts runs' spans
  reads its own threads', never everything recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.budgets import eventually

_exporter: InMemorySpanExporter | None = None


def recorded_spans() -> InMemorySpanExporter:
    """This process's in-memory span exporter, emptied: what runs from now on record."""
    global _exporter
    if _exporter is None:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        _exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
    _exporter.clear()
    return _exporter


def named(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def of_threads(
    spans: tuple[ReadableSpan, ...] | list[ReadableSpan], *threads: str
) -> tuple[ReadableSpan, ...]:
    """The ``gateway_run`` spans of runs on ``threads`` and every span beneath them, in
    the order of ``spans``: what a test's own runs recorded (above)."""
    runs = {
        span.context.span_id
        for span in named(spans, "gateway_run")
        if span.context is not None
        and span.attributes is not None
        and span.attributes.get("gateway.thread_id") in threads
    }
    by_id = {s.context.span_id: s for s in spans if s.context is not None}

    def theirs(span: ReadableSpan) -> bool:
        while span.context is not None:
            if span.context.span_id in runs:
                return True
            if span.parent is None or (parent := by_id.get(span.parent.span_id)) is None:
                return False
            span = parent
        return False

    return tuple(span for span in spans if theirs(span))


def ancestors(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> Iterator[ReadableSpan]:
    """The spans above ``span`` in ``spans``, nearest first."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        found = by_id[parent.span_id]
        yield found
        parent = found.parent


@dataclasses.dataclass(frozen=True)
class ReceivedSpan:
    """One span as a collector received it, ids in lower-case hex as a traceparent has them."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    service: str
    start_ns: int = 0
    end_ns: int = 0
    events: tuple[Event, ...] = ()

    def readable(self) -> ReadableSpan:
        """The span as this process's SDK would have recorded it."""
        parent = None
        if self.parent_span_id:
            parent = _context(self.trace_id, self.parent_span_id, remote=True)
        return ReadableSpan(
            self.name,
            _context(self.trace_id, self.span_id),
            parent,
            attributes=self.attributes,
            events=self.events,
            start_time=self.start_ns,
            end_time=self.end_ns,
        )


class OtlpReceiver:
    """An OTLP/HTTP traces endpoint on loopback; ``endpoint`` is what OTEL_* takes."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver.take(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    received = ReceivedSpan(
                        span.name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                        attributes,
                        resource.get("service.name", ""),
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        tuple(
                            Event(
                                e.name,
                                {a.key: _value(a.value) for a in e.attributes},
                                e.time_unix_nano,
                            )
                            for e in span.events
                        ),
                    )
                    with self.lock:
                        self.spans.append(received)

    def clear(self) -> None:
        """Forgets the spans received so far: what comes from now on is kept."""
        with self.lock:
            self.spans.clear()

    def named(self, name: str) -> list[ReceivedSpan]:
        with self.lock:
            return [span for span in self.spans if span.name == name]

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


def _context(trace_id: str, span_id: str, remote: bool = False) -> trace.SpanContext:
    return trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=remote)


@contextlib.contextmanager
def worker_spans() -> Iterator[OtlpReceiver]:
    """A receiver the worker processes of the gateways started meanwhile export to (their
    batches sent within 50 ms); in one process it receives nothing."""
    with OtlpReceiver() as receiver, pytest.MonkeyPatch.context() as environment:
        environment.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        environment.delenv("OTEL_SERVICE_NAME", raising=False)
        environment.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        yield receiver


async def finished_spans(
    recorded: InMemorySpanExporter, workers: OtlpReceiver, *names: str
) -> tuple[ReadableSpan, ...]:
    """The spans finished since ``recorded`` and ``workers`` were emptied: this process's
    and the workers', once each of ``names`` is among them (a run's ADK spans are made
    where its invocation ran: here, or in a worker, GATEWAY_WORKERS)."""

    def found() -> tuple[ReadableSpan, ...]:
        with workers.lock:
            theirs = tuple(span.readable() for span in workers.spans)
        return recorded.get_finished_spans() + theirs

    await eventually(lambda: all(named(found(), name) for name in names), 15, what=f"spans {names}")
    return found()
