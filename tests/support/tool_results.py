"""Server tools whose results JSON text cannot carry (bytes, an image part, a file, an image
too large to show inline, values JSON cannot hold), each with what a client must be shown
of it (``CASES``), and ``agent``, which calls one tool and says "done"."""

from __future__ import annotations

import base64
import dataclasses
import datetime
from typing import Any

import pydantic
from google.adk.agents import LlmAgent
from google.genai import types

from gateway.translate.tool_results import MAX_INLINE_BYTES
from tests.support.speakers import Speaker, call, say

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


def odd() -> dict[str, Any]:
    """Returns values JSON cannot hold."""
    return {"when": datetime.datetime(2024, 5, 1, 9, 30), "tags": {"x"}}


class Receipt(pydantic.BaseModel):
    order_id: str = pydantic.Field(alias="orderId")
    paid_at: datetime.datetime
    note: str | None = None


def receipt() -> Receipt:
    """Returns a pydantic model: shown as the JSON the thread stores, by alias, no nulls."""
    return Receipt(orderId="A-1", paid_at=datetime.datetime(2024, 5, 1, 9, 30))


@dataclasses.dataclass
class Scan:
    name: str
    data: bytes


def scan() -> Scan:
    """Returns a dataclass holding bytes: its fields as JSON, the bytes as a part."""
    return Scan("page", PNG)


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
    (receipt, '{"result":{"orderId":"A-1","paid_at":"2024-05-01T09:30:00"}}'),
    (
        scan,
        [
            {"type": "text", "text": '{"result":{"name":"page","data":"<70 bytes: part 1>"}}'},
            data_part("document", "application/octet-stream", PNG),
        ],
    ),
]
