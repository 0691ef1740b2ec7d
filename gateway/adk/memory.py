"""What an agent remembers of a user's other threads: ADK's memory, fed at the end of each run.

ADK's ``load_memory`` and ``PreloadMemoryTool`` search the runner's memory service for the
user who is asking (``search_memory(app_name, user_id, query)``); ADK fills it only when
someone calls ``add_session_to_memory``. ``MemoryPlugin`` does so at the end of every run
(finished, paused or cancelled; not a failed one): the run's own events go to the service
with ``add_events_to_memory``, so the next run on any of that user's threads can recall
them, and never another user's, since every call is scoped by the user's id. A service
across a network is fed in the background, so a run's end never waits on it. The
warm-up's user is never remembered. A service that takes only whole sessions is given the
session as the run loaded it (its recent window, ``GATEWAY_HISTORY_WINDOW``).

``RecentMemory`` is the default service (``GATEWAY_MEMORY=memory``): in this process, lost
at a restart, bounded. Each user keeps the text of their newest events up to
``USER_BYTES``; all users together up to ``TOTAL_BYTES``, the users heard from least
recently forgotten first. A search ranks events by how many of the query's words they
share (a word of a script without spaces, such as Korean, also matches inside a longer
word, "파이썬" in "파이썬을"; a query's first ``MAX_QUERY_WORDS`` words count, so a search
costs at most that many passes over a user's ``USER_BYTES``) and returns the best
``MAX_RESULTS``, the way ADK's
``InMemoryMemoryService`` does, which keeps everything forever.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event as AdkEvent
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions import Session
from google.genai import types

from gateway.adk.hosting import first_line
from gateway.auth import WARM_UP_USER

__all__ = [
    "MAX_QUERY_WORDS",
    "MAX_RESULTS",
    "TOTAL_BYTES",
    "USER_BYTES",
    "MemoryPlugin",
    "RecentMemory",
]

log = logging.getLogger(__name__)

USER_BYTES = 256 << 10
TOTAL_BYTES = 64 << 20
MAX_RESULTS = 10
# A search looks for this many of the query's words at most (its first ones): a query is
# a user's whole message, on every model call, and each word may be sought inside texts.
MAX_QUERY_WORDS = 32

_WORD = re.compile(r"\w+")


@dataclasses.dataclass(frozen=True, slots=True)
class _Remembered:
    """One event's text. Its words are not kept: a set of them took twice the memory of the
    text itself (a string object a word), for what a search finds again in one pass."""

    event_id: str
    author: str
    text: str
    timestamp: float
    # Normalised and lower-cased, what a search reads; the text itself when they are equal.
    lowered: str

    @property
    def size(self) -> int:
        return len(self.text.encode())


@dataclasses.dataclass
class _UserMemory:
    events: collections.deque[_Remembered] = dataclasses.field(default_factory=collections.deque)
    ids: set[str] = dataclasses.field(default_factory=set)
    size: int = 0


class RecentMemory(BaseMemoryService):
    """Each user's newest events, by text, in this process (see the module docstring)."""

    def __init__(self, user_bytes: int = USER_BYTES, total_bytes: int = TOTAL_BYTES) -> None:
        self.user_bytes = user_bytes
        self.total_bytes = total_bytes
        # By (app, user), the user heard from least recently first.
        self._users: collections.OrderedDict[tuple[str, str], _UserMemory] = (
            collections.OrderedDict()
        )
        self.size = 0

    async def add_session_to_memory(self, session: Session) -> None:
        await self.add_events_to_memory(
            app_name=session.app_name, user_id=session.user_id, events=session.events
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[AdkEvent],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        key = (app_name, user_id)
        memory = self._users.pop(key, None) or _UserMemory()
        self._users[key] = memory
        for event in events:
            text = _text(event)
            if not text or event.id in memory.ids:
                continue
            lowered = _lower(text)
            remembered = _Remembered(
                event.id, event.author, text, event.timestamp, text if lowered == text else lowered
            )
            memory.events.append(remembered)
            memory.ids.add(event.id)
            memory.size += remembered.size
            self.size += remembered.size
        while memory.size > self.user_bytes:
            self._forget_oldest(memory)
        while self.size > self.total_bytes:
            oldest_key = next(iter(self._users))
            oldest = self._users[oldest_key]
            while oldest.events and self.size > self.total_bytes:
                self._forget_oldest(oldest)
            if not oldest.events:
                del self._users[oldest_key]

    def _forget_oldest(self, memory: _UserMemory) -> None:
        gone = memory.events.popleft()
        memory.ids.discard(gone.event_id)
        memory.size -= gone.size
        self.size -= gone.size

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        memory = self._users.get((app_name, user_id))
        asked = set(list(dict.fromkeys(_WORD.findall(_lower(query))))[:MAX_QUERY_WORDS])
        if memory is None or not asked:
            return SearchMemoryResponse()
        whole = {word for word in asked if word.isascii()}
        scored = [
            (score, index, remembered)
            for index, remembered in enumerate(memory.events)
            if (score := _shared(asked, whole, remembered))
        ]
        # The most words in common first; among equals, the newest.
        scored.sort(key=lambda item: (-item[0], -item[1]))
        return SearchMemoryResponse(memories=[_entry(r) for _, _, r in scored[:MAX_RESULTS]])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        memory = self._users.get((app_name, user_id))
        if memory is None or memory_id not in memory.ids:
            return
        kept = [r for r in memory.events if r.event_id != memory_id]
        gone = memory.size - sum(r.size for r in kept)
        memory.events = collections.deque(kept)
        memory.ids.discard(memory_id)
        memory.size -= gone
        self.size -= gone


def _text(event: AdkEvent) -> str:
    """What of an event is worth recalling: its words, not its thoughts, calls or results."""
    if event.partial or event.content is None:
        return ""
    return " ".join(p.text for p in event.content.parts or () if p.text and not p.thought)


def _lower(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


def _shared(asked: set[str], whole: set[str], remembered: _Remembered) -> int:
    """How many asked words the text has: a word of ``whole`` (ASCII) as a word of its own,
    any other also inside a longer word."""
    found = whole.intersection(_WORD.findall(remembered.lowered)) if whole else ()
    return len(found) + sum(1 for word in asked if word not in whole and word in remembered.lowered)


def _entry(remembered: _Remembered) -> MemoryEntry:
    return MemoryEntry(
        id=remembered.event_id,
        author=remembered.author,
        content=types.Content(
            role="user" if remembered.author == "user" else "model",
            parts=[types.Part(text=remembered.text)],
        ),
        timestamp=datetime.fromtimestamp(remembered.timestamp, UTC).isoformat(),
    )


class MemoryPlugin(BasePlugin):
    """Gives the runner's memory service each run's events when the run ends.

    A service in this process (``RecentMemory``, ADK's ``InMemoryMemoryService``) is fed
    before the run's end is sent, so the user's next run finds it. Any other may be across
    a network, and a run's end must not wait on it: it is fed in the background, at most
    ``MAX_PENDING`` runs at once (past that a run is left out, with a log line).
    """

    MAX_PENDING = 64

    def __init__(self) -> None:
        super().__init__(name="gateway_memory")
        self.pending: set[asyncio.Task[None]] = set()

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        service = invocation_context.memory_service
        session = invocation_context.session
        if service is None or session.user_id == WARM_UP_USER:
            return
        run = invocation_context.invocation_id
        events = [e for e in session.events if e.invocation_id == run]
        if isinstance(service, RecentMemory | InMemoryMemoryService):
            await _add(service, session, events, run)
        elif len(self.pending) >= self.MAX_PENDING:
            log.warning(
                "run %s not added to memory: %d runs already waiting", run, self.MAX_PENDING
            )
        else:
            task = asyncio.create_task(_add(service, session, events, run), name="memory")
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)


async def _add(
    service: BaseMemoryService, session: Session, events: list[AdkEvent], run: str
) -> None:
    try:
        try:
            await service.add_events_to_memory(
                app_name=session.app_name,
                user_id=session.user_id,
                events=events,
                session_id=session.id,
            )
        except NotImplementedError:  # a service that takes only whole sessions
            await service.add_session_to_memory(session)
    except Exception as error:  # a memory service down is not the run's failure
        log.warning(
            "run %s not added to memory (%s): %s", run, type(service).__name__, first_line(error)
        )
