"""An agent's own long-running tools: the call streams, its interim result streams, the run
waits for the final result.

ADK's way (``LongRunningFunctionTool``): the tool starts something that takes a person or a
backend system (a ticket, an approval, a job) and returns at once with an interim value,
``{"status": "pending", "ticketId": ...}``; the application sends the final result later,
as a function response under the same call id. The gateway's own browser tools
(``gateway.tools.client``) are long-running tools too, but they return nothing and the
browser executes them; an agent's own are executed on the server, by the agent, and only
their outcome waits.

Left to itself, ADK takes the interim value as the answer and calls the model again, which
answers from "pending". ``LongRunningPlugin`` marks, on the events ADK stores, which
long-running calls are the agent's own (``custom_metadata["agui"]["serverCalls"]``: the
ones not among the browser tools the run's client declared, ``CLIENT_TOOLS_KEY``) and which
responses are interim (``["interim"]``); it pauses the invocation right after the interim
result (``end_invocation``, as ADK's own confirmation request does). So the stream, the
thread's open calls and its snapshot all know the call still waits, after a restart too,
and the final result resumes the paused invocation as a browser's result does.
"""

from __future__ import annotations

import logging
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.context import event_metadata, stamp
from gateway.store.progress import INTERIM_KEY, interim_results
from gateway.tools.client import CLIENT_TOOLS_KEY, ClientTool
from gateway.tools.per_invocation import InvocationPlugin
from gateway.translate.predictions import CONFIRM_CHANGES

__all__ = ["LongRunningPlugin", "interim_results", "server_calls"]

log = logging.getLogger(__name__)

# Where the agent's own long-running calls of a model event are marked, under the
# gateway's key of custom_metadata; its interim results under ``INTERIM_KEY``.
SERVER_CALLS_KEY = "serverCalls"
# ADK's own requests (a confirmation, a credential) are long-running calls it answers itself.
_ADK_REQUEST = "adk_request_"


def server_calls(event: Event) -> set[str]:
    """The ids of the agent's own long-running calls in ``event``; its other long-running
    calls are the browser's to execute."""
    found = event_metadata(event).get(SERVER_CALLS_KEY)
    return {str(call_id) for call_id in found} if isinstance(found, list) else set()


class LongRunningPlugin(InvocationPlugin[set[str]]):
    """Pauses the invocation on an agent's long-running tool's interim result and marks it.

    Its notes, per invocation: the calls whose interim result has not passed yet."""

    def __init__(self) -> None:
        super().__init__("gateway_long_running")

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        # ADK answers a long-running call only when its tool returned something (truthy);
        # a failure or a refusal (ADK's ``error`` key) and a confirmation asked are not
        # interim: the model goes on from them.
        if not tool.is_long_running or isinstance(tool, ClientTool) or not result:
            return None
        if "error" in result or tool_context.actions.requested_tool_confirmations:
            return None
        call_id = tool_context.function_call_id or ""
        self.notes.setdefault(tool_context.invocation_id, set()).add(call_id)
        log.info(
            "%s answered call %s with an interim result; the run waits for the final one",
            tool.name,
            call_id,
        )
        # The model is not called on the interim value: the invocation pauses once the
        # result's event is out, and the final result resumes it.
        tool_context._invocation_context.end_invocation = True
        return None

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        own = _own_calls(event)
        if own:
            stamp(event, SERVER_CALLS_KEY, own)
        calls = self.notes.get(invocation_context.invocation_id)
        if not calls:
            return None
        interim = [r.id for r in event.get_function_responses() if r.id in calls]
        if interim:
            calls.difference_update(interim)
            stamp(event, INTERIM_KEY, interim)
        return None  # changed in place, as the attribution plugin does: later plugins see it


def _own_calls(event: Event) -> list[str]:
    long_running = event.long_running_tool_ids or set()
    if not long_running:
        return []
    # The browser's: what its client declared, and the confirm dialog of predictive state,
    # which the gateway offers whether or not the page declared it.
    declared = {*(event_metadata(event).get(CLIENT_TOOLS_KEY) or ()), CONFIRM_CHANGES}
    return [
        call.id
        for call in event.get_function_calls()
        if call.id in long_running
        and call.name not in declared
        and not (call.name or "").startswith(_ADK_REQUEST)
    ]
