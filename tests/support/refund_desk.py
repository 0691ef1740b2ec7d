"""An agent whose one tool needs a person's approval and leaves a trace of every run, for
the tests that kill a gateway around an approval (``tests/hub/test_approval_crashes.py``).

``refund`` appends ``start <order>`` to the file named by ``AGW_REFUNDS`` when it starts
and ``done <order>`` when it finishes, ``AGW_REFUND_SECONDS`` apart (0.3 s by default), so
a test counts how often the tool ran across a crash and a restart: a refund is money.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool

from gateway.models.script import ScriptLlm


def _note(line: str) -> None:
    with open(os.environ["AGW_REFUNDS"], "a", encoding="utf-8") as trace:
        trace.write(line + "\n")


async def refund(order: str) -> dict[str, Any]:
    """Refunds an order to the card it was paid with."""
    _note(f"start {order}")
    await asyncio.sleep(float(os.environ.get("AGW_REFUND_SECONDS", "0.3")))
    _note(f"done {order}")
    return {"status": "refunded", "order": order}


root_agent = LlmAgent(
    name="refund_desk",
    model=ScriptLlm.from_file(Path(__file__).with_suffix(".json")),
    instruction="Refund orders when asked; a person approves each refund.",
    tools=[FunctionTool(refund, require_confirmation=True)],
)
