"""ADK's tool confirmation, both ways its samples ask: a tool that always needs a yes
(``FunctionTool(reimburse, require_confirmation=True)``), and one that asks for itself with
a hint and a payload the user edits before saying yes
(``tool_context.request_confirmation(hint=..., payload=...)``)."""

from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm


def reimburse(amount: int) -> dict[str, object]:
    """Pays an employee back.

    Args:
        amount: how much, in dollars.
    """
    return {"status": "ok", "amount": amount}


def request_time_off(days: int, tool_context: ToolContext) -> dict[str, object]:
    """Asks for days off, which a manager confirms, perhaps for fewer days.

    Args:
        days: how many days.
    """
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint=(
                "Please approve or reject the tool call request_time_off() by responding "
                "with the number of days you approve."
            ),
            payload={"approved_days": days},
        )
        return {"status": "Manager approval is required."}
    approved = (confirmation.payload or {}).get("approved_days", 0)
    return {"status": "ok", "approved_days": approved}


root_agent = LlmAgent(
    name="time_off_agent",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "tool_confirmation.json"),
    instruction="Reimburse expenses and request time off for the user.",
    tools=[FunctionTool(reimburse, require_confirmation=True), request_time_off],
)
