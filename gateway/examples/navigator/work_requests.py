"""The demo's work requests: the one server action that needs a person's approval."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from google.adk.tools.tool_context import ToolContext

_REQUEST_ID = re.compile(r"R-\d{3,6}")
# Requests the demo knows; approving one moves it out of this set.
PENDING_REQUESTS = {"R-1042", "R-1043", "R-1050", "R-1077"}
# The demo backend is a little slow, which makes cancelling a running tool visible.
APPROVAL_LATENCY_SECONDS = 0.05


async def approve_work_request(
    requestId: str,  # the catalog's parameter name, as the model sends it
    tool_context: ToolContext,
    comment: str = "",
) -> dict[str, Any]:
    """Approves a work request; ADK only calls this after a person approved the call."""
    if not _REQUEST_ID.fullmatch(requestId):
        return {"error": f"{requestId!r} is not a work request id like R-1042"}
    await asyncio.sleep(APPROVAL_LATENCY_SECONDS)
    if requestId not in PENDING_REQUESTS:
        return {"error": f"{requestId} is not waiting for approval"}
    return {"status": "approved", "requestId": requestId, "approvedBy": tool_context.user_id}
