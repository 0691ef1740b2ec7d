"""A message sent just as its socket dies, or just before the page reloads, runs once in
Chromium: the page keeps every input the gateway has not acknowledged (sessionStorage) and
sends it again, with its runId, on its next connection; the gateway runs a runId once per
thread (``gateway.hub.dedupe``). One run and one reply, never none, never two (the chaos
trials' "no call: the input went down with the page or its socket")."""

from __future__ import annotations

import pytest
from playwright.async_api import BrowserContext, Page, WebSocketRoute

from tests.support.agui import snapshot_of
from tests.support.browser import NEEDS_CHROMIUM, WebApp, route_sockets
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway
from tests.support.socket_proxy import Proxy

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]


async def opened(context: BrowserContext, gateway: RunningGateway, proxy: Proxy) -> WebApp:
    page: Page = await context.new_page()
    await route_sockets(page, proxy.route)
    return await WebApp.open(context, gateway, "demo", page=page)


async def ran_once(app: WebApp, gateway: RunningGateway, proxy: Proxy) -> None:
    """The flagship ran once: one reply on the page, one message and one reply stored."""
    await app.last_reply_contains(MOVED)
    await app.wait_idle()
    assert await app.navigations() == 1
    assert len(proxy.messages) == 2 and len(proxy.run_ids()) == 1, "sent again, same runId"
    thread = await app.thread_id()
    async with gateway.socket() as ws:
        messages = snapshot_of(await ws.run({"type": "reattach", "threadId": thread}))
    assert [m["content"] for m in messages if m["role"] == "user"] == [FLAGSHIP]
    replies = [
        m for m in messages if m["role"] == "assistant" and MOVED in (m.get("content") or "")
    ]
    assert len(replies) == 1, messages


# The socket dies right after Enter: with the message in it ("lost"), or once it reached the
# gateway, before anything of its run reached the page ("arrived").
@pytest.mark.parametrize("arrives", [False, True], ids=["lost", "arrived"])
async def test_a_message_whose_socket_dies_right_after_enter_runs_once(
    context: BrowserContext, slow_gateway: RunningGateway, arrives: bool
) -> None:
    def dies(route: WebSocketRoute, server: WebSocketRoute, message: str) -> bool:
        if arrives:
            server.send(message)
        proxy.cut(route, server)
        return False

    proxy = Proxy(dies)
    app = await opened(context, slow_gateway, proxy)
    await app.say(FLAGSHIP)
    await ran_once(app, slow_gateway, proxy)


async def test_a_message_lost_to_a_reload_right_after_enter_is_sent_again(
    context: BrowserContext, slow_gateway: RunningGateway
) -> None:
    proxy = Proxy(lambda route, server, message: False)  # swallowed: the page goes first
    app = await opened(context, slow_gateway, proxy)
    await app.say(FLAGSHIP)
    await app.reload()
    await ran_once(app, slow_gateway, proxy)
