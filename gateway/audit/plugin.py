"""The ADK plugin that records the tool calls ADK runs (``AuditPlugin``).

It records each server tool when it returns, timed from its before-tool callback; also a
client call the gateway answered itself (a refusal of the navigation policy: executor
"server", since no browser ran it), a call held for a person's approval
("awaiting_approval") and one the person rejected ("rejected"). A client call passed on
to the browser is only noted as sent (``AuditLog.note_sent``): it is recorded when the
browser's answer arrives.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.audit.records import AuditRecord, outcome_of
from gateway.context import RUN_METADATA_KEY


class ToolCallLog(Protocol):
    """Where the plugin's records go: the ``AuditLog``, or, in a worker process, what hands
    them to the main process's (``gateway.adk.workers.relay``)."""

    def record(self, record: AuditRecord) -> None: ...
    def note_sent(self, call_id: str) -> None: ...


class AuditPlugin(BasePlugin):
    """Records tool calls as ADK runs them; see the module docstring for which ones."""

    def __init__(self, audit: ToolCallLog) -> None:
        super().__init__(name="audit")
        self.audit = audit
        # Start of each call in progress (wall clock, monotonic), by call id.
        self._started: dict[str, tuple[float, float]] = {}

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self._started[tool_context.function_call_id or ""] = (time.time(), time.monotonic())
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id or ""
        if tool.is_long_running and not result:
            # Passed on to the browser: its answer is recorded when it comes.
            self._started.pop(call_id, None)
            self.audit.note_sent(call_id)
            return None
        self._record(tool, tool_args, tool_context, *self._outcome(result, tool_context))
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        self._record(tool, tool_args, tool_context, "error", f"{type(error).__name__}: {error}")
        return None

    def _outcome(self, result: Any, tool_context: ToolContext) -> tuple[str, str | None]:
        confirmation = tool_context.tool_confirmation
        if confirmation is not None and not confirmation.confirmed:
            return "rejected", None
        if tool_context.function_call_id in tool_context.actions.requested_tool_confirmations:
            return "awaiting_approval", None
        return outcome_of(result)

    def _record(
        self,
        tool: BaseTool,
        args: dict[str, Any],
        tool_context: ToolContext,
        outcome: str,
        detail: str | None,
    ) -> None:
        call_id = tool_context.function_call_id or ""
        now = (time.time(), time.monotonic())
        started = self._started.pop(call_id, now)
        self.audit.record(
            AuditRecord(
                at=started[0],
                user_id=tool_context.user_id,
                thread_id=tool_context.session.id,
                run_id=_run_id(tool_context),
                tool=tool.name,
                call_id=call_id,
                arguments=dict(args),
                outcome=outcome,
                detail=detail,
                duration_ms=(now[1] - started[1]) * 1000,
                executor="server",
            )
        )


def _run_id(tool_context: ToolContext) -> str:
    """The AG-UI run id the hub put in the run's metadata; ADK's invocation id without it."""
    run_config = tool_context.run_config
    metadata = (run_config.custom_metadata if run_config else None) or {}
    return str(metadata.get(RUN_METADATA_KEY, {}).get("runId") or tool_context.invocation_id)
