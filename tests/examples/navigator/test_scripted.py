"""The offline model's decisions, as a pure function of the conversation it is given."""

from __future__ import annotations

import re

import pytest
from google.genai import types

from gateway.examples.navigator.scripted import (
    APPROVE,
    FIND_SCREEN,
    NAVIGATE,
    REJECT,
    SHOW,
    Call,
    Say,
    Step,
    Turn,
    read_turn,
    respond,
)

pytestmark = pytest.mark.unit

TOOLS = frozenset({FIND_SCREEN, NAVIGATE, APPROVE})
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def turn(text: str, *steps: Step, tools: frozenset[str] = TOOLS) -> Turn:
    return Turn(utterance=text, last_steps=steps, tools=tools)


def test_korean_and_english_navigation_requests_search_first() -> None:
    for text, query in [
        ("업무 요청 목록 화면 열어줘", "업무 요청 목록"),
        ("open the work request list", "work request list"),
        ("요청 목록 좀 보여줘", "요청 목록"),
    ]:
        reply = respond(turn(text))
        assert reply == Call([(FIND_SCREEN, {"query": query})]), text


def test_search_result_leads_to_navigation_with_its_arguments() -> None:
    found = Step(
        FIND_SCREEN,
        {"query": "업무 요청 목록"},
        {"screens": [{"screenId": "MNU-3120", "name": "업무 요청 목록", "route": "/w"}]},
    )
    reply = respond(turn("업무 요청 목록 화면 열어줘", found))
    assert reply == Call(
        [(NAVIGATE, {"screenId": "MNU-3120", "screenName": "업무 요청 목록", "routeHint": "/w"})]
    )


def test_final_answer_follows_the_browser_result() -> None:
    args = {"screenId": "MNU-3120", "screenName": "업무 요청 목록"}
    said = {
        status: respond(
            turn("업무 요청 목록 화면 열어줘", Step(NAVIGATE, args, {"status": status}))
        )
        for status in ("navigated", "denied", "not_allowed_here", "error", "no_result", "weird")
    }
    assert said["navigated"] == Say("업무 요청 목록 화면으로 이동했습니다.")
    for status, reply in said.items():
        assert isinstance(reply, Say)
        if status != "navigated":
            assert "이동했습니다" not in reply.text, status
    weird = said["weird"]
    assert isinstance(weird, Say) and "(weird)" in weird.text  # a status it does not know


def test_a_browser_answer_without_a_status_is_said_so_not_as_none() -> None:
    args = {"screenId": "MNU-3120", "screenName": "업무 요청 목록"}
    for answer in ({"opened": True}, {"status": None}, {"status": 3}, {"status": ""}):
        reply = respond(turn("업무 요청 목록 화면 열어줘", Step(NAVIGATE, args, answer)))
        assert isinstance(reply, Say)
        assert "status" in reply.text and "None" not in reply.text, answer
        assert "이동했습니다" not in reply.text


def test_empty_or_failed_search_is_explained() -> None:
    nothing = Step(FIND_SCREEN, {"query": "회사 식당"}, {"screens": []})
    empty = respond(turn("회사 식당 메뉴 열어줘", nothing))
    # Nothing fits: no navigation, and a way on (the menu, other words).
    assert empty == Say(
        "'회사 식당'에 맞는, 열 수 있는 화면을 찾지 못했습니다. 메뉴에서 찾아보시거나 "
        "다른 말로 다시 말씀해 주세요."
    )
    english = respond(turn("open the canteen menu", nothing))
    assert isinstance(english, Say) and "menu" in english.text and "other words" in english.text
    failed = respond(turn("x 열어줘", Step(FIND_SCREEN, {"query": "x"}, {"error": "db down"})))
    assert isinstance(failed, Say) and "db down" in failed.text


def test_without_the_client_tool_it_asks_for_the_menu() -> None:
    found = Step(FIND_SCREEN, {"query": "q"}, {"screens": [{"screenId": "MNU-1", "name": "A"}]})
    reply = respond(turn("A 열어줘", found, tools=frozenset({FIND_SCREEN})))
    assert isinstance(reply, Say) and "메뉴" in reply.text


def test_small_talk_intro_and_approval() -> None:
    assert isinstance(respond(turn("안녕")), Say)
    intro = respond(turn("tell me about yourself in detail"))
    assert isinstance(intro, Say) and len(intro.text.split()) > 60
    assert respond(turn("R-1042 승인해줘")) == Call([(APPROVE, {"requestId": "R-1042"})])
    approved = respond(
        turn("R-1042 승인해줘", Step(APPROVE, {"requestId": "R-1042"}, {"status": "approved"}))
    )
    assert approved == Say("R-1042 요청을 승인했습니다.")
    rejected = respond(
        turn(
            "R-1042 승인해줘",
            Step(APPROVE, {"requestId": "R-1042"}, {"status": "rejected", "reason": "no"}),
        )
    )
    assert (
        isinstance(rejected, Say)
        and "거절" in rejected.text
        and "승인했습니다" not in rejected.text
    )


