"""Issue 17's proof in Chromium: the demo's R-1042 card, from the real agent through the
gateway, in the reference client.

The card appears, survives a reload, and approving from it goes through the approval and
runs the tool once; a press on a card that changed since it was drawn is refused with a
sentence; axe finds nothing serious on a page showing it. The page's own half, against
hand-written surfaces, is test_web_surfaces.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, WebSocketRoute, expect

from tests.support.browser import (
    NEEDS_CHROMIUM,
    TIMEOUT_MS,
    WebApp,
    accessibility_problems,
    route_sockets,
)
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

SHOW = "R-1042 보여줘"
CARD = "work-request-R-1042"


async def stored_messages(page: Page, gateway: RunningGateway, thread: str) -> list[Any]:
    """The thread as the gateway keeps it (GET /history), not as the page shows it."""
    response = await page.request.get(
        f"{gateway.http}/history?threadId={thread}", headers={"X-Gateway-User": "demo"}
    )
    assert response.ok, await response.text()
    messages: list[Any] = (await response.json())["messages"]
    return messages


async def test_the_r1042_card_survives_a_reload_and_approving_on_it_runs_the_tool_once(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")

    await app.say(SHOW)

    card = app.surface(CARD)
    await expect(card).to_contain_text("R-1042 · 노트북 교체 구매", timeout=TIMEOUT_MS)
    await expect(card).to_contain_text("김민수")
    await expect(card).to_contain_text("1,850,000원")
    await expect(card).to_contain_text("대기 중")
    await app.last_reply_contains("카드에서 승인하거나 거절할 수 있어요")
    await app.wait_idle()
    assert await accessibility_problems(app.page) == []

    await app.reload()
    card = app.surface(CARD)
    await expect(card).to_contain_text("대기 중")
    await card.get_by_role("button", name="승인").click()

    await expect(app.transcript.locator(".action-line")).to_have_text(
        ["▸ '승인' 버튼을 눌렀습니다"], timeout=TIMEOUT_MS
    )
    # The card does not decide: the press meets the same approval as the chat's.
    approval = app.approval_card
    await expect(approval).to_contain_text("R-1042", timeout=TIMEOUT_MS)
    await approval.get_by_role("button", name="승인", exact=True).click()
    await app.last_reply_contains("R-1042 요청을 승인했습니다.")
    await expect(card).to_contain_text("승인됨")
    await expect(card.get_by_role("button")).to_have_count(0)
    await app.wait_idle()

    await app.reload()
    await expect(app.surface(CARD)).to_contain_text("승인됨")
    await expect(app.activity("approveWorkRequest")).to_have_count(1)
    await expect(app.activity("approveWorkRequest")).to_contain_text(["✓ 승인됨"])
    messages = await stored_messages(app.page, gateway, await app.thread_id())
    calls = [
        call["id"]
        for message in messages
        for call in message.get("toolCalls") or []
        if call["function"]["name"] == "approveWorkRequest"
    ]
    results = [m for m in messages if m["role"] == "tool" and m["toolCallId"] in calls]
    assert (len(calls), len(results)) == (1, 1), "approved once, and the tool ran once"
    assert json.loads(results[0]["content"])["status"] == "approved"


async def test_a_press_on_a_card_that_changed_since_it_was_drawn_is_refused_with_a_sentence(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    first = await WebApp.open(context, gateway, "demo")
    await first.say(SHOW)
    await expect(first.surface(CARD)).to_contain_text("대기 중", timeout=TIMEOUT_MS)
    await first.wait_idle()

    # A second tab on the thread whose socket misses what happens next, as a flaky network
    # would: it goes on showing the card as it was drawn.
    page = await context.new_page()
    deaf = [False]

    def through(route: WebSocketRoute) -> None:
        server = route.connect_to_server()
        route.on_message(server.send)
        server.on_message(lambda message: None if deaf[0] else route.send(message))

    await route_sockets(page, through)
    second = await WebApp.open(context, gateway, "demo", thread=await first.thread_id(), page=page)
    stale = second.surface(CARD)
    await expect(stale).to_contain_text("대기 중")
    deaf[0] = True

    await first.say("R-1042 승인해줘")
    await first.approval_card.get_by_role("button", name="승인", exact=True).click()
    await first.last_reply_contains("R-1042 요청을 승인했습니다.")
    await expect(first.surface(CARD)).to_contain_text("승인됨")
    await first.wait_idle()
    deaf[0] = False
    await expect(stale).to_contain_text("대기 중")

    await stale.get_by_role("button", name="거절").click()

    refusal = second.transcript.locator(".error-line").last
    await expect(refusal).to_contain_text("카드의 요청을 처리할 수 없습니다.", timeout=TIMEOUT_MS)
    await refusal.get_by_text("자세히").click()
    await expect(refusal).to_contain_text("has changed since it was drawn")
    await second.wait_idle()
    # Nothing was done: the request stays approved, and no rejection was asked for.
    await second.reload()
    await expect(second.surface(CARD)).to_contain_text("승인됨")
    await expect(second.activity("rejectWorkRequest")).to_have_count(0)
    await expect(second.transcript.locator(".action-line")).to_have_count(0)
