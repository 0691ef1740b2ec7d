"""The pipe between the main process and a worker: messages cross whole and in order, those
a run's first event waits on without waiting for the end of the turn, what is not a frame
of ours closes the pipe instead of being believed, and a message too long for the peer is
refused where it is sent, the pipe going on."""

from __future__ import annotations

import asyncio
import socket

import msgspec
import pytest

from gateway.adk.workers import channel
from gateway.adk.workers.channel import Channel, ChannelClosed, FrameTooLarge
from gateway.adk.workers.messages import Cancel, FromMain, FromWorker, Hello, Yielded
from tests.support.counting import counting

pytestmark = pytest.mark.unit


async def pair() -> tuple[Channel[FromWorker], Channel[FromMain]]:
    left, right = socket.socketpair()
    main = Channel[FromWorker](*await asyncio.open_unix_connection(sock=left), FromWorker)
    worker = Channel[FromMain](*await asyncio.open_unix_connection(sock=right), FromMain)
    return main, worker


async def test_messages_cross_in_order() -> None:
    main, worker = await pair()
    worker.send(Hello(1, 42))
    worker.send(Yielded(3, b'{"id": "e"}'))
    main.send(Cancel(3))
    assert await main.receive() == Hello(1, 42)
    assert await main.receive() == Yielded(3, b'{"id": "e"}')
    assert await worker.receive() == Cancel(3)
    main.close()
    worker.close()


async def test_each_side_counts_what_it_sent_and_received_by_type_with_its_frames_bytes() -> None:
    left, right = socket.socketpair()
    counts = channel.Counts()
    main = Channel[FromWorker](*await asyncio.open_unix_connection(sock=left), FromWorker, counts)
    worker = Channel[FromMain](*await asyncio.open_unix_connection(sock=right), FromMain)
    worker.send(Yielded(3, b'{"id": "e"}'))
    worker.send(Yielded(3, b"{}"))
    main.send(Cancel(3))
    for _ in range(2):
        await main.receive()
    await worker.receive()
    frames = [
        len(msgspec.msgpack.encode(m)) + 4 for m in (Yielded(3, b'{"id": "e"}'), Yielded(3, b"{}"))
    ]
    assert counts.received == {"Yielded": [2, sum(frames)]}
    assert counts.sent == {"Cancel": [1, len(msgspec.msgpack.encode(Cancel(3))) + 4]}
    assert counts.total() == (3, sum(frames) + counts.sent["Cancel"][1])
    main.close()
    worker.close()


async def test_a_message_sent_now_is_written_at_once_after_those_queued_before_it() -> None:
    left, peer = socket.socketpair()
    peer.setblocking(False)
    main = Channel[FromWorker](*await asyncio.open_unix_connection(sock=left), FromWorker)
    main.send(Cancel(1))  # written at the end of the turn, with the rest of it
    with pytest.raises(BlockingIOError):
        peer.recv(1024)
    main.send(Cancel(2), now=True)  # a run's Start: the worker waits on nothing else
    written = peer.recv(1024)  # in the same turn
    reader = asyncio.StreamReader()
    reader.feed_data(written)
    reader.feed_eof()
    worker = Channel[FromMain](reader, main.writer, FromMain)
    assert [await worker.receive(), await worker.receive()] == [Cancel(1), Cancel(2)]
    await asyncio.sleep(0)  # the turn's own write finds nothing left to send
    with pytest.raises(BlockingIOError):
        peer.recv(1024)
    main.close()
    peer.close()


async def test_a_closed_pipe_and_a_message_of_the_wrong_side_are_closed_pipes() -> None:
    main, worker = await pair()
    worker.send(Cancel(1))  # a message the main process never receives
    with pytest.raises(ChannelClosed):
        await main.receive()
    worker.close()
    with pytest.raises(ChannelClosed):
        await main.receive()


async def test_a_frame_longer_than_any_message_is_refused_before_it_is_read() -> None:
    main, worker = await pair()
    worker.writer.write((2**31).to_bytes(4, "big") + b"x")
    with pytest.raises(ChannelClosed, match="bytes"):
        await main.receive()
    main.close()
    worker.close()


async def test_a_message_too_long_for_the_peer_is_refused_at_send_and_the_pipe_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(channel, "MAX_FRAME", 1024)
    main, worker = await pair()
    with pytest.raises(FrameTooLarge, match="Yielded"):
        worker.send(Yielded(3, b"x" * 2048))  # only the run that sent it fails
    worker.send(Yielded(4, b'{"id": "e"}'))
    assert await main.receive() == Yielded(4, b'{"id": "e"}')
    main.close()
    worker.close()


@pytest.mark.parametrize("together", [False, True], ids=["one by one", "all of a read"])
async def test_the_frames_a_turn_wrote_are_taken_with_one_read_and_a_long_one_in_pieces(
    monkeypatch: pytest.MonkeyPatch, together: bool
) -> None:
    """The frames one turn of the peer wrote arrive together: they are taken from one read
    of the pipe, not two waits each (``receive``), or all at once (``receive_all``: the main
    process's reader weighs a read's messages together); a frame longer than a read is put
    together, and comes once whole."""
    main, worker = await pair()
    reads = counting(monkeypatch, main.reader, "read")

    async def taken(count: int) -> list[FromWorker]:
        messages: list[FromWorker] = []
        while len(messages) < count:
            messages += await main.receive_all() if together else [await main.receive()]
        return messages

    sent = [Yielded(run, b'{"id": "e"}') for run in range(5)]
    for message in sent:
        worker.send(message)
    await asyncio.sleep(0)  # the turn's write
    if together:
        assert await main.receive_all() == sent
    else:
        assert [await main.receive() for _ in sent] == sent
    assert len(reads) == 1
    long = Yielded(9, b"x" * (3 * channel._READ))
    worker.send(long)
    worker.send(Yielded(10, b"{}"))
    assert await taken(2) == [long, Yielded(10, b"{}")]
    assert len(reads) > 2  # the long one took several reads
    main.close()
    worker.close()
