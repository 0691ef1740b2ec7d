"""The demo's page (gateway/examples/navigator/web/ over gateway/web/, at /) in headless Chromium.

Each test is a story a user lives through: typing in the chat, clicking, reading the main
area and the bot's answers. Navigations are counted by the page (``window.__navigations``),
so "the screen opened exactly once" is measured, not assumed.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, WebSocketRoute, expect

from tests.support.agui import StreamChecker, seq_of
from tests.support.browser import (
    NEEDS_CHROMIUM,
    SCREENSHOT,
    SCREENSHOT_SIZES,
    TIMEOUT_MS,
    WebApp,
    accessibility_problems,
    new_context,
    route_sockets,
    screenshot_at,
)
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]


async def test_asking_for_the_work_request_list_opens_it_and_the_bot_says_so(
    context: BrowserContext, gateway: RunningGateway, tmp_path: Path
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await expect(app.screen_title).to_have_text("홈")

    await app.say(FLAGSHIP)

    await expect(app.screen_title).to_have_text("업무 요청 목록", timeout=TIMEOUT_MS)
    await expect(app.main.get_by_role("table", name="업무 요청 목록")).to_contain_text("R-1042")
    await app.last_reply_contains(MOVED)
    await expect(app.activity("navigateToScreen").last).to_contain_text("이동 완료")
    await expect(app.page.get_by_role("link", name="업무 요청 목록", exact=True)).to_have_attribute(
        "aria-current", "page"
    )
    assert await app.navigations() == 1
    await app.wait_idle()
    update = bool(os.environ.get("UPDATE_SCREENSHOT"))
    shot = SCREENSHOT if update else tmp_path / "flagship.png"
    await app.page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    for width, height in SCREENSHOT_SIZES.items():
        await app.page.set_viewport_size({"width": width, "height": height})
        # At every width the screen that opened and the bot's answer are both in sight.
        await expect(app.screen_title).to_be_in_viewport()
        await expect(app.replies.last).to_be_in_viewport()
        await expect(app.page.get_by_role("textbox", name="메시지")).to_be_in_viewport()
        shot = screenshot_at(width) if update else tmp_path / f"flagship-{width}.png"
        await app.page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000


async def test_the_user_picker_signs_in_as_someone_else(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    menu = app.page.get_by_role("navigation", name="메뉴")
    await expect(menu).to_contain_text("업무 관리")

    await app.page.get_by_label("사용자 선택").select_option("other-org")
    await app.wait_connected()

    await expect(app.page.get_by_role("banner")).to_contain_text("ORG-02")
    await expect(menu).to_contain_text("인사 관리")
    await expect(menu).not_to_contain_text("업무 관리")


@pytest.mark.parametrize("user", ["guest", "other-org"])
async def test_a_user_without_the_work_request_list_stays_put_and_hears_why(
    context: BrowserContext, gateway: RunningGateway, user: str
) -> None:
    app = await WebApp.open(context, gateway, user)
    await expect(app.page.get_by_role("navigation", name="메뉴")).not_to_contain_text(
        "업무 요청 목록"
    )

    await app.say(FLAGSHIP)

    await app.last_reply_contains("못했습니다")
    await app.wait_idle()
    await expect(app.screen_title).to_have_text("홈")
    await expect(app.main.get_by_role("table", name="업무 요청 목록")).to_have_count(0)
    assert await app.navigations() == 0


async def test_guest_naming_a_forbidden_screen_is_refused_by_the_server(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "guest")

    await app.say("MNU-3120 화면 열어줘")

    await app.last_reply_contains("권한이 없어 이동하지 못했습니다")
    # The server's policy refused the call, so the browser never received it.
    await expect(app.activity("navigateToScreen")).to_have_count(0)
    await expect(app.screen_title).to_have_text("홈")
    assert await app.navigations() == 0


@pytest.mark.parametrize("mode", ["전체 화면", "모달"])
async def test_a_full_screen_or_modal_chat_asks_the_user_to_use_the_menu(
    context: BrowserContext, gateway: RunningGateway, mode: str
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await app.choose_chat_mode(mode)

    await app.say(FLAGSHIP)

    await app.last_reply_contains("메뉴에서")
    await app.wait_idle()
    # The surface comes with the run's context; the server refuses before the browser
    # sees a call (and the page would refuse it too).
    await expect(app.activity("navigateToScreen")).to_have_count(0)
    assert await app.navigations() == 0

    await app.choose_chat_mode("패널")
    await expect(app.screen_title).to_have_text("홈")
    await app.open_from_menu("업무 관리", "업무 요청", "업무 요청 목록")
    await expect(app.screen_title).to_have_text("업무 요청 목록")


@pytest.mark.parametrize(
    ("button", "answer", "timeline"),
    [
        ("승인", "R-1042 요청을 승인했습니다.", "✓ 승인됨"),
        ("거절", "R-1042 승인이 거절되어 진행하지 않았습니다", "✕ 거절됨"),
    ],
)
async def test_approving_or_rejecting_r1042_from_the_approval_card(
    context: BrowserContext, gateway: RunningGateway, button: str, answer: str, timeline: str
) -> None:
    app = await WebApp.open(context, gateway, "demo")

    await app.say("R-1042 승인해줘")

    card = app.approval_card
    await expect(card).to_be_visible(timeout=TIMEOUT_MS)
    await expect(card).to_contain_text("R-1042")
    await expect(app.activity("approveWorkRequest").last).to_contain_text("승인 대기 중")
    await card.get_by_role("button", name=button, exact=True).click()

    await app.last_reply_contains(answer)
    await expect(card.get_by_role("button", name=button, exact=True)).to_be_disabled()
    await expect(app.activity("approveWorkRequest").last).to_contain_text(timeline)
    await app.wait_idle()


async def test_a_reload_while_an_approval_waits_shows_the_card_again(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await app.say("R-1042 승인해줘")
    await expect(app.approval_card).to_be_visible(timeout=TIMEOUT_MS)

    await app.reload()

    await expect(app.user_messages).to_have_text(["R-1042 승인해줘"])
    card = app.approval_card
    await expect(card).to_be_visible(timeout=TIMEOUT_MS)
    await expect(card).to_contain_text("R-1042")
    await expect(app.transcript.locator('.activity[data-outcome="failed"]')).to_have_count(0)
    await card.get_by_role("button", name="승인", exact=True).click()
    await app.last_reply_contains("R-1042 요청을 승인했습니다.")
    await expect(app.activity("approveWorkRequest")).to_have_count(1)
    await expect(app.activity("approveWorkRequest")).to_contain_text(["✓ 승인됨"])


async def test_stop_ends_a_long_reply_and_the_next_message_works(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, slow_gateway, "demo")

    await app.say("자기소개를 길게 해 주세요")
    await app.last_reply_contains("안녕하세요")
    await app.click_stop()

    await expect(app.transcript).to_contain_text("응답을 중지했습니다", timeout=TIMEOUT_MS)
    await app.wait_idle()
    await expect(app.replies.last).not_to_contain_text("무엇을 도와드릴까요?")

    await app.say("안녕")
    await app.last_reply_contains("업무 요청 승인을 도와드릴 수 있어요")
    await app.wait_idle()


async def test_a_reload_mid_run_restores_the_conversation_and_opens_the_screen_once(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, slow_gateway, "demo")
    await app.say(FLAGSHIP)
    # The browser has opened the screen and the bot is in the middle of saying so.
    await app.page.wait_for_function(
        "document.querySelector('#transcript .msg.assistant.streaming') !== null",
        timeout=TIMEOUT_MS,
        polling="raf",
    )
    before = await app.navigations()

    await app.reload()

    await expect(app.user_messages).to_have_text([FLAGSHIP], timeout=TIMEOUT_MS)
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    await expect(app.activity("navigateToScreen")).to_contain_text(["이동 완료"])
    await expect(app.screen_title).to_have_text("업무 요청 목록")
    after = await app.navigations()
    assert (before, after) == (1, 0), "the screen must open exactly once across the reload"


async def test_a_dropped_connection_reconnects_and_reattaches_without_opening_again(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    page = await context.new_page()
    sockets: list[tuple[WebSocketRoute, WebSocketRoute]] = []
    # What each socket of the page sent and received, by socket.
    frames: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def through_proxy(route: WebSocketRoute) -> None:
        server = route.connect_to_server()
        sent: list[dict[str, Any]] = []
        received: list[dict[str, Any]] = []
        frames.append((sent, received))

        def up(message: str | bytes) -> None:
            sent.append(json.loads(message))
            server.send(message)

        def down(message: str | bytes) -> None:
            received.append(json.loads(message))
            route.send(message)

        route.on_message(up)
        server.on_message(down)
        sockets.append((route, server))

    await route_sockets(page, through_proxy)
    app = await WebApp.open(context, slow_gateway, "demo", page=page)
    await app.say(FLAGSHIP)
    await app.page.wait_for_function(
        "document.querySelector('#transcript .msg.assistant.streaming') !== null",
        timeout=TIMEOUT_MS,
        polling="raf",
    )

    page_side, server_side = sockets[-1]
    await server_side.close(code=1012, reason="test drops the connection")
    await page_side.close(code=1012, reason="test drops the connection")
    for _ in range(TIMEOUT_MS // 50):
        if len(sockets) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(sockets) == 2, "the page reconnects by itself"
    await app.wait_connected()
    await expect(app.user_messages).to_have_text([FLAGSHIP], timeout=TIMEOUT_MS)
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    await expect(app.replies.filter(has_text="이동했습니다")).to_have_count(1)
    await expect(app.screen_title).to_have_text("업무 요청 목록")
    assert await app.navigations() == 1
    # Cut off mid-run, the page reattached by cursor: the run's rest, and no snapshot.
    (_, before), (sent, after) = frames[0], frames[-1]
    [reattach] = [frame for frame in sent if frame.get("type") == "reattach"]
    seen = max(e["metadata"]["gateway.seq"] for e in before if "metadata" in e)
    assert 0 < reattach["after"] <= seen
    # The page follows its thread list (?threads=live): news of it, each a run of its own,
    # may come before the reattach's answer on the new connection.
    answer = after
    while answer and answer[0].get("runId", "").startswith("notice-"):
        end = next(i for i, e in enumerate(answer) if e["type"] == "RUN_FINISHED")
        if "UP_TO_DATE" in json.dumps(answer[:end]):
            break
        news = StreamChecker()  # a whole run of its own, ahead of the interrupted run's rest
        for event in answer[: end + 1]:
            news.feed(event)
        answer = answer[end + 1 :]
    kinds = [e["type"] for e in answer]
    assert "MESSAGES_SNAPSHOT" not in kinds[: kinds.index("RUN_FINISHED")]
    # The run's stream goes on where it stopped; or, when its last events (one burst, on a
    # busy machine) reached the page just before the drop, it is told it is up to date.
    if kinds[0] == "RUN_STARTED":
        assert answer[0]["runId"].startswith("notice-"), "the run's stream goes on"
        assert "UP_TO_DATE" in json.dumps(answer[: kinds.index("RUN_FINISHED")]), kinds
    # The two sockets' streams are one valid stream: the first's up to the cursor, then the
    # second's from the answer on (what came on the first after the cursor, a thread change's
    # run included, is cut; the news runs before the answer were checked each on its own).
    cut = next((i for i, e in enumerate(before) if (seq_of(e) or 0) > reattach["after"]), None)
    checker = StreamChecker()
    for event in before[:cut] + answer:
        checker.feed(event)

    await app.say("고마워")
    await app.last_reply_contains("천만에요")


async def test_a_second_tab_on_the_thread_sees_the_messages_and_never_navigates(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    first = await WebApp.open(context, gateway, "demo")
    await first.say(FLAGSHIP)
    await first.last_reply_contains(MOVED)
    await first.wait_idle()

    second = await WebApp.open(context, gateway, "demo", thread=await first.thread_id())

    await expect(second.user_messages).to_have_text([FLAGSHIP])
    await second.last_reply_contains(MOVED)
    await expect(second.screen_title).to_have_text("홈")

    await first.say("사원 목록 화면 열어줘")
    await expect(first.screen_title).to_have_text("사원 목록", timeout=TIMEOUT_MS)
    await first.last_reply_contains("사원 목록 화면으로 이동했습니다.")
    await second.last_reply_contains("사원 목록 화면으로 이동했습니다.")
    await expect(second.user_messages).to_have_text([FLAGSHIP, "사원 목록 화면 열어줘"])
    await second.wait_idle()

    assert await first.navigations() == 2
    assert await second.navigations() == 0
    await expect(second.screen_title).to_have_text("홈")


async def test_another_browser_shows_when_each_message_was_said(
    context: BrowserContext, browser: Browser, gateway: RunningGateway
) -> None:
    """A browser that never saw the messages live (nothing of them in its storage) reads
    their times from the gateway's snapshot."""
    first = await WebApp.open(context, gateway, "demo")
    await first.say(FLAGSHIP)
    await first.last_reply_contains(MOVED)
    await first.wait_idle()
    elsewhere = await new_context(browser)
    try:
        other = await WebApp.open(elsewhere, gateway, "demo", thread=await first.thread_id())
        await other.last_reply_contains(MOVED)
        messages = other.page.locator("#transcript .msg")
        assert await messages.count() >= 2
        await expect(other.page.locator("#transcript .msg time")).to_have_count(
            await messages.count()
        )
        said = await other.page.locator("#transcript .msg.user time").get_attribute("datetime")
        assert (
            said is not None
            and abs(datetime.datetime.fromisoformat(said).timestamp() - time.time()) < 120
        )
    finally:
        await elsewhere.close()


