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

What comes after the close (``Afterwards``) makes a person's acknowledged answer hold across
the crash, exactly once:

- A call a person answered (approved or rejected) whose tool had not started: nothing is
  closed; the restart resumes the invocation, and ADK runs the approved call (or answers a
  rejected one) and asks the model for its reply, as if the crash had not happened.
- An approved call whose tool had started (``STARTED_KEY``: the run commits that mark before
  it runs a call a person approved) and left no result: it may have done its work, so it is
  never run again. It gets a result that says so, and the model is asked for its reply.
- Answers the model had been given (a tool's result, the browser's, an approval) and not
  replied to: the model is asked once more for that reply (``cut_off.RESTARTED``). The
  cut-off reply says so (``cut_off.OWED_KEY``), which keeps the thread's run open until
  the asking run stores its turn: a restart in between closes it again, adding nothing,
  and asks again.
- That asking run cut off in turn (its worker died, a restart, a takeover): the reply is
  still owed, so it is asked for again, up to ``cut_off.FINISHING_ATTEMPTS`` runs in a row.
  The attempt cut off is rewound (ADK's ``rewind_before_invocation_id``): the model is
  shown the thread as the first ask showed it, with one ``RESTARTED`` turn, not one per
  attempt; a client still sees what each attempt streamed, marked interrupted.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from google.adk.events import Event, EventActions
from google.adk.sessions.session import Session
from google.adk.utils._function_call_names import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.genai import types

from gateway.context import RUN_METADATA_KEY, event_metadata
from gateway.store.cut_off import (
    FINISHING,
    OWED_KEY,
    Ending,
    answered_last,
    cut_off_reply,
    is_owed,
    is_restart_turn,
)

# The answer a cut-off server call gets, so the model request is well formed again.
INTERRUPTED_RESULT = {"error": "interrupted: the gateway stopped before this call finished"}
# The answer an approved call gets that a crash cut off while its tool ran.
UNKNOWN_RESULT = {
    "error": "interrupted: the gateway stopped while this approved call was running, so "
    "whether it completed is unknown. It was not run again; tell the user to check its "
    "result before asking for it again."
}
# The mark (under the gateway's run metadata, on an event without content) committed before
# a call a person approved runs: its value is the call's id.
STARTED_KEY = "approvedCallStarted"


class Afterwards(enum.Enum):
    """What a restart does with a thread once its cut-off run is closed."""

    NOTHING = "nothing"  # the thread takes its next run when its user sends one
    ASK_AGAIN = "ask again"  # the model owes a reply to answers it was given
    RESUME = "resume"  # a person's answer was not acted on yet: the invocation goes on


@dataclasses.dataclass(frozen=True, slots=True)
class Unfinished:
    """A thread a restart goes on with: ask its model again, or resume ``invocation_id``."""

    user_id: str
    thread_id: str
    afterwards: Afterwards
    invocation_id: str
    # Runs that went on with this thread's owed reply and were cut off in turn (the one
    # just closed included): the next is attempt ``attempts + 1``.
    attempts: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Finishing:
    """A run the gateway started to go on with ``unfinished`` (``Hub.finish_cut_off``)."""

    run_id: str
    unfinished: Unfinished

    def again(self) -> Unfinished:
        """What goes on once this run is cut off before it stored anything."""
        return dataclasses.replace(self.unfinished, attempts=self.unfinished.attempts + 1)


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


def closing(
    session: Session, run: OpenRun, author: str, *, may_ask: bool = True
) -> tuple[list[Event], Afterwards]:
    """The events that close ``run`` (appended in order), and what comes after them.

    ``may_ask``: whether the model may be asked again (``Restarts`` says no once asking was
    cut off too often); a reply it is asked for is marked owed, so the run stays open until
    the asking run stores its turn.
    """
    if still_owed(session.events, run.invocation_id):
        # Closed owing a reply, and cut off again before the asking run stored anything:
        # nothing new to close, the reply is still owed (closed for good when given up).
        if may_ask:
            return [], Afterwards.ASK_AGAIN
        rewound = asked_again(session.events, run.invocation_id)  # the model saw none of it
        return closing_events(session, run, author, rewound=rewound), Afterwards.ASK_AGAIN
    approvals = answered_approvals(session.events, run.invocation_id)
    if approvals.started:
        # Done or not, never run twice: the model is told so and replies.
        cut = dataclasses.replace(run, dangling=[*run.dangling, *approvals.started])
        events = closing_events(session, cut, author, UNKNOWN_RESULT, owed=may_ask)
        return events, Afterwards.ASK_AGAIN
    if approvals.unrun:
        # Only what a client saw is kept; ADK's resumed invocation does the rest.
        events = closing_events(session, run, author) if run.streamed or run.dangling else []
        return events, Afterwards.RESUME
    if asked_again(session.events, run.invocation_id):
        # The reply it was asking for is still owed; the next ask starts where this one did.
        events = closing_events(session, run, author, rewound=True, owed=may_ask)
        return events, Afterwards.ASK_AGAIN
    if not run.dangling and answered_last(session.events, run.invocation_id):
        return closing_events(session, run, author, owed=may_ask), Afterwards.ASK_AGAIN
    return closing_events(session, run, author), Afterwards.NOTHING


def still_owed(events: list[Event], invocation_id: str) -> bool:
    """Whether the invocation was closed already owing a reply (its last words are a
    cut-off reply marked ``OWED_KEY``) and nothing has gone on with it since."""
    said = [e for e in events if e.invocation_id == invocation_id and e.content is not None]
    return bool(said) and is_owed(said[-1])


def asked_again(events: list[Event], invocation_id: str) -> bool:
    """Whether the invocation is a finishing run's that asked the model again for a reply
    (it began with the ``RESTARTED`` turn) and is still that run's: not resumed since by a
    run of a user's (after a pause on an approval, say), which closes as any other."""
    own = [event for event in events if event.invocation_id == invocation_id]
    run_id = _last_run_id(own)
    return bool(own) and is_restart_turn(own[0]) and (run_id or "").startswith(FINISHING)


def _last_run_id(events: list[Event]) -> str | None:
    """The run the gateway last stamped on ``events``, if any."""
    run_ids = [event_metadata(e).get("runId") for e in events]
    return next((r for r in reversed(run_ids) if isinstance(r, str)), None)


@dataclasses.dataclass(frozen=True, slots=True)
class AnsweredApprovals:
    """Calls of an invocation a person answered whose tool has given no result since."""

    unrun: list[str]  # call ids whose tool has not started (a rejection never starts)
    started: list[tuple[str, str]]  # (call id, name) of approved calls whose tool started


def answered_approvals(events: list[Event], invocation_id: str) -> AnsweredApprovals:
    """The approvals answered in the invocation and not acted on to the end, in order."""
    own = [event for event in events if event.invocation_id == invocation_id]
    originals: dict[str, tuple[str, str]] = {}  # confirmation call id -> original call
    for event in own:
        for call in event.get_function_calls():
            if call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME and call.id:
                original = (call.args or {}).get("originalFunctionCall")
                if isinstance(original, dict) and isinstance(original.get("id"), str):
                    originals[call.id] = (original["id"], str(original.get("name") or ""))
    unrun: list[str] = []
    started: list[tuple[str, str]] = []
    for index, event in enumerate(own):
        if event.author != "user":
            continue
        for response in event.get_function_responses():
            if response.id not in originals:
                continue
            call_id, name = originals[response.id]
            later = own[index + 1 :]
            if any(r.id == call_id for e in later for r in e.get_function_responses()):
                continue
            if any(event_metadata(e).get(STARTED_KEY) == call_id for e in later):
                started.append((call_id, name))
            else:
                unrun.append(call_id)
    return AnsweredApprovals(unrun, started)


def closing_events(
    session: Session,
    run: OpenRun,
    author: str,
    cut_result: dict[str, Any] = INTERRUPTED_RESULT,
    *,
    rewound: bool = False,
    owed: bool = False,
) -> list[Event]:
    """The run's dangling calls answered with ``cut_result``, then its cut-off reply (marked
    ``owed`` if the model is to be asked again); with ``rewound``, then the rewind of the
    whole invocation, which the model is not shown."""
    invocation_id, dangling = run.invocation_id, run.dangling
    agent = next((e.author for e in reversed(session.events) if e.author != "user"), author)
    # The run the client saw cut off: the gateway stamps its id on the invocation's events.
    run_id = _last_run_id([e for e in session.events if e.invocation_id == invocation_id])
    run_mark: dict[str, Any] = {"runId": run_id} if run_id else {}
    closing = []
    if dangling:
        responses = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id, name=name, response=dict(cut_result)
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
    owed_mark = {OWED_KEY: True} if owed else {}
    closing.append(_interrupted_reply(run.streamed, invocation_id, agent, run_mark | owed_mark))
    if rewound:
        # ADK leaves out of every model request the events from the invocation's first to
        # this one (``google.adk.events._rewind_events``); the store keeps them, for clients.
        rewind = EventActions(rewind_before_invocation_id=invocation_id)
        closing.append(
            Event(
                invocation_id=invocation_id,
                author=agent,
                actions=rewind,
                custom_metadata={RUN_METADATA_KEY: run_mark},
            )
        )
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
