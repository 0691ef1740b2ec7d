"""What a reply's streamed chunks cost to cross the pipe, whole (ADK's JSON, as until session
45) and as their text after the first (``Streamed``, ``gateway/adk/workers/chunks.py``), on
each side: the worker's (dump or compare, encode) and the main process's (decode, then
parse or rebuild).

Runs the flagship story once on a gateway with two worker processes
(``scripts/bench_crossing.py``'s recording) for the very chunks its reply streams, then
does their crossing each way in turn, ``--rounds`` times, alternating, and prints the
medians and their ratio. Timing in one process, the same chunks and alternating rounds:
the ratio holds on a shared machine, where the absolute figures move with the neighbours.
Each round first checks that both ways make the same events.

The main process's rebuild is also timed the way until session 49, each chunk's event,
content and part copied with their fields sets worked out again (``copied_each``), against
now, what a reply's chunks share worked out once from the whole chunk (``Whole``).

    .venv/bin/python -m scripts.bench_chunks                # 15 rounds
    .venv/bin/python -m scripts.bench_chunks --rounds 5
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import pydantic
from google.adk.events import Event

from gateway.adk.workers.chunks import Sent, Whole
from gateway.adk.workers.messages import FromWorker, Streamed, Yielded
from gateway.store import adk_json
from scripts._bench import alternating, rounds_parser, timing
from scripts.bench_crossing import recorded_story

# A reply's crossing done this many times a round: enough that a timer's tick is nothing.
REPEATS = 200

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(FromWorker)


def _dump(event: Event) -> bytes:
    return event.model_dump_json(exclude_none=True, by_alias=True).encode()


def whole_sent(chunks: list[Event]) -> list[bytes]:
    """The worker's side until session 45: each chunk dumped, as its own frame."""
    return [_encoder.encode(Yielded(1, _dump(event))) for event in chunks]


def text_sent(chunks: list[Event]) -> list[bytes]:
    """The worker's side now: a chunk like the last whole one as its text."""
    sent = Sent()
    return [
        _encoder.encode(sent.streamed(1, event) or Yielded(1, _dump(event))) for event in chunks
    ]


def taken(frames: list[bytes], *, each: bool = False) -> list[Event]:
    """The main process's side, either way: each frame decoded, then parsed or rebuilt
    (``each``: the way until session 49)."""
    events: list[Event] = []
    whole: Whole | None = None
    for frame in frames:
        message = _decoder.decode(frame)
        if isinstance(message, Streamed):
            assert whole is not None
            made = copied_each(whole.event, message) if each else whole.rebuilt(message)
            events.append(made)
        else:
            assert isinstance(message, Yielded)
            events.append(adk_json.parse_event(message.event, dumped=True))
            whole = Whole(events[-1]) if events[-1].partial else whole
    return events


def copied_each(whole: Event, chunk: Streamed) -> Event:
    """The chunk's event as the main process made it until session 49."""
    assert whole.content is not None and whole.content.parts
    part = _copied(whole.content.parts[0], {"text": chunk.text})
    content = _copied(whole.content, {"parts": [part]})
    return _copied(whole, {"content": content, "id": chunk.id, "timestamp": chunk.timestamp})


Model = TypeVar("Model", bound=pydantic.BaseModel)


def _copied(model: Model, values: dict[str, Any]) -> Model:
    if model.__pydantic_extra__ or model.__pydantic_private__:
        return model.model_copy(update=values)
    made = model.__class__.__new__(model.__class__)
    setattr_ = object.__setattr__
    setattr_(made, "__dict__", {**model.__dict__, **values})
    setattr_(made, "__pydantic_fields_set__", model.__pydantic_fields_set__ | values.keys())
    setattr_(made, "__pydantic_extra__", None)
    setattr_(made, "__pydantic_private__", None)
    assert isinstance(made, pydantic.BaseModel)
    return made


def main() -> int:
    args = rounds_parser(__doc__).parse_args()
    story = asyncio.run(recorded_story())
    # As the worker had them: ADK makes each chunk of a reply a shallow copy of one event
    # with the model's response in it (``finalize_model_response_event``).
    parsed = [adk_json.parse_event(text) for text in story.chunks]
    chunks = [
        parsed[0].model_copy(update={"content": chunk.content, "id": chunk.id}) for chunk in parsed
    ]
    whole, text = whole_sent(chunks), text_sent(chunks)
    print(
        f"the flagship's reply: {len(chunks)} chunks, {sum(map(len, whole))} bytes whole,"
        f" {sum(map(len, text))} as their text after the first"
    )

    def same() -> None:
        assert taken(whole_sent(chunks)) == taken(text_sent(chunks)) == chunks
        assert taken(text, each=True) == chunks

    ways: dict[str, Callable[[], object]] = {
        "ws": lambda: whole_sent(chunks),
        "wm": lambda: taken(whole),
        "ts": lambda: text_sent(chunks),
        "tm": lambda: taken(text),
        "te": lambda: taken(text, each=True),
    }
    medians = alternating(args.rounds, timing(ways, REPEATS), same)
    ws, wm, ts, tm, te = (medians[name] * 1e6 for name in ways)
    print(f"medians of {args.rounds} rounds, µs a reply:   worker   main process")
    print(f"  whole (until session 45)          {ws:8.1f} {wm:14.1f}")
    print(f"  as their text after the first     {ts:8.1f} {tm:14.1f}")
    print(f"  ratio                             {ts / ws:7.2f}x {tm / wm:13.2f}x")
    print(f"  main process, rebuilt chunk by chunk (until session 49) {te:8.1f}")
    print(f"  main process, from what they share (now)                {tm:8.1f} ({tm / te:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
