"""What a client's free-form JSON may hold, checked at the door before anything is stored.

The typed fields of a frame are bounded by their types in ``gateway.wire``; the
free-form ones (``state``, ``forwardedProps``, tool parameters, a resume payload, a tool
result's JSON) could hold anything. A value nested ~200 deep passes msgspec but cannot be
read back by ADK's pydantic ``Event``: stored, it would break its thread for good. So every
free-form value is walked once here, and a value past a bound is a VALIDATION_ERROR naming
where it is, in the path notation msgspec uses (``$.state.a[0]``). Numbers need no walk:
msgspec refuses integers outside 64 bits and floats that do not fit a double.
"""

from __future__ import annotations

from typing import Any

import msgspec

# Deep enough for any JSON Schema or shared state a client sends, far below pydantic's limit.
MAX_DEPTH = 32
# Entries of one object or array: a frame of a megabyte holds far fewer useful ones.
MAX_ITEMS = 10_000
MAX_KEY_LENGTH = 256


class OutOfBounds(Exception):
    """A value past a bound; ``where`` is its path, ``problem`` says which bound."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self._path: list[str] = []

    def within(self, step: str) -> OutOfBounds:
        self._path.append(step)
        return self

    def at(self, root: str) -> str:
        return f"`{root}{''.join(reversed(self._path))}` {self.problem}"


def check(value: Any, depth: int = 0, *, max_depth: int | None = None) -> None:
    """Raises OutOfBounds if ``value`` nests deeper or holds more than the bounds allow;
    ``max_depth``: a tighter depth than ``MAX_DEPTH``, for a value with a purpose."""
    if max_depth is None:
        max_depth = MAX_DEPTH  # read now, not at import: a test may lift the bound
    if isinstance(value, dict):
        _check_size(value, depth, max_depth)
        for key, item in value.items():
            if len(key) > MAX_KEY_LENGTH:
                raise OutOfBounds(f"has a key of {len(key)} characters; at most {MAX_KEY_LENGTH}")
            if isinstance(item, dict | list):
                try:
                    check(item, depth + 1, max_depth=max_depth)
                except OutOfBounds as bad:
                    raise bad.within(f".{key}") from None
    elif isinstance(value, list):
        _check_size(value, depth, max_depth)
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                try:
                    check(item, depth + 1, max_depth=max_depth)
                except OutOfBounds as bad:
                    raise bad.within(f"[{index}]") from None


def _check_size(value: dict[str, Any] | list[Any], depth: int, max_depth: int) -> None:
    if depth >= max_depth:
        raise OutOfBounds(f"is nested more than {max_depth} levels deep")
    if len(value) > MAX_ITEMS:
        raise OutOfBounds(f"has {len(value)} entries; at most {MAX_ITEMS}")


_any = msgspec.json.Decoder()


def parse_json(text: str) -> Any:
    """``text`` as JSON within the bounds; ValueError if it is not JSON, OutOfBounds if too big.

    A nesting too deep for the decoder itself is out of bounds too, never a RecursionError.
    """
    try:
        value = _any.decode(text)
    except RecursionError:
        raise OutOfBounds(f"is nested more than {MAX_DEPTH} levels deep") from None
    except msgspec.ValidationError as exc:  # a number out of range
        raise OutOfBounds(f"holds a value JSON cannot carry here ({exc})") from None
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    check(value)
    return value
