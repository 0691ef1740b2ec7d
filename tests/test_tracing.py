"""What ``gateway.tracing`` takes from the outside: the OTEL_* variables that turn traces
on, and a client's traceparent, which is honoured when valid and ignored otherwise."""

from __future__ import annotations

import time

import pytest
from opentelemetry import trace

from gateway import tracing
from tests.support.traces import named, of_threads, recorded_spans

pytestmark = pytest.mark.unit

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0eabcd01-00f067aa0ba90201-01"


def test_a_valid_traceparent_is_a_remote_parent() -> None:
    context = tracing.parent_from(TRACEPARENT)
    assert context is not None
    parent = trace.get_current_span(context).get_span_context()
    assert parent.is_remote and parent.trace_flags.sampled
    assert f"{parent.trace_id:032x}" == "4bf92f3577b34da6a3ce929d0eabcd01"
    assert f"{parent.span_id:016x}" == "00f067aa0ba90201"


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "garbage",
        42,
        ["00-4bf92f3577b34da6a3ce929d0eabcd01-00f067aa0ba90201-01"],
        "00-00000000000000000000000000000000-00f067aa0ba90201-01",
        "00-4bf92f3577b34da6a3ce929d0eabcd01-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0eabcd01-00f067aa0ba90201-01",
        "00-4BF92F3577B34DA6A3CE929D0EABCD01-00f067aa0ba90201-01",
        "00-4bf92f3577b34da6a3ce929d0eabcd01-00f067aa0ba90201-01" + "0" * 10_000,
        "00-4bf92f3577b34da6a3ce929d0eabcd01-00f067aa0ba9020-01",
        "\x00" * 55,
    ],
)
def test_anything_else_is_no_parent(value: object) -> None:
    assert tracing.parent_from(value) is None


def parent_trace() -> str | None:
    """The trace id the next run of this task continues, if any."""
    parent = tracing._parent.get()
    if parent is None:
        return None
    return f"{trace.get_current_span(parent).get_span_context().trace_id:032x}"


def test_forwarded_props_win_over_the_header_and_a_bad_one_falls_back() -> None:
    other = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-00f067aa0ba90201-01"
    tracing.asked_from(TRACEPARENT, {"traceparent": other})
    assert parent_trace() == "a" * 32
    tracing.asked_from(TRACEPARENT, {"traceparent": "garbage"})
    assert parent_trace() == TRACEPARENT[3:35]
    tracing.asked_from(None, {"traceparent": other})
    assert parent_trace() == "a" * 32
    tracing.asked_from("garbage", "not an object")
    assert parent_trace() is None


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_SERVICE_NAME": "gw"},  # names the service, asks for no exporter
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "zipkin"},
    ],
)
def test_traces_stay_off_unless_otel_asks_for_an_exporter(environ: dict[str, str]) -> None:
    assert tracing.configure(environ) is False


def test_a_commit_is_an_event_on_each_writer_still_open(caplog: pytest.LogCaptureFixture) -> None:
    """A commit serves many runs: each open writer's span gets the event; one that ended
    (its run cancelled meanwhile) gets none, and the SDK has nothing to warn about."""
    spans = recorded_spans()
    started = time.time_ns()
    ended = tracing.tracer.start_span("ended")
    ended.end()
    with tracing.tracer.start_as_current_span("open") as open_span:
        tracing.store_commit([open_span, ended], started, 3)
    finished = {span.name: span for span in spans.get_finished_spans()}
    assert finished["ended"].events == ()
    [commit] = finished["open"].events
    assert (commit.name, commit.timestamp) == ("store_commit", started)
    assert commit.attributes is not None
    assert commit.attributes["gateway.store.writes"] == 3
    assert 0 <= commit.attributes["gateway.store.commit_seconds"] < 60
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]


def test_a_tests_spans_are_its_own_threads_runs_not_a_run_another_gateway_ends_meanwhile() -> None:
    """The recorder is the process's: a run another test's gateway began earlier (its
    client gone) ends into it while this test records. ``of_threads`` keeps this test's."""
    earlier = tracing.tracer.start_span(
        "gateway_run", attributes={"gateway.thread_id": "t-earlier"}, context=None
    )
    spans = recorded_spans()
    with (
        tracing.run_span("r-mine", "t-mine", "demo"),
        tracing.tracer.start_as_current_span("invoke_agent"),
    ):
        tracing.tracer.start_span("execute_tool find_screen").end()
    earlier.end()
    with tracing.tracer.start_as_current_span("elsewhere"):
        pass
    finished = spans.get_finished_spans()
    assert len(named(finished, "gateway_run")) == 2  # what a test that counted all of them saw
    mine = of_threads(finished, "t-mine")
    assert [span.name for span in mine] == [
        "execute_tool find_screen",
        "invoke_agent",
        "gateway_run",
    ]
    assert of_threads(finished, "t-mine", "t-earlier")[-1] is named(finished, "gateway_run")[1]
