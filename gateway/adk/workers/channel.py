"""Length-prefixed msgpack frames over an asyncio stream (a Unix socket).

``send`` queues a frame without waiting for the peer; the frames queued in one turn of the
event loop go out in one write (a run's streamed events are many and small, and a write a
frame was a system call and a wake-up of the peer each). ``drain`` waits when the socket's
buffer is over its high mark, so a peer that stops reading slows its sender instead of
growing its memory.

The write at the end of a turn waits for the rest of that turn, and under load for the
next one's work too: a turn of a busy loop is 5 ms at the median and 30-40 ms at p90 (at
200 paced users). A message a run's first event waits on (its ``Start``, the first event
of its stream) is sent ``now``: written at once, with what was queued before it, so the
order holds. It costs a write a run, not one a frame. On a worker's loop, what a starting
run sends (its input, stored ahead) is written in the run's own turn, which goes first
(``gateway.adk.workers.first_turn``), not at the end of a turn in the others' order: the
main process stores the input, and the run's first text waits for that commit.

A message longer than ``MAX_FRAME`` is refused where it is sent (``FrameTooLarge``, in the
task of the run that sends it): the peer would take such a frame for a broken pipe, and
close it on every run it carries.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

import msgspec

from gateway.adk.workers.first_turn import going_first

__all__ = ["Channel", "ChannelClosed", "Counts", "FrameTooLarge"]

M = TypeVar("M")
_LENGTH = 4
# The largest frame either side accepts: a session with its window of events fits.
MAX_FRAME = 256 * 1024 * 1024
# The most bytes one read of the pipe takes (a socket's buffer holds about this much).
_READ = 256 * 1024


class ChannelClosed(Exception):
    """The peer closed the pipe, or sent what is not a frame of ours."""


class FrameTooLarge(ValueError):
    """A message longer than any frame the peer accepts: not sent."""


class Counts:
    """The messages and bytes (frames, their length prefix included) a side's channels
    sent and received, by message type: what crossing the pipe costs a story, for tests,
    the load script and ``/metrics`` (``gateway_worker_pipe_*``)."""

    def __init__(self) -> None:
        # Message type's name -> [messages, bytes].
        self.sent: dict[str, list[int]] = {}
        self.received: dict[str, list[int]] = {}

    @staticmethod
    def add(counted: dict[str, list[int]], message: object, size: int) -> None:
        kind = type(message).__name__
        if (seen := counted.get(kind)) is None:
            counted[kind] = [1, size + _LENGTH]
        else:
            seen[0] += 1
            seen[1] += size + _LENGTH

    def total(self) -> tuple[int, int]:
        """Messages and bytes, both ways."""
        both = [*self.sent.values(), *self.received.values()]
        return sum(seen[0] for seen in both), sum(seen[1] for seen in both)


class Channel(Generic[M]):
    """Sends any message; receives messages of ``incoming`` (a type or a union of them);
    counts both into ``counts``, if given."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        incoming: object,
        counts: Counts | None = None,
    ) -> None:
        self.reader, self.writer = reader, writer
        self.counts = counts
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder: msgspec.msgpack.Decoder[M] = msgspec.msgpack.Decoder(incoming)
        self._queued: list[bytes] = []
        # What was read and not yet taken, from ``_at`` on.
        self._read = bytearray()
        self._at = 0
        # A flush is due in the turn's first callbacks (``first_turn``): one is enough.
        self._flush_first = False

    def send(self, message: msgspec.Struct, *, now: bool = False) -> None:
        """Queues the message for the turn's write; ``now``: writes it and what was queued
        before it at once (above)."""
        if self.writer.is_closing():
            raise ChannelClosed("the pipe is closed")
        body = self._encoder.encode(message)
        if len(body) > MAX_FRAME:
            raise FrameTooLarge(f"a {type(message).__name__} of {len(body)} bytes")
        if self.counts is not None:
            self.counts.add(self.counts.sent, message, len(body))
        first = going_first()
        if not now and (not self._queued or (first and not self._flush_first)):
            # Scheduled in this context: a starting run's flush goes first on a worker's loop.
            asyncio.get_running_loop().call_soon(self._flush)
            self._flush_first = self._flush_first or first
        self._queued += (len(body).to_bytes(_LENGTH, "big"), body)
        if now:
            self._flush()

    def _flush(self) -> None:
        frames, self._queued = self._queued, []
        self._flush_first = False
        if frames and not self.writer.is_closing():
            self.writer.write(b"".join(frames))

    async def drain(self) -> None:
        try:
            await self.writer.drain()
        except (ConnectionError, RuntimeError) as error:
            raise ChannelClosed(str(error)) from None

    async def receive(self) -> M:
        """The next message: taken from what was read already if it holds a whole frame,
        else after reading all the pipe has (one read for the frames a turn of the peer
        wrote, not two waits a frame)."""
        while (message := self._next()) is None:
            await self._read_more()
        return message

    async def receive_all(self) -> list[M]:
        """``receive``, and with it every other message already read whole: what a read of
        the pipe brought at once (the frames of a turn of the peer, or of several), for a
        reader that weighs them together before it hands them on."""
        while (message := self._next()) is None:
            await self._read_more()
        messages = [message]
        while (message := self._next()) is not None:
            messages.append(message)
        return messages

    async def _read_more(self) -> None:
        try:
            read = await self.reader.read(_READ)
        except ConnectionError as error:
            raise ChannelClosed(str(error) or "the peer closed the pipe") from None
        if not read:
            raise ChannelClosed("the peer closed the pipe")
        if self._at:  # what was taken goes before more is added
            del self._read[: self._at]
            self._at = 0
        self._read += read

    def _next(self) -> M | None:
        """The message of the next whole frame read, if there is one."""
        at, read = self._at, self._read
        if len(read) - at < _LENGTH:
            return None
        length = int.from_bytes(read[at : at + _LENGTH], "big")
        if length > MAX_FRAME:
            raise ChannelClosed(f"a frame of {length} bytes")
        end = at + _LENGTH + length
        if len(read) < end:
            return None
        self._at = end
        try:
            # A copy of the frame (a memcpy): a view of it would pin the buffer's size.
            message = self._decoder.decode(read[at + _LENGTH : end])
        except msgspec.DecodeError as error:
            raise ChannelClosed(f"not a message: {error}") from None
        if self.counts is not None:
            self.counts.add(self.counts.received, message, length)
        return message

    def close(self) -> None:
        self._flush()
        self.writer.close()
