"""The reference web client in headless Chromium, driven the way a person uses it.

``WebApp`` wraps one browser tab: it types into the chat box, presses Enter, clicks
buttons and reads what is on the screen. The only thing it reads that a person cannot
see is ``window.__navigations``, the page's count of main-area swaps.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    Locator,
    Page,
    Playwright,
    WebSocket,
    WebSocketRoute,
    expect,
)

from tests.support import tiers
from tests.support.agui import StreamChecker
from tests.support.budgets import scaled
from tests.support.official_client import NODE_DIR
from tests.support.servers import RunningGateway

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The README's picture; the flagship test refreshes it when UPDATE_SCREENSHOT=1.
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
# The same story at a phone's, a tablet's and a laptop's width (README, "Reference client").
SCREENSHOT_SIZES = {390: 844, 768: 1024, 1280: 800}


def screenshot_at(width: int) -> Path:
    return SCREENSHOT.with_name(f"screenshot-{width}.png")


# axe-core from tests/e2e/node's lock file (scripts/test.sh runs `npm ci` there).
AXE = NODE_DIR / "node_modules" / "axe-core" / "axe.min.js"

# Long enough for a run on a slow 2-core machine; a broken story fails well before CI gives up.
TIMEOUT_MS = round(scaled(15) * 1000)
# Assertions wait as long as actions do (Playwright's own default is 5 s, which a busy
# 2-core machine can spend before a page has drawn what a run sent it).
expect.set_options(timeout=TIMEOUT_MS)

NEEDS_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"
)


# Pages whose sockets a test routes through a handler of its own (``route_sockets``).
_ROUTED: weakref.WeakSet[Page] = weakref.WeakSet()


async def route_sockets(page: Page, handler: Callable[[WebSocketRoute], Any]) -> None:
    """Sends the page's /ws sockets through ``handler``; the test checks their streams itself.

    Playwright's reports of a routed socket's frames cannot be relied on: once a routed socket
    is closed and the page opens another, frames of the new one were seen reported on both,
    so the context's checker would see one stream twice, interleaved.
    """
    _ROUTED.add(page)
    await page.route_web_socket(re.compile(r"/ws\?"), handler)


def check_streams(page: Page, problems: list[str]) -> None:
    """Every frame the page's sockets receive goes through the suite's AG-UI checker.

    A socket whose stream begins mid-run (a reattach by cursor, ``"after"``) continues the
    stream of the socket before it, and is checked as that stream's rest. Pages whose sockets
    a test routes (``route_sockets``) are left to that test.
    """
    checkers: list[StreamChecker] = []

    def follow(socket: WebSocket) -> None:
        mine: list[StreamChecker | None] = []

        def received(payload: str | bytes) -> None:
            if page in _ROUTED or isinstance(payload, bytes):
                return  # bytes: a live turn's audio, beside the AG-UI stream (docs/voice.md)
            try:
                event = json.loads(payload)
                if not mine:
                    mine.append(_checker_for(event, checkers))
                checker = mine[0]
                if checker is not None:
                    checker.feed(event)
            except (AssertionError, ValueError) as problem:
                problems.append(f"{socket.url}: {problem!r} in {payload!r}")

        socket.on("framereceived", received)

    page.on("websocket", follow)


def _checker_for(first: dict[str, Any], checkers: list[StreamChecker]) -> StreamChecker | None:
    """The checker of a socket's stream, given its first event: a new one for a stream that
    begins, the previous socket's for one that continues it, None for the rest of a stream
    not seen."""
    if first.get("type") in ("RUN_STARTED", "RUN_ERROR"):
        checkers.append(StreamChecker())
        return checkers[-1]
    if checkers and checkers[-1].in_run:
        return checkers[-1]
    return None


async def accessibility_problems(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    assert AXE.is_file(), f"{AXE} is missing: run `npm ci` in tests/e2e/node"
    if not await page.evaluate("typeof window.axe === 'object'"):
        await page.add_script_tag(path=str(AXE))
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['impact']} {v['id']}: {v['help']} at {[node['target'] for node in v['nodes']]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def launch_chromium(playwright: Playwright, *args: str) -> Browser:
    """Chromium as every browser test runs it; ``args``: switches of the test's own."""
    tiers.require("browser", "Chromium")
    return await playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *args], headless=True
    )


