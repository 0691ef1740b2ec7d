"""A run's streamed chunks cross the pipe as their text once one went whole, and the main
process's event is the one parsing ADK's JSON of the chunk gives; a chunk that differs in
anything but its text, id and time goes whole (``gateway.adk.workers.chunks``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events import Event, EventActions
from google.genai import types

from gateway.adk.workers.chunks import Sent, Whole, rebuilt
from gateway.adk.workers.messages import FromWorker, Streamed, Yielded
from gateway.store.adk_json import parse_event

pytestmark = pytest.mark.unit

# As the flagship's reply streams it: the run's metadata, author, invocation, node.
METADATA = {"agui": {"runId": "run-1", "context": {}, "clientTools": ["navigateToScreen"]}}


def chunk(text: str, **fields: Any) -> Event:
    given: dict[str, Any] = {
        "content": types.Content(parts=[types.Part(text=text)], role="model"),
        "partial": True,
        "custom_metadata": METADATA,
        "invocation_id": "e-1",
        "author": "screen_navigator",
        "actions": EventActions(),
    }
    return Event(**{**given, **fields})


def dump(event: Event) -> bytes:
    return event.model_dump_json(exclude_none=True, by_alias=True).encode()


def crossed(chunks: list[Event]) -> tuple[list[Event], list[str]]:
    """Each chunk sent as the worker sends it, through msgpack, and made into the main
    process's event as the pool makes it; and what crossed for each."""
    sent, whole = Sent(), None
    encoder, decoder = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder(FromWorker)
    made, kinds = [], []
    for event in chunks:
        message = sent.streamed(7, event) or Yielded(7, dump(event))
        message = decoder.decode(encoder.encode(message))
        kinds.append(type(message).__name__)
        if isinstance(message, Streamed):
            assert whole is not None
            made.append(rebuilt(whole, message))
        else:
            assert isinstance(message, Yielded)
            made.append(parse_event(message.event, dumped=True))
            whole = made[-1] if made[-1].partial else whole
    return made, kinds


def test_the_chunks_after_the_first_cross_as_their_text_and_are_the_events_json_gives() -> None:
    chunks = [chunk(text) for text in ("업무 ", "요청 ", "목록 ", "화면으로 ", "이동했습니다.")]
    made, kinds = crossed(chunks)
    assert kinds == ["Yielded", "Streamed", "Streamed", "Streamed", "Streamed"]
    for event, original in zip(made, chunks, strict=True):
        parsed = parse_event(dump(original))
        assert event == parsed and event.content == parsed.content
        assert event.model_fields_set == parsed.model_fields_set
        assert dump(event) == dump(original)
    # A chunk's text is a few words; ADK's JSON of it repeats the run's metadata each time.
    text_only = msgspec.msgpack.encode(Streamed(7, "화면으로 ", chunks[3].id, 1.5))
    assert len(text_only) * 4 < len(dump(chunks[3]))


@pytest.mark.parametrize(
    "different",
    [
        {"author": "another_agent"},
        {"custom_metadata": {"agui": {"runId": "run-2"}}},
        {"usage_metadata": types.GenerateContentResponseUsageMetadata(total_token_count=3)},
        {"content": types.Content(parts=[types.Part(text="생각", thought=True)], role="model")},
        {"content": types.Content(parts=[types.Part(text="a"), types.Part(text="b")])},
        {"content": types.Content(parts=[types.Part(text="역할")], role="user")},
        {"branch": "screen_navigator.sub"},
    ],
)
def test_a_chunk_that_differs_in_more_than_its_text_goes_whole(different: dict[str, Any]) -> None:
    chunks = [chunk("첫 "), chunk("둘째 ", **different), chunk("셋째")]
    made, kinds = crossed(chunks)
    assert kinds[1] == "Yielded"
    for event, original in zip(made, chunks, strict=True):
        assert event == parse_event(dump(original))
        assert dump(event) == dump(original)


@pytest.mark.parametrize(
    ("first", "then"),
    [({"n": 1}, {"n": True}), ({"a": 1, "b": [2]}, {"b": [2], "a": 1})],
)
def test_metadata_equal_in_python_but_dumped_apart_goes_whole(
    first: dict[str, Any], then: dict[str, Any]
) -> None:
    """``True == 1`` and dicts equal in another order, but JSON writes them apart: the main
    process must not rebuild a chunk from one whose metadata held the other."""
    assert first == then
    chunks = [chunk("a", custom_metadata=first), chunk("b", custom_metadata=then)]
    made, kinds = crossed(chunks)
    assert kinds == ["Yielded", "Yielded"]
    assert dump(made[1]) == dump(chunks[1])


@pytest.mark.parametrize(
    "first",
    [
        {"content": None},
        {"content": types.Content(parts=[types.Part(text="생각", thought=True)], role="model")},
        {"content": types.Content(parts=[types.Part(text="a"), types.Part(text="b")])},
    ],
)
def test_chunks_after_one_not_of_plain_text_go_whole_until_one_is(first: dict[str, Any]) -> None:
    """Only a chunk of plain text is one the next are made from: after another kind, the
    next goes whole, and those after it are made from it."""
    chunks = [chunk("", **first), chunk("둘째 "), chunk("셋째")]
    made, kinds = crossed(chunks)
    assert kinds == ["Yielded", "Yielded", "Streamed"]
    for event, original in zip(made, chunks, strict=True):
        assert dump(event) == dump(original)


def test_an_event_not_streamed_and_one_that_failed_go_whole() -> None:
    sent = Sent()
    assert sent.streamed(1, chunk("a")) is None
    assert sent.streamed(1, chunk("b", partial=None)) is None
    assert sent.streamed(1, chunk("c"), whole_anyway=True) is None
    assert isinstance(sent.streamed(1, chunk("d")), Streamed)


def test_a_chunk_as_its_text_after_one_not_of_plain_text_is_refused_not_made_up() -> None:
    """The main process never makes an event from a whole chunk that is not plain text
    (a worker that sent one would be at fault: its run ends, ``test_pipe_faults``)."""
    thought = chunk("", content=types.Content(parts=[types.Part(text="a"), types.Part(text="b")]))
    for whole in (chunk("", content=None), thought):
        with pytest.raises(ValueError, match="not plain text"):
            rebuilt(whole, Streamed(1, "둘째", "e-2", 2.0))


def test_the_chunks_made_from_one_whole_chunk_share_no_fields_set() -> None:
    """A reply's chunks are made from what they share with the whole one, worked out once
    (``Whole``); each event, content and part still has its own fields set, which pydantic
    adds to when a field is assigned, so one chunk's assignment shows in no other."""
    whole = Whole(parse_event(dump(chunk("첫 "))))
    made = [whole.rebuilt(Streamed(1, text, f"e-{n}", float(n))) for n, text in enumerate("ab")]
    made[0].branch = "screen_navigator.sub"
    made[0].content.role = "user"  # type: ignore[union-attr]
    made[0].content.parts[0].thought = True  # type: ignore[union-attr,index]
    assert made[1] == parse_event(dump(chunk("b", id="e-1", timestamp=1.0)))
    assert "branch" not in made[1].model_fields_set
    assert made[1].content is not None and made[1].content.parts
    assert made[1].content.role == "model" and not made[1].content.parts[0].thought
    assert "thought" not in made[1].content.parts[0].model_fields_set
