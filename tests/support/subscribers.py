"""A subscriber of a thread for tests that drive the hub's runs by hand: it keeps what it
is sent, and shows it as a client decodes it."""

from __future__ import annotations

import json
from typing import Any

from gateway import wire as p
from tests.support.agui import StreamChecker


class Recorder:
    """A subscriber that keeps what it is sent."""

    client: str | None = None

    def __init__(self) -> None:
        self.events: list[p.Event] = []

    def deliver(self, event: p.Event) -> None:
        self.events.append(event)

    def frames(self) -> list[dict[str, Any]]:
        """The events as a client decodes them, each checked against AG-UI's rules."""
        checker = StreamChecker()
        frames = [json.loads(p.encode(event)) for event in self.events]
        for frame in frames:
            checker.feed(frame)
        return frames

    def text(self) -> str:
        return "".join(e.delta for e in self.events if isinstance(e, p.TextMessageContent))
