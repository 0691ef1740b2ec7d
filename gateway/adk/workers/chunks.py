"""A run's streamed chunks across the pipe: the text, not ADK's JSON of the whole event.

A streamed chunk is a partial ADK event that differs from the run's previous one only by
its text (and, from ADK, maybe its id and time): its run's metadata, author, invocation,
actions and node come again with every chunk. Sent as ADK's JSON, a flagship reply's chunk
was ~680 bytes for a few words, dumped in the worker (pydantic) and parsed back in the
main process (py-spy at 200 paced users with workers: 1.8% of the main process's thread,
0.8% of a worker's).

So a run's first chunk goes whole (``Yielded``, ADK's JSON), and each next one that is
that chunk but for its text, id and time goes as ``Streamed`` (those three): ``Sent`` in
the worker decides, comparing the event with the last one it sent whole; ``Whole`` in the
main process makes the event from the last one it parsed, a shallow copy with those three
replaced (what pydantic's ``model_copy`` makes, without its generic copies: nothing
validated, the unchanged values shared, which nothing changes: a streamed event is
translated, never stored). The event is equal to what parsing the chunk's JSON gives
(``tests/adk/workers/test_chunks.py``). A chunk that differs in anything else (a
thought, a function call, usage, grounding, another author) goes whole, and becomes the one
the next are compared with; so does one whose text is not one plain text part.
"""

from __future__ import annotations

from itertools import compress
from operator import is_not
from typing import Any

import pydantic
from google.adk.events import Event
from google.genai import types

from gateway.adk.workers.messages import Streamed

__all__ = ["Sent", "Whole", "rebuilt"]

_set = object.__setattr__

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
    values = [*part.__dict__.values()]
    if values.count(None) != len(values) - 1:  # counted in C: the text alone is not None
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
        if list(mine) != list(its):  # in the same order, so the values below pair up
            return False
        # ADK makes each chunk a shallow copy of one event (``model_copy``): most values are
        # the very objects of the last, found in C; only the others are compared here.
        differing = compress(mine, map(is_not, mine.values(), its.values()))
        return all(name in OWN or _same(mine[name], its[name]) for name in differing)


def rebuilt(whole: Event, chunk: Streamed) -> Event:
    """The chunk's event: the last whole one with the chunk's text, id and time."""
    return Whole(whole).rebuilt(chunk)


class Whole:
    """The main process's side, one a run: the last chunk parsed whole, and what the chunks
    made from it share (each model's class, values and fields set, worked out at the first
    chunk made, not again for each: a reply streams dozens)."""

    __slots__ = ("_made", "event")

    def __init__(self, event: Event) -> None:
        self.event = event
        self._made: tuple[_Made, _Made, _Made] | None = None

    def rebuilt(self, chunk: Streamed) -> Event:
        """The chunk's event: the whole one with the chunk's text, id and time."""
        if (made := self._made) is None:
            made = self._made = _templates(self.event)
        as_event, as_content, as_part = made
        part = as_part.made({"text": chunk.text})
        content = as_content.made({"parts": [part]})
        event: Event = as_event.made(
            {"content": content, "id": chunk.id, "timestamp": chunk.timestamp}
        )
        return event


def _templates(whole: Event) -> tuple[_Made, _Made, _Made]:
    content = whole.content
    if content is None or not content.parts or len(content.parts) != 1:
        # The worker sends Streamed after a chunk of plain text only.
        raise ValueError("a chunk came as its text after one that was not plain text")
    return (
        _Made(whole, ("content", "id", "timestamp")),
        _Made(content, ("parts",)),
        _Made(content.parts[0], ("text",)),
    )


class _Made:
    """Copies of one model with ``own`` fields replaced: ``model.model_copy(update=...)``
    for a model with no extra and no private values, without its generic copies (three
    times the parse of the chunk's JSON, timed): what pydantic's own ``model_construct``
    sets on an object."""

    __slots__ = ("_cls", "_fields_set", "_model", "_values")

    def __init__(self, model: pydantic.BaseModel, own: tuple[str, ...]) -> None:
        plain = not model.__pydantic_extra__ and not model.__pydantic_private__
        self._model = None if plain else model
        self._cls = model.__class__
        self._values = model.__dict__
        self._fields_set = model.__pydantic_fields_set__ | set(own)

    def made(self, values: dict[str, Any]) -> Any:
        if self._model is not None:
            return self._model.model_copy(update=values)
        made = self._cls.__new__(self._cls)
        _set(made, "__dict__", {**self._values, **values})
        # Its own set: pydantic adds to it when a field is assigned.
        _set(made, "__pydantic_fields_set__", set(self._fields_set))
        _set(made, "__pydantic_extra__", None)
        _set(made, "__pydantic_private__", None)
        return made
