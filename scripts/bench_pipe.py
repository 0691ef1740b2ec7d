"""What the main process pays to take a story's messages off a worker's pipe, and to know
its workers live, the way until session 46 and the way now.

- Taking frames: ``Channel.receive`` waited twice a frame (``readexactly`` of its length,
  then of its body); now it takes each whole frame from one read of what the pipe has.
  Timed over a flagship story's messages from its worker (the sizes and kinds the pipe
  counters gave, ``docs/multicore.md``), written one message a write (the worst case for
  the one read) and a turn's messages in one write.
- Knowing a worker lives: ``_ready_workers`` asked ``is_alive()`` of each (a ``waitpid``),
  twice a run with two workers; now a flag the loop sets from the process's sentinel.
  Timed on two real child processes.

Each way in turn, ``--rounds`` times, alternating, medians and their ratio. Timing in one
process and alternating rounds: the ratio holds on a shared machine, where the absolute
figures move with the neighbours.

    .venv/bin/python -m scripts.bench_pipe                # 15 rounds
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess

import msgspec

from gateway.adk.workers.channel import Channel, ChannelClosed
from gateway.adk.workers.messages import (
    Append,
    Audited,
    CallSent,
    Finished,
    FromWorker,
    Streamed,
    Yielded,
)
from scripts._bench import alternating, rounds_parser

# Stories a round: enough that a timer's tick is nothing.
STORIES = 200


class Before(Channel[FromWorker]):
    """The receive of session 45: two waits a frame."""

    async def receive(self) -> FromWorker:
        try:
            head = await self.reader.readexactly(4)
            body = await self.reader.readexactly(int.from_bytes(head, "big"))
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            raise ChannelClosed(str(error)) from None
        return self._decoder.decode(body)


def story() -> list[object]:
    """A flagship story's messages from its worker, in their kinds and about their sizes."""
    event = b'{"id":"e","author":"agent","content":{"parts":[{"text":"' + b"x" * 600 + b'"}]}}'
    messages: list[object] = [Append(1, call, event) for call in range(7)]
    messages += [Yielded(1, stored=True) for _ in range(5)] + [Yielded(1, event[:150])]
    messages += [Streamed(1, "이동했습니다", "e", 1.0) for _ in range(4)]
    messages += [Finished(1), Finished(2), Audited(["x"] * 20), CallSent("c")]
    return messages


async def taken(
    channel_type: type[Channel[FromWorker]], frames: list[bytes], together: bool
) -> float:
    """Seconds a story's messages take to be received, written as ``frames`` say."""
    left, right = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=left)
    channel = channel_type(reader, writer, FromWorker)
    right.setblocking(False)
    writes = [b"".join(frames)] if together else frames
    spent = 0.0
    for _ in range(STORIES):
        for data in writes:
            right.send(data)
        started = time.perf_counter()
        for _ in frames:
            await channel.receive()
        spent += time.perf_counter() - started
    writer.close()
    right.close()
    return spent / STORIES


def _sleep() -> None:
    time.sleep(600)


def asked(processes: Sequence[BaseProcess]) -> float:
    """Seconds of a story's looks at its workers (two runs, two looks each) by
    ``is_alive``: a ``waitpid`` each."""
    started = time.perf_counter()
    for _ in range(STORIES * 2):
        for _ in range(2):
            [p for p in processes if p.is_alive()]
    return (time.perf_counter() - started) / STORIES


def flagged(flags: list[bool]) -> float:
    """Seconds of the same looks by a flag each worker has."""
    started = time.perf_counter()
    for _ in range(STORIES * 2):
        for _ in range(2):
            [f for f in flags if not f]
    return (time.perf_counter() - started) / STORIES


def main() -> int:
    args = rounds_parser(__doc__).parse_args()
    encoder = msgspec.msgpack.Encoder()
    frames = [len(b).to_bytes(4, "big") + b for b in map(encoder.encode, story())]
    processes = [multiprocessing.get_context("spawn").Process(target=_sleep) for _ in range(2)]
    for process in processes:
        process.start()
    ways = {
        "b1": lambda: asyncio.run(taken(Before, frames, together=False)),
        "n1": lambda: asyncio.run(taken(Channel, frames, together=False)),
        "bt": lambda: asyncio.run(taken(Before, frames, together=True)),
        "nt": lambda: asyncio.run(taken(Channel, frames, together=True)),
        "ia": lambda: asked(processes),
        "fl": lambda: flagged([False, False]),
    }
    try:
        medians = alternating(args.rounds, ways)
    finally:
        for process in processes:
            process.kill()
            process.join()
    b1, n1, bt, nt, ia, fl = (medians[name] * 1e6 for name in ways)
    print(
        f"a flagship story's {len(frames)} messages from its worker, {sum(map(len, frames))} bytes"
    )
    print(f"medians of {args.rounds} rounds, µs a story:      until session 46      now   ratio")
    print(f"  received, one message a write      {b1:14.1f} {n1:8.1f} {n1 / b1:6.2f}x")
    print(f"  received, all in one write         {bt:14.1f} {nt:8.1f} {nt / bt:6.2f}x")
    print(f"  two workers looked at, 4 times     {ia:14.1f} {fl:8.1f} {fl / ia:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
