"""A snapshot's join of a thread's messages (``gateway.store.messages.answered_calls_only``):
of the replies cut off before they said anything, only the last of a turn shows; a reply
that is empty for another reason is never taken for one."""

from __future__ import annotations

import pytest

from gateway.store.messages import Message, answered_calls_only

pytestmark = pytest.mark.unit


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
