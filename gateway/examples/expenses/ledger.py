"""The example's expense ledger: a user's expenses, and submitting one for reimbursement.

What a user submitted is kept in ADK's user-scoped state (a ``user:`` key), so it shows in
every thread of theirs and is stored with them, as a real backend's record would be.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.adk.tools.tool_context import ToolContext

# Submissions above this many euros wait for a person's approval.
APPROVAL_LIMIT = 100.0
SUBMITTED = "user:submitted_expenses"


@dataclasses.dataclass(frozen=True)
class Expense:
    expense_id: str
    date: str
    what: str
    amount: float

    @property
    def euros(self) -> str:
        return f"{self.amount:.2f} EUR"


# Every user of the example has the same three expenses to start with.
EXPENSES = {
    expense.expense_id: expense
    for expense in (
        Expense("E-101", "2025-03-03", "Taxi to the airport", 23.50),
        Expense("E-102", "2025-03-04", "Hotel, two nights", 412.00),
        Expense("E-103", "2025-03-05", "Team lunch", 86.40),
    )
}


def list_expenses(tool_context: ToolContext) -> dict[str, Any]:
    """Lists the user's expenses: id, date, what, amount, and whether it was submitted."""
    submitted = set(tool_context.state.get(SUBMITTED, []))
    rows = [
        {
            "expenseId": expense.expense_id,
            "date": expense.date,
            "what": expense.what,
            "amount": expense.euros,
            "status": "submitted" if expense.expense_id in submitted else "draft",
        }
        for expense in EXPENSES.values()
    ]
    total = sum(expense.amount for expense in EXPENSES.values())
    return {
        "count": len(rows),
        "total": f"{total:.2f} EUR",
        "expenses": rows,
        "overview": "; ".join(
            f"{row['expenseId']} {row['what']}, {row['amount']} ({row['status']})" for row in rows
        ),
    }


def needs_approval(expense_id: str, tool_context: ToolContext) -> bool:
    """Whether submitting ``expense_id`` waits for a person: above the approval limit.

    ADK calls it with the tool's arguments, its context included."""
    expense = EXPENSES.get(expense_id.upper())
    return expense is not None and expense.amount > APPROVAL_LIMIT


def submit_expense(expense_id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Submits one expense for reimbursement. Expenses over 100 EUR need a person's
    approval first; the gateway asks for it before this runs."""
    expense = EXPENSES.get(expense_id.upper())
    if expense is None:
        return {"error": f"There is no expense {expense_id}; the ids are {', '.join(EXPENSES)}."}
    submitted = list(tool_context.state.get(SUBMITTED, []))
    if expense.expense_id in submitted:
        return {"error": f"{expense.expense_id} was already submitted."}
    tool_context.state[SUBMITTED] = [*submitted, expense.expense_id]
    return {"status": "submitted", "expenseId": expense.expense_id, "amount": expense.euros}
