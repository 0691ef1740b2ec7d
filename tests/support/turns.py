"""Whether a coroutine gives the loop a turn: counted, not timed."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def without_a_turn(coroutine: Coroutine[Any, Any, T]) -> T:
    """What ``coroutine`` returns, which it must do without once giving the loop a turn
    (awaiting nothing that is not done yet)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise AssertionError("it waited for a turn of the loop")
