"""The agent the start-up warm-up meets instead of the hosted one (``GATEWAY_WARM_UP=gateway``).

The warm-up pays the first-call costs of the gateway's own path: the socket, the hub, the
store, the translator, ADK's runner and LLM flow, a streamed model answer, client tools
offered. None of that needs the hosted agent's code, and running it would be wrong: its
callbacks and tools would see a user nobody is, and an agent that checks its state (ADK's
session-state sample asserts on it) fails at every start. So the warm-up's runs go to a
stand-in: one LlmAgent named as the hosted root, on an offline model that greets back,
with the same client toolset, under the hosted App's name and with the gateway's plugins
only (not the App's own), chained into one as on the hosted App, over the same store.
``GATEWAY_WARM_UP=agent`` warms the agent itself instead, for an owner who wants its own
first-call costs paid too.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin

from gateway.adk.hosting import chained, resumable_app
from gateway.models.offline import OfflineLlm, Reply, Say
from gateway.tools.client import ClientToolset

__all__ = ["Greeting", "stand_in"]


class Greeting(OfflineLlm):
    """An offline model that answers every request with a greeting."""

    model: str = "gateway-warm-up"

    def reply(self, llm_request: LlmRequest) -> Reply:
        return Say("안녕하세요")


def stand_in(app: App, client_tools: ClientToolset, plugins: Sequence[BasePlugin]) -> App:
    """The stand-in App for ``app`` as hosted (see the module docstring)."""
    assert app.root_agent is not None
    agent = LlmAgent(
        name=app.root_agent.name,
        model=Greeting(),
        instruction="Greet the user.",
        tools=[client_tools],
    )
    # Chained as the hosted App's are, so the warm-up pays for the dispatch runs take.
    return resumable_app(agent, name=app.name, plugins=chained(plugins))
