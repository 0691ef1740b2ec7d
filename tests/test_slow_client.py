"""A connection that stops reading is closed once its queue is full, not left to grow."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import protocol as p
from gateway import server
from gateway.config import Settings


class _Gateway:
    hub: Any = object()
    settings = Settings()


async def test_a_full_send_queue_closes_the_connection_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server, "SEND_QUEUE_LIMIT", 3)
    session = server.WebSocketSession(_Gateway(), {}, None, None)  # type: ignore[arg-type]
    for index in range(10):
        session.deliver(p.Custom(name="n", value=index))
    queued = await session.outbox.batch()
    assert queued[-1] is None and queued.count(None) == 1
    assert len(queued) == 4
    assert session.closing
