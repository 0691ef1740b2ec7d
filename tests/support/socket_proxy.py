"""Between a page and the gateway's /ws: a Playwright socket route that sees every input
the page sends, so a browser test can lose one (a reload or a drop right after Enter) and
count the copies the page sends again (``tests.support.browser.route_sockets``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from playwright.async_api import WebSocketRoute


def is_message(message: str | bytes) -> bool:
    """A RunAgentInput whose last message is the user's (not a control frame, nor results)."""
    if not isinstance(message, str) or not message.startswith("{"):
        return False
    frame = json.loads(message)
    messages = frame.get("messages") or [{}]
    return "type" not in frame and messages[-1].get("role") == "user"


class Proxy:
    """Between the page and the gateway: the first user message meets ``first`` (which
    says whether to pass it on, and may cut the connection); every copy is counted."""

    def __init__(self, first: Callable[[WebSocketRoute, WebSocketRoute, str], bool]) -> None:
        self.first = first
        self.messages: list[str] = []
        self.closing: list[asyncio.Future[None]] = []

    def route(self, route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def upstream(message: str | bytes) -> None:
            if is_message(message):
                assert isinstance(message, str)
                self.messages.append(message)
                if len(self.messages) == 1 and not self.first(route, server, message):
                    return
            server.send(message)

        route.on_message(upstream)

    def cut(self, route: WebSocketRoute, server: WebSocketRoute) -> None:
        self.closing.append(asyncio.ensure_future(server.close(code=1006)))
        self.closing.append(asyncio.ensure_future(route.close(code=1006)))

    def run_ids(self) -> set[str]:
        return {json.loads(message)["runId"] for message in self.messages}
