"""Appends to one session object from several tasks at once: a live turn's case (ADK's
runner, ADK's sender of typed text, and the browser's results all write its thread).

Each append carries the revision its session object was at: two in flight at once carry the
same, and the store refuses the second as stale. ``SessionService.serialised`` makes them
wait for each other, so every one is stored, in the order they asked; and an event ADK
makes from content a writer handed it is stored with that writer's stamp.
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events import Event
from google.genai import types

from gateway.context import event_metadata
from gateway.store import SessionService
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP

pytestmark = pytest.mark.unit


async def test_appends_in_flight_at_once_are_refused_as_stale_unless_serialised(
    store: SessionService,
) -> None:
    await store.create_session(app_name=APP, user_id="u", session_id="t")
    session = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert session is not None

    # Not serialised: the second of two appends in flight at once is refused.
    outcomes = await asyncio.gather(
        store.append_event(session, agent_says("a transcript ADK stores")),
        store.append_event(session, user_says("the browser's result")),
        return_exceptions=True,
    )
    assert any(isinstance(outcome, StaleSessionError) for outcome in outcomes), outcomes

    session = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert session is not None
    stored_before = texts(session)
    with store.serialised(session):
        await asyncio.gather(
            *(store.append_event(session, agent_says(f"said {n}")) for n in range(5)),
            store.append_event(session, user_says("the browser's result")),
        )
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert texts(loaded) == [
        *stored_before,
        *(f"said {n}" for n in range(5)),
        "the browser's result",
    ]
    # Outside the block, appends go straight on again, one at a time.
    assert loaded is not None
    await store.append_event(loaded, user_says("later"))
    assert texts(await store.get_session(app_name=APP, user_id="u", session_id="t"))[-1] == "later"


async def test_an_event_adk_makes_from_a_stamped_content_is_stored_with_the_stamp(
    store: SessionService,
) -> None:
    await store.create_session(app_name=APP, user_id="u", session_id="t")
    session = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert session is not None
    typed = types.Content(role="user", parts=[types.Part(text="typed")])
    other = types.Content(role="user", parts=[types.Part(text="typed")])  # equal, not it
    with store.serialised(session) as writes:
        writes.stamp(typed, {"messageId": "m-1"})
        await store.append_event(session, Event(invocation_id="i", author="user", content=other))
        await store.append_event(session, Event(invocation_id="i", author="user", content=typed))
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert loaded is not None
    assert [event_metadata(event).get("messageId") for event in loaded.events] == [None, "m-1"]
