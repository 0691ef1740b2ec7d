"""Events the store just appended from the text they were parsed from, for the next read.

With worker processes the main process parses each event a worker appends, and stores the
text it parsed as the event's row (``SessionService.append_event(..., parsed_from=...)``).
A moment later the thread's next run (the reply to the browser's answer) reads those rows
back and parsed them again: 4 events of a flagship story, 5.5% of the main process's
samples at 200 paced users with workers (py-spy, session 43). So an append that stores
its text as the row keeps its parsed event here under that text, and a read that finds a
row holding that very text takes the event instead of parsing it: once (its session is
then the one new holder), and only while it is recent (``KEPT_CHARS`` of texts, the
oldest let go first).

The event taken is the object the appending run's session holds too. Nothing changes an
event once it is stored: the text is kept only where the row is that text (an event with
``temp:`` state is stored dumped without it, and its row never matches), and a worker's
events are only read here; the run that appended them has ended by the time the thread's
next run reads them.
"""

from __future__ import annotations

import collections

from google.adk.events import Event

__all__ = ["KEPT_CHARS", "RecentlyParsed"]

# The texts kept at most, in characters: at 200 paced users a flagship story's first run
# appends its 7 events (~8 KB) a few hundred milliseconds before the reply's read.
KEPT_CHARS = 2 << 20


class RecentlyParsed:
    """Events by the text a row holds, the newest ``limit`` characters of them."""

    def __init__(self, limit: int = KEPT_CHARS) -> None:
        self.limit = limit
        self._events: collections.OrderedDict[str, Event] = collections.OrderedDict()
        self._size = 0
        # Reads that took an event here instead of parsing it (for tests and the bench).
        self.taken = 0

    def __len__(self) -> int:
        return len(self._events)

    def keep(self, text: str, event: Event) -> None:
        """``event`` was parsed from ``text``, which its row now holds."""
        if len(text) > self.limit or text in self._events:
            return
        self._events[text] = event
        self._size += len(text)
        while self._size > self.limit:
            dropped, _ = self._events.popitem(last=False)
            self._size -= len(dropped)

    def take(self, text: str) -> Event | None:
        """The event a row holding ``text`` is, if it was kept; never twice."""
        event = self._events.pop(text, None)
        if event is not None:
            self._size -= len(text)
            self.taken += 1
        return event
