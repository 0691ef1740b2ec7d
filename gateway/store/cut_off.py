"""A reply cut off before it completed: stopped by the user, failed, or interrupted.

One marking for all three. The reply is stored as one ADK event under the id its text
streamed with: the text the client was sent, then a note that tells the model its reply
was cut off (in English: it is for the model, which reads any language), and how the run
ended in ``custom_metadata["agui"]["ended"]``. A client is shown the text alone, with the
ending as the AG-UI message's ``metadata`` (``gateway.translate.history``):

    {"id": <streamed id>, "role": "assistant", "name": <agent>, "content": <text so far>,
     "metadata": {"ended": "stopped" | "failed" | "interrupted"}}

A reply cut off before any text has no ``content``. Threads stored before this marking
carry ``"interrupted": True`` and a bilingual note (``LEGACY_NOTE``); they read the same.

It lives in the store, the lowest layer that writes such a reply: ``recovery`` closes a
run a crash cut off with one and asks whether the model still owes a reply
(``answered_last``), and a SQLite migration recomputes the replies stored with the old
note. The layers above read the same marking from here: the hub stores a stopped or
failed reply, translation shows one (``ending_of``, ``is_note``), and a scripted model
reads a restart's request as it stood (``before_restart``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from google.adk.events import Event
from google.genai import types

from gateway.context import RUN_METADATA_KEY, event_metadata


class Ending(enum.StrEnum):
    """How a run ended that cut its reply off."""

    STOPPED = "stopped"  # the user cancelled the run
    FAILED = "failed"  # the run ended with RUN_ERROR: the model or a tool failed, or stalled
    INTERRUPTED = "interrupted"  # the gateway went away mid-run (a crash, a shutdown)


# What the model reads after the text it was cut off at.
NOTES = {
    Ending.STOPPED: "[The user stopped this reply here.]",
    Ending.FAILED: "[This reply broke off here: the run failed.]",
    Ending.INTERRUPTED: "[This reply broke off here: the gateway stopped.]",
}
# The note stored threads were written with, for every ending (clients showed it verbatim).
LEGACY_NOTE = "(응답이 중단되었습니다 / the previous response was interrupted)"
_NOTES = frozenset([*NOTES.values(), LEGACY_NOTE])


def cut_off_reply(
    *,
    message_id: str,
    invocation_id: str,
    author: str,
    text: str,
    ending: Ending,
    metadata: dict[str, Any],
) -> Event:
    """The stored reply: ``text`` then the note, marked with ``ending`` over ``metadata``.

    ``message_id`` "" lets ADK mint an id (nothing was streamed under one).
    """
    note = NOTES[ending]
    parts = [types.Part(text=note)]
    if text:
        parts = [types.Part(text=text), types.Part(text="\n\n" + note)]
    return Event(
        id=message_id,
        invocation_id=invocation_id,
        author=author,
        content=types.Content(role="model", parts=parts),
        custom_metadata={RUN_METADATA_KEY: {**metadata, "ended": ending.value}},
    )


# What the model is told, in a turn of its own, when a restart cut off its reply after the
# results it was answering (a browser's, a person's) had reached it: the gateway asks once
# more, so the thread ends with a reply that says what happened. No client is shown it.
RESTARTED = (
    "[The gateway restarted while you were answering, so your reply above was cut off. "
    "Give your answer again from the results above; do not call the tools again.]"
)
# The run id prefix of the run that asks it.
FINISHING = "finish-"
# The mark (under the gateway's run metadata, ``True``) on the cut-off reply a restart
# stores when the model still owes a reply: the thread's run stays open (``progress``)
# until the run that asks again stores its turn, so a restart in between (a ms window)
# finds the reply still owed instead of losing it (``recovery.closing``).
OWED_KEY = "owed"
# How many such runs in a row may be cut off in turn (a worker that dies each time, a
# restart loop) before the thread is left to end with the cut-off reply.
FINISHING_ATTEMPTS = 3


def before_restart(contents: Sequence[types.Content]) -> Sequence[types.Content]:
    """A model request's contents as they stood before a restart cut the reply off: up to
    the answers the model was replying to, without the cut-off reply and the ``RESTARTED``
    turn. For a model that reads the turn's structure, not its words (a script), so that
    it replies to those answers again; any other request comes back as it is."""
    last = contents[-1] if contents else None
    if last is None or last.role != "user" or [p.text for p in last.parts or ()] != [RESTARTED]:
        return contents
    for index in range(len(contents) - 2, -1, -1):
        if any(part.function_response for part in contents[index].parts or ()):
            return contents[: index + 1]
    return contents


def is_restart_turn(event: Event) -> bool:
    """Whether ``event`` is the turn a restart wrote for the model (``RESTARTED``)."""
    if event.author != "user" or not event.content or not event.content.parts:
        return False
    run_id = event_metadata(event).get("runId")
    texts = [part.text for part in event.content.parts if part.text]
    return texts == [RESTARTED] and isinstance(run_id, str) and run_id.startswith(FINISHING)


def is_owed(event: Event) -> bool:
    """Whether ``event`` is a cut-off reply after which the model still owes a reply."""
    return event_metadata(event).get(OWED_KEY) is True


def finishing_attempts(session_events: Sequence[Event]) -> int:
    """How many finishing runs in a row the thread's newest events come from: the runs
    that asked the model again for one reply it owed, each cut off in turn (the newest may
    be the run being closed). A run of a user's ends the count."""
    runs: set[str] = set()
    for event in reversed(session_events):
        run_id = event_metadata(event).get("runId")
        if not isinstance(run_id, str):
            continue  # an event the gateway did not stamp says nothing
        if not run_id.startswith(FINISHING):
            break
        runs.add(run_id)
    return len(runs)


def answered_last(session_events: list[Event], invocation_id: str) -> bool:
    """Whether the invocation's last stored event gave the model answers it had not replied
    to yet: function responses, the browser's or a person's (authored "user") or a server
    tool's (authored by its agent)."""
    last = next((e for e in reversed(session_events) if e.invocation_id == invocation_id), None)
    return (
        last is not None
        and bool(last.get_function_responses())
        and not any(part.text for part in (last.content and last.content.parts) or [])
    )


def ending_of(event: Event) -> Ending | None:
    """How the run ended that cut off ``event``'s reply; None unless it is such a reply."""
    parts = event.content.parts if event.content and event.content.parts else []
    if not any(is_note(part.text) for part in parts if part.text):
        return None
    marks = event_metadata(event)
    ended = marks.get("ended")
    if isinstance(ended, str) and ended in list(Ending):
        return Ending(ended)
    # Stored before the ending was named: only a crash left a reply cut off.
    return Ending.INTERRUPTED if marks.get("interrupted") is True else None


def is_note(text: str) -> bool:
    """Whether a text part is the note after a cut-off reply, never shown to a client."""
    return text.strip() in _NOTES
