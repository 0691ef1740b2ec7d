"""Issue 29's polish of the demo's page, in Chromium: what a person saw that was wrong.

No raw thread id under the composer, no "(requestId=R-1042)" in the approval text
(test_web_rows.py), the list screen and the card agree on each request, the pending count
follows the thread's decisions, the phone layout keeps the opened screen and the user
picker in sight, a full-screen chat points to a menu the user can reach, a guest is offered
only what it can do, a skip link, and a card's headings nested under the chat's.
"""

from __future__ import annotations

import pytest
from playwright.async_api import BrowserContext, expect

from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS, WebApp
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]


async def test_the_composer_shows_no_thread_id(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    thread = await app.thread_id()
    await expect(app.page.locator("#composer")).not_to_contain_text(thread)
    assert thread not in await app.page.locator("body").inner_text()


async def test_the_list_and_the_card_agree_and_the_pending_count_follows_decisions(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    pending = app.main.locator('.stat[data-status="pending"] strong')
    await expect(pending).to_have_text("4")  # the home screen's 승인 대기 요청

    await app.say("R-1042 보여줘")
    card = app.surface("work-request-R-1042")
    await expect(card).to_contain_text("R-1042 · 노트북 교체 구매", timeout=TIMEOUT_MS)
    await app.wait_idle()
    await app.open_from_menu("업무 관리", "업무 요청", "업무 요청 목록")
    table = app.main.get_by_role("table", name="업무 요청 목록")
    await expect(table.locator('tr[data-request-id="R-1042"]')).to_contain_text("노트북 교체 구매")
    await expect(table.locator('tr[data-request-id="R-1042"]')).to_contain_text("승인 대기")
    await expect(table.locator('tr[data-request-id="R-1031"]')).to_contain_text("모니터 추가 구매")
    await expect(table.locator('tr[data-request-id="R-1031"]')).to_contain_text("승인됨")
    await expect(pending).to_have_text("4")

    await app.say("R-1042 승인해줘")
    await app.approval_card.get_by_role("button", name="승인", exact=True).click()
    await app.last_reply_contains("R-1042 요청을 승인했습니다.")
    # The screen on view follows the thread's decision, with no reload and no navigation.
    await expect(table.locator('tr[data-request-id="R-1042"]')).to_contain_text("승인됨")
    await expect(pending).to_have_text("3")
    await app.reload()
    await expect(app.main.locator('.stat[data-status="pending"] strong')).to_have_text("3")


async def test_at_390_px_the_sheet_leaves_the_opened_list_and_the_picker_in_sight(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    page = await context.new_page()
    await page.set_viewport_size({"width": 390, "height": 844})
    app = await WebApp.open(context, gateway, "demo", page=page)
    await app.say(FLAGSHIP)
    await app.last_reply_contains(MOVED)
    chat = await app.page.locator("#chat").bounding_box()
    row = await app.main.locator('tr[data-request-id="R-1042"]').bounding_box()
    assert chat is not None and row is not None
    assert row["y"] + row["height"] <= chat["y"], (row, chat)
    fits = await app.page.evaluate(
        """() => {
          const select = document.querySelector('#user-select');
          const pen = document.createElement('canvas').getContext('2d');
          pen.font = getComputedStyle(select).font;
          const text = pen.measureText(select.selectedOptions[0].text).width;
          return text + 24 <= select.getBoundingClientRect().width;
        }"""
    )
    assert fits, "the user picker clips the signed-in user's name"


async def test_a_full_screen_chat_says_how_to_reach_the_hidden_menu(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await app.choose_chat_mode("전체 화면")
    await app.say(FLAGSHIP)
    await app.last_reply_contains("'패널' 보기로 바꾸면")
    await expect(app.replies.last).not_to_contain_text("왼쪽 메뉴")


async def test_a_guest_is_offered_only_what_it_can_do(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    guest = await WebApp.open(context, gateway, "guest")
    chips = guest.transcript.locator(".chip")
    await expect(chips).to_have_text(["R-1042 보여줘", "자기소개를 길게 해 주세요"])
    demo = await WebApp.open(context, gateway, "demo")
    await expect(demo.transcript.locator(".chip")).to_have_text(
        [
            "업무 요청 목록 화면 열어줘",
            "R-1042 보여줘",
            "R-1042 승인해줘",
            "자기소개를 길게 해 주세요",
        ]
    )


async def test_the_first_tab_offers_a_skip_to_the_chat(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    # The first thing Tab reaches from the top of the page, shown once it has focus.
    first = await app.page.evaluate(
        """() => document.querySelector('a[href], button, input, select, textarea')?.textContent"""
    )
    assert first == "업무 도우미로 건너뛰기"
    skip = app.page.get_by_role("link", name="업무 도우미로 건너뛰기")
    await expect(skip).not_to_be_in_viewport()
    await skip.focus()
    await expect(skip).to_be_in_viewport()
    await app.page.keyboard.press("Enter")
    await expect(app.page.get_by_role("textbox", name="메시지")).to_be_focused()
    assert "#chat-input" not in app.page.url


async def test_a_cards_headings_sit_under_the_chats(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await expect(
        app.page.get_by_role("heading", name="업무 도우미", level=2, exact=True)
    ).to_be_visible()
    await app.say("R-1042 보여줘")
    card = app.surface("work-request-R-1042")
    title = card.get_by_role("heading", name="R-1042 · 노트북 교체 구매")
    await expect(title).to_have_attribute("aria-level", "3", timeout=TIMEOUT_MS)
