"""A page on another origin calls POST /invocations from Chromium, as a stock AG-UI frontend
does: the browser's own preflight and CORS checks decide, no proxy in between."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page

from tests.support.agui import new_id, user_input
from tests.support.browser import NEEDS_CHROMIUM
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.browser

PAGE = b"<!doctype html><p>a frontend"

# What @ag-ui/client's HttpAgent does: JSON up, an SSE stream down, the text read to its end.
FETCH_RUN = """async ([url, body]) => {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "Accept": "text/event-stream",
                "X-Gateway-User": "demo"},
      body: JSON.stringify(body),
    });
    return {status: response.status, text: await response.text()};
  } catch (error) {
    return {failed: String(error)};
  }
}"""


@pytest.fixture(scope="module")
async def listed(app_port: int) -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=f"http://localhost:{app_port}") as gateway:
        yield gateway


@pytest.fixture(scope="module")
async def app_port() -> AsyncIterator[int]:
    """A server of one blank page on loopback, the frontend's own origin (Chromium lets
    only a loopback page reach a loopback gateway)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n")
        writer.write(b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(PAGE), PAGE))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def page_on(context: BrowserContext, origin: str) -> Page:
    page = await context.new_page()
    await page.goto(f"{origin}/")
    return page


async def fetch_run(page: Page, gateway: RunningGateway) -> dict[str, Any]:
    body = user_input(new_id("t"), "안녕")
    result: dict[str, Any] = await page.evaluate(FETCH_RUN, [gateway.http + "/invocations", body])
    return result


@NEEDS_CHROMIUM
async def test_a_page_on_an_allowed_origin_streams_a_run(
    context: BrowserContext, listed: RunningGateway, app_port: int
) -> None:
    result = await fetch_run(await page_on(context, f"http://localhost:{app_port}"), listed)
    assert result.get("status") == 200, result
    assert '"type":"RUN_STARTED"' in result["text"]
    assert '"type":"RUN_FINISHED"' in result["text"]


@NEEDS_CHROMIUM
async def test_a_page_on_another_origin_cannot_call_the_gateway(
    context: BrowserContext, listed: RunningGateway, app_port: int
) -> None:
    # The same page on another name is another origin, not on the list.
    result = await fetch_run(await page_on(context, f"http://127.0.0.1:{app_port}"), listed)
    assert "failed" in result and "Failed to fetch" in result["failed"]
