"""What a thread waits on: the long-running calls of its history that have no response yet.

A browser tool's call, an approval asked (ADK's confirmation call), or a call of the agent's
own long-running tool stays open until a function response with its id is stored; the
interim result such a tool answers with at once does not close it
(``gateway.tools.long_running``). Nothing of it is kept in memory: every read of
the thread finds its open calls again, so a restart or another process sees the same.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session

from gateway.context import event_metadata
from gateway.tools.long_running import interim_results, server_calls
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
    # The agent's own long-running tool (executed on the server; only its result waits),
    # rather than a browser tool: it waits for its final result however long it takes.
    server: bool = False

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
        own = server_calls(event)
        for call in event.get_function_calls():
            if call.id and call.id in (event.long_running_tool_ids or ()):
                found[call.id] = OpenCall(
                    call.id,
                    call.name or "",
                    event.invocation_id,
                    event.timestamp,
                    call.args or {},
                    _client_of(event),
                    server=call.id in own,
                )
        for call_id in _final_responses(event):
            found.pop(call_id, None)
    return found


def _final_responses(event: AdkEvent) -> set[str]:
    """The calls ``event`` answers for good: every response but an interim result."""
    interim = interim_results(event)
    return {r.id for r in event.get_function_responses() if r.id and r.id not in interim}


def _client_of(event: AdkEvent) -> str | None:
    client = event_metadata(event).get("client")
    return client if isinstance(client, str) else None


def answered_calls(session: Session | None) -> set[str]:
    return {
        call_id
        for event in (session.events if session else ())
        for call_id in _final_responses(event)
    }


def final_answer(session: Session | None, call_id: str) -> dict[str, Any] | None:
    """The response that closed ``call_id`` for good, if one did (an interim result did not)."""
    for event in reversed(session.events if session else ()):
        if call_id in _final_responses(event):
            for response in event.get_function_responses():
                if response.id == call_id:
                    return dict(response.response or {})
    return None
