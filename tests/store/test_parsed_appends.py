"""An event parsed from ADK's JSON (a worker's append) is stored as that text, not dumped
again, and appended as ADK appends any event (``SessionService.append_event``'s
``parsed_from``): its state delta applied, its ``temp:`` state kept in the session and
left out of the row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.adk.events import Event, EventActions

from gateway.store import SessionService
from gateway.store.adk_json import parse_event
from tests.support.adk_events import kinds_of_events, user_says
from tests.support.backends import APP, rows

pytestmark = pytest.mark.unit


def adk_json(event: Event) -> str:
    """The event as a worker sends it: ADK's dump, as the store writes its rows."""
    return event.model_dump_json(exclude_none=True, by_alias=True)


def stored_rows(store: SessionService) -> list[str]:
    return [data for (data,) in rows(store.path, "SELECT data FROM events ORDER BY seq")]


@pytest.fixture
def dumps(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """The events ``Event.model_dump_json`` is called on from now on."""
    dumped: list[Event] = []
    dump = Event.model_dump_json

    def counted(self: Event, **options: Any) -> str:
        dumped.append(self)
        return dump(self, **options)

    monkeypatch.setattr(Event, "model_dump_json", counted)
    return dumped


async def test_an_event_parsed_from_adks_json_is_stored_as_that_text(
    store: SessionService, dumps: list[Event]
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    sent = [adk_json(event) for event in kinds_of_events() if not event.partial]
    dumps.clear()
    for text in sent:
        await store.append_event(session, parse_event(text), parsed_from=text)
    assert dumps == []
    assert stored_rows(store) == sent
    # What a reader parses of them is what was appended.
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert loaded is not None
    assert [adk_json(event) for event in loaded.events] == sent


async def test_the_input_sent_ahead_is_stored_as_its_text_too(
    store: SessionService, dumps: list[Event]
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    text = adk_json(user_says("업무 요청 목록 화면 열어줘", runId="r-1"))
    commits: list[Any] = []
    dumps.clear()
    with store.input_ahead(APP, "u", "t", commits.append):
        await store.append_event(session, parse_event(text), parsed_from=text)
    await commits[0]
    assert dumps == []
    assert stored_rows(store) == [text]


async def test_temp_state_stays_in_the_session_and_out_of_the_row(store: SessionService) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    said = user_says("hello")
    said.actions = EventActions(state_delta={"temp:draft": "x", "screen": "MNU-3120"})
    text = adk_json(said)
    await store.append_event(session, parse_event(text), parsed_from=text)
    # ADK's append: temp state lives in the session for the invocation, never in storage.
    assert session.state == {"temp:draft": "x", "screen": "MNU-3120"}
    (row,) = stored_rows(store)
    assert json.loads(row)["actions"]["stateDelta"] == {"screen": "MNU-3120"}
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert loaded is not None and loaded.state == {"screen": "MNU-3120"}