async def test_new_conversation_starts_an_empty_thread_that_survives_a_reload(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await app.say("안녕")
    await app.last_reply_contains("안녕하세요")
    await app.wait_idle()
    old_thread = await app.thread_id()

    await app.page.get_by_role("button", name="새 대화").click()
    await app.wait_connected()

    assert await app.thread_id() != old_thread
    await expect(app.user_messages).to_have_count(0)
    await app.reload()
    await expect(app.user_messages).to_have_count(0)
    await app.say("고마워")
    await app.last_reply_contains("천만에요")
    await expect(app.user_messages).to_have_text(["고마워"])


async def test_the_page_has_no_serious_accessibility_problems_and_the_modal_keeps_focus(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    page = await context.new_page()
    failed: list[str] = []
    page.on(
        "console", lambda message: failed.append(message.text) if message.type == "error" else None
    )
    page.on(
        "response", lambda response: failed.append(response.url) if response.status >= 400 else None
    )
    app = await WebApp.open(context, gateway, "demo", page=page)
    assert failed == [], "loading the page logs no error (a favicon's 404 included)"
    assert await accessibility_problems(page) == []

    await app.say(FLAGSHIP)
    await app.last_reply_contains(MOVED)
    await app.say("R-1042 승인해줘")
    await expect(app.approval_card).to_be_visible()
    assert await accessibility_problems(page) == []

    # Narrower: the menu is a drawer behind ☰, the chat a sheet under the screen.
    await page.set_viewport_size({"width": 768, "height": 1024})
    toggle = page.get_by_role("button", name="메뉴 열기")
    await toggle.click()
    menu = page.get_by_role("navigation", name="메뉴")
    await expect(menu.get_by_role("link", name="업무 요청 목록", exact=True)).to_be_visible()
    assert await accessibility_problems(page) == []
    await page.keyboard.press("Escape")
    await expect(menu).to_be_hidden()
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(app.page.get_by_role("textbox", name="메시지")).to_be_in_viewport()
    assert await accessibility_problems(page) == []

    # The modal is a dialog: focus stays inside it, and Escape closes it.
    await page.set_viewport_size({"width": 1280, "height": 800})
    await app.choose_chat_mode("모달")
    dialog = page.get_by_role("dialog", name="업무 도우미")
    await expect(dialog).to_have_attribute("aria-modal", "true")
    assert await accessibility_problems(page) == []
    for _ in range(25):
        await page.keyboard.press("Tab")
        inside = await page.evaluate(
            "document.querySelector('#chat').contains(document.activeElement)"
        )
        assert inside, "Tab left the dialog"
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_role("button", name="업무 도우미 열기")).to_be_focused()
