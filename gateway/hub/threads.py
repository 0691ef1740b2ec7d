"""A thread in memory: who watches it, its one run, and what waits on it.

A thread is an ADK session; what it has said and what it waits on is read from the store
(``gateway.hub.open_calls``), so a restart loses nothing. What lives here is what only
this process knows: the connections that watch the thread (``Subscriber``), the run it
runs now (``gateway.hub.runs``), the browser answers that came before the rest of their
batch, the inputs waiting their turn, the timer that expires unanswered browser calls,
and where each watcher is in the thread's log (``gateway.hub.eventlog``) while another
process runs it (``gateway.hub.following``).

Events go to a watcher through ``Thread.send``: while its replay from the log is being
read, what it is sent meanwhile waits, to go out after the replay.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

from gateway import wire as p

if TYPE_CHECKING:  # a run holds its thread; the thread names its run only in annotations
    from gateway.hub.runs import Run


class Subscriber(Protocol):
    """Who is sent a thread's events: a WebSocket connection, an SSE request."""

    # The client instance it speaks for; None: only itself (a stock client, an SSE request).
    @property
    def client(self) -> str | None: ...

    def deliver(self, event: p.Event) -> None: ...


@dataclasses.dataclass
class Thread:
    thread_id: str
    user_id: str
    watchers: list[Subscriber] = dataclasses.field(default_factory=list)
    run: Run | None = None
    # Browser answers that arrived before the rest of their batch: call id -> response.
    early: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    early_messages: dict[str, p.ToolMessage] = dataclasses.field(default_factory=dict)
    expiry: asyncio.TimerHandle | None = None
    # Inputs waiting for the run to end (``gateway.hub.busy``), in turn behind ``turns``.
    waiting: int = 0
    turns: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    # The number of the last frame of its log given out; None until read from the store.
    head: int | None = None
    # Watchers whose replay from the log is being read: what they are sent meanwhile
    # waits here, to go out after the replay.
    replaying: dict[Subscriber, list[p.Event]] = dataclasses.field(default_factory=dict)
    # The newest number of its log another process said is committed (``gateway.hub.following``).
    heard: int = 0
    # While another process runs it: the number of the last frame each watcher was sent.
    positions: dict[Subscriber, int] = dataclasses.field(default_factory=dict)

    def watch(self, subscriber: Subscriber) -> None:
        if subscriber not in self.watchers:
            self.watchers.append(subscriber)

    def send(self, watcher: Subscriber, event: p.Event) -> None:
        held = self.replaying.get(watcher)
        if held is None:
            watcher.deliver(event)
        else:
            held.append(event)
