"""ADK's session contract, run against our store on each backend and ADK's InMemorySessionService.

InMemorySessionService is the oracle: every test here passes against both, and the last
one replays one scripted conversation through both and compares what each returns.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import BaseSessionService, InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from tests.support.backends import BACKENDS
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = "app"


@pytest.fixture(params=[*BACKENDS, "in-memory oracle"])
async def service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "in-memory oracle":
        yield InMemorySessionService()  # type: ignore[no-untyped-call]
        return
    if request.param == "postgres":
        store = session_store(request.getfixturevalue("postgres").fresh_database())
    else:
        store = session_store(str(tmp_path / "sessions.db"))
    await store.open()
    yield store
    await store.close()


def said(text: str, *, author: str = "user", at: float | None = None, **kw: Any) -> Event:
    role = "user" if author == "user" else "model"
    event = Event(
        invocation_id=kw.pop("invocation_id", "inv"),
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        **kw,
    )
    if at is not None:
        event.timestamp = at
    return event


def delta(**state: Any) -> EventActions:
    return EventActions(state_delta={key.replace("__", ":"): v for key, v in state.items()})


def texts(session: Session | None) -> list[str]:
    assert session is not None
    return [e.content.parts[0].text or "" for e in session.events if e.content and e.content.parts]


async def test_create_keeps_every_scope_but_temp(service: BaseSessionService) -> None:
    state = {"topic": "screens", "app:motd": "hi", "user:lang": "ko", "temp:scratch": 1}
    created = await service.create_session(app_name=APP, user_id="u1", state=state)
    expected = {"topic": "screens", "app:motd": "hi", "user:lang": "ko"}
    assert created.state == expected
    loaded = await service.get_session(app_name=APP, user_id="u1", session_id=created.id)
    assert loaded is not None
    assert loaded.state == expected
    assert loaded.events == []


async def test_app_scope_is_shared_by_every_user_and_user_scope_by_one_user(
    service: BaseSessionService,
) -> None:
    a1 = await service.create_session(app_name=APP, user_id="alice", session_id="a1")
    await service.create_session(app_name=APP, user_id="alice", session_id="a2")
    await service.create_session(app_name=APP, user_id="bob", session_id="b1")
    await service.create_session(app_name="other", user_id="alice", session_id="o1")
    event = said("hello", actions=delta(app__banner="new", user__theme="dark", mine=1))
    await service.append_event(a1, event)

    a2 = await service.get_session(app_name=APP, user_id="alice", session_id="a2")
    b1 = await service.get_session(app_name=APP, user_id="bob", session_id="b1")
    o1 = await service.get_session(app_name="other", user_id="alice", session_id="o1")
    assert a2 is not None and b1 is not None and o1 is not None
    assert a2.state == {"app:banner": "new", "user:theme": "dark"}
    assert b1.state == {"app:banner": "new"}
    assert o1.state == {}
    assert await service.get_user_state(app_name=APP, user_id="alice") == {"theme": "dark"}
    assert await service.get_user_state(app_name=APP, user_id="bob") == {}


async def test_later_writes_to_a_scope_update_it_key_by_key(service: BaseSessionService) -> None:
    s = await service.create_session(
        app_name=APP, user_id="u", state={"a": 1, "b": {"x": 1}, "user:n": 1}
    )
    await service.append_event(s, said("1", actions=delta(b={"y": 2}, c=None, user__m=2)))
    await service.append_event(s, said("2", actions=delta(a=3, user__n=5)))
    loaded = await service.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert loaded is not None
    assert loaded.state == {"a": 3, "b": {"y": 2}, "c": None, "user:n": 5, "user:m": 2}
    assert s.state == loaded.state


async def test_temp_state_lives_in_the_running_session_only(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u")
    event = said("hi", actions=delta(temp__draft="x", kept=1))
    returned = await service.append_event(s, event)
    assert s.state == {"temp:draft": "x", "kept": 1}
    assert returned.actions.state_delta == {"kept": 1}
    loaded = await service.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert loaded is not None
    assert loaded.state == {"kept": 1}
    assert loaded.events[0].actions.state_delta == {"kept": 1}


async def test_partial_events_are_not_stored(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u")
    await service.append_event(s, said("question"))
    preview = said("stream", author="agent", partial=True, actions=delta(seen=1))
    assert await service.append_event(s, preview) is preview
    await service.append_event(s, said("streamed answer", author="agent"))
    assert texts(s) == ["question", "streamed answer"]
    assert "seen" not in s.state
    loaded = await service.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert texts(loaded) == ["question", "streamed answer"]
    assert loaded is not None and "seen" not in loaded.state


async def test_events_come_back_in_order_and_intact(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u")
    call = types.FunctionCall(id="call-1", name="find_screen", args={"query": "업무 요청"})
    answer = types.FunctionResponse(id="call-1", name="find_screen", response={"hits": [1, 2]})
    sent = [
        said("업무 요청 목록 화면 열어줘", custom_metadata={"agui": {"messageId": "m1"}}),
        Event(
            invocation_id="inv",
            author="agent",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            invocation_id="inv",
            author="agent",
            content=types.Content(role="user", parts=[types.Part(function_response=answer)]),
        ),
        said("이동했습니다", author="agent"),
    ]
    for event in sent:
        event.timestamp = 1000.0  # equal timestamps: order must still be append order
        await service.append_event(s, event)
    loaded = await service.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert loaded is not None
    assert [e.model_dump() for e in loaded.events] == [e.model_dump() for e in sent]


async def test_num_recent_events_and_after_timestamp(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u")
    for i in range(6):
        await service.append_event(s, said(f"e{i}", at=100.0 + i))

    async def get(**config: Any) -> list[str]:
        cfg = GetSessionConfig(**config)
        return texts(
            await service.get_session(app_name=APP, user_id="u", session_id=s.id, config=cfg)
        )

    assert await get(num_recent_events=2) == ["e4", "e5"]
    assert await get(num_recent_events=0) == []
    assert await get(num_recent_events=50) == [f"e{i}" for i in range(6)]
    assert await get(after_timestamp=103.0) == ["e3", "e4", "e5"]
    assert await get(after_timestamp=102.5) == ["e3", "e4", "e5"]
    assert await get(after_timestamp=500.0) == []
    assert await get(num_recent_events=4, after_timestamp=104.0) == ["e4", "e5"]
    assert await get(num_recent_events=2, after_timestamp=0.0) == ["e4", "e5"]
    with pytest.raises(ValueError):
        GetSessionConfig(num_recent_events=-1)


async def test_last_update_time_follows_the_latest_event(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u")
    event = said("hi", at=s.last_update_time + 5)
    await service.append_event(s, event)
    assert s.last_update_time == event.timestamp
    loaded = await service.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert loaded is not None and loaded.last_update_time == event.timestamp


async def test_list_sessions_by_user_and_for_all_users(service: BaseSessionService) -> None:
    s1 = await service.create_session(app_name=APP, user_id="alice", session_id="s1")
    await service.create_session(app_name=APP, user_id="bob", session_id="s2")
    await service.create_session(app_name=APP, user_id="alice", session_id="s3")
    await service.create_session(app_name="other", user_id="alice", session_id="s4")
    await service.append_event(
        s1, said("late", at=s1.last_update_time + 60, actions=delta(user__x=1, app__y=2))
    )

    alice = (await service.list_sessions(app_name=APP, user_id="alice")).sessions
    assert [s.id for s in alice] == ["s3", "s1"]  # oldest update first
    assert all(s.events == [] for s in alice)
    assert alice[1].state == {"user:x": 1, "app:y": 2}
    everyone = (await service.list_sessions(app_name=APP)).sessions
    assert [(s.user_id, s.id) for s in everyone] == [
        ("bob", "s2"),
        ("alice", "s3"),
        ("alice", "s1"),
    ]
    alice_state = {"user:x": 1, "app:y": 2}
    assert [s.state for s in everyone] == [{"app:y": 2}, alice_state, alice_state]
    assert (await service.list_sessions(app_name=APP, user_id="nobody")).sessions == []
    assert (await service.list_sessions(app_name="none")).sessions == []


async def test_delete_removes_one_session_only(service: BaseSessionService) -> None:
    s = await service.create_session(app_name=APP, user_id="u", session_id="gone")
    await service.append_event(s, said("bye", actions=delta(user__keep=1)))
    await service.create_session(app_name=APP, user_id="u", session_id="stays")
    await service.delete_session(app_name=APP, user_id="u", session_id="gone")
    await service.delete_session(app_name=APP, user_id="u", session_id="never-was")
    assert await service.get_session(app_name=APP, user_id="u", session_id="gone") is None
    listed = (await service.list_sessions(app_name=APP, user_id="u")).sessions
    assert [s.id for s in listed] == ["stays"]
    assert listed[0].state == {"user:keep": 1}  # user state outlives the session
    with pytest.raises(SessionNotFoundError):
        await service.append_event(s, said("after delete"))
    again = await service.create_session(app_name=APP, user_id="u", session_id="gone")
    assert (await service.get_session(app_name=APP, user_id="u", session_id=again.id)) is not None


async def test_session_ids_are_unique_per_user(service: BaseSessionService) -> None:
    await service.create_session(app_name=APP, user_id="u", session_id="t1")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=APP, user_id="u", session_id="t1")
    other = await service.create_session(app_name=APP, user_id="v", session_id="t1")
    assert other.id == "t1"
    generated = await service.create_session(app_name=APP, user_id="u")
    assert generated.id and generated.id != "t1"
    assert await service.get_session(app_name=APP, user_id="u", session_id=" t1 ") is not None
    assert await service.get_session(app_name=APP, user_id="w", session_id="t1") is None
    assert await service.get_session(app_name="x", user_id="u", session_id="t1") is None


# --- one conversation, both services, same answers --------------------------------------

Step = Callable[[BaseSessionService], Any]


async def _transcript(service: BaseSessionService) -> list[Any]:
    """Drives a fixed conversation and records everything the service answers."""
    seen: list[Any] = []

    def snap(session: Session | None) -> Any:
        if session is None:
            return None
        return (
            session.id,
            session.user_id,
            copy.deepcopy(session.state),  # the oracle's objects change as the test goes on
            [e.model_dump(exclude={"timestamp"}) for e in session.events],
        )

    sessions = {}
    for user, sid in [("alice", "a"), ("alice", "b"), ("bob", "c")]:
        sessions[sid] = await service.create_session(
            app_name=APP, user_id=user, session_id=sid, state={f"user:{sid}": 1, "temp:x": 0}
        )
        seen.append(snap(sessions[sid]))
    for turn in range(12):
        sid = "abc"[turn % 3]
        session = sessions[sid]
        event = said(
            f"turn {turn}",
            author="user" if turn % 2 else "agent",
            invocation_id=f"inv-{turn // 2}",
            id=f"ev-{turn}",
            actions=delta(
                **{f"k{turn % 4}": turn, "app__turns": turn, "user__last": sid, "temp__t": turn}
            ),
        )
        event.timestamp = 1000.0 + turn
        await service.append_event(session, event)
        seen.append(snap(session))
        for config in (None, GetSessionConfig(num_recent_events=3)):
            loaded = await service.get_session(
                app_name=APP, user_id=session.user_id, session_id=sid, config=config
            )
            seen.append(snap(loaded))
    await service.delete_session(app_name=APP, user_id="alice", session_id="b")
    listing = await service.list_sessions(app_name=APP)
    seen.append([(s.id, s.user_id, dict(s.state), s.last_update_time) for s in listing.sessions])
    seen.append(await service.get_user_state(app_name=APP, user_id="alice"))
    return seen


async def test_one_conversation_gives_identical_answers_from_both(db: str) -> None:
    oracle = await _transcript(InMemorySessionService())  # type: ignore[no-untyped-call]
    store = session_store(db)
    await store.open()
    try:
        ours = await _transcript(store)
    finally:
        await store.close()
    assert ours == oracle
