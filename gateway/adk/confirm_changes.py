"""The confirm dialog of predictive state: a ``confirm_changes`` call the browser answers.

What a dojo frontend expects (``gateway.translate.predictions``): after a call of a tool
whose predicted state asks for a confirmation, a ``confirm_changes`` call with ``{}``
arguments, open when the run ends, which the client's dialog answers with a tool message
(``{"accepted": true}`` or ``false``).

How the gateway makes it: ``ConfirmChangesPlugin`` adds that call to the model's own reply,
beside the mapped tool's call, so it is an ordinary browser call of the thread. ADK runs
the mapped tool and pauses the invocation at ``confirm_changes`` (a long-running tool that
returns nothing, offered by name only: the model is never told of it, so it never calls it
by itself); the translator holds the call to the run's end, which then lists it in
``pendingToolCallIds``; the browser's answer resumes the invocation, and the model, given
both results, answers knowing what the person decided. The call is stored like any other,
so a reload shows the dialog's call and its answer as they were live, and a call left
unanswered expires like any browser call (``GATEWAY_CLIENT_TOOL_TIMEOUT``).

Only a resumable invocation is given the call: an agent run by an ``AgentTool`` cannot
pause, so its mapped tool's call gets no dialog.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from gateway.adk.chain import passes_over_chunks
from gateway.tools.client import ClientTool
from gateway.translate.predictions import CONFIRM_CHANGES, Prediction

__all__ = ["ConfirmChanges", "ConfirmChangesPlugin"]

log = logging.getLogger(__name__)


class ConfirmChanges(ClientTool):
    """The dialog's call: long-running, answered by the browser, never shown to the model."""

    def __init__(self) -> None:
        super().__init__(CONFIRM_CHANGES, "The person confirms or rejects the changes.", {})


class ConfirmChangesPlugin(BasePlugin):
    """Adds ``confirm_changes`` to a model reply that calls a tool asking for one."""

    def __init__(self, predictions: Sequence[Prediction]) -> None:
        super().__init__(name="agent_gateway_confirm_changes")
        self.tools = frozenset(p.tool for p in predictions if p.confirm)
        self.tool = ConfirmChanges()

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        if self.tools and _resumable(callback_context):
            # Callable by name, with no declaration; a client that declares its own
            # confirm_changes (CopilotKit's useHumanInTheLoop does) keeps its tool.
            llm_request.tools_dict.setdefault(CONFIRM_CHANGES, self.tool)
        return None

    @passes_over_chunks
    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        content = llm_response.content
        if llm_response.partial or content is None or not content.parts:
            return None
        called = [part.function_call.name for part in content.parts if part.function_call]
        mapped = [name for name in called if name in self.tools]
        if not mapped or CONFIRM_CHANGES in called or not _resumable(callback_context):
            return None
        # Changed in place: returning a response would skip the plugins after this one.
        content.parts.append(types.Part(function_call=_confirm_call()))
        log.info(
            "agent %s: confirm_changes asked after %s (predictive state)",
            callback_context.agent_name,
            mapped[0],
        )
        return None


def _confirm_call() -> types.FunctionCall:
    # ADK gives the call its id, as it does the model's own calls.
    return types.FunctionCall(name=CONFIRM_CHANGES, args={})


def _resumable(callback_context: CallbackContext) -> bool:
    return bool(callback_context._invocation_context.is_resumable)
