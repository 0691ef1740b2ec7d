"""What a thread waits on: the long-running calls of its history that have no response yet.

A browser tool's call, or an approval asked (ADK's confirmation call), stays open until a
function response with its id is stored. Nothing of it is kept in memory: every read of
the thread finds its open calls again, so a restart or another process sees the same.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session

from gateway.context import event_metadata
from gateway.translate.translator import CONFIRMATION_CALL


@dataclasses.dataclass(frozen=True)
class OpenCall:
    """A long-running call without a response: a browser tool, or an approval request."""

    call_id: str
    name: str
    invocation_id: str
    asked_at: float
    args: dict[str, Any]
    # The client instance whose input started the run that made the call (``?clientId=``).
    client: str | None = None

    @property
    def is_approval(self) -> bool:
        return self.name == CONFIRMATION_CALL

    def approved_call(self) -> dict[str, Any]:
        """For an approval: the call it guards (``{"id", "name", "args"}``)."""
        original: dict[str, Any] = self.args.get("originalFunctionCall") or {}
        return original

    def asked_confirmation(self) -> dict[str, Any]:
        """For an approval: what the tool asked, ADK's ``ToolConfirmation`` (hint, payload)."""
        asked: dict[str, Any] = self.args.get("toolConfirmation") or {}
        return asked


def open_calls(session: Session | None) -> dict[str, OpenCall]:
    """Long-running calls in the thread that have no response yet, in call order."""
    found: dict[str, OpenCall] = {}
    for event in session.events if session else ():
        for call in event.get_function_calls():
            if call.id and call.id in (event.long_running_tool_ids or ()):
                found[call.id] = OpenCall(
                    call.id,
                    call.name or "",
                    event.invocation_id,
                    event.timestamp,
                    call.args or {},
                    _client_of(event),
                )
        for response in event.get_function_responses():
            if response.id:
                found.pop(response.id, None)
    return found


def _client_of(event: AdkEvent) -> str | None:
    client = event_metadata(event).get("client")
    return client if isinstance(client, str) else None


def answered_calls(session: Session | None) -> set[str]:
    return {
        response.id
        for event in (session.events if session else ())
        for response in event.get_function_responses()
        if response.id
    }
