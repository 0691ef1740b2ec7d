"""A thread's watcher as the hub sees one (``gateway.hub.threads.Subscriber``), keeping what
it is sent, and a frame of a thread's log made from an event: for tests that drive the
hub's log replays and joins without a connection."""

from __future__ import annotations

import dataclasses

from gateway import wire as p
from gateway.hub import eventlog
from gateway.store.frames import LoggedFrame


@dataclasses.dataclass(eq=False)
class Watcher:
    client: str | None = None
    events: list[p.Event] = dataclasses.field(default_factory=list)

    def deliver(self, event: p.Event) -> None:
        self.events.append(event)


def logged(seq: int, event: p.Event, only_for: str | None = None) -> LoggedFrame:
    """The frame numbered ``seq`` that logs ``event``."""
    return eventlog.frame(eventlog.numbered(event, seq), only_for=only_for, not_for=None)