CARD_TOOLS = TOOLS | {SHOW, REJECT}
PRESSED = (
    'User performed action "{}" on surface "work-request-R-1042" (component: {}).'
    ' Context: {{"requestId":"R-1042","status":"pending"}}'
)


def test_a_request_is_shown_as_a_card_or_told_in_words() -> None:
    assert respond(turn("R-1042 보여줘", tools=CARD_TOOLS)) == Call(
        [(SHOW, {"requestId": "R-1042"})]
    )
    # Without the tool, as before: a search for a screen.
    assert respond(turn("R-1042 보여줘")) == Call([(FIND_SCREEN, {"query": "R-1042"})])
    request = {"requestId": "R-1042", "title": "노트북 교체 구매", "requester": "김민수"}
    request |= {"amount": 1_850_000, "status": "pending"}
    seen = Step(SHOW, {"requestId": "R-1042"}, {"request": request, "a2ui": {"shown": ["c"]}})
    on_card = respond(turn("R-1042 보여줘", seen, tools=CARD_TOOLS))
    assert isinstance(on_card, Say) and "카드에서 승인하거나 거절" in on_card.text
    unseen = Step(SHOW, {"requestId": "R-1042"}, {"request": request, "a2ui": {"shown": []}})
    told = respond(turn("R-1042 보여줘", unseen, tools=CARD_TOOLS))
    assert told == Say("R-1042 노트북 교체 구매: 요청자 김민수, 금액 1,850,000원, 상태 대기 중.")


def test_a_press_on_the_card_asks_for_that_decision_in_the_users_language() -> None:
    for action, tool in (("approve", APPROVE), ("reject", REJECT)):
        pressed = Turn(PRESSED.format(action, action), (), CARD_TOOLS, voice="R-1042 보여줘")
        assert respond(pressed) == Call([(tool, {"requestId": "R-1042"})])
    rejected = Step(REJECT, {"requestId": "R-1042"}, {"status": "rejected", "rejectedBy": "demo"})
    after = Turn(PRESSED.format("reject", "reject"), (rejected,), CARD_TOOLS, voice="보여줘")
    assert respond(after) == Say("R-1042 요청을 거절했습니다.")
    unknown = Turn(PRESSED.format("archive", "archive"), (), CARD_TOOLS, voice="보여줘")
    assert respond(unknown) == Say("그 버튼은 제가 처리할 수 없어요.")


def test_a_decision_on_a_request_decided_before_is_told_truthfully() -> None:
    decided = {"error": "R-1042 is not waiting", "requestId": "R-1042", "requestStatus": "approved"}
    for tool, verb in ((APPROVE, "승인하지"), (REJECT, "거절하지")):
        reply = respond(turn("R-1042 승인해줘", Step(tool, {"requestId": "R-1042"}, decided)))
        assert reply == Say(f"R-1042 요청은 이미 승인된 요청이라 {verb} 않았습니다.")
    person_said_no = {"status": "rejected", "error": "rejected", "reason": "no"}
    reply = respond(turn("R-1042 거절해줘", Step(REJECT, {"requestId": "R-1042"}, person_said_no)))
    assert reply == Say("R-1042 거절이 승인되지 않아 진행하지 않았습니다 (no).")


def test_words_in_no_language_are_answered_in_the_pages_or_the_users_earlier_one() -> None:
    # The demo's page is Korean: "qwerty" and "1234" there get Korean (issue 29).
    for text in ("qwerty", "1234", "?!"):
        reply = respond(turn(text))
        assert isinstance(reply, Say) and _HANGUL.search(reply.text), (text, reply)
    assert respond(turn("hello")) == respond(turn("hello there"))
    said = respond(turn("hello"))
    assert isinstance(said, Say) and not _HANGUL.search(said.text)
    # A user who wrote English before is answered in English.
    english = respond(Turn(utterance="1234", last_steps=(), tools=TOOLS, earlier=("hi there",)))
    assert isinstance(english, Say) and not _HANGUL.search(english.text)
    korean = respond(Turn(utterance="1234", last_steps=(), tools=TOOLS, earlier=("안녕",)))
    assert isinstance(korean, Say) and _HANGUL.search(korean.text)


def test_the_earlier_words_come_from_the_conversation() -> None:
    contents = [
        types.Content(role="user", parts=[types.Part(text="open the menu please")]),
        types.Content(role="model", parts=[types.Part(text="Which screen should I open?")]),
        types.Content(role="user", parts=[types.Part(text="1234")]),
    ]
    read = read_turn(contents, TOOLS)
    assert read.earlier == ("open the menu please",) and not read.korean


def test_a_screen_that_does_not_exist_is_said_to_be_not_found() -> None:
    args = {"screenId": "MNU-9999"}
    refused = {"status": "not_found", "reason": "screen_not_found", "message": "..."}
    said = respond(turn("MNU-9999 열어줘", Step(NAVIGATE, args, refused)))
    assert said == Say("MNU-9999 화면은 찾을 수 없습니다. 없는 화면이에요.")
    assert isinstance(said, Say) and "권한" not in said.text
    english = respond(turn("open MNU-9999", Step(NAVIGATE, args, refused)))
    assert english == Say("There is no screen MNU-9999.")
