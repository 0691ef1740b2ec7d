"""What the browser tests share: one Chromium per session, a fresh profile per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, BrowserContext, async_playwright

from tests.support.browser import checked_context, launch_chromium
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
    async with checked_context(browser) as context:
        yield context


@pytest.fixture(scope="module")
async def slow_gateway() -> AsyncIterator[RunningGateway]:
    """A server whose model streams a word every 80 ms, so a person can act mid-reply."""
    async with running_gateway(scripted_pace_ms=80) as running:
        yield running
