"""The offline model's decisions, as a pure function of the conversation it is given."""

from __future__ import annotations

from gateway.examples.navigator.scripted import (
    APPROVE,
    FIND_SCREEN,
    NAVIGATE,
    Call,
    Say,
    Step,
    Turn,
    respond,
)

TOOLS = frozenset({FIND_SCREEN, NAVIGATE, APPROVE})


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
