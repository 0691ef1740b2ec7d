"""A connection that stops reading is closed once its queue is full, not left to grow."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gateway import wire as p
from gateway.auth import Authenticator
from gateway.config import Settings
from gateway.doors import websocket
from gateway.doors.voice import LiveUsers
from gateway.metrics import OFF

pytestmark = pytest.mark.unit


class _Shared:
    hub: Any = SimpleNamespace(audit=None, metrics=OFF)
    rates: Any = object()
    origins: frozenset[str] = frozenset()
    drain: Any = None
    live_users = LiveUsers()
    # Room for three of the events below, in bytes.
    settings = Settings(send_buffer_bytes=3 * len(p.encode(p.Custom(name="n", value=0))))
    auth = Authenticator(settings)


async def test_a_full_send_queue_closes_the_connection_once() -> None:
    session = websocket.WebSocketSession(_Shared(), {}, None, None)  # type: ignore[arg-type]
    for index in range(10):
        session.deliver(p.Custom(name="n", value=index))
    queued = [event for event, _ in await session.send_queue.batch()]
    assert queued[-1] is None and queued.count(None) == 1
    assert len(queued) == 4
    assert session.send_queue.ended
