"""Start-up warm-up: throwaway runs through the whole stack, so no user's run is the slow one.

A run exercises more than the model: frame decoding, the connection's worker and writer, the
hub, the translator, the store's writer and the event encoder all have first-call costs
(imports, caches, code paths). The warm-up drives them through a WebSocket session that
talks to in-memory ASGI callables, before the server starts listening.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

import msgspec

from gateway import protocol as p
from gateway.config import Settings
from gateway.hub import Hub
from gateway.runner import APP_NAME
from gateway.server import Gateway, WebSocketSession

WARM_UP_USER = "__warmup__"
WARM_UP_RUNS = 3


def skip_absent_a2a() -> None:
    """ADK retries importing its optional A2A agent on every run (~0.5 ms) when the ``a2a``
    package is absent; recording the module as missing makes that a dictionary lookup."""
    try:
        import a2a  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        sys.modules.setdefault("google.adk.agents.remote_a2a_agent", None)  # type: ignore[arg-type]


class _Loopback:
    """ASGI receive/send for one in-memory WebSocket connection that sends ``frames``."""

    def __init__(self, frames: list[str]) -> None:
        self.incoming: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        self.incoming.put_nowait({"type": "websocket.connect"})
        self.frames = frames
        self.finished = 0

    async def receive(self) -> MutableMapping[str, Any]:
        return await self.incoming.get()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "websocket.accept" or '"RUN_FINISHED"' in message.get("text", ""):
            if self.frames:
                self.incoming.put_nowait({"type": "websocket.receive", "text": self.frames.pop(0)})
            else:
                self.incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})


async def warm_up(hub: Hub, settings: Settings) -> float:
    """Runs a few greetings over an in-memory connection, then deletes their threads.

    Each run starts a new thread, as most users' first runs do: creating a session has
    first-call costs of its own.
    """
    started = time.perf_counter()
    threads = [f"{WARM_UP_USER}{uuid.uuid4().hex}" for _ in range(WARM_UP_RUNS)]
    frames = [
        msgspec.json.encode(
            p.RunAgentInput(
                thread_id=thread_id,
                run_id=uuid.uuid4().hex,
                messages=[p.UserMessage(id=uuid.uuid4().hex, content="안녕")],
            )
        ).decode()
        for thread_id in threads
    ]
    gateway = Gateway(settings, _not_used, _not_used)
    gateway.hub = hub
    loopback = _Loopback(frames)
    scope = {"type": "websocket", "path": "/ws", "query_string": f"user={WARM_UP_USER}".encode()}
    await WebSocketSession(gateway, scope, loopback.receive, loopback.send).serve()
    for thread_id in threads:
        await hub.engine.sessions.delete_session(
            app_name=APP_NAME, user_id=WARM_UP_USER, session_id=thread_id
        )
    return time.perf_counter() - started


async def _not_used() -> Any:
    raise RuntimeError("the warm-up gateway has no lifespan")
