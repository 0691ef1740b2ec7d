"""What the gateway hosts: an ADK agent or App, and what comes with it.

Whatever a user names (an agent, an App, a ``Hosted``, or a function of the settings that
returns one of these; see ``gateway.adk.loading``) becomes one resumable ADK App here, with the
gateway's plugins added to the App's own and the client-tool toolset on every LlmAgent that
runs in the App's invocation, so any agent gets client tools, approvals and cancel. That
toolset stands in for ag-ui-adk's ``AGUIToolset()`` placeholder, which is taken out.

A client tool or an approval pauses the invocation, and the browser's answer resumes it:
that takes resumability. A bare agent is wrapped in a resumable App. An App built without
it is served as built (rewriting its settings behind its author's back would hide why a run
behaves differently from ``adk web``): its runs that would pause are refused at that moment
(``gateway.adk.resumability``).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset, ToolPredicate

from gateway.adk.agui_adk import is_agui_toolset
from gateway.adk.chain import PluginChain
from gateway.adk.resumability import PauseRefusal, resumable
from gateway.tools.catalog import Catalog
from gateway.tools.client import ClientToolset
from gateway.translate.predictions import Prediction

__all__ = [
    "Hosted",
    "HostingError",
    "agent_tools",
    "agents",
    "chained",
    "first_line",
    "llm_agents",
    "prepare",
    "resumable_app",
    "server_tool_names",
    "tool_name",
]

log = logging.getLogger(__name__)

# The name ADK knows the gateway's plugins by, as one (``PluginChain``).
GATEWAY_PLUGINS = "agent_gateway"

# The extra fields of GET /me for a user, given the user id: the demo's screen menu.
Profile = Callable[[str], dict[str, Any]]


class HostingError(Exception):
    """The agent cannot be hosted; the message says what was found and what to change."""


@dataclasses.dataclass(frozen=True)
class Hosted:
    """An agent or App, with the optional parts of a hosted application.

    ``catalog``: the client tools a client may declare and the server tools' declarations;
    without one every tool a client declares is offered. ``web``: a folder of static files
    served at ``/`` (the demo's reference client). ``profile``: more fields for ``GET /me``.
    ``model``: replaces the model of every LlmAgent (``GATEWAY_MODEL`` sets it).
    ``predict_state``: the tools whose arguments a client shows as state as they come
    (``gateway.translate.predictions``; ``GATEWAY_PREDICT_STATE`` sets it).
    """

    agent: BaseAgent | App
    catalog: Catalog | None = None
    web: Traversable | None = None
    profile: Profile | None = None
    model: BaseLlm | str | None = None
    predict_state: tuple[Prediction, ...] = ()

    @property
    def app_name(self) -> str:
        return self.agent.name


def prepare(hosted: Hosted, client_tools: ClientToolset, plugins: Sequence[BasePlugin] = ()) -> App:
    """The App the runner runs: ``plugins`` after the App's own, the client toolset on each
    LlmAgent, and the hosted ``model``, if any, for every LlmAgent (else a Gemini model's
    name becomes the gateway's ``GeminiLlm``). A bare agent becomes a
    resumable App; an App that is not resumable gets ``PauseRefusal`` too."""
    app = hosted.agent if isinstance(hosted.agent, App) else resumable_app(hosted.agent)
    if not resumable(app):
        plugins = [*plugins, PauseRefusal(app.name)]
    root = app.root_agent
    if not isinstance(root, BaseAgent):
        raise HostingError(
            f"App {app.name!r}: its root_agent is a {type(root).__name__}; the gateway hosts "
            "ADK agents (LlmAgent, SequentialAgent or any BaseAgent)."
        )
    for agent in llm_agents(root):
        _offer_client_tools(agent, client_tools)
        if hosted.model is not None:
            agent.model = hosted.model
        elif isinstance(agent.model, str) and agent.model:
            agent.model = _leaner(agent.model)
    _served_as(root, app.name)
    ours = [plugin for plugin in plugins if plugin not in app.plugins]
    return app.model_copy(update={"plugins": [*app.plugins, *chained(ours)]})


def chained(plugins: Sequence[BasePlugin]) -> list[BasePlugin]:
    """The gateway's ``plugins`` as the one plugin ADK calls (none if there are none): ADK
    awaits each plugin it has for each callback, whether the plugin has it or not."""
    return [PluginChain(plugins, name=GATEWAY_PLUGINS)] if plugins else []


def _served_as(root: BaseAgent, app_name: str) -> None:
    """Marks ``root`` as the root agent of the App named ``app_name``, where ADK's Runner
    looks for the App an agent was loaded for (``AgentLoader`` marks an ``adk web`` folder's
    agent with the folder's name; else the Runner guesses it from an ``agents/`` folder
    around its module). A Runner whose App is named otherwise warns "App name mismatch" as
    it is built, since it could not find the sessions ``adk web`` made under the folder's
    name. The gateway makes every session itself, under its App's name (part of a stored
    thread's key, kept as it was): the warning was a false alarm, said by every Runner (the
    main process's, each worker's, the warm-up's)."""
    origin = getattr(root, "_adk_origin_path", None) or Path.cwd()
    setattr(root, "_adk_origin_app_name", app_name)  # noqa: B010 - ADK's own private names
    setattr(root, "_adk_origin_path", origin)  # noqa: B010


def _leaner(model: str) -> BaseLlm | str:
    """A Gemini model's name, as the gateway's ``GeminiLlm`` (its requests and chunks with
    less of google-genai's work: ``gateway.models.gemini``); any other name as it is."""
    from gateway.models.gemini import named

    return named(model) or model


def _offer_client_tools(agent: LlmAgent, client_tools: ClientToolset) -> None:
    """The client toolset on ``agent``, in place of ag-ui-adk's ``AGUIToolset`` (narrowed
    by its ``tool_filter``) and of what an earlier hosting left: hosting the same agent
    twice (tests, two mounts) must neither offer its tools twice nor forget the filter."""
    narrowed = _without_placeholders(agent)
    earlier = [tool for tool in agent.tools if isinstance(tool, ClientToolset)]
    narrowed = narrowed or next((t.tool_filter for t in earlier if t.tool_filter), None)
    agent.tools = [tool for tool in agent.tools if not isinstance(tool, ClientToolset)]
    agent.tools.append(client_tools.narrowed(narrowed) if narrowed else client_tools)


def _without_placeholders(agent: LlmAgent) -> ToolPredicate | list[str] | None:
    """Takes ag-ui-adk's ``AGUIToolset()`` out: the client toolset serves what it stood for
    (its own ``get_tools`` raises, and ADK would log that as an ERROR on every run); its
    ``tool_filter``, if it had one, is returned for the client toolset to keep."""
    placeholders = [tool for tool in agent.tools if is_agui_toolset(tool)]
    if not placeholders:
        return None
    agent.tools = [tool for tool in agent.tools if not is_agui_toolset(tool)]
    log.info("agent %s: AGUIToolset is served by the gateway's client tools", agent.name)
    if any(getattr(placeholder, "tool_name_prefix", None) for placeholder in placeholders):
        log.warning(
            "agent %s: AGUIToolset's tool_name_prefix is not kept: client tools are offered "
            "under the names the client declares",
            agent.name,
        )
    # Two placeholders on one agent (never seen) offer every client tool.
    only: ToolPredicate | list[str] | None = getattr(placeholders[0], "tool_filter", None)
    return only if len(placeholders) == 1 else None


def resumable_app(
    agent: BaseAgent, name: str | None = None, plugins: Sequence[BasePlugin] = ()
) -> App:
    """A resumable App of ``agent`` (named ``name``, or as the agent), with ``plugins``."""
    with warnings.catch_warnings():
        # ADK marks resumability experimental and says so on every construction.
        warnings.simplefilter("ignore", UserWarning)
        try:
            return App(
                name=name or agent.name,
                root_agent=agent,
                plugins=list(plugins),
                resumability_config=ResumabilityConfig(is_resumable=True),
            )
        except ValueError as error:
            raise HostingError(
                f"Agent {agent.name!r} cannot name an App {name or agent.name!r} "
                f"({first_line(error)}); wrap it in an App with a valid name."
            ) from None


def agents(root: BaseAgent) -> Iterator[BaseAgent]:
    """Every agent that runs in the root's invocation: the root and its sub-agents, in order.

    An agent inside an ``AgentTool`` runs in an invocation of its own, so it is not one of
    them.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        yield agent
        stack.extend(reversed(agent.sub_agents))


def llm_agents(root: BaseAgent) -> Iterator[LlmAgent]:
    """Every LlmAgent of the root's invocation: an agent inside an ``AgentTool`` runs in an
    invocation that cannot pause, so a browser call could never resume it."""
    return (agent for agent in agents(root) if isinstance(agent, LlmAgent))


def agent_tools(root: BaseAgent) -> dict[str, BaseAgent]:
    """The ``AgentTool``s of the root's LlmAgents, by tool name, with the agent each runs."""
    return {
        tool.name: tool.agent
        for agent in llm_agents(root)
        for tool in agent.tools
        if isinstance(tool, AgentTool)
    }


def server_tool_names(root: BaseAgent) -> dict[str, str]:
    """The tools the agents of an App run on the server, by name, with the agent of each.

    A toolset's tools are known only when it is asked in a run (an MCP server may not be
    up yet), so they are not listed, and a client tool may take one of their names: nothing
    checks those (the README says so).
    """
    names: dict[str, str] = {}
    for agent in llm_agents(root):
        for tool in agent.tools:
            if isinstance(tool, BaseToolset):
                continue
            if name := tool_name(tool):
                names.setdefault(name, agent.name)
    return names


def tool_name(tool: Any) -> str:
    """The name an agent's tool (a BaseTool or a plain function) is offered by."""
    return str(tool.name if isinstance(tool, BaseTool) else getattr(tool, "__name__", ""))


def first_line(error: BaseException) -> str:
    """An exception's first line, for a sentence about it (tracebacks go to the log)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def runnable_app(hosted: Hosted) -> App:
    """The App as the gateway runs it (client tools from the catalog, without the gateway's
    plugins), for an in-process ``Runner``: tests and the benchmarks' baseline."""
    return prepare(hosted, ClientToolset(hosted.catalog))
