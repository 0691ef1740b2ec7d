"""A run's credit window: a worker runs at most ``WINDOW`` events ahead of the hub.

In one process the hub pulls ADK's events one by one: while it has not taken an event,
ADK does not make the next. Across the pipe a worker would go on producing while the main
process, busy, had not taken what it was sent, and those events (parsed, each an ADK
object) would pile up there without bound. So the worker holds credit for each run:
``WINDOW`` events at the start, one spent per event sent (``Window.spend`` waits when none
is left), and the main process gives back what the hub took, ``GRANT`` at a time
(``Taken``), in one ``Credit`` message. A run's events waiting in the main process are
at most ``WINDOW``; a hub that keeps up never makes a worker wait, and the credit costs
one small message per ``GRANT`` events.
"""

from __future__ import annotations

import asyncio

__all__ = ["GRANT", "WINDOW", "Taken", "Window"]

# Events of a run the main process may hold that the hub has not taken yet.
WINDOW = 32
# Taken events the main process gives back at once: half the window, so a worker whose
# hub keeps up has credit again before it runs out.
GRANT = WINDOW // 2


class Window:
    """The worker's side: the credit one run has left."""

    def __init__(self) -> None:
        self.left = WINDOW
        self._granted = asyncio.Event()

    async def spend(self) -> None:
        """Takes one event's credit, waiting for the main process to give some back when
        none is left."""
        while self.left <= 0:
            self._granted.clear()
            await self._granted.wait()
        self.left -= 1

    def grant(self, events: int) -> None:
        self.left += events
        self._granted.set()


class Taken:
    """The main process's side: counts the events the hub took of one run."""

    def __init__(self) -> None:
        self._since = 0

    def took(self) -> int:
        """Counts one; the credit to give back now (``GRANT``), or 0 until there is that
        much."""
        self._since += 1
        if self._since < GRANT:
            return 0
        self._since = 0
        return GRANT
