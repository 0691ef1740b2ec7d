"""ADK's own telemetry as the gateway runs it: built only for spans that record, and
without the conversation's content unless the operator asks for it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.telemetry import tracing as adk_tracing
from google.adk.telemetry._experimental_semconv import (
    GEN_AI_TOOL_DEFINITIONS,
    _operation_details_attributes_no_content,
    _resolve_tool_definitions,
    _to_any_value,
)
from google.adk.telemetry.context import ContentCapturingMode, TelemetryConfig
from google.adk.telemetry.tracing import GenerateContentSpan
from google.genai import types
from opentelemetry import trace

from gateway.adk.hosting import Hosted, runnable_app
from gateway.adk.telemetry import RUN_TELEMETRY, _named, run_telemetry, spare_unrecorded
from gateway.examples.expenses.agent import root_agent
from gateway.models.script import ScriptLlm
from tests.support.agui import new_id, tool_answer, tool_calls, user_input
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway
from tests.support.traces import (
    OtlpReceiver,
    finished_spans,
    named,
    recorded_spans,
    worker_spans,
)

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0eabcd03"
PARENT_ID = "00f067aa0ba90203"


class Untouchable:
    """A model's answer that fails any test that reads it."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"{name} was read for a span that records nothing")


@pytest.fixture(scope="module")
def collector() -> Iterator[OtlpReceiver]:
    with worker_spans() as receiver:  # where ADK's spans go from worker processes
        yield receiver


@pytest.fixture(scope="module")
async def gateway(collector: OtlpReceiver) -> RunningGateway:
    async with running_gateway() as running:
        yield running


def test_an_unrecorded_inference_is_never_described() -> None:
    """A span nobody records (no exporter, or sampled out) is not given ADK's GenAI
    attributes: the answer is not even read."""
    spare_unrecorded()
    unrecorded = GenerateContentSpan(trace.INVALID_SPAN)
    adk_tracing.trace_inference_result(None, unrecorded, Untouchable())
    adk_tracing.maybe_log_completion_details(trace.INVALID_SPAN, None, {}, {}, RUN_TELEMETRY)
    attributes: dict[str, object] = {}
    adk_tracing.set_operation_details_attributes_from_request(attributes, Untouchable())
    assert attributes == {}


# A worker process builds its Runner as the main process does, with no Engine.
WORKER_PROBE = """
from google.adk.telemetry import tracing
from gateway.adk.hosting import Hosted, runnable_app
from gateway.adk.invocation import runner_for
from gateway.adk.services import Services
from gateway.adk.workers.remote_session import RemoteSessions
from gateway.examples.expenses.agent import root_agent

class Untouchable:
    def __getattr__(self, name):
        raise AssertionError(name + " was read for a span that records nothing")

runner_for(runnable_app(Hosted(root_agent)), RemoteSessions(), Services())
attributes = {}
tracing.set_operation_details_attributes_from_request(attributes, Untouchable())
assert attributes == {}, attributes
"""


def test_a_worker_describes_no_unrecorded_inference_either() -> None:
    """A worker process, where the model calls are, spares the same work: its Runner is
    built without an Engine (profiled at 200 users, a ninth of a worker's CPU was spent
    describing requests to spans nobody recorded)."""
    done = subprocess.run(
        [sys.executable, "-c", WORKER_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_without_content_a_requests_tools_are_named_as_adk_names_them() -> None:
    """What the span keeps of a request's tools without content, made without converting
    their parameters first: the same as ADK's own no-content view."""
    parameters = types.Schema(type="OBJECT", properties={"query": types.Schema(type="STRING")})
    tools: list[types.ToolUnion] = [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(name="find", description="Finds.", parameters=parameters),
                types.FunctionDeclaration(name="bare"),
            ]
        ),
        types.Tool(google_search=types.GoogleSearch()),
    ]
    adks = {GEN_AI_TOOL_DEFINITIONS: _to_any_value(_resolve_tool_definitions(tools))}
    ours = [definition for tool in tools for definition in _named(tool)]
    assert ours == _operation_details_attributes_no_content(adks)[GEN_AI_TOOL_DEFINITIONS]


def test_content_is_captured_only_when_the_operator_asks() -> None:
    default = run_telemetry({})
    assert not default.should_add_content_to_legacy_spans
    assert not default.should_add_content_to_experimental_spans
    assert not default.should_add_content_to_logs
    legacy = run_telemetry({"ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "true"})
    assert legacy.should_add_content_to_legacy_spans


async def test_a_traced_run_says_how_the_model_answered_but_not_what(
    gateway: RunningGateway, collector: OtlpReceiver
) -> None:
    """The model call's span keeps its tokens and the tools it was offered; the messages,
    a tool's arguments and its result stay out of the trace."""
    spans = recorded_spans()
    collector.clear()
    async with gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), FLAGSHIP))
    assert tool_calls(events, "navigateToScreen")
    finished = await finished_spans(
        spans, collector, "generate_content scripted", "execute_tool find_screen"
    )
    calls = named(finished, "generate_content scripted")
    assert calls
    for call in calls:
        assert call.attributes["gen_ai.usage.output_tokens"] > 0
        assert "navigateToScreen" in call.attributes["gen_ai.tool.definitions"]
        assert not {"gen_ai.input.messages", "gen_ai.output.messages"} & set(call.attributes)
        assert "gen_ai.system_instructions" not in call.attributes
    [search] = named(finished, "execute_tool find_screen")
    assert search.attributes["gen_ai.tool.name"] == "find_screen"
    assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} & set(search.attributes)


async def test_a_sampled_out_trace_records_nothing(
    gateway: RunningGateway, collector: OtlpReceiver
) -> None:
    """A frontend whose sampler dropped its trace (flags 00) gets no span from the
    gateway or ADK, and the run is served as any other."""
    spans = recorded_spans()
    collector.clear()
    thread = new_id("t")
    unsampled = {"forwardedProps": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"}}
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, FLAGSHIP) | unsampled)
        [navigate] = tool_calls(first, "navigateToScreen")
        await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]) | unsampled)
    assert not [s for s in spans.get_finished_spans() if s.context.trace_id == int(TRACE_ID, 16)]
    assert not [s for s in collector.spans if s.trace_id == TRACE_ID]


async def test_content_a_run_asks_for_is_recorded() -> None:
    """A run whose own TelemetryConfig captures content gets ADK's spans in full: the
    request's messages and the answer, streamed, as ADK describes them."""
    spare_unrecorded()
    spans = recorded_spans()
    script = ScriptLlm.from_file(files("gateway.examples.expenses") / "script.json")
    runner = Runner(
        app=runnable_app(Hosted(root_agent, model=script)),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    telemetry = TelemetryConfig(capture_message_content=ContentCapturingMode.SPAN_ONLY)
    config = RunConfig(streaming_mode=StreamingMode.SSE, telemetry=telemetry)
    message = types.Content(role="user", parts=[types.Part(text="Show me my expenses")])
    async for _ in runner.run_async(
        user_id="u", session_id=new_id("t"), new_message=message, run_config=config
    ):
        pass
    calls = [s for s in spans.get_finished_spans() if s.name.startswith("generate_content")]
    assert len(calls) == 2  # list_expenses, then the answer
    for call in calls:
        assert "Show me my expenses" in call.attributes["gen_ai.input.messages"]
    assert "expenses" in calls[-1].attributes["gen_ai.output.messages"]
