"""Approvals in a live turn: ADK 2.13's live flow never asks them, so the gateway does.

Theory of operation. In a typed run, a tool built with ``require_confirmation`` makes ADK
answer the call with a pause, emit an ``adk_request_confirmation`` call and end the
invocation; the person's answer resumes it. ADK's live flow does neither: the pause goes
to the model as the tool's answer, no request is emitted, and no answer is ever consumed
(``_live_llm_flow``'s TODOs). So in a live turn ``LiveApprovalPlugin`` asks before ADK's
confirmation gate does: for a call whose tool requires confirmation, it puts the same
``adk_request_confirmation`` call a typed run stores into the live stream (stored, then
translated into the same AG-UI interrupt), and waits. The model waits meanwhile, as for
any blocking call. The person's answer (``Asking.answer``, from the hub) is stored as the
request's function response, as a typed run's resume stores it, and becomes the call's
``tool_confirmation``: ADK's gate then runs the tool (``ApprovalPlugin`` marking it
started first, as in any run) or refuses it with the person's reason, and the model is
given that result.

The plugin acts only inside a live turn: ``LiveTurn`` sets the turn's ``Asking`` in a
context variable that ADK's tasks for the turn inherit. A turn that ends while a call
waits answers it as rejected, so the thread never keeps an approval nobody can answer.
A tool that asks for confirmation in its own body (``tool_context.request_confirmation``)
is not asked so in a live turn yet: the model reads its pause.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from google.adk.events import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.adk.approvals import adk_hint

log = logging.getLogger(__name__)

# The answer a call still waiting when its turn ends is given.
TURN_ENDED = {"confirmed": False, "payload": {"reason": "the live turn ended before an answer"}}


class Asking:
    """One live turn's approvals waiting for the person, by the request's call id."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    def answer(self, request_id: str, response: dict[str, Any]) -> bool:
        """Gives a waiting call the person's answer (a ``ToolConfirmation`` as a dict);
        False if nothing waits for it (answered already, or never asked)."""
        waiting = self.waiting.get(request_id)
        if waiting is None or waiting.done():
            return False
        waiting.set_result(response)
        return True

    def end(self) -> None:
        """The turn ends: whatever still waits is rejected."""
        for request_id in list(self.waiting):
            self.answer(request_id, TURN_ENDED)


_asking: contextvars.ContextVar[Asking | None] = contextvars.ContextVar(
    "gateway_live_asking", default=None
)


def asking_in(asking: Asking) -> None:
    """Makes ``asking`` the approvals of the live turn the current task runs (and of every
    task it starts from here on: ADK's tasks for the turn)."""
    _asking.set(asking)


class LiveApprovalPlugin(BasePlugin):
    """Asks the person before a live turn's call that needs approval; see the module."""

    def __init__(self) -> None:
        super().__init__(name="gateway_live_approvals")

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        asking = _asking.get()
        if asking is None or tool_context.tool_confirmation is not None:
            return None
        if await tool.check_require_confirmation(tool_args, tool_context) is not True:
            return None
        invocation = tool_context._invocation_context
        call = types.FunctionCall(
            id=tool_context.function_call_id, name=tool.name, args=dict(tool_args)
        )
        request_id = f"adk-{Event.new_id()}"
        request = _request(tool_context, request_id, call)
        waiting = asking.waiting[request_id] = asyncio.get_running_loop().create_future()
        log.info("live %s: %s waits for the person's approval", tool_context.invocation_id, call.id)
        try:
            # Stored and streamed as any run's request: the hub shows it as an interrupt.
            await invocation._enqueue_event(request)
            response = await waiting
        finally:
            asking.waiting.pop(request_id, None)
        answer = types.FunctionResponse(
            id=request_id, name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, response=response
        )
        # Stored as a typed run's resume stores it: the request is answered in the thread.
        answered = _event(tool_context, "user", types.Part(function_response=answer))
        await invocation.session_service.append_event(invocation.session, answered)
        tool_context.tool_confirmation = ToolConfirmation(
            confirmed=bool(response.get("confirmed")), payload=response.get("payload")
        )
        return None


def _request(tool_context: ToolContext, request_id: str, call: types.FunctionCall) -> Event:
    """The ``adk_request_confirmation`` call a typed run's invocation would emit."""
    confirmation = ToolConfirmation(hint=adk_hint(call.name or ""))
    args = {
        "originalFunctionCall": call.model_dump(exclude_none=True, by_alias=True),
        "toolConfirmation": confirmation.model_dump(by_alias=True, exclude_none=True),
    }
    asked = types.FunctionCall(
        id=request_id, name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, args=args
    )
    request = _event(tool_context, tool_context.agent_name, types.Part(function_call=asked))
    request.long_running_tool_ids = {request_id}
    return request


def _event(tool_context: ToolContext, author: str, part: types.Part) -> Event:
    invocation = tool_context._invocation_context
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id=invocation.invocation_id,
        author=author,
        branch=invocation.branch,
        content=types.Content(role=role, parts=[part]),
    )
