"""Issue 14 in Chromium: each browser action performed once, by the tab that asked.

The stories the issue found broken: a reload before the call leaves the call to nobody; a
result sent into a socket that just died is never sent again; an observer tab shows a lone
search row, or another tab's action as if it were its own; a stopped reply vanishes on a
reload (and cannot be asked again); the client shows the gateway's raw words ("timeout").
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from playwright.async_api import BrowserContext, WebSocketRoute, expect

from tests.support.agui import new_id, user_input
from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS, WebApp, route_sockets
from tests.support.budgets import eventually
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

LONG = "자기소개를 길게 해 주세요"


async def test_a_reload_before_the_call_leaves_it_to_the_same_tab(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, slow_gateway, "demo")
    await app.say(FLAGSHIP)
    # The search is under way; the model has not asked the browser anything yet.
    await expect(app.activity("find_screen")).to_have_count(1, timeout=TIMEOUT_MS)
    before = await app.navigations()

    await app.reload()

    # Well within the 120 s the gateway would wait for a browser that never answers.
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    await expect(app.screen_title).to_have_text("업무 요청 목록")
    await expect(app.activity("navigateToScreen")).to_contain_text(["이동 완료"])
    await expect(app.activity("navigateToScreen")).not_to_contain_text(["다른 창"])
    assert before + await app.navigations() == 1


async def test_a_result_sent_into_a_dying_socket_is_sent_again(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    page = await context.new_page()
    results_sent: list[str] = []
    lost = asyncio.Event()
    closing: list[asyncio.Future[None]] = []

    def through_proxy(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def upstream(message: str | bytes) -> None:
            if isinstance(message, str) and '"role":"tool"' in message:
                results_sent.append(message)
                if not lost.is_set():
                    # The page sent the result just as the connection died: it never arrives.
                    lost.set()
                    closing.append(asyncio.ensure_future(server.close(code=1006)))
                    closing.append(asyncio.ensure_future(route.close(code=1006)))
                    return
            server.send(message)

        route.on_message(upstream)

    await route_sockets(page, through_proxy)
    app = await WebApp.open(context, slow_gateway, "demo", page=page)
    await app.say(FLAGSHIP)

    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    assert len(results_sent) == 2, "the result is sent again on the new connection, once"
    assert await app.navigations() == 1
    await expect(app.replies.filter(has_text="이동했습니다")).to_have_count(1)
    # The row of the action says what came of it, not "결과 대기 중" (issue 29).
    await expect(app.activity("navigateToScreen")).to_contain_text(["이동 완료"])


async def test_an_observer_shows_the_message_and_the_call_when_the_sender_leaves_at_once(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    observer = await WebApp.open(context, slow_gateway, "demo")
    thread = await observer.thread_id()
    page = await context.new_page()
    started = asyncio.Event()
    closing: list[asyncio.Future[None]] = []

    def until_the_run_starts(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def downstream(message: str | bytes) -> None:
            if started.is_set():
                return
            route.send(message)
            if isinstance(message, str) and '"RUN_STARTED"' in message and "notice-" not in message:
                # The sender's tab goes away the moment its run starts, before any call.
                started.set()
                closing.append(asyncio.ensure_future(server.close()))
                closing.append(asyncio.ensure_future(route.close()))

        server.on_message(downstream)

    await route_sockets(page, until_the_run_starts)
    sender = await WebApp.open(context, slow_gateway, "demo", thread=thread, page=page)
    await sender.say(FLAGSHIP)
    await asyncio.wait_for(started.wait(), TIMEOUT_MS / 1000)
    await page.close()

    await expect(observer.user_messages).to_have_text([FLAGSHIP], timeout=TIMEOUT_MS)
    navigate = observer.activity("navigateToScreen")
    await expect(navigate).to_have_count(1, timeout=TIMEOUT_MS)
    await expect(navigate).to_contain_text(["다른 창의 요청"])
    await observer.wait_idle()
    await expect(observer.screen_title).to_have_text("홈")
    assert await observer.navigations() == 0


async def test_an_observer_labels_the_other_tabs_action_as_the_other_tabs(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    observer = await WebApp.open(context, slow_gateway, "demo")
    thread = await observer.thread_id()
    sender = await WebApp.open(context, slow_gateway, "demo", thread=thread)

    await sender.say(FLAGSHIP)
    await sender.last_reply_contains(MOVED)
    await observer.last_reply_contains(MOVED)
    await observer.wait_idle()

    await expect(sender.activity("navigateToScreen")).to_have_text(re.compile(r"✓ 이동 완료"))
    await expect(observer.activity("navigateToScreen")).to_contain_text(["다른 창에서 이동 완료"])
    await expect(observer.screen_title).to_have_text("홈")
    # Drawn again from the thread, it still says whose action it was, in both tabs.
    await observer.reload()
    await sender.reload()
    await expect(observer.activity("navigateToScreen")).to_contain_text(["다른 창에서 이동 완료"])
    await expect(sender.activity("navigateToScreen")).not_to_contain_text(["다른 창"])


async def test_a_stopped_reply_keeps_its_text_after_a_reload(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    app = await WebApp.open(context, slow_gateway, "demo")
    await app.say(LONG)
    await expect(app.replies.last).to_have_text(re.compile(r"\S+ \S+ \S+"), timeout=TIMEOUT_MS)
    await app.click_stop()
    stopped = app.transcript.locator(".stopped-line")
    await expect(stopped).to_have_text(["■ 응답을 중지했습니다."], timeout=TIMEOUT_MS)
    await app.wait_idle()
    kept = await app.replies.last.text_content()
    assert kept

    await app.reload()

    await expect(app.replies.last).to_have_text(kept)
    await expect(stopped).to_have_text(["■ 응답을 중지했습니다."])
    await expect(app.transcript).not_to_contain_text("interrupted")

    # Asked again from the stopped reply: the same message, answered whole this time.
    await app.page.get_by_role("button", name="다시 시도").click()
    await expect(app.user_messages).to_have_text([LONG, LONG], timeout=TIMEOUT_MS)
    await expect(app.page.get_by_role("button", name="다시 시도")).to_have_count(0)
    await app.wait_idle()
    assert len(await app.replies.last.text_content() or "") > len(kept)


async def test_a_call_that_timed_out_reads_in_the_users_language(
    context: BrowserContext,
) -> None:
    async with running_gateway(client_tool_timeout=0.5) as gateway:
        thread = new_id("t")
        # A stock client asks and never answers: the gateway answers for it after the timeout.
        async with gateway.socket() as ws:
            await ws.run(user_input(thread, FLAGSHIP))
            await ws.send({"type": "reattach", "threadId": thread})
            for _ in range(40):
                events = await ws.until_end()
                if any(e["type"] == "TOOL_CALL_RESULT" for e in events) or any(
                    m.get("role") == "tool" and "timeout" in str(m.get("content"))
                    for e in events
                    for m in e.get("messages", [])
                ):
                    break
                await asyncio.sleep(0.2)
                await ws.send({"type": "reattach", "threadId": thread})
        app = await WebApp.open(context, gateway, "demo", thread=thread)
        navigate = app.activity("navigateToScreen")
        timed_out = "브라우저가 제한 시간 안에 결과를 보내지 않았습니다."
        await expect(navigate).to_contain_text([timed_out])
        await expect(app.transcript).not_to_contain_text("timeout")


async def test_a_copy_of_a_tab_is_a_tab_of_its_own_and_a_reload_is_not(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    first = await WebApp.open(context, slow_gateway, "demo")
    await first.say(FLAGSHIP)
    await first.last_reply_contains(MOVED)
    original = await first.page.evaluate("sessionStorage.getItem('agw.client')")
    copied = await first.page.evaluate("JSON.stringify({...sessionStorage})")
    assert original and "agw.ledger" in copied
    # A browser's "duplicate tab": a new tab that starts with a copy of its sessionStorage.
    page = await context.new_page()
    await page.add_init_script(
        "if (!sessionStorage.getItem('agw.client')) {"
        f" for (const [k, v] of Object.entries({copied})) sessionStorage.setItem(k, v); }}"
    )
    copy = await WebApp.open(context, slow_gateway, "demo", page=page)

    mine = await copy.page.evaluate("sessionStorage.getItem('agw.client')")
    assert mine and mine != original
    assert await copy.page.evaluate("sessionStorage.getItem('agw.ledger')") is None
    await first.reload()
    assert await first.page.evaluate("sessionStorage.getItem('agw.client')") == original
    await copy.reload()
    assert await copy.page.evaluate("sessionStorage.getItem('agw.client')") == mine


class KilledAfterEarlyStart:
    """The page's /ws, through a proxy that plays a gateway killed right after the early
    RUN_STARTED of the first input ``dies_on`` picks: the page is sent that RUN_STARTED
    (unnumbered, as the gateway sends it), the input never reaches the gateway, and both
    sides close. Keeps every input ``dies_on`` picks, and every text frame sent down."""

    def __init__(self, dies_on: str) -> None:
        self.dies_on = dies_on
        self.picked: list[str] = []
        self.sent_down: list[str] = []
        self.lost = asyncio.Event()
        self._closing: list[asyncio.Future[None]] = []

    def __call__(self, route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def upstream(message: str | bytes) -> None:
            if isinstance(message, str) and self.dies_on in message:
                self.picked.append(message)
                if not self.lost.is_set():
                    self.lost.set()
                    sent = json.loads(message)
                    started = {"type": "RUN_STARTED", "threadId": sent["threadId"]}
                    route.send(json.dumps({**started, "runId": sent["runId"]}))
                    self._closing.append(asyncio.ensure_future(server.close(code=1006)))
                    self._closing.append(asyncio.ensure_future(route.close(code=1006)))
                    return
            server.send(message)

        def downstream(message: str | bytes) -> None:
            if isinstance(message, str):
                self.sent_down.append(message)
            route.send(message)

        route.on_message(upstream)
        server.on_message(downstream)


async def test_a_result_whose_run_was_lost_before_it_was_stored_is_sent_again(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    """The page saw its result's run start, the thread never got the result, and the
    reconnect's reattach by cursor missed nothing. Told the call is still open, the page
    sends its kept result."""
    page = await context.new_page()
    killed = KilledAfterEarlyStart('"role":"tool"')
    await route_sockets(page, killed)
    app = await WebApp.open(context, slow_gateway, "demo", page=page)
    await app.say(FLAGSHIP)

    # Well within the 120 s the gateway would wait for a browser that never answers.
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    assert len(killed.picked) == 2, "the result is sent again on the new connection, once"
    assert await app.navigations() == 1
    await expect(app.replies.filter(has_text="이동했습니다")).to_have_count(1)
    await expect(app.activity("navigateToScreen")).to_contain_text(["이동 완료"])


async def test_an_approval_named_again_by_an_up_to_date_reattach_keeps_one_card(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    """A message typed while an approval waits, whose run was lost before it was stored:
    the reattach by cursor names the approval still open, and the card that asks for it
    stays the only one."""
    page = await context.new_page()
    killed = KilledAfterEarlyStart('"안녕"')
    await route_sockets(page, killed)
    app = await WebApp.open(context, slow_gateway, "demo", page=page)
    await app.say("R-1042 승인해줘")
    await expect(app.approval_card).to_be_visible(timeout=TIMEOUT_MS)

    await app.say("안녕")

    def ends_after_the_notice() -> list[dict[str, Any]]:
        # The notice's own run's end: a thread list's news may come after it, in a run of
        # its own. The end is a frame of its own, and may reach the route after the notice.
        said = next((i for i, m in enumerate(killed.sent_down) if "UP_TO_DATE" in m), None)
        if said is None:
            return []
        return [json.loads(m) for m in killed.sent_down[said:] if '"RUN_FINISHED"' in m]

    await eventually(
        lambda: bool(ends_after_the_notice()),
        10.0,
        what="the reconnect's reattach was not answered, or its run did not end",
    )
    ends = ends_after_the_notice()
    assert ends[0]["outcome"]["type"] == "interrupt", ends[0]
    await app.wait_idle()
    cards = app.transcript.get_by_role("group", name="승인 요청")
    await expect(cards).to_have_count(1)
    await app.approval_card.get_by_role("button", name="승인", exact=True).click()
    await app.last_reply_contains("R-1042 요청을 승인했습니다.")
