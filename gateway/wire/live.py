"""Voice on /ws: the live turn's control frames, its binary audio frames, its notices.

The contract is ``docs/voice.md``. A live turn opens with ``{"type": "liveStart"}`` and
ends with ``{"type": "liveStop"}`` (control frames, beside ``cancel`` and ``reattach``).
Audio goes both ways as binary WebSocket frames, never as JSON: a 4-byte header (kind,
header version, the agent's turn as a big-endian uint16) and raw PCM s16le mono, 16 kHz up
and 24 kHz down. The turn number in audio out is what barge-in names: the client drops
what it buffered of the turn ``gateway.live.interrupted`` names, and nothing else.

Decoding an audio-in frame checks all of it and gives back the PCM without a copy; every
refusal is a VALIDATION_ERROR with a sentence, as for any frame.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from gateway.wire.errors import ErrorCode, GatewayError
from gateway.wire.events import Custom, Interrupt
from gateway.wire.upstream import LiveResume, LiveStart, LiveStop, LiveToolResult

__all__ = ["LiveResume", "LiveStart", "LiveStop", "LiveToolResult"]

AUDIO_IN, AUDIO_OUT = 0x01, 0x02
HEADER_VERSION = 0x01
HEADER_BYTES = 4
_HEADER = struct.Struct(">BBH")

INPUT_RATE, OUTPUT_RATE = 16_000, 24_000
# One second of audio in at most per frame: a client sends 20-100 ms chunks.
MAX_CHUNK_BYTES = INPUT_RATE * 2

STARTED, INTERRUPTED = "gateway.live.started", "gateway.live.interrupted"
RESUMED = "gateway.live.resumed"
APPROVAL = "gateway.live.approval"
# How a reply the person spoke over ended, as its message's ``metadata.ended`` shows it
# (beside a typed run's "stopped", "failed" and "interrupted").
BARGED_IN = "bargedIn"
# Where a stored interruption names the reply it cut off, in its ``custom_metadata["agui"]``.
CUT_OFF_KEY = "cutOff"


class AudioOut:
    """A chunk of the agent's speech on its way to the client that speaks with it: the
    binary frame as sent, built once."""

    __slots__ = ("frame", "turn")

    def __init__(self, turn: int, pcm: bytes) -> None:
        self.turn = turn
        self.frame = _HEADER.pack(AUDIO_OUT, HEADER_VERSION, turn & 0xFFFF) + pcm

    def __len__(self) -> int:
        return len(self.frame)


def is_audio(frame: bytes) -> bool:
    """Whether a binary frame is one of these (its first byte a kind, 0x00-0x08), not JSON:
    no JSON text starts with such a byte."""
    return bool(frame) and frame[0] < 0x09


def audio_in(frame: bytes) -> memoryview:
    """The PCM of an audio-in frame, or VALIDATION_ERROR saying what is wrong with it."""
    if len(frame) < HEADER_BYTES:
        raise _bad(f"it has {len(frame)} bytes, fewer than the {HEADER_BYTES}-byte header")
    kind, version, _ = _HEADER.unpack_from(frame)
    if kind != AUDIO_IN:
        raise _bad(f"its kind is {kind:#04x}; a client sends audio in ({AUDIO_IN:#04x}) only")
    if version != HEADER_VERSION:
        raise _bad(f"its header version is {version}; this gateway reads {HEADER_VERSION}")
    size = len(frame) - HEADER_BYTES
    if size % 2:
        raise _bad(f"its {size} bytes of PCM are not whole 16-bit samples")
    if size > MAX_CHUNK_BYTES:
        raise _bad(f"it holds {size} bytes of PCM; a frame may hold at most {MAX_CHUNK_BYTES}")
    return memoryview(frame)[HEADER_BYTES:]


def audio_out_turn(frame: bytes) -> int:
    """The agent turn an audio-out frame belongs to (for clients and tests)."""
    kind, _, turn = _HEADER.unpack_from(frame)
    assert kind == AUDIO_OUT, f"not an audio-out frame: kind {kind:#04x}"
    return int(turn)


def audio_in_frame(pcm: bytes) -> bytes:
    """An audio-in frame as a client sends it (for clients and tests)."""
    return _HEADER.pack(AUDIO_IN, HEADER_VERSION, 0) + pcm


def started() -> Custom:
    """Tells the client the formats of the live turn it opened."""
    value: dict[str, Any] = {
        "input": _pcm(INPUT_RATE),
        "output": _pcm(OUTPUT_RATE),
        "maxChunkBytes": MAX_CHUNK_BYTES,
    }
    return Custom(name=STARTED, value=value)


def resumed(turn: int) -> Custom:
    """Tells a client that reattached to its live turn that it speaks and hears again: the
    formats, as ``started`` says them, and the agent's turn its speech goes on in."""
    value = dict(started().value)
    value["turn"] = turn & 0xFFFF
    return Custom(name=RESUMED, value=value)


def interrupted(turn: int, message_id: str | None) -> Custom:
    """The person spoke over the agent's turn ``turn``: the client drops its audio."""
    return Custom(name=INTERRUPTED, value={"turn": turn & 0xFFFF, "messageId": message_id})


def approval(interrupt: Interrupt) -> Custom:
    """A tool of the live turn waits for the person's approval: the interrupt a typed run
    would end with, asked now; ``liveResume`` answers it."""
    return Custom(name=APPROVAL, value=msgspec.to_builtins(interrupt))


def _pcm(rate: int) -> dict[str, Any]:
    return {"encoding": "pcm_s16le", "sampleRate": rate, "channels": 1}


def _bad(why: str) -> GatewayError:
    return GatewayError(
        ErrorCode.VALIDATION_ERROR,
        f"Invalid audio frame: {why}. See docs/voice.md for the 4-byte header and the format.",
    )


def no_live_turn() -> GatewayError:
    return GatewayError(
        ErrorCode.VALIDATION_ERROR,
        "A binary frame arrived with no live turn open on this connection; send "
        '{"type": "liveStart"} first (docs/voice.md).',
    )
