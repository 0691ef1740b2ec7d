"""GET /capabilities: what the hosted agent can do, as AG-UI 1.0's ``AgentCapabilities``.

Read once at start-up from the agent tree and the settings, never assumed: client tools are
offered when an LlmAgent runs in the root's invocation and the catalog (if any) has client
entries; approvals when a tool is built with ``require_confirmation`` (a tool that asks
through ``tool_context.request_confirmation`` in its body cannot be seen from outside, so
it goes unlisted); reasoning when a model's config or planner asks for thoughts; state
deltas when something in the tree can write state; A2UI surfaces always (any server tool
may return operations), under ``custom.a2ui``. An App that is not resumable offers neither
client tools nor approvals (``gateway.adk.resumability``); ``custom.gateway`` says so
(``resumable``) and names the ADK services each run has (``services``: memory, artifacts,
credentials; ``state.memory`` is whether there is a memory service), the agent's own
long-running tools (``longRunningTools``: their calls end a run with ``pendingToolCallIds``
until a result comes) and whether a backend may give those results (``toolResults``: POST
/tool-results is open), the predictive state a client may show (``predictState``, as
``PredictState`` lists it) and the state scopes a client's ``RunAgentInput.state`` may
write (``clientState``), and whether the root agent's model can hold a live (voice) turn on
/ws (``live``: its class has a live connection, as Gemini's has; docs/voice.md), so a client
offers a microphone only where it can work. ag-ui-adk serves the
same document at ``<agent path>/capabilities``: ``/capabilities`` for an agent at the root,
which is where this gateway serves it, and ``/invocations/capabilities`` beside its run
door.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator, Mapping
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.planners import BuiltInPlanner, PlanReActPlanner
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from gateway.a2ui import SURFACE_ACTIVITY
from gateway.a2ui import VERSION as A2UI_VERSION
from gateway.a2ui.catalogs import BASIC_CATALOG_IDS, CAPABILITIES
from gateway.adk.approvals import built_to_confirm
from gateway.adk.hosting import agent_tools, agents, llm_agents
from gateway.config import Settings, client_state
from gateway.tools.catalog import Catalog
from gateway.tools.client import ClientTool, ClientToolset
from gateway.translate.predictions import Prediction

# Agents whose only work is to run their sub-agents: they write no state of their own.
_WORKFLOWS = (SequentialAgent, ParallelAgent, LoopAgent)


def document(
    root: BaseAgent,
    catalog: Catalog | None,
    settings: Settings,
    *,
    services: Mapping[str, str | None],
    resumable: bool = True,
    predictions: tuple[Prediction, ...] = (),
) -> dict[str, Any]:
    """The ``AgentCapabilities`` of ``root`` as hosted (wire keys, camelCase);
    ``services``: the class of each ADK service the runs have, by kind (None: none; a
    memory service lets agents recall across threads); ``resumable``: the App's runs can
    pause, for a browser tool or an approval (``gateway.adk.resumability``); ``predictions``:
    the hosted agent's predictive state (``gateway.translate.predictions``)."""
    thinking = [agent for agent in llm_agents(root) if _thinks(agent)]
    approvals = resumable and any(built_to_confirm(tool) for tool in _tools(root))
    helpers = agent_tools(root)
    team = [agent for agent in agents(root) if agent is not root]
    tools = [tool for tool in _tools(root) if not isinstance(tool, ClientToolset)]
    client_provided = (
        resumable
        and any(True for _ in llm_agents(root))
        and (catalog is None or bool(catalog.client_entries()))
    )
    return {
        "identity": {
            "name": root.name,
            "type": "adk",
            **({"description": root.description} if root.description else {}),
            "provider": "agent-gateway",
            **_version(),
        },
        # The two doors every gateway serves: POST /invocations (SSE) and /ws.
        "transport": {"streaming": True, "websocket": True, "httpBinary": False},
        "tools": {
            "supported": bool(tools) or client_provided,
            "items": [d for tool in tools if (d := _declaration(tool)) is not None],
            # ADK runs one model turn's calls together; browser results pair by call id.
            "parallelCalls": bool(tools) or client_provided,
            "clientProvided": client_provided,
        },
        "output": {"structuredOutput": any(a.output_schema for a in llm_agents(root))},
        "state": {
            # A reattach always sends STATE_SNAPSHOT; the thread's session keeps state
            # between its runs.
            "snapshots": True,
            "deltas": _writes_state(root),
            "memory": services.get("memory") is not None,
            "persistentState": True,
        },
        "multiAgent": {
            "supported": bool(team or helpers),
            "delegation": bool(helpers),
            "handoffs": any(agent.sub_agents for agent in llm_agents(root)),
            "subagents": [
                {
                    "name": agent.name,
                    **({"description": agent.description} if agent.description else {}),
                }
                for agent in [*team, *helpers.values()]
            ],
        },
        "reasoning": {"supported": bool(thinking), "streaming": bool(thinking)},
        "execution": {"codeExecution": any(a.code_executor for a in llm_agents(root))},
        "humanInTheLoop": {
            # Approvals are the gateway's interrupts; a browser tool's pause is a tool call.
            "supported": approvals,
            "approvals": approvals,
            "interrupts": approvals,
        },
        "custom": {
            "gateway": {
                "busy": settings.busy,
                "sseAbort": settings.sse_abort,
                "clientToolTimeoutSeconds": settings.client_tool_timeout,
                "approvalTimeoutSeconds": settings.approval_timeout,
                # Without it a run that would pause is refused when it would.
                "resumable": resumable,
                # What ADK's tools find in each run: memory, artifacts, credentials.
                "services": dict(services),
                "longRunningTools": sorted(
                    name for tool in tools if (name := _long_running(tool)) is not None
                ),
                "toolResults": bool(settings.service_token),
                "predictState": [prediction.payload() for prediction in predictions],
                "clientState": sorted(client_state(settings)),
                "live": _live(root),
            },
            # Any server tool may return A2UI operations (``gateway.a2ui``): what a client
            # needs to know to advertise its catalog and send presses back.
            "a2ui": {
                "version": A2UI_VERSION,
                "activityType": SURFACE_ACTIVITY,
                "clientCapabilities": CAPABILITIES,
                "basicCatalogIds": sorted(BASIC_CATALOG_IDS),
                "inlineCatalogs": True,
                "actions": "forwardedProps.a2uiAction",
            },
        },
    }


