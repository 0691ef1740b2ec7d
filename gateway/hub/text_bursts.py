"""A run's streamed text held while the model keeps sending it: one event a burst, not a chunk.

Theory of operation. A model streams its reply in word-sized chunks, and each became a
TEXT_MESSAGE_CONTENT of its own: numbered, a frame of the thread's log, a row of the store,
a delivery of the run's outbox, an event in each watcher's send queue. On the expenses
example that was 29 of a run's 37 events, and most of what the gateway does for a run
beside ADK (issue 32). AG-UI gives a chunk's size no meaning (the send queue already joined
chunks on the wire), so the driver hands the later chunks of the message it is streaming
to a ``TextBurst``, which holds them while more keep coming, turn after turn of the event
loop, and emits them as one event once ``QUIET_TURNS`` turns bring none, or
``HOLD_SECONDS`` after the first it held. A model at a human pace leaves the loop idle
between chunks, so each goes out a few idle turns after it came; a fast one (or a busy
gateway) makes bursts, each one event.

The first chunk of a message is never held (the user sees the reply start), and nothing
overtakes what is held: whatever else the run emits, and a watcher joining it, first has
the burst emitted (``flush``). Held text is in the run's translator already, so a reply a
cancel or a failure cuts off keeps it; a crash loses it, as it loses the last chunks that
were not stored (docs/durability.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gateway import wire as p

# The turns of the loop without a new chunk that end a burst: ADK takes three turns between
# two chunks of one stream (the send queue's hold counts the same).
QUIET_TURNS = 4
# The longest a chunk is held, well under a display frame (16 ms).
HOLD_SECONDS = 0.010


class TextBurst:
    """The later chunks of one streamed message, held until the model pauses.

    ``emit`` is handed the burst as one TEXT_MESSAGE_CONTENT: by ``flush``, or by the loop
    once the burst is over.
    """

    def __init__(self, emit: Callable[[p.TextMessageContent], None]) -> None:
        self._emit = emit
        # The message whose chunk the run emitted last, if that was its last event: only
        # its next chunks are held.
        self._streaming: str | None = None
        self._held: list[p.TextMessageContent] = []
        # Chunks taken so far: a turn that took none counts towards the burst's end.
        self._taken = 0

    def emitted(self, events: list[p.Event]) -> None:
        """The run emitted ``events``: if they end with a chunk of text, its message's next
        chunks may be held."""
        last = events[-1] if events else None
        self._streaming = last.message_id if isinstance(last, p.TextMessageContent) else None

    def hold(self, events: list[p.Event]) -> bool:
        """Takes ``events`` if they are only the next chunk of the message being streamed;
        False, taking nothing, for anything else (then ``flush`` before emitting them)."""
        if len(events) != 1:
            return False
        [chunk] = events
        if not isinstance(chunk, p.TextMessageContent) or chunk.message_id != self._streaming:
            return False
        self._held.append(chunk)
        self._taken += 1
        if len(self._held) == 1:
            loop = asyncio.get_running_loop()
            deadline = time.monotonic() + HOLD_SECONDS
            loop.call_soon(self._turn, self._held, deadline, self._taken, 0)
        return True

    def flush(self) -> None:
        """Emits what is held, as one event."""
        if not self._held:
            return
        held, self._held = self._held, []
        first = held[0]
        if len(held) > 1:
            first = p.TextMessageContent(
                message_id=first.message_id,
                delta="".join([chunk.delta for chunk in held]),
                metadata=first.metadata,
            )
        self._emit(first)

    def _turn(
        self, held: list[p.TextMessageContent], deadline: float, taken: int, quiet: int
    ) -> None:
        """One turn of the loop while ``held`` is held: ends the burst, or looks again."""
        if held is not self._held:
            return  # emitted meanwhile
        quiet = quiet + 1 if self._taken == taken else 0
        if quiet >= QUIET_TURNS or time.monotonic() >= deadline:
            self.flush()
            return
        asyncio.get_running_loop().call_soon(self._turn, held, deadline, self._taken, quiet)
