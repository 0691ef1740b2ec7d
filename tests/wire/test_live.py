"""Voice's frames (docs/voice.md): the binary audio codec, and the live control frames
decoded within bounds."""

from __future__ import annotations

import json

import pytest

from gateway import wire as p
from gateway.wire import bounds, live

pytestmark = pytest.mark.unit


def test_audio_frames_round_trip_and_bad_ones_say_why() -> None:
    pcm = bytes(range(8))
    assert bytes(live.audio_in(live.audio_in_frame(pcm))) == pcm
    out = live.AudioOut(70_000, pcm)
    assert live.audio_out_turn(out.frame) == 70_000 & 0xFFFF
    assert out.frame[live.HEADER_BYTES :] == pcm
    assert live.is_audio(out.frame) and not live.is_audio(b'{"type": "cancel"}')
    for frame, why in [
        (b"\x01\x01", "fewer than the 4-byte header"),
        (out.frame, "kind is 0x02"),
        (b"\x01\x07\x00\x00", "header version is 7"),
        (live.audio_in_frame(b"\x00"), "not whole 16-bit samples"),
        (live.audio_in_frame(bytes(live.MAX_CHUNK_BYTES + 2)), "at most 32000"),
    ]:
        with pytest.raises(p.GatewayError) as refused:
            live.audio_in(frame)
        assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
        assert why in refused.value.message


def test_live_control_frames_decode_and_their_tools_are_bounded() -> None:
    start = p.decode_upstream(
        json.dumps({"type": "liveStart", "threadId": "t", "runId": "r", "tools": []})
    )
    assert isinstance(start, live.LiveStart) and start.run_id == "r"
    answer = p.decode_upstream(
        json.dumps(
            {
                "type": "liveToolResult",
                "threadId": "t",
                "message": {"id": "m", "role": "tool", "toolCallId": "c", "content": "{}"},
            }
        )
    )
    assert isinstance(answer, live.LiveToolResult) and answer.message.tool_call_id == "c"
    deep: dict[str, object] = {}
    for _ in range(bounds.MAX_DEPTH + 5):
        deep = {"d": deep}
    frame = {"type": "liveStart", "threadId": "t", "runId": "r"}
    frame["tools"] = [{"name": "x", "description": "x", "parameters": deep}]  # type: ignore[assignment]
    with pytest.raises(p.GatewayError) as refused:
        p.decode_upstream(json.dumps(frame))
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert "$.tools[0].parameters" in refused.value.message
