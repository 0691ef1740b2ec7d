"""The CopilotKit page (tests/e2e/copilotkit) switches threads through the thread door.

The page lists the user's threads from ``GET /threads`` (cross-origin, as an app on its own
site would) and mounts the chat again on the one chosen: its messages come back through
CopilotKit's connect (the WebSocket agent's reattach) or ``GET /history`` (an HttpAgent), and
a reload stays on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from playwright.async_api import BrowserContext, expect

from tests.e2e.copilotkit_page import NEEDS_BUILD, CopilotKitPage, static_site
from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS
from tests.support.servers import RunningGateway, running_gateway

pytestmark = [NEEDS_CHROMIUM, NEEDS_BUILD, pytest.mark.browser]


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with static_site() as origin:
        yield origin


@pytest.fixture
async def gateway(site: str) -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=site) as running:
        yield running


@pytest.mark.parametrize("agent", ["http", "ws"])
async def test_the_page_lists_the_users_threads_and_switches_between_them(
    context: BrowserContext, site: str, gateway: RunningGateway, agent: str
) -> None:
    tab = await CopilotKitPage.open(context, site, gateway, agent)
    threads = tab.page.get_by_role("navigation", name="대화 목록")
    await tab.say("안녕")
    await tab.wait_reply_in_part("안녕하세요", "\0")
    await tab.wait_idle()
    first = await tab.page.locator("#thread-id").text_content()
    await expect(threads.get_by_role("button", name="안녕", exact=True)).to_be_visible()

    await threads.get_by_role("button", name="새 대화").click()
    await tab.wait_ready()
    await expect(tab.user_messages).to_have_count(0)
    await tab.say("고마워")
    await tab.wait_reply_in_part("천만에요", "\0")
    await tab.wait_idle()
    await expect(threads.get_by_role("button")).to_have_text(["새 대화", "고마워", "안녕"])

    await threads.get_by_role("button", name="안녕", exact=True).click()
    await expect(tab.page.locator("#thread-id")).to_have_text(first or "")
    await expect(tab.user_messages).to_have_text(["안녕"], timeout=TIMEOUT_MS)

    await tab.reload()
    await expect(tab.page.locator("#thread-id")).to_have_text(first or "")
    await expect(tab.user_messages).to_have_text(["안녕"], timeout=TIMEOUT_MS)
    await expect(threads.get_by_role("button", name="안녕", exact=True)).to_have_attribute(
        "aria-current", "true"
    )
    tab.assert_no_console_errors()
