"""A model's streamed text is one event a burst, not one a chunk: the first chunk of a reply
goes out at once, later ones that keep coming go out together once the model pauses, and
nothing the run emits overtakes them."""

from __future__ import annotations

import asyncio

import pytest

from gateway import wire as p
from gateway.hub import text_bursts
from gateway.hub.text_bursts import TextBurst

pytestmark = pytest.mark.unit


def chunk(delta: str, message_id: str = "m1") -> p.TextMessageContent:
    return p.TextMessageContent(message_id=message_id, delta=delta)


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_chunks_that_keep_coming_go_out_as_one_once_the_model_pauses() -> None:
    out: list[p.TextMessageContent] = []
    burst = TextBurst(out.append)
    # The reply began: its start and first chunk went out.
    burst.emitted([p.TextMessageStart(message_id="m1", role="assistant"), chunk("Hel")])
    for delta in ("lo", ", ", "world"):
        assert burst.hold([chunk(delta)])
        await turns(2)  # a model streams a chunk every few turns
    assert out == []
    await turns(text_bursts.QUIET_TURNS + 2)
    assert [(c.message_id, c.delta) for c in out] == [("m1", "lo, world")]


async def test_a_chunk_at_a_human_pace_goes_out_a_few_turns_after_it_came() -> None:
    out: list[p.TextMessageContent] = []
    burst = TextBurst(out.append)
    burst.emitted([chunk("Hello")])
    assert burst.hold([chunk(" there")])
    await turns(text_bursts.QUIET_TURNS + 1)
    assert [c.delta for c in out] == [" there"]


async def test_a_burst_is_held_no_longer_than_the_hold() -> None:
    out: list[p.TextMessageContent] = []
    burst = TextBurst(out.append)
    burst.emitted([chunk("a")])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 0.2
    while not out and loop.time() < deadline:  # a chunk every turn: never quiet
        burst.hold([chunk("b")])
        await asyncio.sleep(0)
    assert out, "the burst went out while chunks kept coming"
    assert loop.time() < deadline


async def test_only_the_next_chunk_of_the_message_streamed_is_held() -> None:
    burst = TextBurst(lambda _: None)
    assert not burst.hold([chunk("x")]), "a reply's first chunk goes out at once"
    burst.emitted([p.TextMessageStart(message_id="m1", role="assistant"), chunk("a")])
    assert not burst.hold([chunk("x", message_id="m2")])
    assert not burst.hold([chunk("x"), p.TextMessageEnd(message_id="m1")])
    assert not burst.hold([p.TextMessageEnd(message_id="m1")])
    burst.emitted([p.ToolCallStart(tool_call_id="c1", tool_call_name="find_screen")])
    assert not burst.hold([chunk("x")])


async def test_flush_emits_what_is_held_before_anything_else_goes() -> None:
    out: list[p.TextMessageContent] = []
    burst = TextBurst(out.append)
    burst.emitted([chunk("a")])
    burst.hold([chunk("b")])
    burst.hold([chunk("c")])
    burst.flush()
    assert [c.delta for c in out] == ["bc"]
    await turns(text_bursts.QUIET_TURNS + 2)
    assert len(out) == 1, "what was flushed is not emitted again"
    burst.flush()
    assert len(out) == 1
