"""A thread's stored ADK events as AG-UI 1.0 messages, with the ids that were streamed live.

Id conventions, shared with ``gateway.translate.translator``:

- an assistant message is one saved model event; its id is the ADK event id, and its
  ``name`` the agent that spoke; the event's thoughts are a reasoning message before it,
  ``"rs-" + event id``; what a sub-agent said carries the ``subagentRunId`` it streamed with
  (``gateway.translate.attribution``'s mark, stored on the event);
- a tool call's id is ADK's function call id, as stored;
- a tool result's id is the AG-UI message id the client sent it under
  (``custom_metadata["agui"]["toolMessageIds"][call id]``), else ``"tr-" + call id``; a
  client's result reads as it sent it (``toolMessageContents[call id]``, kept where the
  answer the model reads would not read back as it), else as that answer's JSON;
- a user message's id is the id from the RunAgentInput
  (``custom_metadata["agui"]["messageId"]`` on the user event), else the ADK event id;
- what a tool call showed of an A2UI surface is an ``a2ui-surface`` activity message after
  the call's result, ``a2ui-surface-{surfaceId}-{call id}`` (``gateway.a2ui.plugin``); a
  press on a surface that began a turn is an ``a2ui-action`` activity message in place of
  the user's words, under the id the run streamed it with.

A live turn's transcripts (``gateway.translate.live``) are a user message (what the person
said) and an assistant message (what the agent said), under the id of the utterance
stamped on the finished transcription. Partial (streamed) events are never stored, and
events without content carry no message. The agent's words the person spoke over are
stored finished before the interruption is known; the stored interruption marks them
(``metadata: {"ended": "bargedIn"}``, a ``mark`` the store's join applies).
A reply cut off mid-stream (stopped, failed, or interrupted by a crash) is stored as a model
event under the id it streamed with (``gateway.store.cut_off``): it shows as the text the client
was sent, with ``metadata: {"ended": ...}``, and without the note the model reads.
"""

from __future__ import annotations

from typing import Any

import msgspec
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

from gateway.a2ui import ACTION_ACTIVITY, SURFACE_ACTIVITY
from gateway.a2ui.actions import ACTION_KEY, action_content
from gateway.a2ui.plugin import shown_surfaces
from gateway.context import event_metadata
from gateway.store.cut_off import ending_of, is_note, is_restart_turn
from gateway.store.messages import MARK, Message, answered_calls_only
from gateway.translate.attribution import mark_of
from gateway.translate.streaming import reasoning_message_id
from gateway.translate.tool_results import result_content
from gateway.translate.translator import (
    CONFIRMATION_CALL,
    dump_json,
    result_message_id,
    shown_state,
)
from gateway.wire import live


def messages_snapshot(events: list[Event]) -> list[Message]:
    """The AG-UI messages of ``events``, oldest first.

    A tool result whose call is not among ``events`` (cut off by a history window) is
    left out, so the snapshot never holds an answer to a call the client cannot see.
    """
    return answered_calls_only(message for event in events for message in event_messages(event))


