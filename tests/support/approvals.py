"""The demo's approval story: "R-1042 승인해줘" (``APPROVE``) pauses the run on an interrupt
that asks the user to approve work request R-1042; ``resume`` (``tests.support.agui``)
answers it."""

from __future__ import annotations

from typing import Any

from tests.support.agui import outcome, tool_calls, user_input

APPROVE = "R-1042 승인해줘"


async def ask_approval(ws: Any, thread: str) -> dict[str, Any]:
    """Asks for R-1042's approval on ``thread``; the interrupt the run ends on."""
    events = await ws.run(user_input(thread, APPROVE))
    result = outcome(events)
    assert result["type"] == "interrupt", result
    [interrupt] = result["interrupts"]
    [call] = tool_calls(events, "approveWorkRequest")
    assert interrupt["toolCallId"] == call["id"]
    assert call["args"] == {"requestId": "R-1042"}
    return interrupt
