"""The gateway's own run that asks the model again for a reply a crash cut off is cut off in
turn: by a restart (its turn stored), or with its worker before it stored anything. The
thread asks again the same way, the model is shown the thread as the first ask showed it,
and the thread ends with the reply; at most ``FINISHING_ATTEMPTS`` runs in a row ask
(``gateway.store.recovery``, ``Hub.finish_cut_off``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from google.adk.events import Event
from google.genai import types

from gateway.adk.engine import Engine
from gateway.adk.workers import WorkerLost
from gateway.examples.navigator import scripted
from gateway.examples.navigator.agent import APP_NAME
from gateway.metrics import sample
from gateway.store.cut_off import FINISHING, FINISHING_ATTEMPTS, RESTARTED
from tests.support.agui import AgUiSocket, new_id, snapshot_of, tool_calls, user_input
from tests.support.backends import reopened
from tests.support.budgets import eventually, scaled
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

USER = "demo"
NAVIGATED = {"status": "navigated"}


async def owed(db: str, *, asked: bool) -> str:
    """A thread whose browser answer was stored while the gateway died before the model
    replied to it: its run is left open for the next start to close and ask again. With
    ``asked``, a restart did so already, and died too once the ask's turn was stored."""
    thread = new_id("t")
    async with running_gateway(db=db, workers=0) as gateway, gateway.socket(USER) as ws:
        [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
    store = await reopened(db)
    try:
        session = await store.get_session(app_name=APP_NAME, user_id=USER, session_id=thread)
        assert session is not None
        [(paused, call)] = [
            (e, c) for e in session.events for c in e.get_function_calls() if c.id == navigate["id"]
        ]
        response = types.FunctionResponse(id=call.id, name=call.name, response=NAVIGATED)
        await store.append_event(
            session,
            Event(
                invocation_id=paused.invocation_id,
                author="user",
                content=types.Content(role="user", parts=[types.Part(function_response=response)]),
                custom_metadata={"agui": {"runId": new_id("run")}},
            ),
        )
        if asked:
            assert await store.close_interrupted(APP_NAME) == 1
            asking = types.Content(role="user", parts=[types.Part(text=RESTARTED)])
            closed = await store.get_session(app_name=APP_NAME, user_id=USER, session_id=thread)
            assert closed is not None
            await store.append_event(
                closed,
                Event(
                    invocation_id="asking-1",
                    author="user",
                    content=asking,
                    custom_metadata={"agui": {"runId": f"{FINISHING}first"}},
                ),
            )
    finally:
        await store.close()
    return thread


async def settled(ws: AgUiSocket, thread: str) -> list[dict[str, Any]]:
    """The thread's snapshot once no run of the gateway's own goes on: a reattach while one
    does follows it to its end, and the next reattach comes after it."""
    events = await ws.run({"type": "reattach", "threadId": thread})
    while events[0].get("runId", "").startswith(FINISHING):
        events = await ws.run({"type": "reattach", "threadId": thread})
    return snapshot_of(events)


class LostWorkers:
    """``Engine.run`` whose first ``times`` runs of the gateway's own fail as if their worker
    died before they stored anything; ``answered`` is set once such a run ran to its end."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, times: int) -> None:
        self.times = times
        self.lost: list[str] = []
        self.answered = asyncio.Event()
        self._run = Engine.run

        def run(engine: Engine, **order: Any) -> AsyncGenerator[Any, None]:
            return self._patched(engine, **order)

        monkeypatch.setattr(Engine, "run", run)

    def _patched(self, engine: Engine, **order: Any) -> AsyncGenerator[Any, None]:
        run_id = str(order["metadata"]["runId"])
        if not run_id.startswith(FINISHING):
            return self._run(engine, **order)
        if len(self.lost) < self.times:
            self.lost.append(run_id)
            return self._dead()
        return self._watched(self._run(engine, **order))

    async def _dead(self) -> AsyncGenerator[Any, None]:
        raise WorkerLost()
        yield  # an async generator, as Engine.run is

    async def _watched(self, events: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        async with aclosing(events) as streamed:
            async for event in streamed:
                yield event
        self.answered.set()


async def test_a_restart_that_cuts_off_the_asking_run_asks_again_and_the_reply_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "threads.db")
    thread = await owed(db, asked=True)
    seen: list[Sequence[types.Content]] = []
    before_restart = scripted.before_restart

    def watched(contents: Sequence[types.Content]) -> Sequence[types.Content]:
        seen.append(list(contents))
        return before_restart(contents)

    monkeypatch.setattr(scripted, "before_restart", watched)
    async with running_gateway(db=db, workers=0) as gateway, gateway.socket(USER) as ws:
        shown = await settled(ws, thread)
    assert shown[-1]["role"] == "assistant" and shown[-1]["content"] == MOVED
    assert sum(m["role"] == "tool" for m in shown) == 2  # find_screen's, the browser's once
    # The runs cut off before they said a word (the user's, the first ask) show nothing.
    said = [m for m in shown if m["role"] == "assistant"]
    assert all(m.get("content") or m.get("toolCalls") for m in said), said
    # One RESTARTED turn in what the model was shown, not one per run that asked.
    [asked] = [c for c in seen if c and _said(c[-1]) == [RESTARTED]]
    assert sum(_said(content) == [RESTARTED] for content in asked) == 1


async def test_an_asking_run_lost_with_its_worker_before_it_stored_anything_asks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "threads.db")
    thread = await owed(db, asked=False)
    workers = LostWorkers(monkeypatch, times=1)
    async with running_gateway(db=db, workers=0) as gateway, gateway.socket(USER) as ws:
        await asyncio.wait_for(workers.answered.wait(), scaled(20))
        shown = await settled(ws, thread)
    assert len(workers.lost) == 1
    assert shown[-1]["role"] == "assistant" and shown[-1]["content"] == MOVED


async def test_asking_runs_lost_again_and_again_stop_at_the_bound_with_a_warning_and_a_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = str(tmp_path / "threads.db")
    thread = await owed(db, asked=False)
    workers = LostWorkers(monkeypatch, times=FINISHING_ATTEMPTS + 5)
    caplog.set_level(logging.WARNING, logger="gateway.store")
    async with (
        running_gateway(db=db, workers=0, metrics="on") as gateway,
        gateway.socket(USER) as ws,
    ):
        given_up = "gateway_owed_replies_given_up_total"
        await eventually(
            lambda: sample(gateway.app.metrics, given_up), 20, what="the runs were not bounded"
        )
        shown = await settled(ws, thread)
        assert sample(gateway.app.metrics, given_up) == 1
    assert len(workers.lost) == FINISHING_ATTEMPTS
    assert not workers.answered.is_set()
    # The thread ends with the cut-off reply, marked, as before the runs that asked again.
    assert shown[-1]["role"] == "assistant" and shown[-1]["metadata"] == {"ended": "interrupted"}
    [line] = [r.getMessage() for r in caplog.records if "not asked for again" in r.getMessage()]
    assert thread in line


def _said(content: types.Content) -> list[str]:
    return [part.text for part in content.parts or () if part.text]
