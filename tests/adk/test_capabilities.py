"""GET /capabilities: AG-UI 1.0's AgentCapabilities, read from the hosted agent and the
settings, so a frontend can tell before a run what it may use: client tools, approvals,
state, reasoning, sub-agents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from ag_ui.core import AgentCapabilities
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.planners import BuiltInPlanner
from google.adk.tools import FunctionTool, LongRunningFunctionTool
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from pydantic import BaseModel

from gateway.adk.capabilities import document
from gateway.config import Settings
from gateway.tools.catalog import ToolEntry, from_entries
from gateway.translate.predictions import Prediction
from tests.support.servers import RunningGateway, running_gateway
from tests.support.tokens import AUDIENCE, ISSUER, SECRET, token

pytestmark = pytest.mark.unit

JWT = {"auth": "jwt", "jwt_secret": SECRET, "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE}
MODEL = "gemini-2.5-flash"  # named, never called: the document is read from the tree


def accepted(doc: dict[str, Any]) -> AgentCapabilities:
    """The official model takes the document, and finds no key it does not know."""
    model = AgentCapabilities.model_validate(doc)

    def no_extras(value: BaseModel, where: str) -> None:
        assert not value.model_extra, f"{where}: unknown to AG-UI 1.0: {value.model_extra}"
        for name in type(value).model_fields:
            child = getattr(value, name)
            for item in child if isinstance(child, list) else [child]:
                if isinstance(item, BaseModel):
                    no_extras(item, f"{where}.{name}")

    no_extras(model, "capabilities")
    return model


def submit(expense_id: str) -> dict[str, str]:
    """Submits an expense."""
    return {"submitted": expense_id}


def look_up(order_id: str) -> dict[str, str]:
    """Looks an order up."""
    return {"order": order_id}


class TextOnly(BaseLlm):
    """A model with no live connection (``BaseLlm.connect`` as it is)."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        raise NotImplementedError
        yield


def caps(root: BaseAgent, settings: Settings | None = None, **options: Any) -> AgentCapabilities:
    doc = document(root, options.get("catalog"), settings or Settings(), services={})
    return accepted(doc)


def test_a_bare_agent_offers_client_tools_and_nothing_it_does_not_have() -> None:
    got = caps(LlmAgent(name="plain", model=MODEL))
    assert got.tools and got.tools.client_provided and got.tools.items == []
    assert got.human_in_the_loop and got.human_in_the_loop.approvals is False
    assert got.reasoning and got.reasoning.supported is False
    assert got.state and got.state.deltas is False and got.state.snapshots is True
    assert got.multi_agent and got.multi_agent.supported is False
    assert got.transport and got.transport.streaming and got.transport.websocket
    assert got.identity and got.identity.name == "plain"


def test_a_tool_that_needs_confirmation_means_approvals() -> None:
    agent = LlmAgent(
        name="expenses",
        model=MODEL,
        tools=[FunctionTool(submit, require_confirmation=True), look_up],
    )
    got = caps(agent)
    assert got.human_in_the_loop and got.human_in_the_loop.approvals
    assert got.human_in_the_loop.interrupts
    assert got.tools and got.tools.items is not None
    assert [tool.name for tool in got.tools.items] == ["submit", "look_up"]
    assert got.tools.items[0].parameters["required"] == ["expense_id"]
    assert got.state and got.state.deltas  # a tool can write state through its context
    no_confirmation = caps(LlmAgent(name="orders", model=MODEL, tools=[look_up]))
    assert no_confirmation.human_in_the_loop
    assert no_confirmation.human_in_the_loop.approvals is False


@pytest.mark.parametrize("where", ["config", "planner"])
def test_a_model_asked_for_its_thoughts_means_reasoning(where: str) -> None:
    thinking = types.ThinkingConfig(include_thoughts=True)
    if where == "config":
        options: dict[str, Any] = {
            "generate_content_config": types.GenerateContentConfig(thinking_config=thinking)
        }
    else:
        options = {"planner": BuiltInPlanner(thinking_config=thinking)}
    got = caps(LlmAgent(name="thinker", model=MODEL, **options))
    assert got.reasoning and got.reasoning.supported and got.reasoning.streaming


def test_sub_agents_and_agent_tools_are_listed() -> None:
    specialist = LlmAgent(name="order_desk", model=MODEL, description="Tracks orders.")
    helper = LlmAgent(name="translator", model=MODEL, description="Translates.")
    root = LlmAgent(
        name="help_desk", model=MODEL, sub_agents=[specialist], tools=[AgentTool(helper)]
    )
    got = caps(root)
    assert got.multi_agent and got.multi_agent.supported
    assert got.multi_agent.handoffs and got.multi_agent.delegation
    listed = [(s.name, s.description) for s in got.multi_agent.subagents or []]
    assert listed == [("order_desk", "Tracks orders."), ("translator", "Translates.")]


def test_a_catalog_without_client_tools_accepts_none() -> None:
    server_only = from_entries(
        [
            ToolEntry(
                name="look_up",
                description="Looks an order up.",
                parameters={"type": "object", "properties": {}},
                executor="server:tests.adk.test_capabilities:look_up",
            )
        ]
    )
    got = caps(LlmAgent(name="orders", model=MODEL), catalog=server_only)
    assert got.tools and got.tools.client_provided is False


