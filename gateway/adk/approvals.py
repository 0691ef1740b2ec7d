"""Approvals for any ADK tool, as AG-UI interrupts.

A FunctionTool with ``require_confirmation`` (a bool, or a callable of the arguments), or
a tool that calls ``tool_context.request_confirmation(hint=..., payload=...)``, makes ADK
pause the invocation at an ``adk_request_confirmation`` call whose arguments carry the
original call and a ``ToolConfirmation``. The gateway shows that as an interrupt:

- its message is the tool's hint; the hint ADK words itself for ``require_confirmation``
  (an instruction to a developer) gives way to the catalog's approval message, or to a
  sentence from the tool's name and arguments. A tool that asks in its own body keeps its
  hint, even one in ADK's words (ADK's own sample asks that way);
- its ``responseSchema`` is ``{approved, reason?}``, plus ``payload`` shaped like the
  payload the tool asked for, when it asked for one.

The answer, ``{"approved": bool, "reason"?: str, "payload"?: any}``, becomes ADK's
``ToolConfirmation``: an approval's payload reaches the tool (``tool_context.
tool_confirmation.payload``); a rejection carries its reason, and ``ApprovalPlugin`` puts the
reason into the result the model reads, where ADK would say only "This tool call is
rejected.".

Exactly once across a crash: before an approved call runs, ``ApprovalPlugin`` commits a mark
that it started (``gateway.store.recovery.STARTED_KEY``). A restart resumes an answered
approval whose call has no mark, so the call runs; one with a mark and no result may have
done its work, and is never run again (``gateway.store.recovery``).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
from jsonschema.validators import Draft202012Validator  # type: ignore[import-untyped]

from gateway import wire as p
from gateway.adk.hosting import llm_agents, tool_name
from gateway.context import RUN_METADATA_KEY, run_metadata
from gateway.store.recovery import STARTED_KEY
from gateway.tools.catalog import Catalog

__all__ = [
    "ApprovalPlugin",
    "adk_hint",
    "built_to_confirm",
    "confirmation",
    "interrupt_message",
    "own_hints",
    "response_schema",
]


def adk_hint(name: str) -> str:
    """How ADK's FunctionTool and McpTool word the hint for ``require_confirmation``: an
    instruction to a developer, not a question for a person."""
    return (
        f"Please approve or reject the tool call {name}() by responding with a "
        "FunctionResponse with an expected ToolConfirmation payload."
    )


# What ADK's FunctionTool returns for a rejected call; the plugin replaces it.
_ADK_REJECTION = {"error": "This tool call is rejected."}

APPROVAL_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "description": "Why it was rejected, for the model."},
    },
    "required": ["approved"],
}


def built_to_confirm(tool: Any) -> bool:
    """A FunctionTool, an MCP tool or toolset built with ``require_confirmation``."""
    return bool(getattr(tool, "_require_confirmation", False))


def own_hints(root: BaseAgent) -> frozenset[str]:
    """The tools of the root's invocation whose hint is always their own: those not built
    with ``require_confirmation``, so any confirmation they ask for is asked in their body.
    A toolset's tools are known only in a run: theirs count as ADK's when in ADK's words."""
    return frozenset(
        name
        for agent in llm_agents(root)
        for tool in agent.tools
        if not isinstance(tool, BaseToolset)
        and not built_to_confirm(tool)
        and (name := tool_name(tool))
    )


def interrupt_message(
    name: str, args: dict[str, Any], hint: str, catalog: Catalog | None, *, own_hint: bool = False
) -> str:
    """What the person is asked: the tool's hint (``own_hint``: the tool wrote it, see
    ``own_hints``), else the catalog's approval message with the arguments, or a sentence
    from the tool's name and arguments in place of ADK's words."""
    if hint and (own_hint or hint != adk_hint(name)):
        return hint
    entry = catalog.entries.get(name) if catalog else None
    if entry is not None and entry.approval_template:
        action = entry.approval_message(args)
        # What the sentence says already is not said again as key=value (issue 29:
        # "업무 요청 R-1042 건을 승인합니다. (requestId=R-1042)"); the rest is.
        said = entry.approval_names()
        rest = ", ".join(f"{key}={value}" for key, value in args.items() if key not in said)
        return f"{action} ({rest}) 승인하시겠습니까?" if rest else f"{action} 승인하시겠습니까?"
    details = ", ".join(f"{key}={value}" for key, value in args.items())
    return f"Approve {name}({details})?"


def response_schema(payload: Any) -> dict[str, Any]:
    """The answer's schema: ``{approved, reason?}``, and ``payload`` when the tool asked for
    one, with the shape of the payload it gave."""
    if payload is None:
        return APPROVAL_RESPONSE_SCHEMA
    properties = {**APPROVAL_RESPONSE_SCHEMA["properties"], "payload": _shape(payload)}
    return {**APPROVAL_RESPONSE_SCHEMA, "properties": properties}


def _shape(value: Any) -> dict[str, Any]:
    """A JSON Schema of the value's shape: its types, not its contents."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array", "items": _shape(value[0])} if value else {"type": "array"}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {str(key): _shape(item) for key, item in value.items()},
        }
    return {}


def confirmation(
    interrupt_id: str,
    approved: bool,
    reason: str,
    answer: dict[str, Any],
    asked_for: Any,
) -> dict[str, Any]:
    """The ``ToolConfirmation`` an answer makes. ``asked_for`` is the payload the tool gave;
    an approval's payload must have its shape (VALIDATION_ERROR naming the field if not)."""
    response: dict[str, Any] = {"confirmed": approved}
    if not approved:
        response["payload"] = {"reason": reason or "rejected"}
        return response
    if "payload" not in answer:
        if asked_for is not None:
            response["payload"] = asked_for
        return response
    schema = _shape(asked_for) if asked_for is not None else {}
    error = next(iter(Draft202012Validator(schema).iter_errors(answer["payload"])), None)
    if error is not None:
        raise _mismatch(interrupt_id, error)
    response["payload"] = answer["payload"]
    return response


def _mismatch(interrupt_id: str, error: ValidationError) -> p.GatewayError:
    where = "/".join(str(part) for part in error.absolute_path)
    return p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"resume: interrupt {interrupt_id!r} payload{'.' + where if where else ''} "
        f"{error.message}; see the interrupt's responseSchema.",
    )


class ApprovalPlugin(BasePlugin):
    """Marks an approved call as started, durably, before it runs; gives the model the
    person's reason when they reject a call."""

    def __init__(self) -> None:
        super().__init__(name="gateway_approvals")

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        confirmation = tool_context.tool_confirmation
        if confirmation is None or not confirmation.confirmed:
            return None
        invocation = tool_context._invocation_context
        mark = {**run_metadata(tool_context), STARTED_KEY: tool_context.function_call_id}
        started = Event(
            invocation_id=invocation.invocation_id,
            author=tool_context.agent_name,
            branch=invocation.branch,
            custom_metadata={RUN_METADATA_KEY: mark},
        )
        # Committed before the tool runs: a crash from here on may leave its work done.
        await invocation.session_service.append_event(invocation.session, started)
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        confirmation = tool_context.tool_confirmation
        if confirmation is None or confirmation.confirmed or result != _ADK_REJECTION:
            return None
        payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
        return {
            "status": "rejected",
            "error": f"The user rejected this call of {tool.name}; it did not run.",
            "reason": str(payload.get("reason") or "no reason given"),
        }
