"""A live turn's events, driven with no server and no model: transcripts as text messages
one open at a time, audio numbered by turn, barge-in naming the turn cut off, stored
transcripts read back under the ids they streamed with, a reply spoken over marked so."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events import Event
from google.genai import types

from gateway.context import stamp
from gateway.translate.history import event_messages, messages_snapshot
from gateway.translate.live import LiveTranslator
from gateway.translate.translator import RunTranslator
from gateway.wire import live

pytestmark = pytest.mark.unit


def _event(author: str = "voice", *, message_id: str | None = None, **fields: Any) -> Event:
    event = Event(author=author, invocation_id="inv", **fields)
    if message_id is not None:
        stamp(event, "messageId", message_id)
    return event


def heard(text: str, message_id: str, finished: bool = False) -> Event:
    return _event(
        "user",
        message_id=message_id,
        partial=not finished,
        input_transcription=types.Transcription(text=text, finished=finished),
    )


def said(text: str, message_id: str, finished: bool = False) -> Event:
    return _event(
        message_id=message_id,
        partial=not finished,
        output_transcription=types.Transcription(text=text, finished=finished),
    )


def speech(pcm: bytes) -> Event:
    blob = types.Blob(data=pcm, mime_type="audio/pcm;rate=24000")
    return _event(content=types.Content(role="model", parts=[types.Part(inline_data=blob)]))


def _wire(out: list[Any]) -> list[Any]:
    return [
        ("audio", item.turn, item.frame[live.HEADER_BYTES :])
        if isinstance(item, live.AudioOut)
        else msgspec.to_builtins(item)
        for item in out
    ]


def translate(events: list[Event]) -> list[Any]:
    translator = LiveTranslator(RunTranslator("t", "r"))
    translator.run.start()
    out: list[Any] = []
    for event in events:
        out += translator.translate(event)
    return _wire(out + translator.close())


def test_both_sides_stream_as_text_messages_one_open_at_a_time() -> None:
    out = translate(
        [
            heard("업무 요청 ", "h1"),
            said("네", "s1"),  # the agent starts while the person's words are open
            heard("목록", "h1"),
            heard("업무 요청 목록", "h1", finished=True),
            said("네, 엽니다", "s1", finished=True),
        ]
    )
    assert out == [
        {"type": "TEXT_MESSAGE_START", "messageId": "h1", "role": "user"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "h1", "delta": "업무 요청 "},
        {"type": "TEXT_MESSAGE_END", "messageId": "h1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "assistant", "name": "voice"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "네"},
        {"type": "TEXT_MESSAGE_END", "messageId": "s1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "h1", "role": "user"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "h1", "delta": "목록"},
        {"type": "TEXT_MESSAGE_END", "messageId": "h1"},
        # Finished: only what was not streamed is sent.
        {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "assistant", "name": "voice"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": ", 엽니다"},
        {"type": "TEXT_MESSAGE_END", "messageId": "s1"},
    ]


def test_a_transcript_that_arrives_finished_is_one_whole_message() -> None:
    out = translate([heard("열어줘", "h1", finished=True)])
    assert [event["type"] for event in out] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]


def test_barge_in_ends_the_reply_and_names_its_turn() -> None:
    out = translate(
        [
            speech(b"\x01\x00"),
            said("길게 ", "s1"),
            said("길게 ", "s1", finished=True),  # ADK flushes it before the interruption
            _event(interrupted=True),
            speech(b"\x02\x00"),
            _event(turn_complete=True),
            speech(b"\x03\x00"),
        ]
    )
    assert out == [
        ("audio", 1, b"\x01\x00"),
        {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "assistant", "name": "voice"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "길게 "},
        # Marked as spoken over, as a 1.0 client merges an END's metadata into its message.
        {"type": "TEXT_MESSAGE_END", "messageId": "s1", "metadata": {"ended": live.BARGED_IN}},
        {"type": "CUSTOM", "name": live.INTERRUPTED, "value": {"turn": 1, "messageId": "s1"}},
        ("audio", 2, b"\x02\x00"),
        ("audio", 3, b"\x03\x00"),
    ]


def test_stored_transcripts_read_back_under_their_streamed_ids() -> None:
    assert event_messages(heard("열어줘", "h1", finished=True)) == [
        {"id": "h1", "role": "user", "content": "열어줘"}
    ]
    assert event_messages(said("열었습니다", "s1", finished=True)) == [
        {"id": "s1", "role": "assistant", "name": "voice", "content": "열었습니다"}
    ]
    assert event_messages(heard("열어", "h1")) == []  # a piece is never a message


def test_a_reply_spoken_over_is_marked_in_the_stored_thread() -> None:
    # ADK stores the cut-off transcript finished, then the interruption, stamped by
    # ``Transcripts`` with the id of the reply it cut off.
    interruption = _event(interrupted=True)
    stamp(interruption, live.CUT_OFF_KEY, "s1")
    stored = [
        heard("설명해줘", "h1", finished=True),
        said("길게 설명드리면", "s1", finished=True),
        interruption,
        heard("잠깐만요", "h2", finished=True),
    ]
    assert messages_snapshot(stored) == [
        {"id": "h1", "role": "user", "content": "설명해줘"},
        {
            "id": "s1",
            "role": "assistant",
            "name": "voice",
            "content": "길게 설명드리면",
            "metadata": {"ended": live.BARGED_IN},
        },
        {"id": "h2", "role": "user", "content": "잠깐만요"},
    ]
    # An interruption with nothing cut off, or whose reply a window left out, shows nothing.
    assert messages_snapshot([_event(interrupted=True)]) == []
    assert messages_snapshot(stored[2:]) == [{"id": "h2", "role": "user", "content": "잠깐만요"}]


def test_a_subscriber_joining_mid_turn_gets_the_utterances_under_way_as_they_stand() -> None:
    translator = LiveTranslator(RunTranslator("t", "r"))
    translator.run.start()
    for event in [heard("업무 요청 ", "h1"), said("네, ", "s1"), heard("목록", "h1")]:
        translator.translate(event)
    # The run's own reopen carries them: a reattach needs nothing of voice.
    assert _wire(translator.run.reopen()) == [
        {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "assistant", "name": "voice"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "네, "},
        {"type": "TEXT_MESSAGE_END", "messageId": "s1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "h1", "role": "user"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "h1", "delta": "업무 요청 목록"},
    ]
    translator.translate(heard("업무 요청 목록", "h1", finished=True))
    translator.translate(said("네, 엽니다", "s1", finished=True))
    assert translator.run.reopen() == []
