"""Paths into JSON values: what a script's placeholder and an A2UI data binding point at.

A path is a sequence of keys: an object's key, or an array's index written in digits. What
a path does not reach is ``MISSING`` (None is JSON's null, a value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MISSING", "pointer", "value_at"]

MISSING: Any = object()


def pointer(path: str) -> list[str]:
    """The keys of a JSON Pointer (RFC 6901); "/" and "" are the whole value."""
    return [key.replace("~1", "/").replace("~0", "~") for key in path.split("/") if key]


def value_at(value: Any, keys: Iterable[str]) -> Any:
    """The value ``keys`` reach from ``value``, or ``MISSING``."""
    for key in keys:
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return MISSING
    return value
