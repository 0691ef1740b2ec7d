"""A server tool behind a slow backend: ``fetch_report`` waits until the report is ready,
which a test decides by creating the file ``SLOW_BACKEND_GATE`` names (read in whichever
process runs the tool, so a worker process waits for it too). Runs stay in flight, as
many as a test starts, for as long as it needs them to."""

import asyncio
import os
import time
from pathlib import Path

from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

# The environment variable naming the file whose existence means the report is ready.
GATE = "SLOW_BACKEND_GATE"
# The longest the backend keeps a caller waiting.
MOST_SECONDS = 120.0


async def fetch_report(name: str) -> dict[str, object]:
    """Fetches a report from the reporting backend, which takes its time.

    Args:
        name: the report's name.
    """
    gate = os.environ.get(GATE)  # none: the report is ready at once
    started = time.monotonic()
    while gate and not Path(gate).is_file() and time.monotonic() - started < MOST_SECONDS:
        await asyncio.sleep(0.05)
    return {"name": name, "rows": 42, "pid": os.getpid()}


root_agent = LlmAgent(
    name="reporter",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "slow_backend.json"),
    instruction="Fetch the report the user names with fetch_report and sum it up.",
    tools=[fetch_report],
)
