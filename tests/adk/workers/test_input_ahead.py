"""With workers, a run's input goes ahead of its commit as in one process: the worker calls
the model while the main process commits the input, without a round trip for it, and
nothing of the run reaches a client before that commit, nor at all when the store refuses
the input (docs/first-event.md, docs/durability.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from google.adk.events import Event
from google.adk.sessions import Session

from gateway.adk.workers import WorkerPool
from gateway.store import SessionService
from gateway.store.errors import StoreError
from tests.support.agui import new_id, text_of, tool_answer, tool_calls, user_input
from tests.support.budgets import eventually, scaled
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.held_store import write_lock_held
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

# Worker processes import ADK and the agent on a shared machine: seconds, not milliseconds.
START = scaled(60)


class WorkersAppends:
    """The main process's store as the workers' runs reach it: each append's author kept,
    and, with ``refuse_input``, a run's input refused as a lost database would refuse it."""

    def __init__(self, sessions: SessionService, *, refuse_input: bool = False) -> None:
        self.sessions = sessions
        self.refuse_input = refuse_input
        self.authors: list[str] = []

    async def append_event(
        self, session: Session, event: Event, *, parsed_from: str | None = None
    ) -> Event:
        self.authors.append(event.author)
        if self.refuse_input and event.author == "user":
            raise StoreError("the disk is gone")
        return await self.sessions.append_event(session, event, parsed_from=parsed_from)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sessions, name)


def watched(gateway: RunningGateway, **options: bool) -> WorkersAppends:
    assert gateway.app.hub is not None
    pool = gateway.app.hub.engine.workers
    assert isinstance(pool, WorkerPool)
    appends = WorkersAppends(pool.sessions, **options)
    pool.sessions = appends  # type: ignore[assignment]
    return appends


async def test_a_workers_reply_is_made_while_its_input_commits_and_sent_after(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db) as gateway:
        appends = watched(gateway)
        thread = new_id("t")
        async with gateway.socket() as ws:
            [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
            appends.authors.clear()
            with write_lock_held(db):
                sent = len(ws.received)
                await ws.send(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
                reply = asyncio.create_task(ws.until_end(START))
                # The model was asked and answered in the worker while the browser's answer
                # waits for the lock: its reply is the next append.
                await eventually(
                    lambda: appends.authors[1:], 30, what="the worker did not go on to the model"
                )
                assert appends.authors[0] == "user"
                shown = [event["type"] for event in ws.received[sent:]]
                assert "TEXT_MESSAGE_CONTENT" not in shown and not reply.done()
            answered = await reply
        assert text_of(answered) == MOVED and answered[-1]["type"] == "RUN_FINISHED"


async def test_an_input_the_store_refuses_ends_the_run_with_nothing_of_its_reply(
    tmp_path: Path,
) -> None:
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        watched(gateway, refuse_input=True)
        async with gateway.socket() as ws:
            # The demo greets at length: the worker streams it unless the run is stopped.
            events = await ws.run(user_input(new_id("t"), "안녕하세요"))
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"], events
        assert events[-1]["code"] == "STORE_UNAVAILABLE"
