"""What tests of a run's first events share: a gateway whose reads of a thread for a run
are held until let go (``held_reads``), inputs' starts held (``held_starts``), the words a
reattach shows (``replied``), and a message the scripted model answers at length."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from gateway.store import OpenedThread
from tests.support.agui import snapshot_of, text_of
from tests.support.servers import RunningGateway, running_gateway

LONG = "자기소개를 길게 해 주세요"  # the scripted model answers in 94 chunks


class HeldReads:
    """Holds every read of a thread for a run (``Engine.open_thread``) until let go."""

    def __init__(self, gateway: RunningGateway) -> None:
        self.engine = gateway.app.hub.engine  # type: ignore[union-attr]
        self.read = self.engine.open_thread
        self.let_go = asyncio.Event()
        self.waiting = 0
        self.done = 0
        self.engine.open_thread = self.open_thread

    async def open_thread(self, user_id: str, thread_id: str, *, known: bool) -> OpenedThread:
        self.waiting += 1
        await self.let_go.wait()
        opened: OpenedThread = await self.read(user_id, thread_id, known=known)
        self.done += 1
        return opened


def replied(reattached: list[dict[str, Any]]) -> str:
    """The agent's words a reattach shows: in its snapshot, and streamed if it joined the
    run while it went on."""
    shown = [m.get("content") or "" for m in snapshot_of(reattached) if m["role"] == "assistant"]
    return "".join(shown) + text_of(reattached)


def held_starts(hub: Any) -> asyncio.Event:
    """Holds every input's start (``Hub.start``, past its admission) until the event is set."""
    start, let_go = hub.start, asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> Any:
        await let_go.wait()
        return await start(*args, **kwargs)

    hub.start = held
    return let_go


@contextlib.asynccontextmanager
async def held_reads(**settings: Any) -> AsyncIterator[tuple[RunningGateway, HeldReads]]:
    async with running_gateway(**settings) as gateway:
        yield gateway, HeldReads(gateway)
