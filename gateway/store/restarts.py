"""The store's side of going on after a crash: closing the runs it cut off.

A restart closes every run its crash left open (``close_interrupted``), once, before the
gateway serves; a process that takes over a dead one's thread, or whose worker died mid-run,
closes that thread's run alone (``close_interrupted_thread``). Each close appends the events
``recovery.closing`` decides (the calls left without a response answered, the cut-off reply,
the rewind of a run that asked again) and says what the thread goes on with
(``recovery.Unfinished``): nothing, the model asked again for a reply it owes, or a person's
answer resumed. Asking again is bounded: once ``cut_off.FINISHING_ATTEMPTS`` runs in a row
were cut off asking for one reply, the thread ends with the cut-off reply, with one warning
and a count (``Metrics.owed_reply_given_up``).

``Restarts`` keeps what a restart left to go on with (``cut_off``) and works through the
public verbs of the ``SessionService`` it belongs to (``Store``: the open runs, the leftover
texts' delete, ADK's contract), which offers its two closes and ``cut_off`` as its own.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Protocol

from google.adk.events import Event
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import GetSessionConfig

from gateway.context import event_metadata
from gateway.metrics import OFF, Metrics
from gateway.store.cut_off import FINISHING_ATTEMPTS, finishing_attempts
from gateway.store.quarantine import QuarantinedThreadError
from gateway.store.recovery import Afterwards, Finishing, OpenRun, Unfinished, closing

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")


class Store(Protocol):
    """What closing cut-off runs needs of the ``SessionService`` it belongs to (named here,
    not imported: the service imports this module)."""

    async def open_runs(self, app_name: str, thread_id: str | None = None) -> list[OpenRun]: ...

    async def forget_leftover_texts(self, app_name: str, thread_id: str | None = None) -> None: ...

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None: ...

    async def append_event(self, session: Session, event: Event) -> Event: ...


class Restarts:
    """Closes the runs a crash cut off, for ``store``; see the module's docstring."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # The runs a restart closed (``close_interrupted``), and what is to go on after each.
        self.cut_off: list[Unfinished] = []
        # Counts the owed replies given up on (``SessionService.count_into``).
        self.metrics: Metrics = OFF

    async def close_interrupted(self, app_name: str, *, author: str = "model") -> int:
        """Closes each run a crash cut off, so its thread takes a new run at once.

        A server call left without its response gets an error response. The message the
        run was streaming becomes a stored assistant message under the id the client saw,
        holding the text committed so far, marked interrupted (``gateway.store.cut_off``); a run
        cut off before streaming any text gets such a message without text, authored by the
        thread's last agent (``author`` if it has none). Calls waiting on the browser are
        left waiting. Streamed text of runs that had ended is dropped, as it would have been.
        A quarantined thread is skipped with a log line: it cannot take a run anyway.
        Each closed run is noted in ``cut_off`` with what the gateway is to go on with
        (``recovery.Afterwards``: nothing; its model owes a reply to answers it was given;
        or a person's answer was not acted on yet).
        Every open run of the app is taken as cut off: call once after ``open()`` and
        before serving runs, and only while no other process writes the database
        (``sole_writer``; otherwise ``close_interrupted_thread``). Returns how many were
        closed.
        """
        open_runs = await self._store.open_runs(app_name)
        closed = 0
        for run in open_runs:
            if (unfinished := await self._close_run(app_name, run, author)) is None:
                continue
            self.cut_off.append(unfinished)
            closed += 1
        await self._store.forget_leftover_texts(app_name)
        if closed:
            log.warning("closed %d runs interrupted by a restart", closed)
        return closed

    async def close_interrupted_thread(
        self,
        app_name: str,
        thread_id: str,
        *,
        author: str = "model",
        finishing: Finishing | None = None,
    ) -> Unfinished | None:
        """Closes the run a crash cut off on one thread, as ``close_interrupted`` does.

        For a shared database: call it once the process that ran the thread is known to be
        gone (its lease expired), never while it may still run. What the caller is to go on
        with, as the gateway does for ``cut_off``; None if nothing, or no run was open.
        ``finishing``: the run cut off was the gateway's own, going on with what an earlier
        close left; cut off before it stored anything, it is tried again (its attempts
        counted, as those that stored something are from the thread's events).
        """
        open_runs = await self._store.open_runs(app_name, thread_id)
        floor = finishing.again().attempts if finishing is not None else 0
        going_on = None
        for run in open_runs:
            unfinished = await self._close_run(app_name, run, author, floor)
            if unfinished is not None and unfinished.afterwards is not Afterwards.NOTHING:
                going_on = unfinished
        await self._store.forget_leftover_texts(app_name, thread_id)
        if open_runs:
            log.warning("closed the run of thread %r, cut off with its process", thread_id)
        elif finishing is not None:
            going_on = await self._again(app_name, finishing)
        return going_on

    async def _again(self, app_name: str, finishing: Finishing) -> Unfinished | None:
        """What goes on after a finishing run that left no open run: the same again if it
        stored nothing (its worker died before it began), else nothing (it replied)."""
        unfinished = finishing.unfinished
        session = await self._store.get_session(
            app_name=app_name, user_id=unfinished.user_id, session_id=unfinished.thread_id
        )
        if session is None or any(
            event_metadata(event).get("runId") == finishing.run_id for event in session.events
        ):
            return None
        log.warning(
            "thread %r: run %s was cut off before it stored anything; it is tried again",
            unfinished.thread_id,
            finishing.run_id,
        )
        return self._bounded(finishing.again())

    def _bounded(self, unfinished: Unfinished) -> Unfinished:
        """``unfinished``, or nothing to go on with once ``FINISHING_ATTEMPTS`` runs in a
        row were cut off asking for its reply: the thread ends with the cut-off reply."""
        if unfinished.afterwards is Afterwards.NOTHING or unfinished.attempts < FINISHING_ATTEMPTS:
            return unfinished
        log.warning(
            "thread %r: the reply its model owes was cut off %d times in a row; it is not "
            "asked for again, and the thread ends with the cut-off reply",
            unfinished.thread_id,
            unfinished.attempts,
        )
        self.metrics.owed_reply_given_up()
        return dataclasses.replace(unfinished, afterwards=Afterwards.NOTHING)

    async def _close_run(
        self, app_name: str, run: OpenRun, author: str, floor: int = 0
    ) -> Unfinished | None:
        """Appends the events that close ``run``; what comes after them, or None if the
        thread is gone or quarantined (left as it is). ``floor``: attempts known to have
        been made, of which the thread may hold no trace."""
        try:
            session = await self._store.get_session(
                app_name=app_name, user_id=run.user_id, session_id=run.session_id
            )
        except QuarantinedThreadError:
            log.warning(
                "restart: the run cut off on thread %r stays open, since the thread is quarantined",
                run.session_id,
            )
            return None
        if session is None:
            return None
        attempts = max(finishing_attempts(session.events), floor)
        events, afterwards = closing(session, run, author, may_ask=attempts < FINISHING_ATTEMPTS)
        for event in events:
            await self._store.append_event(session, event)
        if afterwards is Afterwards.RESUME:
            log.warning(
                "restart: thread %r has a person's answer not acted on yet; resuming it",
                run.session_id,
            )
        left = Unfinished(run.user_id, run.session_id, afterwards, run.invocation_id, attempts)
        return self._bounded(left)
