"""A plugin's memory of the invocations in progress, forgotten when each run ends.

Some plugins note what one invocation's tools did (a call's interim result, an MCP call that
failed) and read it when that invocation's events pass. ``InvocationPlugin`` keeps such
notes by invocation id and drops them when the run ends, however it ends (finished, failed,
or cancelled: ADK calls one of its two end callbacks), so a long-lived gateway keeps none.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from google.adk.agents.invocation_context import InvocationContext
from google.adk.plugins.base_plugin import BasePlugin

Notes = TypeVar("Notes")


class InvocationPlugin(BasePlugin, Generic[Notes]):
    """A plugin with ``notes`` per invocation id, forgotten at the end of the run."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.notes: dict[str, Notes] = {}

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self.notes.pop(invocation_context.invocation_id, None)

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        self.notes.pop(invocation_context.invocation_id, None)
