"""A tree of agents every member of which changes the session's state (a callback, a tool,
an ``output_key``, an AgentTool's agent), and the state a client must hold after its run.

``SECRET`` is what its ``temp:`` keys hold, which must never leave the server.
"""

from __future__ import annotations

import warnings

from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext

from tests.support.speakers import Speaker, call, say

SECRET = "temp-value-that-stays-on-the-server"


def remember(note: str, tool_context: ToolContext) -> dict[str, bool]:
    """Remembers a note."""
    tool_context.state["note"] = note
    tool_context.state["user:lang"] = "ko"
    tool_context.state["app:banner"] = "welcome"
    tool_context.state["temp:scratch"] = SECRET
    return {"ok": True}


def greet(callback_context: CallbackContext) -> None:
    callback_context.state["greeted"] = True
    callback_context.state["temp:seen"] = SECRET


def scribe_seen(callback_context: CallbackContext) -> None:
    callback_context.state["scribe_seen"] = 1


def tree() -> SequentialAgent:
    scribe = LlmAgent(
        name="scribe", model=Speaker(turns=[[say("noted")]]), before_agent_callback=scribe_seen
    )
    worker = LlmAgent(
        name="worker",
        model=Speaker(
            turns=[[call("remember", note="buy milk")], [call("scribe", request="x")], [say("ok")]]
        ),
        tools=[remember, AgentTool(scribe)],
        before_agent_callback=greet,
    )
    reporter = LlmAgent(
        name="reporter", model=Speaker(turns=[[say("all done")]]), output_key="report"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return SequentialAgent(name="office", sub_agents=[worker, reporter])


EXPECTED = {
    "greeted": True,
    "note": "buy milk",
    "user:lang": "ko",
    "app:banner": "welcome",
    "scribe_seen": 1,
    "report": "all done",
}
