"""A server tool's result that is not JSON text (bytes, an image part, a file, a very large
value, a value JSON cannot hold) reaches the client as AG-UI 1.0 content parts or a bounded
preview, the same live and in snapshots, and never as a crash."""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.genai import types

from gateway.translate.tool_results import MAX_INLINE_BYTES, MAX_TEXT_BYTES
from tests.conftest import running_gateway
from tests.doors.test_sse_and_ping import post_run
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.speakers import Speaker, call, of_type, say

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


def raw_bytes() -> bytes:
    """Returns a file's bytes."""
    return PNG


def chart() -> types.Part:
    """Draws a chart."""
    return types.Part.from_bytes(data=PNG, mime_type="image/png")


def report() -> dict[str, Any]:
    """Writes a report, with its PDF kept elsewhere."""
    return {
        "title": "Q3",
        "pdf": types.Part.from_uri(
            file_uri="https://files.example/q3.pdf", mime_type="application/pdf"
        ),
    }


def poster() -> types.Part:
    """Returns an image too large to show inline."""
    return types.Part.from_bytes(data=b"\x00" * (MAX_INLINE_BYTES + 1), mime_type="image/png")


def dump() -> str:
    """Returns a very large value."""
    return "가" * MAX_TEXT_BYTES  # three bytes each in UTF-8


def odd() -> dict[str, Any]:
    """Returns values JSON cannot hold."""
    return {"when": datetime.datetime(2024, 5, 1, 9, 30), "tags": {"x"}}


def agent(tool: Any) -> LlmAgent:
    return LlmAgent(
        name="tools",
        model=Speaker(turns=[[call(tool.__name__)], [say("done")]], cycle=True),
        tools=[tool],
    )


def data_part(kind: str, mime_type: str, data: bytes) -> dict[str, Any]:
    source = {"type": "data", "value": base64.b64encode(data).decode(), "mimeType": mime_type}
    return {"type": kind, "source": source}


CASES: list[tuple[Any, Any]] = [
    (
        raw_bytes,
        [
            {"type": "text", "text": '{"result":"<70 bytes: part 1>"}'},
            data_part("document", "application/octet-stream", PNG),
        ],
    ),
    (chart, [data_part("image", "image/png", PNG)]),
    (
        report,
        [
            {"type": "text", "text": '{"title":"Q3"}'},
            {
                "type": "document",
                "source": {
                    "type": "url",
                    "value": "https://files.example/q3.pdf",
                    "mimeType": "application/pdf",
                },
            },
        ],
    ),
    (
        poster,
        [
            {
                "type": "text",
                "text": f"[image/png, {MAX_INLINE_BYTES + 1} bytes, not shown here:"
                f" a result carries at most {MAX_INLINE_BYTES} bytes inline;"
                " the model got it whole]",
            }
        ],
    ),
    (odd, '{"when":"2024-05-01 09:30:00","tags":"{\'x\'}"}'),
]


@pytest.mark.parametrize(("tool", "shown"), CASES, ids=[c[0].__name__ for c in CASES])
async def test_a_result_json_cannot_carry_reaches_the_client_as_parts(
    tool: Any, shown: Any
) -> None:
    assert len(PNG) == 70
    thread = new_id("t")
    async with running_gateway(agent=agent(tool)) as gateway:
        async with gateway.socket() as ws:
            events = await ws.run(user_input(thread, "go", tools=[]))
            [result] = of_type(events, "TOOL_CALL_RESULT")
            assert result["content"] == shown
            assert text_of(events) == "done"
            await ws.send({"type": "reattach", "threadId": thread})
            messages = (await ws.until_end())[1]["messages"]
            [stored] = [m for m in messages if m["role"] == "tool"]
            assert stored["content"] == shown and stored["id"] == result["messageId"]
        status, _, events, _ = await post_run(gateway, user_input(new_id("t"), "go", tools=[]))
        assert status == 200 and outcome(events)["type"] == "success"
        assert of_type(events, "TOOL_CALL_RESULT")[0]["content"] == shown


async def test_a_very_large_result_is_shown_as_a_bounded_preview() -> None:
    async with running_gateway(agent=agent(dump)) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "go", tools=[]))
    [result] = of_type(events, "TOOL_CALL_RESULT")
    content = result["content"]
    whole = json.dumps({"result": "가" * MAX_TEXT_BYTES}, ensure_ascii=False, separators=(",", ":"))
    preview, note = content.rsplit("\n", 1)
    assert whole.startswith(preview) and len(preview.encode()) <= MAX_TEXT_BYTES
    left_out = len(whole.encode()) - len(preview.encode())
    assert note == f"[… {left_out} more bytes not shown here; the model got the whole result]"
    assert text_of(events) == "done"
