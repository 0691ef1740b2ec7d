"""What a run leaves for the garbage collector: nothing, once ADK's telemetry scopes let
go of their contexts (``gateway.adk.telemetry.let_go_of_scopes``)."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator
from importlib.resources import files

import pytest
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.telemetry import _instrumentation, node_tracing
from google.genai import types

from gateway.adk import telemetry
from gateway.adk.hosting import Hosted, runnable_app
from gateway.adk.invocation import runner_for
from gateway.adk.services import Services
from gateway.examples.expenses.agent import root_agent
from gateway.models.script import ScriptLlm

pytestmark = pytest.mark.unit

SCRIPT = str(files("gateway.examples.expenses") / "script.json")
RUNS = 5


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector held off, so that what the runs leave is still there to count."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def one_run(runner: Runner) -> None:
    config = RunConfig(streaming_mode=StreamingMode.SSE, telemetry=telemetry.RUN_TELEMETRY)
    message = types.Content(role="user", parts=[types.Part(text="Show me my expenses")])
    async for _ in runner.run_async(
        user_id="u", session_id=uuid.uuid4().hex, new_message=message, run_config=config
    ):
        pass


async def test_a_run_leaves_no_cyclic_garbage(collector_off: None) -> None:
    """The expenses example's runs (an agent invocation and its workflow, a tool, two model
    calls) leave nothing only the collector could free: ADK's agent and workflow scopes,
    each published in a context that carries it, were a cycle a run, six objects."""
    runner = runner_for(
        runnable_app(Hosted(root_agent, model=ScriptLlm.from_file(SCRIPT))),
        InMemorySessionService(),
        Services(),
    )
    await one_run(runner)  # first-call work (imports, caches) is not a run's garbage
    gc.collect()
    for _ in range(RUNS):
        await one_run(runner)
    assert gc.collect() == 0


def test_adk_still_opens_its_scopes_where_they_are_wrapped() -> None:
    """If ADK moves where it opens a scope, or stops keeping the scope's context on it,
    this says so: the cycle would be back, or the wrapper in the way."""
    telemetry.let_go_of_scopes()
    assert isinstance(_instrumentation.record_agent_invocation, telemetry.functools.partial)
    assert isinstance(node_tracing._use_invoke_workflow_span, telemetry.functools.partial)
    assert telemetry._scopes_published()
