"""A run's trace as an operator's collector sees it: the run's span with its thread, run
and user, ADK's spans and the gateway's beneath it, and a frontend's trace continued from
its ``traceparent`` (a request header, or ``forwardedProps`` per run) down to a tool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator

import httpx
import pytest
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from websockets.asyncio.client import connect

from tests.support.agui import AgUiSocket, new_id, outcome, tool_answer, tool_calls, user_input
from tests.support.budgets import scaled
from tests.support.cancels import storyteller
from tests.support.flagship import FLAGSHIP, flagship_navigated_then_honest_reply
from tests.support.servers import RunningGateway, running_gateway
from tests.support.speakers import Speaker, say
from tests.support.traces import (
    OtlpReceiver,
    ancestors,
    finished_spans,
    named,
    of_threads,
    recorded_spans,
    worker_spans,
)

pytestmark = pytest.mark.server

TRACE_ID = "4bf92f3577b34da6a3ce929d0eabcd01"
PARENT_ID = "00f067aa0ba90201"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture(scope="module")
def collector() -> Iterator[OtlpReceiver]:
    with worker_spans() as receiver:  # where ADK's spans go from worker processes
        yield receiver


@pytest.fixture(scope="module")
async def gateway(collector: OtlpReceiver) -> RunningGateway:
    async with running_gateway() as running:
        yield running


# ADK's spans of a flagship run, which are made in worker processes with GATEWAY_WORKERS.
ADKS = (
    "invoke_workflow screen_navigator",
    "invoke_agent screen_navigator",
    "generate_content scripted",
    "execute_tool find_screen",
    "execute_tool navigateToScreen",
)


def run_span(spans: tuple[ReadableSpan, ...], run_id: str) -> ReadableSpan:
    [found] = [s for s in named(spans, "gateway_run") if s.attributes["gateway.run_id"] == run_id]
    return found


def first_trace(spans: tuple[ReadableSpan, ...]) -> set[str]:
    """The names of the spans in the trace of the first run among ``spans``."""
    runs = named(spans, "gateway_run")
    if not runs:
        return set()
    return {s.name for s in spans if s.context.trace_id == runs[0].context.trace_id}


def under(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> list[str]:
    return [s.name for s in ancestors(span, spans)]


async def test_the_flagship_story_traced_by_name(
    gateway: RunningGateway, collector: OtlpReceiver
) -> None:
    """Each run of the flagship is one span with its thread, run and user; the model calls,
    the tools and the store's commits are beneath it, and the browser's answer records how
    long navigateToScreen waited for it."""
    spans = recorded_spans()
    collector.clear()
    thread = await flagship_navigated_then_honest_reply(gateway)
    finished = of_threads(await finished_spans(spans, collector, *ADKS), thread)
    # The first run's ADK spans may come from a worker whose exporter sends them after the
    # second run's (GATEWAY_WORKERS): wait for that run's trace itself to have them all.
    for _ in range(300):  # 15 s at most; finished_spans waits 15 s for the names as well
        if set(ADKS) <= first_trace(finished):
            break
        await asyncio.sleep(0.05)
        finished = of_threads(await finished_spans(spans, collector, *ADKS), thread)
    first, second = named(finished, "gateway_run")
    assert first.attributes["enduser.id"] == second.attributes["enduser.id"] == "demo"
    assert first.attributes["gateway.thread_id"] == second.attributes["gateway.thread_id"]
    assert first.attributes["gateway.run_id"] != second.attributes["gateway.run_id"]
    assert first.parent is None and second.parent is None  # nobody asked to continue a trace
    in_first = [s for s in finished if s.context.trace_id == first.context.trace_id]
    names = {s.name for s in in_first}
    assert set(ADKS) <= names
    for name in ("generate_content scripted", "execute_tool navigateToScreen"):
        for span in named(in_first, name):
            assert under(span, finished)[-1] == "gateway_run", name
    # Each commit of the run's stored events is an event on the span that wrote them.
    commits = [(s, e) for s in in_first for e in s.events if e.name == "store_commit"]
    assert commits
    for span, commit in commits:
        assert [span.name, *under(span, finished)][-1] == "gateway_run"
        assert span.start_time <= commit.timestamp <= span.end_time
        assert commit.attributes["gateway.store.writes"] >= 1
        assert 0 <= commit.attributes["gateway.store.commit_seconds"] < scaled(5)
    [wait] = named(finished, "client_tool_wait navigateToScreen")
    assert wait.context.trace_id == second.context.trace_id
    assert under(wait, finished) == ["gateway_run"]
    # From the call's asking, in the first run, to the run its answer started.
    assert first.start_time <= wait.start_time <= first.end_time
    assert wait.end_time >= second.start_time


async def test_a_traceparent_on_the_upgrade_continues_to_the_browser_tool(
    gateway: RunningGateway, collector: OtlpReceiver
) -> None:
    spans = recorded_spans()
    collector.clear()
    headers = {"traceparent": TRACEPARENT}
    thread = new_id("t")
    async with connect(gateway.ws_url(), additional_headers=headers, max_size=None) as ws:
        events = await AgUiSocket(ws).run(user_input(thread, FLAGSHIP))
    assert tool_calls(events, "navigateToScreen")
    finished = await finished_spans(spans, collector, "execute_tool navigateToScreen")
    finished = of_threads(finished, thread)
    [tool] = named(finished, "execute_tool navigateToScreen")
    assert f"{tool.context.trace_id:032x}" == TRACE_ID
    assert under(tool, finished)[-1] == "gateway_run"
    [run] = named(finished, "gateway_run")
    assert run.parent is not None and f"{run.parent.span_id:016x}" == PARENT_ID
    assert run.parent.is_remote


async def test_forwarded_props_name_each_runs_trace_on_one_connection(
    gateway: RunningGateway,
) -> None:
    """Each run follows its own input's ``forwardedProps.traceparent``, over the header's;
    a run without one goes back to the header's."""
    spans = recorded_spans()
    thread = new_id("t")
    traces = ["a" * 32, "b" * 32]
    async with connect(
        gateway.ws_url(), additional_headers={"traceparent": TRACEPARENT}, max_size=None
    ) as raw:
        ws = AgUiSocket(raw)
        first = await ws.run(
            user_input(thread, FLAGSHIP)
            | {"forwardedProps": {"traceparent": f"00-{traces[0]}-{PARENT_ID}-01"}}
        )
        [navigate] = tool_calls(first, "navigateToScreen")
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
        await ws.run(answer | {"forwardedProps": {"traceparent": f"00-{traces[1]}-{PARENT_ID}-01"}})
        third = await ws.run(user_input(thread, "고마워"))
    assert outcome(third)["type"] == "success"
    finished = of_threads(spans.get_finished_spans(), thread)
    runs = named(finished, "gateway_run")
    assert [f"{run.context.trace_id:032x}" for run in runs] == [*traces, TRACE_ID]
    [wait] = named(finished, "client_tool_wait navigateToScreen")
    assert f"{wait.context.trace_id:032x}" == traces[1]
    assert wait.attributes["gen_ai.tool.call.id"] == navigate["id"]


