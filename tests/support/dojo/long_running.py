"""A reimbursement desk whose approvals take a person, as ADK's human-in-the-loop sample has it.

``ask_for_approval`` is the agent's own ``LongRunningFunctionTool``: it opens a ticket and
answers at once with ``{"status": "pending", "ticketId": ...}``; the ticket's real outcome
comes later, from whoever decides it, as the final result under the same call id.
``reimburse`` is an ordinary tool.

The model is the offline script in ``long_running.json``: it asks for approval of what the
user wants reimbursed, speaks only once the ticket's outcome arrives, then reimburses an
approved ticket or says why a rejected one was not. A client that declares a browser tool
``showTicket`` gets it called too ("show ticket-…", or "… and show it" beside a new
ticket), as a dojo frontend's own tool is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import LongRunningFunctionTool, ToolContext

from gateway.models.script import ScriptLlm

SCRIPT = Path(__file__).with_suffix(".json")


def ask_for_approval(purpose: str, amount: str, tool_context: ToolContext) -> dict[str, Any]:
    """Opens an approval ticket for a reimbursement (the amount as the user said it); a
    manager decides it later."""
    return {
        "status": "pending",
        "ticketId": f"ticket-{tool_context.function_call_id}",
        "amount": amount,
        "purpose": purpose,
    }


def reimburse(purpose: str, amount: str) -> dict[str, Any]:
    """Pays a reimbursement out."""
    return {"status": "ok", "paid": amount, "purpose": purpose}


def build_agent(pace_ms: float = 0.0) -> LlmAgent:
    return LlmAgent(
        name="reimbursement_agent",
        model=ScriptLlm.from_file(SCRIPT, pace_ms=pace_ms),
        instruction=(
            "You handle reimbursements. Each needs a manager's approval: ask for it with "
            "ask_for_approval, wait for the outcome, then pay an approved one with reimburse."
        ),
        tools=[reimburse, LongRunningFunctionTool(func=ask_for_approval)],
    )


root_agent = build_agent()
