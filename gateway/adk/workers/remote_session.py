"""ADK's session service in a worker: the hub's session in, every stored event out.

A worker has no store. Each run brings the session the hub loaded while holding the
thread (``Start.session``), and the runner's ``get_session`` of it is served from that
copy. A non-partial ``append_event`` is sent to the main process (``Append``), which
stores it with the real ``SessionService`` under the thread's fence; only once its
``Appended`` says the store committed does the event join the copy and ADK go on, so
"stored before yielded" holds across the pipe. A refused append raises
``RemoteAppendRefused`` into ADK, which ends the run; the main process, which saw the
store's own error, reports that one to the hub.

The one exception is a run's input (``Start.input_ahead``): the main process stores it
ahead of its commit (``SessionService.input_ahead``), and answers as soon as it is queued,
so waiting for that answer would only cost the model call two hops of the pipe. The input
joins the copy as it is sent and ADK goes on to the model; the next append waits for the
input's answer first, so a refused input still stops the run before anything else of it
is stored, and the hub sends nothing of the run before the input's commit.

A run's thread's A2UI surfaces are read the same way, when a tool of the run first returns
operations (``surfaces``: ``ReadSurfaces``, answered by ``SurfacesRead``), unless the hub
read them already and sent them with the run.

Each run's task holds its own session (``hold``, in the task: a context variable names
the run), and ADK's calls, which name a session only by its ids, are served from the
session of the run whose task makes them. Two runs of one thread can overlap here: the
hub lets go of a run that failed as soon as it reads the failure, and the thread's next
run may start in this worker while the first is still being stopped. By the thread's ids
alone, the first's release would take the second's session away (its appends refused, the
run failed with the unexpected error) and the first's last appends would be sent as the
second's.

Nothing else of a store is here: a worker's runs never list, create or delete sessions
(the hub creates a thread before its first run), and a read of a session no run brought
finds nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import itertools
import time
from collections.abc import Callable
from typing import Any

import msgspec
from google.adk.events import Event
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from typing_extensions import override

from gateway import timeline
from gateway.a2ui.surfaces import Surfaces
from gateway.adk.workers.messages import Append, Appended, ReadSurfaces, SurfacesRead

__all__ = ["RemoteAppendRefused", "RemoteReadFailed", "RemoteSessions"]


class RemoteAppendRefused(Exception):
    """The main process's store did not take an event of the run."""


class RemoteReadFailed(Exception):
    """The main process could not read what the run asked of its thread."""


# The run the current task serves, set by ``hold`` in the run's own task (and so in the
# tasks ADK starts from it).
_serving: contextvars.ContextVar[int | None] = contextvars.ContextVar("serving", default=None)


@dataclasses.dataclass
class _Held:
    run: int
    session: Session
    # The run's first append goes ahead if it is the user's: its input (``Start.input_ahead``).
    input_ahead: bool = False
    # The main process's answer to the input sent ahead, until the next append takes it.
    input_answer: asyncio.Future[Appended | SurfacesRead] | None = None
    # The event last stored, as ADK gave it: the runner yields it next.
    stored: Event | None = None
    # What the run asked of the main process and waited for, so far (``asked``), counted
    # while the timeline is on.
    asked: int = 0
    waited: float = 0.0


