"""CopilotKit 1.74 (``@copilotkit/react-core/v2``, no CopilotKit runtime) against the gateway.

The page (tests/e2e/copilotkit) is served from another loopback origin than the gateway,
with no proxy between them, and the gateway allows that origin (``GATEWAY_ALLOWED_ORIGINS``).
Each story runs with every agent the page offers, made as clients/agui-websocket/README.md
says: ``@ag-ui/client`` 1.0's ``HttpAgent``, the ``HttpAgent`` of the ``@ag-ui/client``
CopilotKit bundles (0.0.x), and the package's ``GatewayHttpAgent`` and ``WebSocketAgent``.
No story may log a console error or throw.

On load, ``CopilotChat`` with a ``threadId`` calls the agent's ``connect()``: the package's
agents come back to the thread (GET /invocations, a /ws reattach), so a reload shows it and
follows a run in progress. A stock ``HttpAgent`` has no ``connect()`` (both versions throw
``AGUIConnectNotImplementedError``, which CopilotKit swallows after emptying the chat), so
the page reads the thread from ``GET /history`` with the package's ``restoreThread``. The
reload trials cut the flagship at each of its moments with the package's two agents.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import httpx
import pytest
from playwright.async_api import BrowserContext, expect

from tests.e2e.copilotkit_page import NEEDS_BUILD, CopilotKitPage, static_site
from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS
from tests.support.budgets import eventually
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway
from tests.support.socket_proxy import Proxy

pytestmark = [NEEDS_CHROMIUM, NEEDS_BUILD, pytest.mark.browser]

AGENTS = ["http", "http-bundled", "gateway-http", "ws"]
# The agents that come back to a thread after a reload (the package's).
RESUMING = ["gateway-http", "ws"]
SCREEN = "업무 요청 목록"
INTRODUCE = "자기소개 해줘"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with static_site() as origin:
        yield origin


@pytest.fixture(scope="module")
async def gateway(site: str) -> AsyncIterator[RunningGateway]:
    """Words 60 ms apart: slow enough to press Stop mid-reply, fast enough for the rest."""
    async with running_gateway(scripted_pace_ms=60, allowed_origins=site) as running:
        yield running


class OpenTab(Protocol):
    async def __call__(
        self,
        agent: str,
        *,
        deny: str | None = None,
        settle_ms: int = 0,
        reload_on_return: bool = False,
    ) -> CopilotKitPage: ...


@pytest.fixture
def open_tab(context: BrowserContext, site: str, gateway: RunningGateway) -> OpenTab:
    """Opens a tab of the page with one of its agents, in the test's browser profile."""

    async def opened(
        agent: str, *, deny: str | None = None, settle_ms: int = 0, reload_on_return: bool = False
    ) -> CopilotKitPage:
        return await CopilotKitPage.open(
            context,
            site,
            gateway,
            agent,
            deny=deny,
            settle_ms=settle_ms,
            reload_on_return=reload_on_return,
        )

    return opened


