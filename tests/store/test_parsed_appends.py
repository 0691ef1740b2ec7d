"""An event parsed from ADK's JSON (a worker's append) is stored as that text, not dumped
again, and appended as ADK appends any event (``SessionService.append_event``'s
``parsed_from``): its state delta applied, its ``temp:`` state kept in the session and
left out of the row. The next read of such a row takes the event rather than parsing it
again (``gateway.store.parsed``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.adk.events import Event, EventActions

from gateway.store import SessionService, codec
from gateway.store.adk_json import parse_event
from gateway.store.parsed import RecentlyParsed
from tests.support.adk_events import kinds_of_events, user_says
from tests.support.backends import APP, rows
from tests.support.counting import Call, counting

pytestmark = pytest.mark.unit


def adk_json(event: Event) -> str:
    """The event as a worker sends it: ADK's dump, as the store writes its rows."""
    return event.model_dump_json(exclude_none=True, by_alias=True)


def stored_rows(store: SessionService) -> list[str]:
    return [data for (data,) in rows(store.path, "SELECT data FROM events ORDER BY seq")]


@pytest.fixture
def dumps(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """The events ``Event.model_dump_json`` is called on from now on."""
    return counting(monkeypatch, Event, "model_dump_json")


async def test_an_event_parsed_from_adks_json_is_stored_as_that_text(
    store: SessionService, dumps: list[Call]
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
    store: SessionService, dumps: list[Call]
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


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """The texts a read of the store parses from now on."""
    return counting(monkeypatch, codec, "parse_event")


async def test_the_next_read_takes_the_events_appended_from_their_rows_text_parsing_none(
    store: SessionService, parses: list[Call]
) -> None:
    """The reply's run reads back what the first run's worker appended a moment ago: the
    events parsed for those appends, not parsed again (``gateway.store.parsed``); once."""
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    sent = [adk_json(event) for event in kinds_of_events() if not event.partial]
    appended = [parse_event(text) for text in sent]
    for text, event in zip(sent, appended, strict=True):
        await store.append_event(session, event, parsed_from=text)
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert loaded is not None
    assert parses == []
    assert all(read is event for read, event in zip(loaded.events, appended, strict=True))
    assert loaded.events == [parse_event(row) for row in stored_rows(store)]
    # Taken once: the next read parses its own.
    again = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert again is not None and again.events == loaded.events
    assert len(parses) == len(sent)


async def test_an_event_whose_row_is_not_its_text_is_parsed_from_the_row(
    store: SessionService, parses: list[Call]
) -> None:
    said = user_says("hello")
    said.actions = EventActions(state_delta={"temp:draft": "x", "screen": "MNU-3120"})
    text = adk_json(said)
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    await store.append_event(session, parse_event(text), parsed_from=text)
    plain = user_says("hello again")  # no text: an event of the main process's own
    await store.append_event(session, plain)
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    # This test's texts only: an earlier test's task still running in this process may
    # parse its own (CI's run of integ50 counted a flagship story's 11 beside these 2).
    ours = [call for call in parses if "hello" in str(call.args[0])]
    assert loaded is not None and len(ours) == 2
    assert "temp:draft" not in loaded.events[0].actions.state_delta


def test_only_the_newest_texts_are_kept() -> None:
    events = [user_says(f"message {n}") for n in range(4)]
    texts = [adk_json(event) for event in events]
    recent = RecentlyParsed(limit=sum(len(text) for text in texts[1:]))
    for text, event in zip(texts, events, strict=True):
        recent.keep(text, event)
    assert recent.take(texts[0]) is None  # let go of, the oldest
    assert [recent.take(text) for text in texts[1:]] == events[1:]
    assert len(recent) == 0 and recent.take(texts[1]) is None
    recent.keep("x" * (recent.limit + 1), events[0])  # longer than all it may keep
    assert len(recent) == 0
