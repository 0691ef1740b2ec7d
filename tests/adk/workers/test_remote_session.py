"""A worker's session service stores through the main process: an event joins the worker's
copy only once the main process says it is stored, and a refusal stops ADK; a run's input,
which the main process stores ahead of its commit, goes on without waiting for its answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

from gateway import timeline
from gateway.adk.workers.messages import Append, Appended
from gateway.adk.workers.remote_session import RemoteAppendRefused, RemoteSessions
from tests.support.budgets import eventually

pytestmark = pytest.mark.unit


def said(text: str, *, partial: bool = False, author: str = "agent") -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(author=author, invocation_id="i-1", content=content, partial=partial)


def held_session(
    *, input_ahead: bool = False
) -> tuple[RemoteSessions, Session, list[msgspec.Struct]]:
    sent: list[msgspec.Struct] = []
    sessions = RemoteSessions()
    sessions.connect(sent.append)
    session = Session(app_name="app", user_id="u", id="t-1")
    sessions.hold(7, session, input_ahead=input_ahead)
    return sessions, session, sent


async def test_an_event_joins_the_session_once_the_main_process_stored_it() -> None:
    sessions, session, sent = held_session()
    event = said("안녕하세요")
    appending = asyncio.create_task(sessions.append_event(session, event))
    await asyncio.sleep(0)
    [append] = sent
    assert isinstance(append, Append) and append.run == 7
    assert Event.model_validate_json(append.event).id == event.id
    assert session.events == []  # not before the store said so
    sessions.answered(Appended(7, append.call))
    await appending
    assert [e.id for e in session.events] == [event.id]
    assert sessions.was_stored(session, event)
    found = await sessions.get_session(app_name="app", user_id="u", session_id="t-1")
    assert found is session


async def test_a_partial_event_is_not_sent_to_be_stored() -> None:
    sessions, session, sent = held_session()
    await sessions.append_event(session, said("안", partial=True))
    assert sent == [] and session.events == []


async def test_a_refused_append_stops_the_run_and_leaves_the_session_as_it_was() -> None:
    sessions, session, sent = held_session()
    appending = asyncio.create_task(sessions.append_event(session, said("안녕")))
    await asyncio.sleep(0)
    [append] = sent
    assert isinstance(append, Append)
    sessions.answered(Appended(7, append.call, "FencedError"))
    with pytest.raises(RemoteAppendRefused, match="FencedError"):
        await appending
    assert session.events == []


async def test_appends_waiting_when_the_main_process_goes_fail() -> None:
    sessions, session, _ = held_session()
    appending = asyncio.create_task(sessions.append_event(session, said("안녕")))
    await asyncio.sleep(0)
    sessions.lost()
    with pytest.raises(RemoteAppendRefused):
        await appending


async def test_a_session_no_run_holds_is_not_served() -> None:
    sessions, session, _ = held_session()
    sessions.release(7)
    assert await sessions.get_session(app_name="app", user_id="u", session_id="t-1") is None
    with pytest.raises(RemoteAppendRefused):
        await sessions.append_event(session, said("안녕"))


async def test_the_runs_input_goes_on_before_the_main_process_answers() -> None:
    # The main process stores it ahead of its commit: waiting for its answer would only
    # put two hops of the pipe before the model call.
    sessions, session, sent = held_session(input_ahead=True)
    user = said("열어줘", author="user")
    await asyncio.wait_for(sessions.append_event(session, user), 1)
    [append] = sent
    assert isinstance(append, Append) and Event.model_validate_json(append.event).id == user.id
    assert [e.id for e in session.events] == [user.id]
    # The next append waits for the input's answer before it is even sent.
    reply = said("열었습니다")
    appending = asyncio.create_task(sessions.append_event(session, reply))
    await asyncio.sleep(0.01)
    assert len(sent) == 1 and not appending.done()
    sessions.answered(Appended(7, append.call))
    await eventually(lambda: len(sent) == 2, 1, what="the reply was not sent")
    sessions.answered(Appended(7, sent[1].call))  # type: ignore[attr-defined]
    await asyncio.wait_for(appending, 1)
    assert [e.id for e in session.events] == [user.id, reply.id]


async def test_a_refused_input_stops_the_run_at_its_next_append() -> None:
    sessions, session, sent = held_session(input_ahead=True)
    await sessions.append_event(session, said("열어줘", author="user"))
    [append] = sent
    sessions.answered(Appended(7, append.call, "StoreError"))
    with pytest.raises(RemoteAppendRefused, match="StoreError"):
        await sessions.append_event(session, said("열었습니다"))
    assert len(sent) == 1  # nothing after a refused input is sent to be stored


async def test_only_the_first_append_and_only_the_users_goes_ahead() -> None:
    # The main process's rule (``SessionService.input_ahead``): a run that stores no input
    # of its own (a resumed one) waits for its first event as for every other.
    sessions, session, sent = held_session(input_ahead=True)
    appending = asyncio.create_task(sessions.append_event(session, said("이어서")))
    await asyncio.sleep(0.01)
    assert not appending.done()
    sessions.answered(Appended(7, sent[0].call))  # type: ignore[attr-defined]
    await asyncio.wait_for(appending, 1)
    later = asyncio.create_task(sessions.append_event(session, said("또", author="user")))
    await asyncio.sleep(0.01)
    assert not later.done()
    sessions.answered(Appended(7, sent[1].call))  # type: ignore[attr-defined]
    await asyncio.wait_for(later, 1)


async def test_without_input_ahead_the_users_event_waits_as_any_other() -> None:
    sessions, session, sent = held_session()
    appending = asyncio.create_task(sessions.append_event(session, said("열어줘", author="user")))
    await asyncio.sleep(0.01)
    assert not appending.done() and session.events == []
    sessions.answered(Appended(7, sent[0].call))  # type: ignore[attr-defined]
    await asyncio.wait_for(appending, 1)


async def test_two_runs_of_one_thread_overlapping_in_a_worker_keep_their_own_sessions() -> None:
    # The hub let go of the first run (it read the provider's failure in it) while the
    # worker was still stopping it, and the thread's next run began in the same worker.
    sent: list[msgspec.Struct] = []
    sessions = RemoteSessions()
    sessions.connect(sent.append)
    first_session, next_session = (Session(app_name="app", user_id="u", id="t-1") for _ in "12")
    next_held, first_released = asyncio.Event(), asyncio.Event()

    async def first_run() -> None:
        sessions.hold(1, first_session)
        await next_held.wait()
        # Its last append, made while the next run holds the thread: the first run's own.
        appending = asyncio.create_task(sessions.append_event(first_session, said("늦게")))
        await asyncio.sleep(0)
        assert [append.run for append in sent if isinstance(append, Append)] == [1]
        appending.cancel()
        sessions.release(1)
        first_released.set()

    async def next_run() -> None:
        sessions.hold(2, next_session)
        next_held.set()
        await first_released.wait()
        found = await sessions.get_session(app_name="app", user_id="u", session_id="t-1")
        assert found is next_session
        appending = asyncio.create_task(sessions.append_event(next_session, said("안녕")))
        await asyncio.sleep(0)
        append = sent[-1]
        assert isinstance(append, Append) and append.run == 2
        sessions.answered(Appended(2, append.call))
        await appending
        assert [e.content for e in next_session.events] == [said("안녕").content]

    await asyncio.gather(asyncio.create_task(first_run()), asyncio.create_task(next_run()))


@pytest.fixture
def timeline_on(tmp_path: Path) -> Iterator[None]:
    timeline.start(str(tmp_path), "worker-1")
    yield
    timeline.stop()


async def answered_input_and_reply(
    sessions: RemoteSessions, session: Session, sent: list[msgspec.Struct]
) -> None:
    """The run's input (sent ahead), then a reply, whose append waits for both answers."""
    await sessions.append_event(session, said("안녕", author="user"))  # its input: no wait
    appending = asyncio.create_task(sessions.append_event(session, said("네")))
    for answered in range(2):  # the input's answer first, then the reply's own
        await eventually(lambda n=answered: len(sent) > n, 5, what="an append sent")
        append = sent[answered]
        assert isinstance(append, Append)
        sessions.answered(Appended(7, append.call))
    await appending


async def test_the_answers_a_run_waited_for_are_counted_for_its_timeline(
    timeline_on: None,
) -> None:
    sessions, session, sent = held_session(input_ahead=True)
    assert sessions.asked() == [("asked", 0), ("waited_for_main", 0.0)]
    await answered_input_and_reply(sessions, session, sent)
    # The input's answer, then the reply's: two waits, each of some time.
    [(_, asked), (_, waited)] = sessions.asked()
    assert asked == 2 and waited >= 0.0
    sessions.release(7)
    assert sessions.asked() == []  # no run held: nothing to count


async def test_with_the_timeline_off_no_wait_is_counted() -> None:
    # The counts are the timeline's alone (``asked``): off, an answer costs no clock read.
    assert not timeline.on()
    sessions, session, sent = held_session(input_ahead=True)
    await answered_input_and_reply(sessions, session, sent)
    assert sessions.asked() == [("asked", 0), ("waited_for_main", 0.0)]
