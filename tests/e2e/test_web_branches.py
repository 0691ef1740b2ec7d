"""Regenerate and edit in the reference client (issue 30), in headless Chromium.

A person asks again for a reply, or edits what they said earlier; the thread keeps the
earlier version as a sibling, "‹ 2/2 ›" moves between them, and a reload shows the version
last chosen. A switch runs nothing: the screen a branch opened is not opened again, neither
by the switch nor by a reload (the tab's count of screen swaps survives reloads).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import BrowserContext, expect

from tests.support.browser import NEEDS_CHROMIUM, WebApp, accessibility_problems
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway
from tests.support.sidebar import Versions

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]


@pytest.fixture
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway() as running:
        yield running


async def talk(app: WebApp, text: str, reply: str) -> None:
    await app.say(text)
    await app.last_reply_contains(reply)
    await app.wait_idle()


async def screen_swaps(app: WebApp) -> int:
    """The tab's count of main-area swaps, across its reloads."""
    return int(await app.page.evaluate("sessionStorage.getItem('agw.navigations') ?? '0'"))


async def test_regenerate_keeps_the_earlier_reply_and_switching_back_opens_nothing_again(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    versions = Versions(app.page)
    await talk(app, FLAGSHIP, MOVED)
    assert await screen_swaps(app) == 1

    await versions.regenerate()
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    await versions.shows("답변 버전", "2/2")
    # The new branch ran the model again, and its own navigation with it.
    swaps = await screen_swaps(app)
    await expect(app.user_messages).to_have_text([FLAGSHIP])
    assert await accessibility_problems(app.page) == []

    await versions.go("답변 버전", "이전 버전")
    await versions.shows("답변 버전", "1/2")
    await app.wait_idle()
    await expect(app.user_messages).to_have_text([FLAGSHIP])
    await expect(app.replies.last).to_contain_text(MOVED)
    assert await screen_swaps(app) == swaps, "a switch performs no browser action"

    await app.reload()
    await versions.shows("답변 버전", "1/2")
    await app.wait_idle()
    await expect(app.screen_title).to_have_text("업무 요청 목록")
    assert await screen_swaps(app) == swaps, "a reload performs no browser action again"


async def test_an_edit_forks_the_thread_and_the_versions_survive_a_reload(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    versions = Versions(app.page)
    await talk(app, "안녕", "안녕하세요")
    await talk(app, "자기소개 해줘", "저는")

    # Editing the first message leaves what followed it on the other branch.
    await versions.edit("안녕", "고마워")
    await app.last_reply_contains("천만에요")
    await app.wait_idle()
    await expect(app.user_messages).to_have_text(["고마워"])
    await versions.shows("메시지 버전", "2/2")

    await versions.go("메시지 버전", "이전 버전")
    await versions.shows("메시지 버전", "1/2")
    await expect(app.user_messages).to_have_text(["안녕", "자기소개 해줘"])

    await app.reload()
    await versions.shows("메시지 버전", "1/2")
    await expect(app.user_messages).to_have_text(["안녕", "자기소개 해줘"])
    await versions.go("메시지 버전", "다음 버전")
    await expect(app.user_messages).to_have_text(["고마워"])
    await versions.shows("메시지 버전", "2/2")

    # Escape leaves an edit with nothing sent.
    message = app.transcript.locator(".msg.user").last
    await message.get_by_role("button", name="메시지 수정").click()
    await app.page.keyboard.press("Escape")
    await expect(app.transcript.get_by_role("textbox", name="수정할 메시지")).to_have_count(0)
    await expect(app.user_messages).to_have_text(["고마워"])
