"""One thread as a file a person keeps: JSON for programs, Markdown for people.

The JSON is the thread's summary and its AG-UI messages as /history gives them, with the
time of the export. The Markdown is the title, then each user and assistant message under
who said it, a tool call as a quoted line with its arguments, and a tool's result quoted
under it; reasoning and activity messages are left out (they are not the conversation).
Nothing here reads the store: the door hands over what the hub read.
"""

from __future__ import annotations

import time
import urllib.parse
from typing import Any

import msgspec

from gateway.wire import threads as t

# A tool call's arguments and a tool result are shown up to this many characters.
SHOWN_CHARS = 500

_SPEAKERS = {"user": "User", "assistant": "Assistant"}


def as_json(summary: t.ThreadSummary, messages: list[dict[str, Any]]) -> bytes:
    return msgspec.json.encode(
        {"thread": summary, "messages": messages, "exportedAt": t.iso(time.time())}
    )


def as_markdown(summary: t.ThreadSummary, messages: list[dict[str, Any]]) -> bytes:
    lines = [f"# {summary.title or 'Untitled thread'}", ""]
    lines.append(f"Thread `{summary.thread_id}`, started {summary.created_at}.")
    for message in messages:
        role = message.get("role")
        if role in _SPEAKERS:
            text = _text(message.get("content"))
            calls = message.get("toolCalls") or ()
            if not text and not calls:
                continue
            lines += ["", f"**{_SPEAKERS[role]}**", ""]
            if text:
                lines.append(text)
            for call in calls:
                function = call.get("function", {})
                arguments = _shown(str(function.get("arguments", "")))
                lines.append(f"> tool `{function.get('name', '?')}`({arguments})")
        elif role == "tool":
            lines += ["", f"> result: {_shown(_text(message.get('content')))}"]
    return ("\n".join(lines) + "\n").encode()


def disposition(thread_id: str, extension: str) -> tuple[bytes, bytes]:
    """The ``Content-Disposition`` of a thread's export: a download named after it, the
    name in plain ASCII and exactly in ``filename*`` (RFC 6266)."""
    name = f"thread-{thread_id}.{extension}"
    plain = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    exact = urllib.parse.quote(name, safe="")
    value = f"attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}"
    return b"content-disposition", value.encode("ascii")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _shown(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SHOWN_CHARS else line[: SHOWN_CHARS - 1] + "…"