async def new_context(browser: Browser) -> BrowserContext:
    context = await browser.new_context(
        viewport={"width": 1440, "height": 900}, locale="ko-KR", timezone_id="Asia/Seoul"
    )
    context.set_default_timeout(TIMEOUT_MS)
    return context


@contextlib.asynccontextmanager
async def checked_context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh browser profile; a page exception or an invalid AG-UI stream fails the test."""
    context = await new_context(browser)
    errors: list[str] = []
    invalid: list[str] = []
    context.on("page", lambda page: page.on("pageerror", lambda error: errors.append(str(error))))
    context.on("page", lambda page: check_streams(page, invalid))
    yield context
    await context.close()
    assert not errors, f"the page threw: {errors}"
    assert not invalid, f"invalid AG-UI streams: {invalid}"


class WebApp:
    """One tab of the reference client."""

    def __init__(self, page: Page) -> None:
        self.page = page

    @classmethod
    async def open(
        cls,
        context: BrowserContext,
        gateway: RunningGateway,
        user: str = "demo",
        *,
        thread: str | None = None,
        page: Page | None = None,
    ) -> WebApp:
        """Opens the app as ``user`` (a thread id in the hash joins that thread)."""
        page = page or await context.new_page()
        url = f"{gateway.http}/?user={urllib.parse.quote(user)}"
        if thread:
            url += f"#thread={urllib.parse.quote(thread)}"
        await page.goto(url)
        app = cls(page)
        await app.wait_connected()
        return app

    async def wait_connected(self) -> None:
        """Connected, and the thread's snapshot is on screen."""
        await expect(self.page.locator(".app")).to_have_attribute(
            "data-connection", "open", timeout=TIMEOUT_MS
        )

    async def reload(self) -> None:
        await self.page.reload()
        await self.wait_connected()

    # --- doing --------------------------------------------------------------------------

    async def say(self, text: str) -> None:
        box = self.page.get_by_role("textbox", name="메시지")
        await box.fill(text)
        await box.press("Enter")

    async def choose_chat_mode(self, label: str) -> None:
        await (
            self.page.get_by_role("group", name="채팅 보기 방식")
            .get_by_role("button", name=label, exact=True)
            .click()
        )

    async def click_stop(self) -> None:
        await self.page.get_by_role("button", name="중지").click()

    async def open_from_menu(self, *names: str) -> None:
        """Clicks through the menu: the groups to unfold, then the screen."""
        menu = self.page.get_by_role("navigation", name="메뉴")
        for group in names[:-1]:
            summary = menu.locator("summary", has_text=group).first
            details = summary.locator("xpath=..")
            if await details.get_attribute("open") is None:
                await summary.click()
        await menu.get_by_role("link", name=names[-1], exact=True).click()

    # --- reading ------------------------------------------------------------------------

    @property
    def main(self) -> Locator:
        return self.page.get_by_role("main")

    @property
    def screen_title(self) -> Locator:
        return self.main.get_by_role("heading", level=1)

    @property
    def transcript(self) -> Locator:
        return self.page.get_by_role("log", name="대화")

    @property
    def replies(self) -> Locator:
        """The bot's messages, oldest first."""
        return self.transcript.locator(".msg.assistant .text")

    @property
    def user_messages(self) -> Locator:
        return self.transcript.locator(".msg.user .text")

    def activity(self, tool: str) -> Locator:
        """Timeline rows of one tool, oldest first."""
        return self.transcript.locator(f'.activity[data-tool="{tool}"]')

    def surface(self, surface_id: str) -> Locator:
        """An A2UI surface the agent showed in the transcript."""
        return self.transcript.locator(f'.a2ui-surface[data-surface-id="{surface_id}"]')

    @property
    def approval_card(self) -> Locator:
        return self.transcript.get_by_role("group", name="승인 요청").last

    async def last_reply_contains(self, text: str) -> None:
        await expect(self.replies.last).to_contain_text(text, timeout=TIMEOUT_MS)

    async def wait_idle(self) -> None:
        """No run in progress and nothing waiting to be sent."""
        await expect(self.page.locator("#chat")).to_have_attribute(
            "data-busy", "false", timeout=TIMEOUT_MS
        )

    async def navigations(self) -> int:
        count: int = await self.page.evaluate("window.__navigations")
        return count

    async def thread_id(self) -> str:
        # Not shown to the user (issue 29): the chat keeps it on its element.
        text = await self.page.locator("#chat").get_attribute("data-thread-id")
        assert text, "the chat names no thread"
        return text
