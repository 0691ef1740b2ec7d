"""The gateway's page for any agent (gateway/web/, served at /) in headless Chromium.

``agent-gateway serve`` with a dojo agent, as a team tries its own agent before writing a
client: the page names the agent, streams its reply, asks for a tool's approval (with the
payload the tool asks the person to fill in) and shows what came of it, and gives the
conversation back after a reload. None of the demo's portal
(menu, screens) is on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, expect

from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS, accessibility_problems
from tests.support.processes import GATEWAY, gateway_process

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

AGENT = "tests.support.dojo.tool_confirmation:root_agent"


async def test_serve_answers_slash_with_a_chat_page_for_a_dojo_agent(
    context: BrowserContext, tmp_path: Path
) -> None:
    command = (*GATEWAY, "serve", AGENT)
    async with gateway_process(tmp_path / "threads.db", tmp_path / "gw.log", command=command) as (
        _,
        port,
    ):
        page = await context.new_page()
        await page.goto(f"http://127.0.0.1:{port}/?user=demo")
        app = page.locator(".app")
        await expect(app).to_have_attribute("data-connection", "open")
        await expect(page).to_have_title("time_off_agent · agent-gateway")
        await expect(page.get_by_role("heading", level=1)).to_have_text("time_off_agent")
        assert await page.get_by_role("navigation").count() == 0  # no demo portal
        assert await accessibility_problems(page) == []

        box = page.get_by_role("textbox", name="메시지")
        await box.fill("reimburse me")
        await box.press("Enter")
        transcript = page.get_by_role("log", name="대화")
        card = transcript.get_by_role("group", name="승인 요청").last
        await card.get_by_role("button", name="승인").click()
        reply = transcript.locator(".msg.assistant .text").last
        await expect(reply).to_have_text("I paid you back 50 dollars.", timeout=TIMEOUT_MS)
        row = transcript.locator('.activity[data-tool="reimburse"]')
        await expect(row).to_contain_text("완료")
        await expect(page.locator("#chat")).to_have_attribute("data-busy", "false")

        await page.reload()
        await expect(app).to_have_attribute("data-connection", "open")
        await expect(reply).to_have_text("I paid you back 50 dollars.", timeout=TIMEOUT_MS)
        await expect(transcript.locator(".msg.user .text")).to_have_text(["reimburse me"])
        await expect(row).to_contain_text("완료")

        # A tool that asks for a payload with its approval: the card has a field for it
        # (from the interrupt's responseSchema), and what the person types reaches the tool.
        await box.fill("days off")
        await box.press("Enter")
        days = card.get_by_role("spinbutton", name="approved_days")
        await days.fill("2")
        await card.get_by_role("button", name="승인").click()
        await expect(reply).to_have_text("You have 2 days off.", timeout=TIMEOUT_MS)
        await expect(days).to_be_disabled()
    # The operator is told where to try the agent.
    log = (tmp_path / "gw.log").read_text()
    assert f"the gateway's chat page for time_off_agent at http://127.0.0.1:{port}/" in log
