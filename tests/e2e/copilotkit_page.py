"""The CopilotKit page (tests/e2e/copilotkit) in headless Chromium, served from its own origin.

``scripts/test.sh`` builds the page with Vite into ``tests/e2e/copilotkit/dist``; a static
server here serves that build on another loopback port than the gateway's, so every request
the page makes to the gateway is cross-origin, as for an app hosted on its own site.
``CopilotKitPage`` wraps one tab: it types into CopilotKit's chat and reads what is shown.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Locator, Page, WebSocketRoute, expect

from tests.support.browser import TIMEOUT_MS, route_sockets
from tests.support.servers import RunningGateway

BUILD = Path(__file__).resolve().parent / "copilotkit" / "dist"

NEEDS_BUILD = pytest.mark.skipif(
    not (BUILD / "index.html").exists(),
    reason="the CopilotKit page is not built (scripts/test.sh runs `npm ci && vite build` "
    "in tests/e2e/copilotkit)",
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def static_site(root: Path = BUILD) -> Iterator[str]:
    """Serves ``root`` on a free loopback port; yields its origin."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class CopilotKitPage:
    """One tab of the CopilotKit page."""

    def __init__(self, page: Page, console_errors: list[str]) -> None:
        self.page = page
        self.console_errors = console_errors

    @classmethod
    async def open(
        cls,
        context: BrowserContext,
        site: str,
        gateway: RunningGateway,
        agent: str,
        *,
        user: str = "demo",
        deny: str | None = None,
        settle_ms: int = 0,
        reload_on_return: bool = False,
        sockets: Callable[[WebSocketRoute], Any] | None = None,
    ) -> CopilotKitPage:
        """Opens the page with ``agent`` (a variant of src/agents.js) against ``gateway``;
        ``settle_ms``: its frontend tool returns that long after the screen opened;
        ``reload_on_return``: the page reloads itself the instant the tool returns;
        ``sockets``: its /ws sockets go through this route (``route_sockets``)."""
        page = await context.new_page()
        if sockets is not None:
            await route_sockets(page, sockets)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
        query = {"gateway": gateway.http, "agent": agent, "user": user}
        if deny:
            query["deny"] = deny
        if settle_ms:
            query["settleMs"] = str(settle_ms)
        if reload_on_return:
            query["reloadOnReturn"] = "1"
        await page.goto(f"{site}/?{urllib.parse.urlencode(query)}")
        made = cls(page, errors)
        await made.wait_ready()
        return made

    async def wait_ready(self) -> None:
        await expect(self.textbox).to_be_visible(timeout=TIMEOUT_MS)

    async def reload(self) -> None:
        await self.page.reload()
        await self.wait_ready()

    # --- doing --------------------------------------------------------------------------

    async def say(self, text: str) -> None:
        await self.textbox.fill(text)
        await self.textbox.press("Enter")

    async def click_stop(self) -> None:
        await expect(self.chat).to_have_attribute("data-copilot-running", "true")
        # While a run is going, CopilotKit's send button is its Stop button.
        await self.page.get_by_test_id("copilot-send-button").click()

    async def approve(self) -> None:
        await self.approval.get_by_role("button", name="승인").click()

    # --- reading ------------------------------------------------------------------------

    @property
    def textbox(self) -> Locator:
        return self.page.get_by_test_id("copilot-chat-textarea")

    @property
    def chat(self) -> Locator:
        return self.page.locator("[data-copilot-running]").first

    @property
    def replies(self) -> Locator:
        return self.page.get_by_test_id("copilot-assistant-message")

    @property
    def stopped_marks(self) -> Locator:
        """The page's mark under a reply cut by Stop (src/main.jsx ``Reply``)."""
        return self.page.get_by_role("note").filter(has_text="응답을 중단했습니다")

    @property
    def user_messages(self) -> Locator:
        return self.page.get_by_test_id("copilot-user-message")

    @property
    def screen_title(self) -> Locator:
        return self.page.get_by_role("main").get_by_role("heading", level=1)

    @property
    def approval(self) -> Locator:
        return self.page.get_by_role("group", name="승인 요청")

    async def wait_reply(self, text: str) -> None:
        """The latest reply is ``text``, whole, and the run is over."""
        await expect(self.replies.last).to_have_text(text, timeout=TIMEOUT_MS)
        await self.wait_idle()

    async def wait_idle(self) -> None:
        await expect(self.chat).to_have_attribute(
            "data-copilot-running", "false", timeout=TIMEOUT_MS
        )

    async def wait_reply_in_part(self, start: str, end: str) -> None:
        """The latest reply shows ``start`` while its ``end`` has not come yet: it streams."""
        await self.page.wait_for_function(
            """([start, end]) => {
                const all = document.querySelectorAll('[data-testid="copilot-assistant-message"]');
                const text = all.length ? all[all.length - 1].textContent : "";
                return text.includes(start) && !text.includes(end);
            }""",
            arg=[start, end],
            polling="raf",
            timeout=TIMEOUT_MS,
        )

    def assert_no_console_errors(self) -> None:
        assert not self.console_errors, f"the page logged errors: {self.console_errors}"

    async def navigations(self) -> int:
        count: int = await self.page.evaluate("window.__navigations")
        return count

    async def thread_id(self) -> str:
        shown: str = await self.page.locator("#thread-id").inner_text()
        return shown
