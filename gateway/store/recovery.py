"""Crash recovery: what closes a run a crash cut off, so its thread takes a new run at once.

Streamed text is not an ADK event until its message completes, yet a client is sent it
chunk by chunk. ``streamed_texts`` keeps the text so far of the message a thread is
streaming (``save_streamed_text``; the hub sends a chunk only once it is committed).
Appending the message's final event deletes the row in the same transaction; a row a crash
left behind becomes the message, marked interrupted (``gateway.store.cut_off``: the same marking
as a reply the user stopped or a failure cut off). A server call a crash left without its
response gets an error response. ``SessionService.close_interrupted`` does this once at
start-up, with the open runs the backend finds (``sqlite.reads.open_runs``) and the events
made here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.adk.events import Event
from google.adk.sessions.session import Session
from google.genai import types

from gateway.context import RUN_METADATA_KEY, event_metadata
from gateway.store.cut_off import Ending, cut_off_reply

# The answer a cut-off server call gets, so the model request is well formed again.
INTERRUPTED_RESULT = {"error": "interrupted: the gateway stopped before this call finished"}


@dataclasses.dataclass(frozen=True, slots=True)
class StreamedMessage:
    """The message a run was streaming when it was cut off, as far as it was committed."""

    message_id: str
    author: str
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class OpenRun:
    """A run a crash cut off: its thread, its invocation and what it left unfinished."""

    user_id: str
    session_id: str
    invocation_id: str
    dangling: list[tuple[str, str]]  # (call id, name) of server calls without a response
    streamed: StreamedMessage | None


def closing_events(session: Session, run: OpenRun, author: str) -> list[Event]:
    invocation_id, dangling = run.invocation_id, run.dangling
    agent = next((e.author for e in reversed(session.events) if e.author != "user"), author)
    # The run the client saw cut off: the gateway stamps its id on the invocation's events.
    run_ids = [
        event_metadata(e).get("runId") for e in session.events if e.invocation_id == invocation_id
    ]
    run_id = next((r for r in reversed(run_ids) if isinstance(r, str)), None)
    run_mark: dict[str, Any] = {"runId": run_id} if run_id else {}
    closing = []
    if dangling:
        responses = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id, name=name, response=dict(INTERRUPTED_RESULT)
                )
            )
            for call_id, name in dangling
        ]
        closing.append(
            Event(
                invocation_id=invocation_id,
                author=agent,
                content=types.Content(role="user", parts=responses),
                custom_metadata={RUN_METADATA_KEY: run_mark | {"ended": Ending.INTERRUPTED.value}},
            )
        )
    closing.append(_interrupted_reply(run.streamed, invocation_id, agent, run_mark))
    return closing


def _interrupted_reply(
    streamed: StreamedMessage | None, invocation_id: str, agent: str, run_mark: dict[str, Any]
) -> Event:
    """The cut-off answer: what the client was sent of it (perhaps nothing), as one message.

    One message, so the thread reads as one answer that stopped, the client finds it
    under the id it streamed, and the model's next turn sees both what it said and that
    it was cut off.
    """
    return cut_off_reply(
        message_id=streamed.message_id if streamed else "",  # "": ADK mints a new id
        invocation_id=invocation_id,
        author=streamed.author if streamed else agent,
        text=streamed.text if streamed else "",
        ending=Ending.INTERRUPTED,
        metadata=run_mark,
    )
