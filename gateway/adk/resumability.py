"""What an App without resumability cannot do, refused at the moment a run asks for it.

A run pauses on a browser tool's call, an approval or a long-running server tool, and the
answer resumes the paused invocation: that takes ADK's resumability. An App built without
it is still served, as ``adk web`` and ag-ui-adk serve it: a run that never pauses runs as
it would anywhere. When a run of it would pause, ``PauseRefusal`` stops it before the call
is stored or run, and the run ends with RUN_ERROR ``AGENT_ERROR`` and a sentence saying what
it waited for and what its owner can change; the thread stays as it was before the call,
so its next run starts clean. ``/capabilities`` says so up front (``custom.gateway.
resumable``, and no client tools or approvals).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event as AdkEvent
from google.adk.plugins.base_plugin import BasePlugin

from gateway import wire as p
from gateway.adk.chain import passes_over_chunks
from gateway.context import RUN_METADATA_KEY
from gateway.tools.client import CLIENT_TOOLS_KEY
from gateway.translate.translator import CONFIRMATION_CALL
from gateway.wire.notices import notice

__all__ = ["PauseRefusal", "refusal_in", "resumable", "tools_not_offered"]

log = logging.getLogger(__name__)


def resumable(app: App) -> bool:
    return bool(app.resumability_config and app.resumability_config.is_resumable)


class PauseRefusal(BasePlugin):
    """Refuses, with a sentence, the event at which a non-resumable App's run would pause."""

    def __init__(self, app_name: str) -> None:
        super().__init__(name="gateway_pause_refusal")
        self.app_name = app_name

    @passes_over_chunks
    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: AdkEvent
    ) -> AdkEvent | None:
        if (
            event.partial
            or invocation_context.is_resumable
            or not invocation_context.should_pause_invocation(event)
        ):
            return None
        awaited = _awaited(invocation_context, event)
        log.warning(
            "run of the non-resumable App %s stopped: it would wait for %s",
            self.app_name,
            awaited,
        )
        raise p.GatewayError(
            p.ErrorCode.AGENT_ERROR,
            f"This agent cannot wait for {awaited}: its App {self.app_name!r} is not "
            "resumable, so a run of it cannot pause and go on later. The run stopped before "
            "the call; ask for something else, or ask the agent's owner to build the App "
            "with ResumabilityConfig(is_resumable=True).",
        )


def _awaited(context: InvocationContext, event: AdkEvent) -> str:
    """What the run would wait for, in words: the first call that pauses it."""
    metadata = (context.run_config.custom_metadata or {}) if context.run_config else {}
    ours = metadata.get(RUN_METADATA_KEY)
    client_tools: Any = ours.get(CLIENT_TOOLS_KEY, ()) if isinstance(ours, dict) else ()
    pausing = set(event.long_running_tool_ids or ())
    for call in event.get_function_calls():
        if pausing and call.id not in pausing:
            continue
        if call.name == CONFIRMATION_CALL:
            original = (call.args or {}).get("originalFunctionCall") or {}
            return f"an approval of {original.get('name', 'a tool call')}"
        if call.name in client_tools:
            return f"the browser's result of {call.name}"
        return f"the long-running tool {call.name}"
    return "an answer"


def tools_not_offered(app_name: str, names: Iterable[str]) -> p.Custom:
    """The notice a run of a non-resumable App gets when its client declared browser tools:
    the model is not offered them, since the run could not wait for their results."""
    listed = ", ".join(sorted(names))
    log.info("client tools not offered to the non-resumable App %s: %s", app_name, listed)
    return notice(
        "CLIENT_TOOLS_NOT_OFFERED",
        f"The browser tools this client declared ({listed}) are not offered to this agent: "
        f"its App {app_name!r} is not resumable, so a run of it cannot wait for a browser's "
        "result. Its owner can build the App with ResumabilityConfig(is_resumable=True).",
    )


def refusal_in(error: BaseException) -> p.GatewayError | None:
    """The GatewayError a plugin raised to refuse a run, which ADK's plugin manager wraps in
    a RuntimeError; None when the error is something else."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, p.GatewayError):
            return seen
        seen = seen.__cause__
    return None
