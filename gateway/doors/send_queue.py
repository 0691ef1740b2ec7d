"""A connection's events on their way out: encoded as they are queued (shaped for the AG-UI
version its client declared, ``gateway.wire.versions``), bounded in bytes, released in batches
that cost few writes.

Every frame costs the server a write and the client a wake-up. A fast model streams
word-sized text chunks: sent one by one they make most of a run's frames, though a chunk's
size carries no meaning in AG-UI. So the first chunk of a message goes out at once (the
user sees the reply start: its owner may even ``take`` it to write in the turn it came,
while the writer waits), and later chunks of it that keep coming, turn after turn of
the event loop (a burst, or a busy gateway), share a frame: the writer waits while more
come, until ``TEXT_QUIET_TURNS`` turns bring none, never longer than ``TEXT_HOLD_SECONDS``.
Any other event ends the wait, sent with the text before it. A model at a human pace
leaves the loop idle between chunks, so each goes out a few idle turns after it came (a
fixed 10 ms hold made streaming text the slowest part of a chunk's way: issue 32); the end
of a message is never held back.

A client that stops reading must not make the server hold its stream without end: the
queue counts the encoded bytes it holds and refuses an event that would pass its limit,
and the connection's owner closes it (the client can reattach: the store has the rest).

A gateway holds one queue per open connection, most of them idle: the writer's wait is one
future made when it waits and dropped when it wakes, not two ``asyncio.Event``s held for
the connection's life (each with its own deque, ~1.5 KiB of an idle socket together), and
what waits is a list, taken whole by each batch.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar, cast

from gateway import wire as p
from gateway.wire import live, versions

_CURRENT = versions.Dialect.CURRENT
# The longest a later chunk waits for more, well under a display frame (16 ms); and the
# turns of the loop without a new event that end the wait: ADK takes three turns between
# two chunks of one stream.
TEXT_HOLD_SECONDS = 0.010
TEXT_QUIET_TURNS = 4

E = TypeVar("E", bound=p.Event | live.AudioOut | None)
# An event and its encoding; None (close) encodes as nothing, audio out as its binary frame.
Frame = tuple[E, bytes]


class Outgoing(Generic[E]):
    """A queue of encoded events (None: close after what is queued) read by one writer."""

    def __init__(self, limit_bytes: int | None = None) -> None:
        # Taken whole by each batch: a list, smaller than a deque while empty.
        self._items: list[Frame[E]] = []
        # Whether what is queued ends the hold on later text chunks.
        self._urgent = False
        # The writer's wait for an event, while it waits.
        self._waiter: asyncio.Future[None] | None = None
        # The message whose text has started on the client and may wait for more.
        self._showing: str | None = None
        self.limit_bytes = limit_bytes
        # The AG-UI version the client declared (``gateway.wire.versions``); the door sets it.
        self.dialect = versions.Dialect.CURRENT
        self.size = 0
        # Ended: None is queued, and nothing more is taken.
        self.ended = False

    def __len__(self) -> int:
        return len(self._items)

    def put(self, event: E) -> bool:
        """Queues the event, as the client's dialect shapes it; False, queueing nothing, if
        it would pass the byte limit."""
        if event is None:
            frames: list[Frame[E]] = [(event, b"")]
            size = 0
        elif isinstance(event, live.AudioOut):
            frames, size = [(event, event.frame)], len(event.frame)
            if self.limit_bytes is not None and self.size + size > self.limit_bytes:
                return False
        else:
            if self.dialect is _CURRENT:  # nearly every event a client is sent: as it is
                data = p.encode(event)
                frames, size = [(event, data)], len(data)
            else:
                frames = cast("list[Frame[E]]", versions.encoded(event, self.dialect))
                size = sum([len(data) for _, data in frames])
            if self.limit_bytes is not None and self.size + size > self.limit_bytes:
                return False
        self.size += size
        self._items.extend(frames)
        urgent = not (isinstance(event, p.TextMessageContent) and event.message_id == self._showing)
        self._urgent = self._urgent or urgent
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return True

    async def batch(self) -> list[Frame[E]]:
        """The frames queued, once there are some, with chunks of one message joined."""
        while not self._items:  # what woke it may have been taken (``take``) meanwhile
            await self._wait()
        if not self._urgent:
            await self._hold_text()
        return self._taken()

    def starts_text(self, event: E) -> bool:
        """Whether ``event`` is the first chunk of a message's text the client is sent (not
        a later one, which may wait for more)."""
        return isinstance(event, p.TextMessageContent) and event.message_id != self._showing

    def take(self) -> list[Frame[E]] | None:
        """What is queued, for its owner to write now instead of the reader's next batch a
        turn of the loop later; None while the reader has a batch in hand or holds text for
        more (the order would not hold, or the hold would be cut), and while a close or
        audio is queued (those go the reader's way)."""
        if self._waiter is None or not self._items:
            return None
        if any(event is None or isinstance(event, live.AudioOut) for event, _ in self._items):
            return None
        return self._taken()

    def _taken(self) -> list[Frame[E]]:
        frames = merge_text_deltas(self._items)
        self._items = []
        self.size = 0
        self._urgent = False
        last = frames[-1][0]
        self._showing = last.message_id if isinstance(last, p.TextMessageContent) else None
        return frames

    async def _wait(self) -> None:
        """Until an event is queued."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def _hold_text(self) -> None:
        """Lets later chunks of the message join the batch while they keep coming."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TEXT_HOLD_SECONDS
        quiet_turns = 0
        while not self._urgent and quiet_turns < TEXT_QUIET_TURNS and loop.time() < deadline:
            queued = len(self._items)
            await asyncio.sleep(0)
            quiet_turns = quiet_turns + 1 if len(self._items) == queued else 0

    def offer(self, event: E) -> bool:
        """Queues an event for a client that may fall behind; True if it cut the client off.

        Past the byte limit, or for an event the encoder refuses (the client could not
        follow the stream), the queue ends instead and takes nothing more.
        """
        if self.ended:
            return False
        try:
            if self.put(event):
                return False
        except Exception:
            p.unexpected(f"encoding a {type(event).__name__} event")
        self.end()
        return True

    def end(self) -> None:
        """Queues the close (None) once; nothing is taken after it."""
        if not self.ended:
            self.ended = True
            self.put(cast(E, None))

    def clear(self) -> None:
        """Drops what is queued, for a connection that closed."""
        self._items.clear()
        self.size = 0


def merge_text_deltas(frames: list[Frame[E]]) -> list[Frame[E]]:
    """Joins consecutive text chunks of one message into one event, encoded once."""
    merged: list[Frame[E]] = []
    chunks: list[tuple[p.TextMessageContent, bytes]] = []  # of one message, not yet joined

    def flush() -> None:
        if len(chunks) > 1:
            delta = "".join(chunk.delta for chunk, _ in chunks)
            # The last chunk's metadata: its number in the log stands for all of them.
            joined = p.TextMessageContent(
                message_id=chunks[0][0].message_id, delta=delta, metadata=chunks[-1][0].metadata
            )
            merged.append(cast("Frame[E]", (joined, p.encode(joined))))
        else:
            merged.extend(cast("list[Frame[E]]", chunks))
        chunks.clear()

    for event, data in frames:
        if not isinstance(event, p.TextMessageContent):
            flush()
            merged.append((event, data))
            continue
        if chunks and chunks[0][0].message_id != event.message_id:
            flush()
        chunks.append((event, data))
    flush()
    return merged
