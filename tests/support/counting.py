"""The calls a test counts of a function the code under test calls: each one's arguments,
recorded as the call goes through to the real function unchanged.

``counting(monkeypatch, target, name)`` patches ``target.name`` (a module's function, a
class's method, an object's bound method, sync or async) for the test, and returns the list
the calls land in, oldest first, each a ``Call``. A method patched on its class is called
with its instance first (``call.args[0]``); a class method is called as its class calls it.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, NamedTuple

import pytest

__all__ = ["Call", "counting"]


class Call(NamedTuple):
    """One call: its positional and keyword arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def counting(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> list[Call]:
    """The calls of ``target.name`` from now on to the test's end, each passed through."""
    real = getattr(target, name)
    calls: list[Call] = []
    if inspect.iscoroutinefunction(real):

        @functools.wraps(real)
        async def counted_async(*args: Any, **kwargs: Any) -> Any:
            calls.append(Call(args, kwargs))
            return await real(*args, **kwargs)

        monkeypatch.setattr(target, name, counted_async)
    else:

        @functools.wraps(real)
        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(Call(args, kwargs))
            return real(*args, **kwargs)

        monkeypatch.setattr(target, name, counted)
    return calls
