"""Which provider session a live turn resumes: the newest resumable handle the thread keeps,
while nothing was said after it and the provider still keeps it."""

from __future__ import annotations

import pytest
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

from gateway.adk.resumption import PROVIDER_KEEPS_SECONDS, kept_handle

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def update(handle: str | None, *, resumable: bool = True, at: float = NOW) -> Event:
    resumption = types.LiveServerSessionResumptionUpdate(new_handle=handle, resumable=resumable)
    return Event(
        author="voice",
        invocation_id="live-1",
        live_session_resumption_update=resumption,
        timestamp=at,
    )


def said(text: str, *, author: str = "voice") -> Event:
    return Event(
        author=author,
        invocation_id="live-1",
        output_transcription=types.Transcription(text=text, finished=True),
    )


def typed(text: str) -> Event:
    content = types.Content(role="user", parts=[types.Part(text=text)])
    return Event(author="user", invocation_id="typed-1", content=content)


def thread(*events: Event) -> Session:
    return Session(id="t", app_name="app", user_id="u", events=list(events))


def test_the_newest_resumable_handle_is_kept_past_control_events() -> None:
    control = Event(author="voice", invocation_id="live-1", turn_complete=True)
    kept = kept_handle(thread(said("안녕"), update("h-1"), said("네"), update("h-2"), control), NOW)
    assert kept is not None and kept.handle == "h-2"
    # A point the provider cannot resume from leaves the handle before it standing.
    kept = kept_handle(thread(said("네"), update("h-2"), update(None, resumable=False)), NOW)
    assert kept is not None and kept.handle == "h-2"


def test_a_thread_that_moved_on_or_a_session_the_provider_dropped_starts_afresh() -> None:
    assert kept_handle(thread(), NOW) is None
    assert kept_handle(thread(said("안녕")), NOW) is None
    # A typed turn, or words after the handle: the provider's session never heard them.
    assert kept_handle(thread(update("h-1"), typed("그리고요")), NOW) is None
    assert kept_handle(thread(update("h-1"), said("끊기기 전 말")), NOW) is None
    # Older than the provider keeps a session.
    stale = update("h-1", at=NOW - PROVIDER_KEEPS_SECONDS - 1)
    assert kept_handle(thread(stale), NOW) is None
    assert kept_handle(thread(update("h-1", at=NOW - 60)), NOW) is not None
