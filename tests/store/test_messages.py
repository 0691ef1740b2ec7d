"""A snapshot's join of a thread's messages (``gateway.store.messages.answered_calls_only``):
of the replies cut off before they said anything, only the last of a turn shows, whether or
not a ``/history`` page boundary falls after it; a reply that is empty for another reason
is never taken for one."""

from __future__ import annotations

import pytest
from google.adk.events import Event

from gateway.store import SessionService
from gateway.store.cut_off import RESTARTED
from gateway.store.messages import Message, answered_calls_only
from tests.support.adk_events import (
    agent_says,
    call,
    cut_off_before_a_word,
    event,
    result,
    user_says,
)
from tests.support.backends import APP

pytestmark = pytest.mark.unit

THREAD = "t"


def asked(message_id: str = "u1") -> Message:
    return {"id": message_id, "role": "user", "content": "열어줘"}


def cut_off(message_id: str) -> Message:
    """A reply cut off before a word, as ``gateway.store.cut_off`` stores it."""
    return {
        "id": message_id,
        "role": "assistant",
        "name": "agent",
        "metadata": {"ended": "interrupted"},
    }


def replied(message_id: str) -> Message:
    return {"id": message_id, "role": "assistant", "name": "agent", "content": "이동했습니다."}


def ids(messages: list[Message]) -> list[str]:
    return [message["id"] for message in messages]


def test_a_reply_cut_off_before_a_word_goes_once_a_later_reply_of_its_turn_follows() -> None:
    shown = answered_calls_only([asked(), cut_off("a1"), cut_off("a2"), replied("a3")])
    assert ids(shown) == ["u1", "a3"]


def test_the_last_cut_off_reply_of_a_turn_stays_as_the_sign_its_answer_never_came() -> None:
    shown = answered_calls_only([asked(), cut_off("a1"), cut_off("a2"), asked("u2"), replied("a3")])
    assert ids(shown) == ["u1", "a2", "u2", "a3"]


def test_an_empty_reply_that_was_not_cut_off_stays_when_a_later_reply_follows() -> None:
    # What another projection may show as an assistant message with neither text nor a
    # tool call (its parts carried elsewhere): nothing marks it cut off, so it is kept.
    shown_elsewhere: Message = {"id": "a1", "role": "assistant", "name": "agent"}
    shown = answered_calls_only([asked(), shown_elsewhere, replied("a2")])
    assert ids(shown) == ["u1", "a1", "a2"]


def test_the_thoughts_and_surfaces_around_a_cut_off_reply_stay_when_it_goes() -> None:
    thoughts: Message = {"id": "rs-a1", "role": "reasoning", "content": "화면을 찾는 중"}
    surface: Message = {
        "id": "a2ui-surface-s-c1",
        "role": "activity",
        "activityType": "a2ui-surface",
        "content": {"surfaceId": "s"},
    }
    shown = answered_calls_only([asked(), thoughts, cut_off("a1"), surface, replied("a2")])
    assert ids(shown) == ["u1", "rs-a1", "a2ui-surface-s-c1", "a2"]


# --- across a /history page boundary (``projection.joined``) ---------------------------


async def _thread(store: SessionService, *events: Event) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id=THREAD)
    for stored in events:
        await store.append_event(session, stored)


async def _paged(store: SessionService, newest: int) -> list[Message]:
    """The thread as a client pages it: its newest ``newest`` events, then the rest."""
    page = await store.thread_page(APP, "u", THREAD, limit=newest)
    assert page.earlier is not None
    older = await store.thread_page(APP, "u", THREAD, before=page.earlier)
    return older.messages + page.messages


async def test_a_cut_off_reply_whose_turn_goes_on_in_the_next_page_is_left_out(
    store: SessionService,
) -> None:
    await _thread(
        store,
        user_says("열어줘", "inv-run-1", runId="run-1"),
        cut_off_before_a_word("run-1", "inv-run-1"),
        user_says(RESTARTED, "inv-finish-1", runId="finish-1"),  # shows nothing
        agent_says("이동했습니다.", "inv-finish-1"),
    )
    whole, _ = await store.thread_messages(APP, "u", THREAD)
    assert [m["role"] for m in whole] == ["user", "assistant"]
    # The page boundary falls between the cut-off reply and the reply that came after it.
    assert await _paged(store, newest=1) == whole


async def test_a_cut_off_reply_that_ends_its_turn_stays_on_its_page(store: SessionService) -> None:
    await _thread(
        store,
        user_says("열어줘", "inv-run-1", runId="run-1"),
        cut_off_before_a_word("run-1", "inv-run-1"),
        user_says("다시", "inv-run-2", runId="run-2"),
        agent_says("이동했습니다.", "inv-run-2"),
    )
    whole, _ = await store.thread_messages(APP, "u", THREAD)
    assert [m["role"] for m in whole] == ["user", "assistant", "user", "assistant"]
    assert await _paged(store, newest=2) == whole


async def test_a_cut_off_reply_whose_turn_goes_on_past_tool_results_in_the_next_page_is_left_out(
    store: SessionService,
) -> None:
    await _thread(
        store,
        user_says("열어줘", "inv-run-1", runId="run-1"),
        event("agent", call("c1", "navigateToScreen", screenId="MNU-3120")),
        cut_off_before_a_word("run-1", "inv-run-1"),
        event("user", result("c1", "navigateToScreen", status="navigated")),  # the next page's
        agent_says("이동했습니다.", "inv-run-2"),
    )
    whole, _ = await store.thread_messages(APP, "u", THREAD)
    assert [m["role"] for m in whole] == ["user", "assistant", "tool", "assistant"]
    # The newer page starts with the browser's result, which says nothing of the turn: the
    # look across the boundary reads past it to the reply that goes on with the turn.
    page = await store.thread_page(APP, "u", THREAD, limit=2)
    assert page.earlier is not None
    older = await store.thread_page(APP, "u", THREAD, before=page.earlier)
    assert older.messages == whole[:2]
