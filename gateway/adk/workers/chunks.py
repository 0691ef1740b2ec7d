"""A run's streamed chunks across the pipe: the text, not ADK's JSON of the whole event.

A streamed chunk is a partial ADK event that differs from the run's previous one only by
its text (and, from ADK, maybe its id and time): its run's metadata, author, invocation,
actions and node come again with every chunk. Sent as ADK's JSON, a flagship reply's chunk
was ~680 bytes for a few words, dumped in the worker (pydantic) and parsed back in the
main process (py-spy at 200 paced users with workers: 1.8% of the main process's thread,
0.8% of a worker's).

So a run's first chunk goes whole (``Yielded``, ADK's JSON), and each next one that is
that chunk but for its text, id and time goes as ``Streamed`` (those three): ``Sent`` in
the worker decides, comparing the event with the last one it sent whole; ``rebuilt`` in
the main process makes the event from the last one it parsed, a shallow copy with those
three replaced (pydantic's ``model_copy``: nothing validated, the unchanged values shared,
which nothing changes: a streamed event is translated, never stored). The event is equal
to what parsing the chunk's JSON gives (``tests/adk/workers/test_chunks.py``). A chunk
that differs in anything else (a thought, a function call, usage, grounding, another
author) goes whole, and becomes the one the next are compared with; so does one whose
text is not one plain text part.
"""

from __future__ import annotations

from typing import Any

import pydantic
from google.adk.events import Event
from google.genai import types

from gateway.adk.workers.messages import Streamed

__all__ = ["Sent", "rebuilt"]

# What a ``Streamed`` chunk carries of its own; every other field is the last whole one's.
OWN = frozenset({"content", "id", "timestamp"})


def _text_of(event: Event) -> str | None:
    """The event's text, if its content is one part holding text and nothing else."""
    content = event.content
    if type(content) is not types.Content or not content.parts or len(content.parts) != 1:
        return None
    part = content.parts[0]
    if type(part) is not types.Part or type(part.text) is not str:
        return None
    if any(value is not None for name, value in part.__dict__.items() if name != "text"):
        return None
    if part.__pydantic_extra__ or content.__pydantic_extra__:
        return None
    return part.text


def _same(value: Any, other: Any) -> bool:
    """Whether the two are dumped alike: equal, by type too at every depth (``True == 1``
    and ``{"a": 1, "b": 2} == {"b": 2, "a": 1}``, yet JSON writes them apart)."""
    if value is other:
        return True
    if type(value) is not type(other):
        return False
    if isinstance(value, dict):
        return tuple(value) == tuple(other) and all(_same(v, other[k]) for k, v in value.items())
    if isinstance(value, list | tuple):
        return len(value) == len(other) and all(map(_same, value, other))
    if isinstance(value, pydantic.BaseModel):
        return (
            not value.__pydantic_extra__
            and not other.__pydantic_extra__
            and _same(value.__dict__, other.__dict__)
        )
    return bool(value == other)


class Sent:
    """The worker's side, one a run: what the last chunk sent whole was."""

    def __init__(self) -> None:
        self._whole: Event | None = None

    def streamed(self, run: int, event: Event, *, whole_anyway: bool = False) -> Streamed | None:
        """The event as ``Streamed`` if it is the last whole chunk but for its text, id and
        time; else None, and it is to go whole (and is the one the next are compared
        with, if it is a chunk). ``whole_anyway``: it goes whole (it carries more)."""
        whole = self._whole
        if not event.partial:
            return None
        text = _text_of(event)
        if whole_anyway or whole is None or text is None or not self._like(whole, event):
            # Only a chunk of plain text is one the next may be made from.
            self._whole = event if text is not None else None
            return None
        return Streamed(run, text, event.id, event.timestamp)

    @staticmethod
    def _like(whole: Event, event: Event) -> bool:
        """Whether ``event`` is ``whole`` (a chunk of plain text) but for its own fields."""
        if type(event) is not type(whole) or event.__pydantic_extra__ or whole.__pydantic_extra__:
            return False
        assert whole.content is not None and event.content is not None  # both plain text
        if not _same(whole.content.role, event.content.role):
            return False
        mine, its = event.__dict__, whole.__dict__
        return tuple(mine) == tuple(its) and all(
            _same(value, its[name]) for name, value in mine.items() if name not in OWN
        )


def rebuilt(whole: Event, chunk: Streamed) -> Event:
    """The chunk's event: the last whole one with the chunk's text, id and time."""
    assert whole.content is not None  # the worker sends Streamed after a text chunk only
    content = types.Content.model_construct(
        parts=[types.Part.model_construct(text=chunk.text)], role=whole.content.role
    )
    return whole.model_copy(
        update={"content": content, "id": chunk.id, "timestamp": chunk.timestamp}
    )
