"""What the browser tests share: one Chromium per session, a fresh profile per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, BrowserContext, async_playwright

from tests.support.browser import check_streams, launch_chromium, new_context
from tests.support.servers import RunningGateway, running_gateway


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        yield browser
        await browser.close()


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
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


@pytest.fixture(scope="module")
async def slow_gateway() -> AsyncIterator[RunningGateway]:
    """A server whose model streams a word every 80 ms, so a person can act mid-reply."""
    async with running_gateway(scripted_pace_ms=80) as running:
        yield running