class RemoteSessions(BaseSessionService):
    """The sessions of a worker's runs in flight, each stored through ``send``."""

    def __init__(self) -> None:
        self._send: Callable[[msgspec.Struct], None] | None = None
        self._held: dict[int, _Held] = {}
        self._calls = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Appended | SurfacesRead]] = {}

    def connect(self, send: Callable[[msgspec.Struct], None]) -> None:
        """Appends go through ``send`` from now on."""
        self._send = send

    def hold(self, run: int, session: Session, *, input_ahead: bool = False) -> None:
        """Serves ``session`` to the run numbered ``run``, whose task calls this, until
        ``release``; with ``input_ahead``, its input goes on without waiting for its
        answer (above)."""
        self._held[run] = _Held(run, session, input_ahead)
        _serving.set(run)

    def release(self, run: int) -> None:
        self._held.pop(run, None)

    def _mine(self, app_name: str, user_id: str, session_id: str) -> _Held | None:
        """What the calling task's run holds, if it is that session."""
        held = self._serving()
        if held is None or _ids(held.session) != (app_name, user_id, session_id):
            return None
        return held

    def _serving(self) -> _Held | None:
        """What the calling task's run holds."""
        run = _serving.get()
        return self._held.get(run) if run is not None else None

    def answered(self, answer: Appended | SurfacesRead) -> None:
        """The main process's answer to an ``Append`` or a ``ReadSurfaces``."""
        waiting = self._waiting.pop(answer.call, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(answer)

    def lost(self) -> None:
        """The main process is gone: every append waiting fails."""
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(RemoteAppendRefused("the main process is gone"))
        self._waiting.clear()

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        held = self._mine(app_name, user_id, session_id)
        return held.session if held is not None else None

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        held = self._mine(*_ids(session))
        if held is None:
            raise RemoteAppendRefused(f"session {session.id!r} is held by no run of this worker")
        stored = event.model_dump_json(exclude_none=True, by_alias=True).encode()
        ahead, held.input_ahead = held.input_ahead, False  # the main process's rule
        if ahead and event.author == "user":
            held.input_answer = self._asked(lambda call: Append(held.run, call, stored))
        else:
            if held.input_answer is not None:
                _refused(await self._waited(held, held.input_answer))
                held.input_answer = None
            _refused(await self._ask(lambda call: Append(held.run, call, stored)))
        held.stored = event
        return await super().append_event(session, event)

    async def surfaces(self, user_id: str, thread_id: str) -> Surfaces:
        """The A2UI surfaces of the thread a run of this worker holds, read by the main
        process (``gateway.adk.invocation.SurfaceReader``)."""
        held = self._serving()
        if held is None or (held.session.user_id, held.session.id) != (user_id, thread_id):
            raise RemoteReadFailed(f"thread {thread_id!r} is held by no run of this worker")
        answer = await self._ask(lambda call: ReadSurfaces(held.run, call))
        if not isinstance(answer, SurfacesRead) or answer.error is not None:
            raise RemoteReadFailed(f"thread {thread_id!r}: its surfaces were not read")
        read = Surfaces()
        read.live = dict(answer.live or {})
        return read

    async def _ask(
        self, message: Callable[[int], Append | ReadSurfaces]
    ) -> Appended | SurfacesRead:
        """Sends the message numbered with a new call, and waits for the answer to it."""
        answer = self._asked(message)
        held = self._serving() if timeline.on() else None
        if held is None:
            return await answer
        return await self._waited(held, answer)

    @staticmethod
    async def _waited(
        held: _Held, answer: asyncio.Future[Appended | SurfacesRead]
    ) -> Appended | SurfacesRead:
        """The answer, its wait counted for the run (``asked``) while the timeline is on:
        nobody reads the counts otherwise, and the timeline is free when off."""
        if not timeline.on():
            return await answer
        held.asked += 1
        began = time.monotonic()
        try:
            return await answer
        finally:
            held.waited += time.monotonic() - began

    def asked(self) -> list[tuple[str, float]]:
        """For the timeline's counts (``gateway.timeline.count_with``): the answers the
        calling task's run waited for from the main process so far, and for how many ms."""
        held = self._serving()
        if held is None:
            return []
        return [("asked", held.asked), ("waited_for_main", 1000 * held.waited)]

    def _asked(
        self, message: Callable[[int], Append | ReadSurfaces]
    ) -> asyncio.Future[Appended | SurfacesRead]:
        """Sends the message numbered with a new call; the answer to it, to come."""
        if self._send is None:
            raise RemoteAppendRefused("this worker is not connected to the main process")
        call = next(self._calls)
        answer: asyncio.Future[Appended | SurfacesRead] = asyncio.get_running_loop().create_future()
        # An input's answer no append waits for (the run ended first) is not an error.
        answer.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._waiting[call] = answer
        self._send(message(call))
        return answer

    def was_stored(self, session: Session, event: Event) -> bool:
        """Whether ``event`` is the one the run's last append stored (the main process
        has it parsed already)."""
        held = self._mine(*_ids(session))
        return held is not None and held.stored is event

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        raise RemoteAppendRefused("a worker creates no session: the hub does, before a run")

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=[])

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        raise RemoteAppendRefused("a worker deletes no session")


def _refused(answer: Appended | SurfacesRead) -> None:
    """Raises the main process's refusal of an append into ADK, which ends the run."""
    if answer.error is not None:
        raise RemoteAppendRefused(answer.error)


def _ids(session: Session) -> tuple[str, str, str]:
    return (session.app_name, session.user_id, session.id)