def event_messages(event: Event) -> list[Message]:
    """The AG-UI messages one event contributes to a snapshot, oldest first.

    Depends on nothing but the event, so the store, given it as its projection
    (``gateway.store.messages``), keeps it beside the event at append time;
    ``answered_calls_only`` then joins a thread's messages into a snapshot.
    """
    if event.input_transcription or event.output_transcription:
        return _transcript(event)
    if event.interrupted and isinstance(cut := event_metadata(event).get(live.CUT_OFF_KEY), str):
        # The reply the person spoke over was stored before this: marked, not repeated.
        return [{"id": cut, "role": MARK, "metadata": {"ended": live.BARGED_IN}}]
    if event.partial or event.content is None or not event.content.parts:
        return []
    if is_restart_turn(event):  # for the model alone
        return []
    agui = event_metadata(event)
    mark = mark_of(event)
    owner: Message = {"subagentRunId": mark.run_id} if mark else {}
    messages = _tool_results(
        event, agui.get("toolMessageIds") or {}, agui.get("toolMessageContents") or {}, owner
    )
    parts = event.content.parts
    ending = ending_of(event)
    text = "".join(
        part.text
        for part in parts
        if part.text and not part.thought and not (ending and is_note(part.text))
    )
    if event.author == "user":
        pressed = agui.get(ACTION_KEY)
        if text and isinstance(pressed, dict):
            messages.append(
                {
                    "id": agui.get("messageId") or event.id,
                    "role": "activity",
                    "activityType": ACTION_ACTIVITY,
                    "content": action_content(pressed),
                }
            )
        elif text:
            messages.append(
                {"id": agui.get("messageId") or event.id, "role": "user", "content": text}
            )
        return messages
    thoughts = "".join(part.text for part in parts if part.text and part.thought)
    if thoughts:
        messages.append(
            {"id": reasoning_message_id(event.id), "role": "reasoning", "content": thoughts} | owner
        )
    tool_calls = _tool_calls(event)
    if not text and not tool_calls and ending is None:
        return messages
    message: Message = {"id": event.id, "role": "assistant", "name": event.author} | owner
    if text:
        message["content"] = text
    if tool_calls:
        message["toolCalls"] = tool_calls
    if ending is not None:
        message["metadata"] = {"ended": ending.value}
    messages.append(message)
    return messages


def _transcript(event: Event) -> list[Message]:
    """What a live turn heard or said, once finished, under the id it streamed with
    (``gateway.adk.live.Transcripts``): a user or an assistant text message."""
    message_id = event_metadata(event).get("messageId") or event.id
    heard, said = event.input_transcription, event.output_transcription
    if event.partial:
        return []
    if heard is not None and heard.finished and heard.text:
        return [{"id": message_id, "role": "user", "content": heard.text}]
    if said is not None and said.finished and said.text:
        return [{"id": message_id, "role": "assistant", "name": event.author, "content": said.text}]
    return []


def _tool_results(
    event: Event, tool_message_ids: dict[str, str], own_words: dict[str, Any], owner: Message
) -> list[Message]:
    # ADK's placeholder answer to a call that waits for approval was never streamed.
    awaiting_approval = event.actions.requested_tool_confirmations if event.actions else {}
    shown = shown_surfaces(event)
    results: list[Message] = []
    for response in event.get_function_responses():
        if response.id is None or response.id in awaiting_approval:
            continue
        # A browser's answer is shown as the browser sent it; a server tool's as streamed.
        browser_message = tool_message_ids.get(response.id)
        results.append(
            {
                "id": browser_message or result_message_id(response.id),
                "role": "tool",
                "toolCallId": response.id,
                "content": _browser_words(response, own_words)
                if browser_message
                else msgspec.to_builtins(result_content(response)),
            }
            | owner
        )
        results += [
            {
                "id": surface.message_id,
                "role": "activity",
                "activityType": SURFACE_ACTIVITY,
                "content": surface.content,
            }
            | owner
            for surface in shown
            if surface.tool_call_id == response.id
        ]
    return results


def _browser_words(response: types.FunctionResponse, own_words: dict[str, Any]) -> Any:
    """The browser's answer in its own words where they were kept, else as the model reads
    it; dumped only when it is shown so (a default to ``dict.get`` is made every time)."""
    if response.id in own_words:
        return own_words[response.id]
    return dump_json(response.response or {})


def _tool_calls(event: Event) -> list[Message]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name or "", "arguments": dump_json(call.args or {})},
        }
        for call in event.get_function_calls()
        # An approval request travels as an AG-UI Interrupt, not as a tool call.
        if call.id and call.name != CONFIRMATION_CALL
    ]


def state_snapshot(session: Session) -> dict[str, Any]:
    """The session's state as a client may see it: every scope but ``temp:``."""
    return {key: value for key, value in session.state.items() if shown_state(key)}
