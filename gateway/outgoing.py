"""A connection's events on their way out, released in batches that cost few writes.

Every frame costs the server a write and the client a wake-up. A fast model streams
word-sized text chunks: sent one by one they make most of a run's frames, though a chunk's
size carries no meaning in AG-UI. So the first chunk of a message goes out at once (the
user sees the reply start), later chunks of it wait up to ``TEXT_HOLD_SECONDS`` for more
and share a frame, and any other event ends the wait, sent with the text before it. A
model at a human pace loses at most that hold per chunk; the end of a message is never
held back.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Generic, TypeVar

from gateway import protocol as p

# Well under a display frame (16 ms): no one sees the difference.
TEXT_HOLD_SECONDS = 0.010

E = TypeVar("E", bound=p.Event | None)


class Outgoing(Generic[E]):
    """A queue of events (None: close after what is queued) read by one writer."""

    def __init__(self) -> None:
        self._items: collections.deque[E] = collections.deque()
        self._ready = asyncio.Event()
        self._urgent = asyncio.Event()
        # The message whose text has started on the client and may wait for more.
        self._showing: str | None = None

    def __len__(self) -> int:
        return len(self._items)

    def put(self, event: E) -> None:
        self._items.append(event)
        self._ready.set()
        if not (isinstance(event, p.TextMessageContent) and event.message_id == self._showing):
            self._urgent.set()

    async def batch(self) -> list[E]:
        """The events queued, once there are some, with chunks of one message joined."""
        await self._ready.wait()
        if not self._urgent.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TEXT_HOLD_SECONDS):
                    await self._urgent.wait()
        events = merge_text_deltas(list(self._items))
        self._items.clear()
        self._ready.clear()
        self._urgent.clear()
        last = events[-1]
        self._showing = last.message_id if isinstance(last, p.TextMessageContent) else None
        return events


def merge_text_deltas(events: list[E]) -> list[E]:
    """Joins consecutive text chunks of one message into one event."""
    merged: list[E] = []
    for event in events:
        previous = merged[-1] if merged else None
        if (
            isinstance(event, p.TextMessageContent)
            and isinstance(previous, p.TextMessageContent)
            and previous.message_id == event.message_id
        ):
            joined = p.TextMessageContent(
                message_id=event.message_id, delta=previous.delta + event.delta
            )
            merged[-1] = joined  # type: ignore[assignment]
        else:
            merged.append(event)
    return merged
