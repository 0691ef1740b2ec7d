"""The reference client's thread sidebar (issue 30) in headless Chromium.

A person finds a conversation again: the list of their threads (newest first, a badge on
one that waits for them), a search typed through a Korean IME, rename, archive, delete
after a confirmation, and a thread made in another tab that appears without a reload. The
sidebar is a drawer over a narrow chat and a column beside a wide one, at a phone's, a
tablet's and a laptop's width, and beside the chat of the gateway's page for any agent.
Every test has a gateway of its own, so the lists hold only what the test made.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import BrowserContext, Request, expect

from tests.support.agui import new_id, outcome, user_input
from tests.support.browser import NEEDS_CHROMIUM, WebApp, accessibility_problems
from tests.support.dojo_runs import fresh_agent
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway
from tests.support.sidebar import Sidebar

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

HELLO = "안녕"
THANKS = "고마워"


@pytest.fixture
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway() as running:
        yield running


async def thread_door(
    gateway: RunningGateway, thread_id: str, user: str = "demo"
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.http) as http:
        return await http.get(
            f"/threads/{urllib.parse.quote(thread_id)}", headers={"X-Gateway-User": user}
        )


async def talk(app: WebApp, text: str, reply: str) -> None:
    await app.say(text)
    await app.last_reply_contains(reply)
    await app.wait_idle()


async def test_the_sidebar_lists_searches_renames_archives_and_deletes_threads(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    sidebar = Sidebar(app.page)
    await talk(app, THANKS, "천만에요")
    thanked = await app.thread_id()
    await app.page.get_by_role("button", name="새 대화").click()
    await app.wait_connected()
    await talk(app, FLAGSHIP, MOVED)
    flagship = await app.thread_id()

    await sidebar.open()
    await expect(sidebar.search_box).to_be_focused()
    # Newest activity first; the thread on screen is marked as the current one.
    await expect(sidebar.titles).to_have_text([FLAGSHIP, THANKS])
    await expect(sidebar.item(FLAGSHIP).locator(".thread-open")).to_have_attribute(
        "aria-current", "true"
    )

    # Switching threads shows the other thread's messages, from its snapshot.
    await sidebar.choose(THANKS)
    await app.wait_connected()
    await expect(app.user_messages).to_have_text([THANKS])
    assert await app.thread_id() == thanked

    # A search typed through a Korean IME asks once the composition is done.
    await sidebar.open()
    searches: list[str] = []

    def searched(request: Request) -> None:
        if "/threads?" in request.url and "q=" in request.url:
            searches.append(urllib.parse.parse_qs(urllib.parse.urlsplit(request.url).query)["q"][0])

    app.page.on("request", searched)
    cdp = await context.new_cdp_session(app.page)
    await sidebar.compose(cdp, ["ㅁ", "모", "목", "목ㄹ", "목로", "목록"])
    await expect(sidebar.titles).to_have_text([FLAGSHIP])
    assert searches == ["목록"], "nothing half-composed was searched for"
    await sidebar.search_box.fill("R-9999 없는 말")
    await expect(sidebar.titles).to_have_count(0)
    await expect(sidebar.region.get_by_role("status")).to_contain_text("일치하는 대화가 없습니다")
    await sidebar.search_box.fill("")
    await expect(sidebar.titles).to_have_text([FLAGSHIP, THANKS])

    # Rename: the new name is the thread's, on the server too.
    await sidebar.rename(THANKS, "인사 나눈 대화")
    await expect(sidebar.item("인사 나눈 대화")).to_have_count(1)
    assert (await thread_door(gateway, thanked)).json()["title"] == "인사 나눈 대화"

    # Archive: out of the list, into the archive, and back.
    await sidebar.act("인사 나눈 대화", "보관")
    await expect(sidebar.titles).to_have_text([FLAGSHIP])
    await sidebar.show("보관함")
    await expect(sidebar.titles).to_have_text(["인사 나눈 대화"])
    await sidebar.act("인사 나눈 대화", "보관 해제")
    await expect(sidebar.titles).to_have_count(0)
    await sidebar.show("대화")
    await expect(sidebar.titles).to_have_text([FLAGSHIP, "인사 나눈 대화"])

    # Delete, after a confirmation: gone from the list and from the server. Cancelling
    # first changes nothing.
    await sidebar.act(FLAGSHIP, "삭제")
    await expect(app.page.get_by_role("dialog").get_by_role("button", name="취소")).to_be_focused()
    assert await accessibility_problems(app.page) == []
    await app.page.get_by_role("dialog").get_by_role("button", name="취소").click()
    await expect(sidebar.titles).to_have_count(2)
    await sidebar.delete(FLAGSHIP)
    await expect(sidebar.titles).to_have_text(["인사 나눈 대화"])
    assert (await thread_door(gateway, flagship)).status_code == 404

    # Deleting the thread on screen starts a new, empty one.
    await sidebar.delete("인사 나눈 대화")
    await expect(sidebar.titles).to_have_count(0)
    await expect(app.user_messages).to_have_count(0)
    assert await app.thread_id() not in (thanked, flagship)


async def test_threads_made_elsewhere_appear_live_with_a_badge_when_they_wait(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    watcher = await WebApp.open(context, gateway, "demo")
    sidebar = Sidebar(watcher.page)
    await sidebar.open()
    await expect(sidebar.titles).to_have_count(0)

    # Another tab: its thread appears, no reload, and ends idle (no badge).
    other = await WebApp.open(context, gateway, "demo")
    await talk(other, THANKS, "천만에요")
    item = sidebar.item(THANKS)
    await expect(item).to_have_count(1)
    await expect(item.locator(".thread-preview")).to_contain_text("천만에요")
    await expect(item.locator(".thread-badge")).to_have_count(0)

    # Another device asks for a screen and has not opened it yet: the thread waits on the
    # user, and says so.
    waiting = new_id("t")
    async with gateway.socket("demo") as device:
        first = await device.run(user_input(waiting, FLAGSHIP))
        assert outcome(first)["pendingToolCallIds"]
        await expect(sidebar.item(FLAGSHIP).locator(".thread-badge")).to_have_text("확인 필요")
        await expect(sidebar.titles).to_have_text([FLAGSHIP, THANKS])
    # The watcher's own transcript saw nothing of the other threads.
    await expect(watcher.user_messages).to_have_count(0)

    # Another user never hears of them.
    stranger = Sidebar((await WebApp.open(context, gateway, "guest")).page)
    await stranger.open()
    await expect(stranger.titles).to_have_count(0)


async def test_a_user_with_more_threads_than_a_page_gets_the_rest_on_request(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    async with gateway.socket("demo") as device:
        for n in range(32):
            await device.run(user_input(new_id("t"), f"{THANKS} {n:02d}"))
    app = await WebApp.open(context, gateway, "demo")
    sidebar = Sidebar(app.page)
    await sidebar.open()
    await expect(sidebar.titles).to_have_count(30)
    await expect(sidebar.titles.first).to_have_text(f"{THANKS} 31")
    more = sidebar.region.get_by_role("button", name="더 보기")
    await more.click()
    await expect(sidebar.titles).to_have_count(32)
    await expect(sidebar.titles.last).to_have_text(f"{THANKS} 00")
    await expect(more).to_be_hidden()


@pytest.mark.parametrize(("width", "height"), [(390, 844), (768, 1024), (1280, 800)])
async def test_the_sidebar_is_a_drawer_on_a_narrow_chat_and_a_column_beside_a_wide_one(
    context: BrowserContext, gateway: RunningGateway, width: int, height: int
) -> None:
    page = await context.new_page()
    await page.set_viewport_size({"width": width, "height": height})
    app = await WebApp.open(context, gateway, "demo", page=page)
    await talk(app, FLAGSHIP, MOVED)
    sidebar = Sidebar(page)

    # The side panel is narrow at every width: the list is a drawer, opened by keyboard.
    await expect(sidebar.region).to_be_hidden()
    await sidebar.toggle.focus()
    await page.keyboard.press("Enter")
    await expect(sidebar.search_box).to_be_focused()
    await expect(sidebar.titles).to_have_text([FLAGSHIP])
    await expect(sidebar.region).to_be_in_viewport()
    assert await accessibility_problems(page) == []
    # The chat behind the drawer takes no focus while it is open.
    assert await page.locator("#chat-input").evaluate("el => el.closest('[inert]') !== null")
    await page.keyboard.press("Escape")
    await expect(sidebar.region).to_be_hidden()
    await expect(sidebar.toggle).to_be_focused()

    # Full screen: beside the conversation on a tablet or a laptop, a drawer on a phone.
    await app.choose_chat_mode("전체 화면")
    if width >= 768:
        await expect(sidebar.region).to_be_visible()
        await expect(sidebar.toggle).to_be_hidden()
        box = await sidebar.region.bounding_box()
        transcript = await app.transcript.bounding_box()
        assert box and transcript and box["x"] + box["width"] <= transcript["x"] + 1
    else:
        await expect(sidebar.region).to_be_hidden()
        await sidebar.open()
    await expect(sidebar.titles).to_have_text([FLAGSHIP])
    await expect(page.get_by_role("textbox", name="메시지")).to_be_in_viewport()
    assert await accessibility_problems(page) == []


async def test_the_page_for_any_agent_has_the_list_beside_its_chat(
    context: BrowserContext,
) -> None:
    """The gateway's own page (gateway/web/, any agent) is a wide chat: the list is a column."""
    async with running_gateway(agent=fresh_agent("agentic_chat")) as gateway:
        page = await context.new_page()
        await page.set_viewport_size({"width": 1280, "height": 800})
        await page.goto(f"{gateway.http}/?user=demo")
        app = WebApp(page)
        await app.wait_connected()
        sidebar = Sidebar(page)
        await expect(sidebar.region).to_be_visible()
        await expect(sidebar.toggle).to_be_hidden()
        await talk(app, "hello", "How can I help")
        await page.get_by_role("button", name="새 대화").click()
        await app.wait_connected()
        await talk(app, "thanks", "You are welcome")
        await expect(sidebar.titles).to_have_text(["thanks", "hello"])

        await sidebar.choose("hello")
        await app.wait_connected()
        await expect(app.user_messages).to_have_text(["hello"])
        await expect(sidebar.item("hello").locator(".thread-open")).to_have_attribute(
            "aria-current", "true"
        )
        assert await accessibility_problems(page) == []