async def test_a_traceparent_header_on_invocations_is_the_runs_parent(
    gateway: RunningGateway, collector: OtlpReceiver
) -> None:
    spans = recorded_spans()
    collector.clear()
    run_input = user_input(new_id("t"), FLAGSHIP)
    async with httpx.AsyncClient(timeout=scaled(20)) as client:
        response = await client.post(
            gateway.http + "/invocations",
            json=run_input,
            headers={"X-Gateway-User": "demo", "traceparent": TRACEPARENT},
        )
    assert response.status_code == 200
    finished = await finished_spans(spans, collector, "execute_tool find_screen")
    run = run_span(finished, run_input["runId"])
    assert f"{run.context.trace_id:032x}" == TRACE_ID
    assert run.parent is not None and f"{run.parent.span_id:016x}" == PARENT_ID
    [tool] = named(finished, "execute_tool find_screen")
    assert tool.context.trace_id == run.context.trace_id


@pytest.mark.parametrize(
    "traceparent",
    [
        "garbage",
        f"00-{'0' * 32}-{PARENT_ID}-01",  # an all-zero trace id
        f"00-{TRACE_ID}-{'0' * 16}-01",  # an all-zero parent id
        f"ff-{TRACE_ID}-{PARENT_ID}-01",  # the version W3C forbids
        f"00-{TRACE_ID.upper()}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{PARENT_ID}-01" + "-x" * 5000,
        12345,
        {"nested": TRACEPARENT},
        None,
    ],
)
async def test_a_malformed_traceparent_is_ignored_never_refused(
    gateway: RunningGateway, traceparent: object
) -> None:
    spans = recorded_spans()
    run_input = user_input(new_id("t"), FLAGSHIP) | {"forwardedProps": {"traceparent": traceparent}}
    headers = {"traceparent": traceparent} if isinstance(traceparent, str) else {}
    async with connect(gateway.ws_url(), additional_headers=headers, max_size=None) as ws:
        events = await AgUiSocket(ws).run(run_input)
    assert outcome(events)["type"] == "success"
    run = run_span(spans.get_finished_spans(), run_input["runId"])
    assert run.parent is None  # a trace of its own


class Broken(Speaker):
    """A model whose every call fails before it says anything."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        raise RuntimeError("the model broke, with words the user wrote")
        yield LlmResponse()  # an async generator, as ADK calls it


async def test_a_failed_runs_span_says_the_code_its_clients_were_told() -> None:
    async with running_gateway(agent=storyteller(Broken(turns=[[say("never")]]))) as gateway:
        spans = recorded_spans()
        async with gateway.socket() as ws:
            run_input = user_input(new_id("t"), "tell me a story", tools=[])
            events = await ws.run(run_input)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AGENT_ERROR"
    run = run_span(spans.get_finished_spans(), run_input["runId"])
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "AGENT_ERROR"
    assert run.attributes["error.type"] == "AGENT_ERROR"
    assert "words the user wrote" not in str(dict(run.attributes))
