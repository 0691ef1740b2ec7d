"""The expenses agent, as ``agent-gateway serve gateway.examples.expenses.agent`` hosts it."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool

from gateway.examples.expenses import ledger
from gateway.models.script import ScriptLlm

# Fast enough for tests, slow enough that a person sees the reply stream.
PACE_MS = 10.0

INSTRUCTION = """\
You help the user with their expenses. Call list_expenses to see them. To open one in the
app, call showExpense with its expenseId when that tool is offered; the browser answers
with what it did, and you say only what it reported. To submit one for reimbursement, call
submit_expense; expenses over 100 EUR wait for a person's approval, and when the answer is
a rejection, say that nothing was submitted and why."""

# What a browser that can show expenses declares in RunAgentInput.tools.
BROWSER_TOOLS: list[dict[str, Any]] = [
    {
        "name": "showExpense",
        "description": "Opens an expense in the app's expense view.",
        "parameters": {
            "type": "object",
            "properties": {"expenseId": {"type": "string", "description": "such as E-101"}},
            "required": ["expenseId"],
        },
    }
]

root_agent = LlmAgent(
    name="expenses",
    model=ScriptLlm.from_file(files(__package__) / "script.json", pace_ms=PACE_MS),
    instruction=INSTRUCTION,
    tools=[
        ledger.list_expenses,
        FunctionTool(ledger.submit_expense, require_confirmation=ledger.needs_approval),
    ],
)
