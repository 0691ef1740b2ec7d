"""A tool that asks a person to confirm in its own body, with a payload, worded as ADK's
tool-confirmation sample words it (the hint ADK itself writes for ``require_confirmation``)."""

from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm

HINT = (
    "Please approve or reject the tool call book_leave() by responding with a "
    "FunctionResponse with an expected ToolConfirmation payload."
)


def book_leave(days: int, tool_context: ToolContext) -> dict[str, Any]:
    """Books days of leave once a manager approves how many."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=HINT, payload={"approved_days": 0})
        return {"status": "waiting for the manager"}
    if not confirmation.confirmed:
        return {"status": "rejected", "approved_days": 0}
    return {"status": "booked", "approved_days": confirmation.payload["approved_days"]}


root_agent = LlmAgent(
    name="leave",
    model=ScriptLlm.from_file(Path(__file__).with_name("time_off.json")),
    instruction="Book leave when asked.",
    tools=[book_leave],
)
