"""The provider's session-resumption handle, kept with the thread.

Theory of operation. Gemini Live hands the client of a live session a handle now and then
(``sessionResumptionUpdate``); a connection set up with that handle continues the session
where the handle was given, the model's context included, and is not sent the history
again. ADK stores every such update as an event of the thread (it is neither partial nor
media), so the store keeps the handles with the thread already: durable across a restart,
and read by whichever process of a cluster opens the thread's next live turn.
``kept_handle`` reads the one a new live turn may resume from.

A handle is the session as of the moment it was given, so it is worth resuming only while
the thread has not moved on since: the newest resumable handle, with no event after it
that says something the provider did not hear in that session (a typed turn, a live turn
that started afresh, words transcribed after the handle). And only while the provider
still keeps the session: Gemini keeps it ``PROVIDER_KEEPS_SECONDS`` after its last
connection ends, and a handle's event is older than that end, so its age is a safe
measure. When either fails the turn starts a fresh session and ADK sends the thread's
history instead, as before handles were kept: slower to start, never wrong. A provider
may still refuse a handle it no longer has; ``gateway.adk.live`` then starts afresh too.
"""

from __future__ import annotations

import dataclasses

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session

# Gemini keeps a resumable session two hours after its last connection ends (the Live
# API's session management guide); five minutes less, for clocks that disagree.
PROVIDER_KEEPS_SECONDS = 2 * 3600 - 300


@dataclasses.dataclass(frozen=True)
class KeptHandle:
    """A handle the thread keeps: what to resume with, and the event that gave it."""

    handle: str
    event_id: str
    given_at: float


def kept_handle(session: Session, now: float) -> KeptHandle | None:
    """The handle the thread's next live connection may resume from; None: start afresh."""
    for event in reversed(session.events):
        update = event.live_session_resumption_update
        if update is not None and update.resumable and update.new_handle:
            if now - event.timestamp > PROVIDER_KEEPS_SECONDS:
                return None
            return KeptHandle(update.new_handle, event.id, event.timestamp)
        if _says_something(event):
            return None  # the provider's session never heard it
    return None


def _says_something(event: AdkEvent) -> bool:
    """Whether an event is part of the conversation a model is given (not a control event:
    a turn's end, an interruption, token counts, a state change)."""
    if event.content is not None and event.content.parts:
        return True
    return any(
        transcription is not None and bool(transcription.text)
        for transcription in (event.input_transcription, event.output_transcription)
    )
