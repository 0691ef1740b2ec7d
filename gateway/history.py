"""A thread's stored ADK events as AG-UI 1.0 messages, with the ids that were streamed live.

Id conventions, shared with ``gateway.translate``:

- an assistant message is one saved model event; its id is the ADK event id;
- a tool call's id is ADK's function call id, as stored;
- a tool result's id is the AG-UI message id the client sent it under
  (``custom_metadata["agui"]["toolMessageIds"][call id]``), else ``"tr-" + call id``;
- a user message's id is the id from the RunAgentInput
  (``custom_metadata["agui"]["messageId"]`` on the user event), else the ADK event id.

Partial (streamed) events are never stored, and events without content carry no message.
"""

from __future__ import annotations

from typing import Any

from google.adk.events import Event
from google.adk.sessions import Session
from google.adk.sessions.state import State

from gateway.translate import CONFIRMATION_CALL, dump_json, result_message_id

Message = dict[str, Any]


def messages_snapshot(events: list[Event]) -> list[Message]:
    """The AG-UI messages of ``events``, oldest first.

    A tool result whose call is not among ``events`` (cut off by a history window) is
    left out, so the snapshot never holds an answer to a call the client cannot see.
    """
    messages: list[Message] = []
    calls_seen: set[str] = set()
    for event in events:
        if event.partial or event.content is None or not event.content.parts:
            continue
        agui = _agui_metadata(event)
        tool_message_ids: dict[str, str] = agui.get("toolMessageIds") or {}
        # ADK's placeholder answer to a call that waits for approval was never streamed.
        awaiting_approval = event.actions.requested_tool_confirmations if event.actions else {}
        for response in event.get_function_responses():
            if response.id is None or response.id not in calls_seen:
                continue
            if response.id in awaiting_approval:
                continue
            messages.append(
                {
                    "id": tool_message_ids.get(response.id) or result_message_id(response.id),
                    "role": "tool",
                    "toolCallId": response.id,
                    "content": dump_json(response.response or {}),
                }
            )
        text = "".join(part.text for part in event.content.parts if part.text and not part.thought)
        if event.author == "user":
            if text:
                messages.append(
                    {"id": agui.get("messageId") or event.id, "role": "user", "content": text}
                )
            continue
        tool_calls: list[Message] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name or "", "arguments": dump_json(call.args or {})},
            }
            for call in event.get_function_calls()
            # An approval request travels as an AG-UI Interrupt, not as a tool call.
            if call.id and call.name != CONFIRMATION_CALL
        ]
        calls_seen.update(str(call["id"]) for call in tool_calls)
        if not text and not tool_calls:
            continue
        message: Message = {"id": event.id, "role": "assistant"}
        if text:
            message["content"] = text
        if tool_calls:
            message["toolCalls"] = tool_calls
        messages.append(message)
    return messages


def state_snapshot(session: Session) -> dict[str, Any]:
    """The session's state as a client may see it: every scope but ``temp:``."""
    return {
        key: value for key, value in session.state.items() if not key.startswith(State.TEMP_PREFIX)
    }


def _agui_metadata(event: Event) -> dict[str, Any]:
    metadata = (event.custom_metadata or {}).get("agui")
    return metadata if isinstance(metadata, dict) else {}