def test_an_agent_with_no_model_takes_no_tools() -> None:
    class Echo(BaseAgent):
        """Code of its own: it may write state, and offers no model to call tools."""

    got = caps(Echo(name="echo"))
    assert got.tools and got.tools.supported is False and got.tools.client_provided is False
    assert got.state and got.state.deltas


def test_the_settings_show_in_the_gateways_own_part() -> None:
    got = caps(LlmAgent(name="plain", model=MODEL), Settings(busy="enqueue", sse_abort="keep"))
    assert got.custom is not None
    assert got.custom["gateway"]["busy"] == "enqueue"
    assert got.custom["gateway"]["sseAbort"] == "keep"


def open_ticket(purpose: str) -> dict[str, str]:
    """Opens a ticket a person decides later."""
    return {"status": "pending"}


def test_long_running_tools_and_who_may_answer_them_are_told() -> None:
    """A frontend learns which calls end a run pending, and whether a backend may answer."""
    agent = LlmAgent(name="desk", model=MODEL, tools=[LongRunningFunctionTool(open_ticket)])
    closed = caps(agent).custom
    opened = caps(agent, Settings(service_token="s" * 32)).custom
    assert closed is not None and opened is not None
    assert closed["gateway"]["longRunningTools"] == ["open_ticket"]
    assert closed["gateway"]["toolResults"] is False and opened["gateway"]["toolResults"]
    plain = caps(LlmAgent(name="plain", model=MODEL)).custom
    assert plain is not None and plain["gateway"]["longRunningTools"] == []


def test_predictive_state_and_client_state_scopes_are_told() -> None:
    predictions = (Prediction("document", "write_document", "document"),)
    doc = document(
        LlmAgent(name="writer", model=MODEL),
        None,
        Settings(client_state="session,user"),
        services={},
        predictions=predictions,
    )
    custom = accepted(doc).custom
    assert custom is not None
    assert custom["gateway"]["predictState"] == [
        {"state_key": "document", "tool": "write_document", "tool_argument": "document"}
    ]
    assert custom["gateway"]["clientState"] == ["session", "user"]


def test_a2ui_support_is_told_as_a_client_needs_it() -> None:
    """What a client reads to advertise its catalog (the context entry's description and
    the basic catalog's ids) and to send a press back, the same for any agent."""
    got = caps(LlmAgent(name="plain", model=MODEL))
    assert got.custom is not None
    a2ui = got.custom["a2ui"]
    assert a2ui["version"] == "v0.9" and a2ui["activityType"] == "a2ui-surface"
    assert a2ui["clientCapabilities"] == "a2uiClientCapabilities"
    assert "https://a2ui.org/specification/v0_9/basic_catalog.json" in a2ui["basicCatalogIds"]
    assert a2ui["actions"] == "forwardedProps.a2uiAction"


@pytest.mark.server
async def test_the_demo_serves_its_capabilities_at_both_paths(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        root = await client.get(gateway.http + "/capabilities")
        beside = await client.get(gateway.http + "/invocations/capabilities")
    assert root.status_code == 200 and root.headers["content-type"] == "application/json"
    assert root.content == beside.content
    got = accepted(root.json())
    # The demo: a browser tool (navigateToScreen) and an approval (approveWorkRequest).
    assert got.tools and got.tools.client_provided
    assert got.human_in_the_loop and got.human_in_the_loop.approvals
    assert "approveWorkRequest" in [tool.name for tool in got.tools.items or []]


@pytest.mark.server
async def test_an_ag_ui_adk_apps_predictive_state_is_told() -> None:
    agent = "tests.support.dojo.predictive_state:adk_document_agent"
    async with running_gateway(agent=agent) as gateway, httpx.AsyncClient(timeout=10) as client:
        got = accepted((await client.get(gateway.http + "/capabilities")).json())
    assert got.custom is not None
    [prediction] = got.custom["gateway"]["predictState"]
    assert prediction["tool"] == "write_document_local"


@pytest.mark.server
async def test_in_jwt_mode_only_a_signed_in_caller_reads_them() -> None:
    async with running_gateway(**JWT) as gateway, httpx.AsyncClient(timeout=10) as client:
        anonymous = await client.get(gateway.http + "/capabilities")
        signed_in = await client.get(
            gateway.http + "/capabilities", headers={"Authorization": f"Bearer {token()}"}
        )
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "UNAUTHORIZED"
    assert signed_in.status_code == 200
    accepted(signed_in.json())


def test_live_says_whether_the_root_model_can_hold_a_voice_turn() -> None:
    # Gemini has a live connection; a model class without ``connect`` (the offline script
    # models, most LiteLLM ones) has none.
    def live(root: BaseAgent) -> object:
        custom = document(root, None, Settings(), services={})["custom"]
        return custom["gateway"]["live"]

    assert live(LlmAgent(name="talks", model=MODEL)) is True
    assert live(LlmAgent(name="types", model=TextOnly(model="typed"))) is False
