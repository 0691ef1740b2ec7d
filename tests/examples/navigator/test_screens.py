"""The screen catalog: shipped data, permission-filtered search, and the find_screen tool."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.adk.tools.tool_context import ToolContext

from gateway.examples.navigator.screens import catalog, generate, search, text
from gateway.examples.navigator.screens.catalog import CatalogError, ScreenCatalog
from gateway.examples.navigator.screens.tools import find_screen, search_screens

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def screens() -> ScreenCatalog:
    return catalog.load()


def ids(screens: ScreenCatalog, query: str, user: str = "demo", limit: int = 5) -> list[str]:
    return [screen.screen_id for screen in screens.search(query, user, limit)]


def context_of(user: str) -> ToolContext:
    return cast(ToolContext, SimpleNamespace(user_id=user))


# --- the shipped data ----------------------------------------------------------------------


def test_the_demo_menu_has_hundreds_of_screens_with_names_aliases_and_routes(
    screens: ScreenCatalog,
) -> None:
    assert len(screens.screens) >= 300
    for screen in screens.screens.values():
        assert screen.screen_id.startswith("MNU-")
        assert screen.name and screen.description and screen.route.startswith("/")
        assert screen.parent is None or screen.parent in screens.screens
    assert sum(bool(screen.aliases) for screen in screens.screens.values()) >= 300


def test_the_hand_written_screens_stay_as_they_were(screens: ScreenCatalog) -> None:
    request_list = screens.screens["MNU-3120"]
    assert request_list.name == "업무 요청 목록"
    assert {"요청 목록", "업무요청"} <= set(request_list.aliases)
    assert "R-1042" in request_list.description
    assert request_list.parent == "MNU-3100"
    for screen in generate.HANDWRITTEN:
        assert screens.screens[screen["screenId"]].name == screen["name"]


def test_screens_json_is_what_the_generator_writes() -> None:
    shipped = json.loads((catalog.DATA_DIR / "screens.json").read_text(encoding="utf-8"))
    regenerate = "run: python -m gateway.examples.navigator.screens.generate"
    assert shipped == generate.demo_screens(), regenerate


def test_users_and_what_they_may_open(screens: ScreenCatalog) -> None:
    demo, guest, other = (screens.users[u] for u in ("demo", "guest", "other-org"))
    assert (demo.org, guest.org, other.org) == ("ORG-01", "ORG-01", "ORG-02")
    assert "MNU-3120" in demo.screens and len(demo.screens) > 200
    assert "MNU-3120" not in guest.screens and "MNU-3130" in guest.screens
    assert not any(s.startswith("MNU-3") for s in other.screens)
    # A grant covers the screens under it; an exception takes one back.
    assert {"MNU-2000", "MNU-2010", "MNU-2810"} <= other.screens
    assert screens.permitted("nobody") == frozenset()


def test_a_grant_of_an_unknown_screen_fails_loading_with_its_name() -> None:
    users = [{"userId": "u", "name": "U", "org": "O", "grants": ["MNU-0404"]}]
    with pytest.raises(CatalogError, match="MNU-0404"):
        catalog.from_records(generate.HANDWRITTEN, users)


# --- search --------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["요청 목록", "업무요청", "업무 요청 목록 화면 열어줘"])
def test_the_ways_people_name_the_request_list_find_it_first(
    screens: ScreenCatalog, query: str
) -> None:
    assert ids(screens, query)[0] == "MNU-3120"


def test_a_request_id_finds_the_screen_that_lists_such_requests(screens: ScreenCatalog) -> None:
    assert "MNU-3120" in ids(screens, "R-1042 같은 것들 보는 데", limit=3)
    # Any request id, not the one in the description: ids are folded to their kind.
    assert text.fold("R-1042") == text.fold("R-7") == "r-#"
    assert "MNU-3120" in ids(screens, "R-2077 같은 것들 보는 데", limit=3)


def test_search_never_returns_a_screen_the_user_may_not_open(screens: ScreenCatalog) -> None:
    for query in ("요청 목록", "업무요청", "R-1042 같은 것들 보는 데", "MNU-3120", "목록"):
        found = ids(screens, query, user="guest", limit=50)
        assert "MNU-3120" not in found
        assert set(found) <= screens.permitted("guest")
    assert set(ids(screens, "목록", user="other-org", limit=50)) <= screens.permitted("other-org")
    assert ids(screens, "요청 목록", user="nobody") == []


@pytest.mark.parametrize("user", ["guest", "other-org"])
def test_a_screen_the_user_may_not_open_is_not_swapped_for_a_look_alike(
    screens: ScreenCatalog, user: str
) -> None:
    # "업무 요청" and "서비스 요청 목록" are open to them, but are not what they asked for:
    # opening either would answer a question nobody asked.
    assert ids(screens, "업무 요청 목록 화면 열어줘", user=user) == []
    assert find_screen("업무 요청 목록", context_of(user)) == {"screens": []}


def test_every_result_holds_each_word_that_names_something(screens: ScreenCatalog) -> None:
    found = ids(screens, "구매 요청 목록", limit=50)
    assert found[0] == "MNU-6110"
    for screen_id in found:
        screen = screens.screens[screen_id]
        said = " ".join((screen.name, *screen.aliases, screen.description))
        assert all(word in said for word in ("구매", "요청", "목록")), screen
    # Words no screen is named with, and "관리", do not narrow the results.
    assert ids(screens, "예산 얼마 남았는지")[0] == "MNU-4020"
    assert ids(screens, "요청 목록 관리")[0] == "MNU-3120"


def test_two_letter_and_one_letter_words_are_searchable(screens: ScreenCatalog) -> None:
    # Trigrams cannot match a two-letter word; the word marks make it three.
    assert ids(screens, "인사")[0] == "MNU-2000"
    assert ids(screens, "예산")[0] == "MNU-4020"
    assert ids(screens, "HR")[0] == "MNU-2000"
    assert ids(screens, "VOC")[0] in {"MNU-9200", "MNU-9210"}


def test_spacing_particles_and_filler_do_not_matter(screens: ScreenCatalog) -> None:
    assert ids(screens, "발주 목록")[0] == ids(screens, "발주목록")[0] == "MNU-6210"
    assert ids(screens, "발주 목록을 보여줘")[0] == "MNU-6210"
    assert ids(screens, "휴가를")[:1] == ids(screens, "휴가")[:1]


def test_a_screen_id_in_the_query_finds_that_screen(screens: ScreenCatalog) -> None:
    assert ids(screens, "MNU-3120 열어줘")[0] == "MNU-3120"
    assert ids(screens, "mnu-6210")[0] == "MNU-6210"


def test_a_query_with_nothing_to_match_finds_nothing(screens: ScreenCatalog) -> None:
    assert ids(screens, "!!!") == []
    assert ids(screens, "zzqxv") == []


# --- the relevance floor ------------------------------------------------------------------


def test_a_request_for_a_screen_that_does_not_exist_finds_nothing(screens: ScreenCatalog) -> None:
    # Each of these used to open its top hit: 법인카드 관리 ("회사 카드"), 증명서 발급 등록.
    for query in ("회사 식당 메뉴 열어줘", "qwerty 열어줘", "https://example.com 열어줘"):
        assert ids(screens, query) == [], query
    assert find_screen("회사 식당 메뉴 열어줘", context_of("demo")) == {"screens": []}


def test_a_request_whose_words_only_partly_match_a_name_opens_nothing(
    screens: ScreenCatalog,
) -> None:
    # "employee salaries" ran on into the alias "employees" and opened 사원 목록 (issue 29).
    query = "Open the screen for employee salaries of everyone"
    assert ids(screens, query) == []
    assert not search.names_it(text.read_query(query), search.Entry.of(screens.screens["MNU-2010"]))
    # A name said whole still answers, in English and with a Korean particle after it.
    assert ids(screens, "open the employee list")[0] == "MNU-2010"
    assert ids(screens, "employees")[0] == "MNU-2010"
    assert ids(screens, "사원목록을 열어줘")[0] == "MNU-2010"


def test_a_screen_answers_when_it_accounts_for_the_rare_words(screens: ScreenCatalog) -> None:
    card = search.Entry.of(screens.screens["MNU-4610"])
    canteen = text.read_query("회사 식당")
    # "식당" is in no screen: it weighs as much as "회사", so "회사 카드" explains half.
    assert search.coverage(canteen, card, [1.0, 1.0]) == 0.5
    assert not search.answers(canteen, card, [1.0, 1.0])
    assert search.coverage(text.read_query("회사 카드"), card, [1.0, 1.0]) == 1.0
    # The weights are rarities: a word in fewer screens says more.
    assert search.coverage(canteen, card, [3.0, 1.0]) == 0.75
    assert ids(screens, "회사 카드")[0] in {"MNU-4600", "MNU-4610"}


def test_a_name_said_whole_answers_among_other_words(screens: ScreenCatalog) -> None:
    assert ids(screens, "월급 얼마 들어왔는지")[0] == "MNU-2100"
    assert ids(screens, "이번 달 매출 통계")[0] == "MNU-7420"
    salary = search.Entry.of(screens.screens["MNU-2100"])
    assert search.names_it(text.read_query("월급 얼마"), salary)
    # One name among many words of a story is not a request for it.
    story = "어제 월급 받고 친구들이랑 영화 보고 맛있는 저녁 먹고 늦게 들어갔다"
    assert not search.names_it(text.read_query(story), salary)
    # A name starts at a word's start: "바코드" does not say "코드".
    codes = search.Entry.of(screens.screens["MNU-5200"])
    assert not search.names_it(text.read_query("바코드"), codes)


def test_a_query_of_request_words_only_names_no_screen(screens: ScreenCatalog) -> None:
    # Every description says "화면": that is no reason to open one.
    for query in ("화면", "화면 열어줘", "메뉴 보여줘", "관리", "메뉴 관리"):
        assert ids(screens, query) == [], query
    assert ids(screens, "인사 관리")[0] == "MNU-2000"


def test_a_menu_number_said_aloud_is_a_screen_id(screens: ScreenCatalog) -> None:
    assert text.split_screen_ids("3120번 화면 열어줘")[0] == ["MNU-3120"]
    assert ids(screens, "3120번 화면 열어줘")[0] == "MNU-3120"
    assert ids(screens, "3120번으로 가줘")[0] == "MNU-3120"
    assert "MNU-3120" not in ids(screens, "3120번 화면 열어줘", user="guest")


def test_predicates_say_nothing_and_a_ha_verb_keeps_its_noun() -> None:
    assert text.read_query("월급 얼마 들어왔는지").text == "월급"
    assert text.read_query("연차 신청하려고").terms[1] == ("신청하려고", "신청", "등록")
    assert text.read_query("품의서 올리기").terms[0] == ("품의서", "품의")


def test_filler_is_dropped_but_a_query_of_only_filler_is_kept() -> None:
    assert text.read_query("업무 요청 목록 화면 열어줘").text == "업무 요청 목록"
    assert text.read_query("메뉴 화면").text == "메뉴 화면"
    assert text.read_query("휴가를").terms == (("휴가를", "휴가"),)


# --- the tool ------------------------------------------------------------------------------


def test_find_screen_returns_the_documented_shape_for_the_calling_user() -> None:
    result = find_screen("요청 목록", context_of("demo"))
    first = result["screens"][0]
    assert set(first) == {"screenId", "name", "route", "description"}
    assert first["screenId"] == "MNU-3120" and first["route"] == "/work/requests/list"
    assert len(result["screens"]) <= 5
    guest = find_screen("요청 목록", context_of("guest"))
    assert "MNU-3120" not in {s["screenId"] for s in guest["screens"]}


def test_an_empty_query_is_an_error_the_model_can_explain() -> None:
    assert "error" in find_screen("  ", context_of("demo"))


def test_a_failing_search_is_an_error_value_not_an_exception() -> None:
    class Broken:
        def search(self, query: str, user_id: str, limit: int) -> Any:
            raise RuntimeError("disk on fire")

    result = search_screens(cast(ScreenCatalog, Broken()), "요청 목록", "demo")
    assert result == {"error": "screen search is unavailable (RuntimeError)"}
