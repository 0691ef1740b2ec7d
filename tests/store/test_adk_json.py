"""ADK events and sessions parsed without genai's per-model warning hook are the same
objects ``model_validate_json`` makes, and the hook is not run (``gateway.store.adk_json``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pydantic
import pytest
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import _common, types

from gateway.store import adk_json, codec
from gateway.store.adk_json import parse_content, parse_event, parse_session
from tests.support.adk_events import call, event, kinds_of_events

pytestmark = pytest.mark.unit


def _json(model: pydantic.BaseModel) -> bytes:
    # As the store and a worker write them.
    return model.model_dump_json(exclude_none=True, by_alias=True).encode()


def hook_calls(parse: Callable[[bytes], Any], data: bytes) -> int:
    """How often genai's hook ran while ``parse`` parsed ``data``."""
    hook = _common.BaseModel._check_field_type_mismatches.__func__.__code__  # type: ignore[attr-defined]
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is hook:
            calls += 1

    sys.setprofile(profile)
    try:
        parse(data)
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize(
    "event", kinds_of_events(), ids=["chunk", "message", "call", "result", "failure"]
)
def test_an_event_parses_to_what_adk_parses_without_the_hook(event: Event) -> None:
    data = _json(event)
    parsed = parse_event(data)
    assert parsed == Event.model_validate_json(data) == event
    assert _json(parsed) == data  # stored as it came
    assert parse_event(data.decode()) == parsed  # a stored row is text
    if event.content is not None:  # what it spares: genai's models are in the content
        assert hook_calls(Event.model_validate_json, data) > 0
    assert hook_calls(parse_event, data) == 0


def test_a_session_parses_to_what_adk_parses_without_the_hook() -> None:
    session = Session(
        app_name="navigator",
        user_id="u",
        id="t",
        state={"screen": "MNU-3120"},
        events=kinds_of_events(),
        last_update_time=1.5,
    )
    data = _json(session)
    parsed = parse_session(data)
    assert parsed == Session.model_validate_json(data) == session
    assert all(type(e) is Event for e in parsed.events)
    assert hook_calls(Session.model_validate_json, data) > 0
    assert hook_calls(parse_session, data) == 0


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"[]",
        b'{"content": {"parts": [{"text": 3}]}}',
        b'{"content": {"parts": [{"nonsense": 1}]}}',  # genai's models forbid extras
        b'{"timestamp": "soon"}',
        b'{"content": ' * 300 + b"{}" + b"}" * 300,
    ],
    ids=["cut", "array", "text", "extra", "timestamp", "deep"],
)
def test_bad_json_is_refused_as_adk_refuses_it(data: bytes) -> None:
    with pytest.raises(pydantic.ValidationError) as ours:
        parse_event(data)
    with pytest.raises(pydantic.ValidationError) as adks:
        Event.model_validate_json(data)
    assert ours.value.errors(include_url=False) == adks.value.errors(include_url=False)
    # What the store records of a damaged row is the same.
    damage = codec.Damage(7, "data", codec._complaint(adks.value))
    assert codec.decoded_event(7, data.decode()) == damage


def test_a_schema_without_the_hook_is_parsed_by_its_own_validator() -> None:
    class Plain(pydantic.BaseModel):
        name: str

    assert adk_json.validator_without_hook(Plain) is None
    assert adk_json.validator_without_hook(types.Part) is not None


@pytest.mark.parametrize(
    "data",
    [
        '{"id": "e", "timestamp": 1.0, "author": "a", "state": {"k": 1}}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "route": "next"}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "\\u0073tate": {"k": 1}}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "node_path": "wf/a"}',
    ],
    ids=["state", "route", "escaped", "node path"],
)
def test_adks_shortcuts_are_routed_as_adk_routes_them(data: str) -> None:
    """JSON ADK never writes, but a row could hold: ``Event``'s router still sees it."""
    adks = Event.model_validate_json(data)
    assert adks != Event(id="e", timestamp=1.0, author="a")  # routed somewhere
    assert parse_event(data) == parse_event(data.encode()) == adks


class Searched(bytes):
    """A text that counts the searches made in it."""

    searches = 0

    def __contains__(self, part: object) -> bool:
        Searched.searches += 1
        return super().__contains__(part)  # type: ignore[operator]


@pytest.mark.parametrize(
    "event", kinds_of_events(), ids=["chunk", "message", "call", "result", "failure"]
)
def test_adks_own_dump_is_parsed_without_a_search_for_shortcuts(event: Event) -> None:
    """A worker's events are ADK's dumps, whose keys are Event's fields: none is a
    shortcut's name, so the main process does not search them for one."""
    assert adk_json._DUMPS_NAME_NO_SHORTCUT
    data = Searched(_json(event))
    Searched.searches = 0
    assert parse_event(data, dumped=True) == event
    assert Searched.searches == 0
    assert parse_event(data) == event
    assert Searched.searches > 0


def test_a_shortcuts_name_inside_a_dump_is_a_value_not_a_shortcut() -> None:
    """A tool's arguments may hold a key named like a shortcut: a dump is parsed as ADK
    parses it either way (the router only looks at an event's own keys)."""
    asked = event("navigator", call("c-1", "save", state={"k": 1}, message="hi"))
    data = _json(asked)
    assert parse_event(data, dumped=True) == Event.model_validate_json(data) == asked


def test_a_message_parses_to_what_genai_parses_without_the_hook() -> None:
    """A run's new message, as a worker is handed it."""
    for content in [kind.content for kind in kinds_of_events() if kind.content is not None]:
        data = content.model_dump_json(exclude_none=True).encode()
        assert parse_content(data) == types.Content.model_validate_json(data) == content
        assert hook_calls(types.Content.model_validate_json, data) > 0
        assert hook_calls(parse_content, data) == 0