def _version() -> dict[str, str]:
    try:
        return {"version": importlib.metadata.version("agent-gateway")}
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return {}


def _tools(root: BaseAgent) -> Iterator[Any]:
    """The tools and toolsets of the root invocation's LlmAgents."""
    for agent in llm_agents(root):
        yield from agent.tools


def _declaration(tool: Any) -> dict[str, Any] | None:
    """A server tool as AG-UI's ``Tool``; a toolset's tools are known only in a run."""
    if isinstance(tool, BaseToolset):
        return None
    made = tool if isinstance(tool, BaseTool) else FunctionTool(tool)
    declared = made._get_declaration()
    if declared is None or not declared.name:
        return None
    if declared.parameters_json_schema is not None:
        parameters = declared.parameters_json_schema
    elif declared.parameters is not None:
        parameters = declared.parameters.json_schema.model_dump(mode="json", exclude_none=True)
    else:
        parameters = {"type": "object", "properties": {}}
    return {
        "name": declared.name,
        "description": declared.description or "",
        "parameters": parameters,
    }


def _long_running(tool: Any) -> str | None:
    """The name of an agent's own long-running tool (a browser tool is the client's)."""
    if isinstance(tool, BaseTool) and tool.is_long_running and not isinstance(tool, ClientTool):
        return tool.name
    return None


def _live(root: BaseAgent) -> bool:
    """Whether a live turn can run: ``BaseLlm.connect`` raises NotImplementedError, so only
    a model class with a connection of its own (Gemini's) can talk."""
    if not isinstance(root, LlmAgent):
        return False
    try:
        model = root.canonical_model
    except ValueError:  # a model name no registry knows: no turn of any kind will run
        return False
    return type(model).connect is not BaseLlm.connect


def _thinks(agent: LlmAgent) -> bool:
    """Whether the agent's model is asked to send its thoughts, which stream as reasoning."""
    planner = agent.planner
    if isinstance(planner, PlanReActPlanner):
        return True
    configs = [
        agent.generate_content_config.thinking_config if agent.generate_content_config else None,
        planner.thinking_config if isinstance(planner, BuiltInPlanner) else None,
    ]
    return any(isinstance(c, types.ThinkingConfig) and c.include_thoughts for c in configs)


def _writes_state(root: BaseAgent) -> bool:
    """Whether anything in the tree can change state: a tool (through its context), an
    ``output_key``, a callback, an agent tool's agent or an agent with code of its own."""
    for agent in agents(root):
        if any(getattr(agent, name, None) for name in _CALLBACKS):
            return True
        if isinstance(agent, LlmAgent):
            own = [t for t in agent.tools if not isinstance(t, ClientToolset)]
            if agent.output_key or own:
                return True
        elif not isinstance(agent, _WORKFLOWS):
            return True
    return False


_CALLBACKS = (
    "before_agent_callback",
    "after_agent_callback",
    "before_model_callback",
    "after_model_callback",
    "before_tool_callback",
    "after_tool_callback",
)