@pytest.fixture(params=AGENTS)
def agent(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


async def test_the_chat_streams_the_reply_and_the_tool_runs_once(
    open_tab: OpenTab, agent: str
) -> None:
    tab = await open_tab(agent)
    await tab.say(FLAGSHIP)
    # Streamed: the reply is on screen in part before it is whole.
    await tab.wait_reply_in_part("업무", MOVED)
    await tab.wait_reply(MOVED)
    await expect(tab.screen_title).to_have_text(SCREEN)
    assert await tab.navigations() == 1
    tab.assert_no_console_errors()


async def test_the_reply_tells_what_the_tool_really_did(open_tab: OpenTab, agent: str) -> None:
    """The page refuses the screen: its result reaches the model, which says so."""
    tab = await open_tab(agent, deny="MNU-3120")
    await tab.say(FLAGSHIP)
    refused = "업무 요청 목록 화면을 열 권한이 없어 이동하지 못했습니다."
    await tab.wait_reply(refused)
    await expect(tab.screen_title).to_have_text("홈")
    assert await tab.navigations() == 0
    tab.assert_no_console_errors()


async def test_an_approval_is_answered_through_use_interrupt(open_tab: OpenTab, agent: str) -> None:
    tab = await open_tab(agent)
    await tab.say("R-1042 승인해줘")
    await expect(tab.approval).to_contain_text("R-1042", timeout=TIMEOUT_MS)
    await tab.approve()
    await tab.wait_reply("R-1042 요청을 승인했습니다.")
    await expect(tab.approval).to_have_count(0)
    tab.assert_no_console_errors()


async def test_stop_mid_reply_then_a_new_message_works(open_tab: OpenTab, agent: str) -> None:
    tab = await open_tab(agent)
    await tab.say(INTRODUCE)
    await tab.wait_reply_in_part("안녕하세요", "무엇을 도와드릴까요?")
    await tab.click_stop()
    await tab.wait_idle()
    stopped = await tab.replies.last.inner_text()
    assert stopped.startswith("안녕하세요")
    await tab.say(FLAGSHIP)
    await tab.wait_reply(MOVED)
    # The stopped reply keeps the text it had; the tool ran once, for the new message.
    await expect(tab.replies.filter(has_text="안녕하세요")).to_have_text([stopped])
    assert await tab.navigations() == 1
    tab.assert_no_console_errors()


async def test_a_stopped_reply_is_marked_stopped_before_and_after_a_reload(
    open_tab: OpenTab, agent: str
) -> None:
    """The package's agents mark the reply the moment Stop lands; after a reload every agent
    shows the thread's own mark."""
    tab = await open_tab(agent)
    await tab.say(INTRODUCE)
    await tab.wait_reply_in_part("안녕하세요", "무엇을 도와드릴까요?")
    await tab.click_stop()
    await tab.wait_idle()
    if agent in RESUMING:
        await expect(tab.stopped_marks).to_have_count(1)
    await tab.reload()
    await expect(tab.user_messages).to_have_text([INTRODUCE], timeout=TIMEOUT_MS)
    await expect(tab.stopped_marks).to_have_count(1)
    await expect(tab.replies).not_to_contain_text(["무엇을 도와드릴까요?"])
    tab.assert_no_console_errors()


async def test_a_reload_shows_the_conversation(open_tab: OpenTab, agent: str) -> None:
    tab = await open_tab(agent)
    await tab.say(FLAGSHIP)
    await tab.wait_reply(MOVED)
    await tab.reload()
    await expect(tab.user_messages).to_have_text([FLAGSHIP], timeout=TIMEOUT_MS)
    await expect(tab.replies.last).to_have_text(MOVED)
    await expect(tab.screen_title).to_have_text(SCREEN)
    assert await tab.navigations() == 1
    tab.assert_no_console_errors()


# --- a reload: CopilotKit's connect() on load is the package agents' way back ------------


@pytest.fixture(params=RESUMING)
def resuming(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


async def test_a_reload_mid_reply_follows_the_run_to_its_end(
    open_tab: OpenTab, resuming: str
) -> None:
    tab = await open_tab(resuming)
    await tab.say(INTRODUCE)
    await tab.wait_reply_in_part("안녕하세요", "무엇을 도와드릴까요?")
    await tab.reload()
    # The reloaded tab picks the reply up where it is and sees it to its end.
    await expect(tab.replies.last).to_contain_text("무엇을 도와드릴까요?", timeout=TIMEOUT_MS)
    await tab.wait_idle()
    await expect(tab.user_messages).to_have_text([INTRODUCE])
    tab.assert_no_console_errors()


async def test_a_message_lost_to_a_reload_before_its_run_started_shows_its_reply_live(
    context: BrowserContext, site: str, gateway: RunningGateway
) -> None:
    """The WebSocketAgent keeps the input and the reloaded page sends it again after its
    reattach; CopilotKit's connect() has the thread by then, and goes on with that run:
    the message and its reply come on screen with nothing more done."""
    proxy = Proxy(lambda route, server, message: False)  # swallowed: the page goes first
    tab = await CopilotKitPage.open(context, site, gateway, "ws", sockets=proxy.route)
    await tab.say(INTRODUCE)
    await eventually(lambda: proxy.messages, 10, what="the page sent no message")
    await tab.reload()
    await expect(tab.user_messages).to_have_text([INTRODUCE], timeout=TIMEOUT_MS)
    await expect(tab.replies.last).to_contain_text("무엇을 도와드릴까요?", timeout=TIMEOUT_MS)
    await tab.wait_idle()
    assert len(proxy.messages) == 2 and len(proxy.run_ids()) == 1, "sent again, same runId"
    await expect(tab.replies).to_have_count(1)
    tab.assert_no_console_errors()


async def navigate_results(gateway: RunningGateway, thread: str) -> list[dict[str, Any]]:
    """The thread's answers to navigateToScreen, as stored (GET /history)."""
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.get(
            f"{gateway.http}/history",
            params={"threadId": thread},
            headers={"X-Gateway-User": "demo"},
        )
    answer.raise_for_status()
    messages: list[dict[str, Any]] = answer.json()["messages"]
    return [
        json.loads(m["content"])
        for m in messages
        if m["role"] == "tool" and "status" in m["content"]
    ]


# Where the flagship is cut: what the tab waits for before it reloads. The handler opens
# the screen at once and returns SETTLE_MS later, as a router's transition would.
SETTLE_MS = 400
MOMENTS = {
    # The run is under way, the browser call not made yet.
    "before the call": "document.querySelector('[data-copilot-running=\"true\"]') !== null",
    # The screen is open, the handler has not returned.
    "in the handler": "window.__navigations === 1 && !window.__handled",
    # The handler returned: the page reloads itself at that instant, before CopilotKit can
    # send the result (without the package's record of it, 5 of 6 such reloads hedged).
    "after the handler": "sessionStorage.getItem('reloadedOnReturn') === '1' && !window.__handled",
    # The reply is streaming.
    "mid-reply": """(() => {
        const all = document.querySelectorAll('[data-testid="copilot-assistant-message"]');
        const text = all.length ? all[all.length - 1].textContent : "";
        return text.includes("업무") && !text.includes("이동했습니다");
    })()""",
}
TRIALS = 2


async def reload_at(tab: CopilotKitPage, moment: str) -> None:
    """Cuts the flagship, asked in ``tab``, at ``moment`` with a reload."""
    await tab.say(FLAGSHIP)
    await tab.page.wait_for_function(MOMENTS[moment], polling="raf", timeout=TIMEOUT_MS)
    if moment == "after the handler":
        await tab.wait_ready()  # the page reloaded itself
    else:
        await tab.reload()


async def hedges_after_reloads(
    open_tab: OpenTab, gateway: RunningGateway, agent: str, moment: str, trials: int
) -> int:
    """Reloads ``trials`` fresh tabs at ``moment``; each navigates once and says so truly.
    Returns how many answers hedged (anything but "navigated"), checked to be none."""
    hedges = 0
    for _ in range(trials):
        tab = await open_tab(
            agent, settle_ms=SETTLE_MS, reload_on_return=moment == "after the handler"
        )
        thread = await tab.thread_id()
        await reload_at(tab, moment)
        await tab.wait_reply(MOVED)
        await expect(tab.screen_title).to_have_text(SCREEN)
        assert await tab.navigations() == 1, "exactly one navigation"
        results = await navigate_results(gateway, thread)
        hedges += sum(result["status"] != "navigated" for result in results)
        assert [result["status"] for result in results] == ["navigated"], results
        tab.assert_no_console_errors()
        await tab.page.close()
    print(f"{agent}, reload {moment}: {hedges} hedges in {trials} reloads")
    return hedges


@pytest.mark.parametrize("moment", list(MOMENTS))
async def test_a_reload_at_each_moment_of_the_flagship_navigates_once_and_tells_the_truth(
    open_tab: OpenTab, gateway: RunningGateway, resuming: str, moment: str
) -> None:
    assert await hedges_after_reloads(open_tab, gateway, resuming, moment, TRIALS) == 0


async def test_the_one_liner_never_hedges_after_the_handler_returned(
    open_tab: OpenTab, gateway: RunningGateway
) -> None:
    """``new WebSocketAgent({url})`` and no hooks: the result CopilotKit adds is kept."""
    assert await hedges_after_reloads(open_tab, gateway, "ws-oneliner", "after the handler", 4) == 0
