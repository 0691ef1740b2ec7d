"""What a client is shown of a server tool's result: JSON text, AG-UI 1.0 content parts for
media and bytes, and a bounded preview of what is too large to send.

The model gets a tool's result whole, as ADK stores it; a client gets a view of it that
always encodes and always fits a frame (a result bigger than a connection's send buffer,
8 MiB by default, would cut the connection off, and ``@ag-ui/client`` drops an SSE event
over 10 MB):

- ``FunctionResponse.response`` as JSON text; a pydantic model or a dataclass a tool returned
  is the JSON object the thread stores it as (so the live result equals a reload's), any
  other value JSON cannot hold is written with ``str()``, and bytes are taken out into a part
  of their own, named in the text ("<N bytes: part K>");
- media ADK took out of the result (a tool that returns a ``types.Part`` with inline data or
  a file URI) as image, audio, video or document parts: inline data as base64, a URL as a
  url source, any other URI as a provider file handle;
- text over ``MAX_TEXT_BYTES`` (64 KiB) is cut there, with a line saying how much was left
  out; inline data beyond ``MAX_INLINE_BYTES`` (256 KiB a result) is replaced by a text
  part naming what was left out.

Without media or bytes the content is the JSON string, as AG-UI's plain form.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pydantic
from google.genai import types

from gateway import wire as p

__all__ = ["MAX_INLINE_BYTES", "MAX_TEXT_BYTES", "dump_json", "result_content"]

MAX_TEXT_BYTES = 64 << 10
MAX_INLINE_BYTES = 256 << 10
# Any bytes a tool returns: nothing says what they are.
OCTET_STREAM = "application/octet-stream"


def dump_json(value: Any) -> str:
    """Compact JSON, non-ASCII kept; pydantic models and dataclasses as objects, any other
    value JSON cannot hold written with ``str()``."""
    return _ENCODER.encode(value)


def _plain(item: Any) -> Any:
    """A pydantic model or a dataclass as the JSON object the store writes it as (ADK's
    ``Event.model_dump_json(exclude_none=True, by_alias=True)``); None for anything else."""
    if isinstance(item, pydantic.BaseModel):
        # JSON mode fails on bytes that are not UTF-8 (Python mode leaves them to become
        # parts), and a serializer of the tool's own may raise anything: then it is str().
        for mode in ("json", "python"):
            try:
                return item.model_dump(mode=mode, exclude_none=True, by_alias=True)
            except Exception:
                continue
        return None
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    return None


def _plain_or_str(item: Any) -> Any:
    plain = _plain(item)
    return str(item) if plain is None else plain


# What ``json.dumps`` with these options builds at each call (a third of a small value's
# dump: a tool call's arguments, a result), built once.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain_or_str)


def result_content(response: types.FunctionResponse) -> p.Content:
    """A server tool's result as a client is shown it (see the module docstring)."""
    found: list[bytes] = []
    text = _json_taking_bytes(response.response or {}, found)
    media: list[tuple[str, bytes | None, str | None]] = [
        (OCTET_STREAM, data, None) for data in found
    ]
    for part in response.parts or ():
        if part.inline_data is not None and part.inline_data.data is not None:
            media.append((part.inline_data.mime_type or OCTET_STREAM, part.inline_data.data, None))
        elif part.file_data is not None and part.file_data.file_uri:
            media.append((part.file_data.mime_type or OCTET_STREAM, None, part.file_data.file_uri))
    text = _bounded(text)
    if not media:
        return text
    parts: list[p.ContentPart] = [] if text == "{}" else [p.TextPart(text=text)]
    budget = MAX_INLINE_BYTES
    for mime_type, data, uri in media:
        if data is not None and len(data) > budget:
            parts.append(p.TextPart(text=_left_out(mime_type, len(data))))
            continue
        if data is not None:
            budget -= len(data)
            source = {
                "type": "data",
                "value": base64.b64encode(data).decode(),
                "mimeType": mime_type,
            }
        else:
            assert uri is not None
            kind = "url" if uri.startswith(("https://", "http://")) else "file"
            source = {"type": kind, "value": uri, "mimeType": mime_type}
        parts.append(_media_part(mime_type, source))
    return parts


def _json_taking_bytes(value: Any, found: list[bytes]) -> str:
    def default(item: Any) -> Any:
        if isinstance(item, bytes | bytearray):
            found.append(bytes(item))
            return f"<{len(item)} bytes: part {len(found)}>"
        return _plain_or_str(item)

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)
    except (ValueError, RecursionError):  # a cycle, or nested deeper than JSON is written
        found.clear()
        return json.dumps(f"<a {type(value).__name__} that cannot be written as JSON>")


def _bounded(text: str) -> str:
    data = text.encode()
    if len(data) <= MAX_TEXT_BYTES:
        return text
    shown = data[:MAX_TEXT_BYTES].decode(errors="ignore")
    left_out = len(data) - len(shown.encode())
    return f"{shown}\n[… {left_out} more bytes not shown here; the model got the whole result]"


def _left_out(mime_type: str, size: int) -> str:
    return (
        f"[{mime_type}, {size} bytes, not shown here: a result carries at most"
        f" {MAX_INLINE_BYTES} bytes inline; the model got it whole]"
    )


def _media_part(mime_type: str, source: dict[str, Any]) -> p.ContentPart:
    family = mime_type.split("/", 1)[0]
    if family == "image":
        return p.ImagePart(source=source)
    if family == "audio":
        return p.AudioPart(source=source)
    if family == "video":
        return p.VideoPart(source=source)
    return p.DocumentPart(source=source)
