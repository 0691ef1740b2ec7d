"""GET /invocations?threadId= in Chromium's own EventSource: it reconnects by itself when a
stream ends, with Last-Event-ID, and is sent each event of the thread once."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Request

from tests.support.agui import new_id, seq_of, text_of, user_input
from tests.support.browser import NEEDS_CHROMIUM, TIMEOUT_MS
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

FOLLOW = """([url]) => {
  window.__events = [];
  window.__ids = [];
  const source = new EventSource(url);
  source.onmessage = (message) => {
    window.__events.push(JSON.parse(message.data));
    window.__ids.push(Number(message.lastEventId));
  };
  window.__source = source;
}"""


async def test_event_source_resumes_with_last_event_id_and_misses_nothing(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, "안녕"))
    page = await context.new_page()
    resumes: list[Request] = []
    page.on("request", lambda r: resumes.append(r) if "/invocations?" in r.url else None)
    await page.goto(gateway.http + "/ping")  # an origin of the gateway's own
    cursor = seq_of(first[2])
    await page.evaluate(FOLLOW, [f"/invocations?threadId={thread}&user=demo&after={cursor}"])
    # The stream ends with the idle thread; EventSource comes back on its own, saying
    # where it was: the thread's next run reaches it, whether live or from the log.
    for _ in range(TIMEOUT_MS // 100):
        if len(resumes) >= 2:
            break
        await asyncio.sleep(0.1)
    assert len(resumes) >= 2, "EventSource comes back once the idle thread's stream ends"
    async with gateway.socket() as ws:
        second = await ws.run(user_input(thread, "안녕"))
    for _ in range(TIMEOUT_MS // 100):
        got: list[dict[str, Any]] = await page.evaluate("window.__events")
        if [e for e in got if e["type"] == "RUN_FINISHED"][1:]:
            break
        await asyncio.sleep(0.1)
    ids: list[int] = await page.evaluate("window.__ids")
    await page.evaluate("window.__source.close()")
    assert ids == [seq_of(e) for e in got]
    assert all(a < b for a, b in itertools.pairwise(ids)), "each event once, in order"
    assert text_of(got) == text_of(first[3:]) + text_of(second), "none lost"
    assert ids[-1] == seq_of(second[-1])
    headers = [await request.all_headers() for request in resumes]
    assert "last-event-id" not in headers[0]
    assert json.dumps(headers[1].get("last-event-id")) == json.dumps(str(seq_of(first[-1])))
