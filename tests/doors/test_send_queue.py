"""How a connection's events are batched: a reply starts at once, its later chunks share frames
while they keep coming, and a chunk at a human pace is not held."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import tracemalloc
import types
import typing

import pytest

from gateway import wire as p
from gateway.doors import send_queue
from gateway.doors.send_queue import Outgoing
from gateway.wire import versions

pytestmark = pytest.mark.unit


def events(frames: list[tuple[p.Event | None, bytes]]) -> list[p.Event | None]:
    """The events of a batch, each checked to travel as its own encoding."""
    for event, data in frames:
        assert data == (b"" if event is None else p.encode(event))
    return [event for event, _ in frames]


def chunk(text: str, message: str = "m1") -> p.TextMessageContent:
    return p.TextMessageContent(message_id=message, delta=text)


def start(message: str = "m1") -> p.TextMessageStart:
    return p.TextMessageStart(message_id=message, role="assistant")


@pytest.fixture
def long_hold(monkeypatch: pytest.MonkeyPatch) -> float:
    """A hold far longer than any test waits, so 'at once' cannot be a lucky timeout."""
    monkeypatch.setattr(send_queue, "TEXT_HOLD_SECONDS", 30.0)
    return 30.0


async def test_the_first_chunk_of_a_reply_goes_out_at_once(long_hold: float) -> None:
    queue: Outgoing[p.Event] = Outgoing()
    queue.put(start())
    queue.put(chunk("안녕"))
    batch = events(await asyncio.wait_for(queue.batch(), 1))
    assert batch == [start(), chunk("안녕")]


async def test_later_chunks_that_keep_coming_share_one_event(long_hold: float) -> None:
    queue: Outgoing[p.Event] = Outgoing()
    queue.put(chunk("안녕"))
    await queue.batch()
    queue.put(chunk("하"))

    async def model() -> None:  # a burst: a chunk every other turn of the loop
        for piece in "세요!":
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            queue.put(chunk(piece))

    writer = asyncio.create_task(queue.batch())
    await model()
    assert events(await asyncio.wait_for(writer, 1)) == [chunk("하세요!")]


async def test_a_later_chunk_at_a_human_pace_goes_out_at_once(long_hold: float) -> None:
    queue: Outgoing[p.Event] = Outgoing()
    queue.put(chunk("안녕"))
    await queue.batch()
    queue.put(chunk("하세요"))
    started = time.perf_counter()
    assert events(await asyncio.wait_for(queue.batch(), 1)) == [chunk("하세요")]
    assert time.perf_counter() - started < 0.5, "it waited for a chunk that was not coming"


async def test_a_stream_that_never_pauses_is_held_no_longer_than_the_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(send_queue, "TEXT_HOLD_SECONDS", 0.05)
    queue: Outgoing[p.Event] = Outgoing()
    queue.put(chunk("안녕"))
    await queue.batch()
    queue.put(chunk("하"))
    writer = asyncio.create_task(queue.batch())
    started = time.perf_counter()
    while not writer.done():  # a chunk every turn, for as long as the writer waits
        queue.put(chunk("."))
        await asyncio.sleep(0)
    assert time.perf_counter() - started >= 0.05
    [(joined, _)] = await writer
    assert isinstance(joined, p.TextMessageContent) and joined.delta.startswith("하.")


async def test_anything_else_ends_the_wait_with_the_text_before_it(long_hold: float) -> None:
    queue: Outgoing[p.Event] = Outgoing()
    queue.put(chunk("안녕"))
    await queue.batch()
    queue.put(chunk("하세요"))
    writer = asyncio.create_task(queue.batch())
    for _ in range(10):  # text that keeps coming holds the writer
        await asyncio.sleep(0)
        queue.put(chunk("!"))
    assert not writer.done()
    queue.put(p.TextMessageEnd(message_id="m1"))
    end = p.TextMessageEnd(message_id="m1")
    assert events(await asyncio.wait_for(writer, 1)) == [chunk("하세요!!!!!!!!!!"), end]


async def test_a_new_message_and_a_close_are_not_held(long_hold: float) -> None:
    queue: Outgoing[p.Event | None] = Outgoing()
    queue.put(chunk("one"))
    await queue.batch()
    queue.put(chunk("two", message="m2"))
    assert events(await asyncio.wait_for(queue.batch(), 1)) == [chunk("two", message="m2")]
    queue.put(chunk("more", message="m2"))
    queue.put(None)
    assert events(await asyncio.wait_for(queue.batch(), 1)) == [chunk("more", message="m2"), None]


async def test_what_is_queued_while_the_writer_waits_can_be_taken_now_in_order() -> None:
    """Its owner may write a reply's first words in the turn they come, not the writer's next
    one; the writer then waits on, and sends only what came after."""
    queue: Outgoing[p.Event | None] = Outgoing()
    writer = asyncio.create_task(queue.batch())
    await asyncio.sleep(0)  # the writer waits for events
    queue.put(start())
    assert queue.starts_text(chunk("안녕"))
    queue.put(chunk("안녕"))
    taken = queue.take()
    assert taken is not None and events(taken) == [start(), chunk("안녕")]
    assert not queue.starts_text(chunk("하세요")), "the message has begun on the client"
    await asyncio.sleep(0)
    assert not writer.done(), "woken for what was taken, it waits on"
    queue.put(p.TextMessageEnd(message_id="m1"))
    assert events(await asyncio.wait_for(writer, 1)) == [p.TextMessageEnd(message_id="m1")]


async def test_nothing_is_taken_past_the_writer_s_batch_or_its_hold(long_hold: float) -> None:
    """What the writer holds (later chunks waiting for more) or has in hand stays its own,
    and so do a close and what is queued with it."""
    queue: Outgoing[p.Event | None] = Outgoing()
    queue.put(chunk("안녕"))
    assert queue.take() is None, "no writer waits: its next batch takes it"
    await queue.batch()
    queue.put(chunk("하"))
    writer = asyncio.create_task(queue.batch())
    await asyncio.sleep(0)  # the writer holds the later chunk for more
    queue.put(chunk("세요"))
    assert queue.take() is None
    queue.put(None)
    assert events(await asyncio.wait_for(writer, 1)) == [chunk("하세요"), None]
    closing: Outgoing[p.Event | None] = Outgoing()
    waiting = asyncio.create_task(closing.batch())
    await asyncio.sleep(0)
    closing.put(chunk("bye"))
    closing.put(None)
    assert closing.take() is None
    assert events(await asyncio.wait_for(waiting, 1)) == [chunk("bye"), None]


async def test_the_queue_refuses_an_event_past_its_byte_limit_but_always_takes_a_close() -> None:
    small = chunk("x" * 10)
    queue: Outgoing[p.Event | None] = Outgoing(limit_bytes=len(p.encode(small)) * 2)
    assert queue.put(small) and queue.put(chunk("y" * 10))
    assert not queue.put(chunk("z"))
    assert queue.put(None)
    assert [e for e, _ in await queue.batch()][-1] is None
    assert queue.size == 0 and queue.put(small)


def test_many_chunks_of_one_message_join_into_one_event() -> None:
    frames = [(chunk(str(n)), p.encode(chunk(str(n)))) for n in range(1000)]
    merged = send_queue.merge_text_deltas([*frames, (start("m2"), p.encode(start("m2")))])
    assert events(merged) == [chunk("".join(str(n) for n in range(1000))), start("m2")]


async def test_an_idle_connection_s_queue_and_its_waiting_writer_hold_under_2_kib() -> None:
    """A gateway holds one per open connection, most of them idle (issue 32: ≤ 25 KiB an idle
    WebSocket, all told); two Events and a deque held for its life made 3.8 KiB."""
    count = 100
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        queues: list[Outgoing[p.Event]] = [Outgoing(1 << 20) for _ in range(count)]
        writers = [asyncio.create_task(queue.batch()) for queue in queues]
        await asyncio.sleep(0)  # each writer waits now
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    for writer in writers:
        writer.cancel()
    assert held / count < 2048, f"{held / count:.0f} bytes an idle queue"


def test_a_batch_is_queued_and_joined_without_typing_s_machinery_at_run_time() -> None:
    """A type named in a ``cast`` is a string: a subscripted generic (``list[Frame[E]]``)
    was built by ``typing`` at each merge, ~0.7 µs each, a few times a run (session 52)."""
    queue: Outgoing[p.Event] = Outgoing()
    legacy: Outgoing[p.Event] = Outgoing()
    legacy.dialect = versions.Dialect.LEGACY
    frames = [(chunk(str(n)), p.encode(chunk(str(n)))) for n in range(3)]
    typing_calls: list[str] = []

    def watch(frame: types.FrameType, event: str, _: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename == typing.__file__ and code.co_name != "cast":
            typing_calls.append(code.co_name)

    sys.setprofile(watch)
    try:
        for outgoing in (queue, legacy):
            outgoing.put(start())
            outgoing.put(chunk("안녕"))
        send_queue.merge_text_deltas([*frames, (start("m2"), p.encode(start("m2")))])
        send_queue.merge_text_deltas(frames[:1])
    finally:
        sys.setprofile(None)
    assert typing_calls == []
