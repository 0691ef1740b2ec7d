"""Issue 29 in Chromium: the reference client's tool rows tell the thread's truth after a cut.

A cut between the browser's action and its result (a reload, a dropped connection) left the
"화면 이동 … 결과 대기 중" row waiting for good while the reply beneath said "이동했습니다":
the tab sent its kept result again, and the gateway echoes a result only to other tabs.
"""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import BrowserContext, WebSocketRoute, expect

from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS, WebApp, route_sockets
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]


def swallowing_the_first_result(results: list[str], swallowed: asyncio.Event):
    """A /ws route that never delivers the first tool result the page sends."""

    def route_socket(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def upstream(message: str | bytes) -> None:
            if isinstance(message, str) and '"role":"tool"' in message:
                results.append(message)
                if not swallowed.is_set():
                    swallowed.set()
                    return
            server.send(message)

        route.on_message(upstream)

    return route_socket


async def test_a_reload_between_the_navigation_and_its_result_settles_the_row(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    page = await context.new_page()
    results: list[str] = []
    swallowed = asyncio.Event()
    await route_sockets(page, swallowing_the_first_result(results, swallowed))
    app = await WebApp.open(context, slow_gateway, "demo", page=page)
    await app.say(FLAGSHIP)
    await asyncio.wait_for(swallowed.wait(), 30)
    await expect(app.screen_title).to_have_text("업무 요청 목록")

    await app.reload()

    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    row = app.activity("navigateToScreen")
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("이동 완료")
    await expect(row).not_to_contain_text("결과 대기")
    assert len(results) == 2, "the kept result is sent again after the reload, once"


async def test_a_rejected_approval_reads_the_same_live_and_after_a_reload(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, gateway, "demo")
    await app.say("R-1042 승인해줘")
    card = app.approval_card
    await expect(card).to_be_visible(timeout=TIMEOUT_MS)
    # The card says what will happen once, without the arguments as key=value.
    await expect(card).to_contain_text("업무 요청 R-1042 건을 승인합니다. 승인하시겠습니까?")
    await expect(card).not_to_contain_text("requestId=")
    await card.get_by_role("button", name="거절", exact=True).click()
    await app.wait_idle()
    row = app.activity("approveWorkRequest")
    await expect(row).to_contain_text(["사용자가 거절했습니다.✕ 거절됨"])
    live = await row.inner_text()

    await app.reload()

    await expect(row).to_have_count(1)
    assert await row.inner_text() == live
    await expect(row).not_to_contain_text("rejected")


async def test_a_clean_run_asks_for_no_snapshot_beyond_the_first(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    """Settling rows from the thread costs nothing when nothing was cut: a row that waits for
    the browser's own action is not a row left waiting."""
    page = await context.new_page()
    reattaches: list[str] = []

    def counting(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def upstream(message: str | bytes) -> None:
            if isinstance(message, str) and '"type":"reattach"' in message:
                reattaches.append(message)
            server.send(message)

        route.on_message(upstream)

    await route_sockets(page, counting)
    app = await WebApp.open(context, gateway, "demo", page=page)
    await app.say(FLAGSHIP)
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    await expect(app.activity("navigateToScreen")).to_contain_text(["이동 완료"])
    assert len(reattaches) == 1, reattaches  # the connection's own, at the start
