"""MCP tools: a call whose server fails ends the run with AGENT_ERROR.

ADK's ``McpTool`` does not raise when the call to its server fails (the server died, the
connection dropped, the server answered with a protocol error): it returns
``{"error": "<prefix><exception text>"}`` as the tool's result, and the model would read the
exception's text as if the tool had answered, and the client would be shown it. The gateway
ends the run there instead, as it does when the model fails:

- the result stored for the call is a sentence saying the call did not complete (so the
  next turn starts from a history where every call has its result, and the model knows the
  call may or may not have run on the server);
- the event carrying it is marked with the error code ``MCP_CALL_FAILED``, which the
  translator turns into RUN_ERROR AGENT_ERROR with an error id; the log line with that id
  says which tool failed and how.

An MCP tool's own error (``isError``: the tool ran and said no) is a result like any other
and reaches the model.

A server that is not up when a run lists its tools is ADK's to handle: the agent runs without
that toolset's tools, and ADK logs an error with the whole traceback, on every model call of
every run while the server is down (some 120 lines each). ``ToolsetLoadFailure`` makes that
record one line that ends with the innermost cause (the traceback stays at debug level).

The core does not import the ``mcp`` package: without it no MCP tool can exist, so there is
nothing to look at.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.tools.per_invocation import InvocationPlugin

__all__ = [
    "MCP_CALL_FAILED",
    "McpFailurePlugin",
    "ToolsetLoadFailure",
    "failed_result",
    "innermost_cause",
    "install_log_filter",
    "is_mcp_failure",
]

# The error code the run's event carries; the translator ends the run on any error code.
MCP_CALL_FAILED = "MCP_CALL_FAILED"
# How ADK's McpTool words the result it returns instead of raising (ADK 2.13).
_ADK_FAILURES = ("MCP tool execution failed: ", "Unexpected error during MCP tool execution: ")
_MCP_TOOL_MODULE = "google.adk.tools.mcp_tool.mcp_tool"
# Where ADK logs that an agent runs without a toolset that failed to load (ADK 2.13).
TOOLSET_LOGGER = "google_adk.google.adk.agents.llm_agent"
_TOOLSET_LOST = "Agent %s will run without the tools from toolset"


def failed_result(tool_name: str) -> dict[str, Any]:
    """What the thread keeps as the result of a call whose MCP server failed."""
    return {
        "status": "failed",
        "error": (
            f"The call to {tool_name} did not complete: its MCP server failed during the "
            "call, so whether it ran is not known."
        ),
    }


def is_mcp_failure(tool: BaseTool, result: Any) -> bool:
    """True for what ADK's McpTool returns when the call to its server failed."""
    module = sys.modules.get(_MCP_TOOL_MODULE)
    if module is None or not isinstance(tool, module.McpTool):
        return False
    if not isinstance(result, dict) or set(result) != {"error"}:
        return False
    error = result["error"]
    return isinstance(error, str) and error.startswith(_ADK_FAILURES)


class McpFailurePlugin(InvocationPlugin[dict[str, str]]):
    """Replaces a failed MCP call's result and marks its event, so the run ends there.

    Its notes, per invocation: the failed calls whose result event has not passed yet, call
    id to what failed, for the log."""

    def __init__(self) -> None:
        super().__init__("gateway_mcp_failures")

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        if not is_mcp_failure(tool, result):
            return None
        calls = self.notes.setdefault(tool_context.invocation_id, {})
        calls[tool_context.function_call_id or ""] = f"{tool.name}: {result['error']}"
        return failed_result(tool.name)

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        calls = self.notes.get(invocation_context.invocation_id)
        if not calls:
            return None
        failed = [calls.pop(r.id or "") for r in event.get_function_responses() if r.id in calls]
        if not failed:
            return None
        event.error_code = MCP_CALL_FAILED
        event.error_message = "; ".join(failed)
        return None  # changed in place, as the attribution plugin does: later plugins see it


class ToolsetLoadFailure(logging.Filter):
    """ADK's "will run without the tools from toolset" record, as one line with its cause."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or not str(record.msg).startswith(_TOOLSET_LOST):
            return True
        if logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return True
        cause = innermost_cause(error)
        record.msg = f"{record.getMessage()} (cause: {type(cause).__name__}: {cause})"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        return True


def innermost_cause(error: BaseException) -> BaseException:
    """The exception at the bottom of ``error``'s chain (a group's first member's, if any)."""
    seen: set[int] = set()
    while id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
            continue
        below = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
        if below is None:
            break
        error = below
    return error


def install_log_filter() -> None:
    """Adds ``ToolsetLoadFailure`` to ADK's agent logger, once."""
    logger = logging.getLogger(TOOLSET_LOGGER)
    if not any(isinstance(f, ToolsetLoadFailure) for f in logger.filters):
        logger.addFilter(ToolsetLoadFailure())
