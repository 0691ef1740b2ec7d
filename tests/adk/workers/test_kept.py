"""A thread's session kept in the worker that ran its last run: the thread's next run
there is sent without the events the worker holds, and any doubt sends the whole session
(``gateway.adk.workers.kept``). The worker here is the scripted stand-in of
``test_pipe_faults``, speaking the worker's side of the pool's own socket; a real worker's
side is ``test_workers``'s flagship."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import types

from gateway.adk.workers import RemoteFailure, WorkerLost, WorkerPool, WorkerRun
from gateway.adk.workers import pool as pool_module
from gateway.adk.workers import worker as worker_module
from gateway.adk.workers.kept import Account, Kept, kept_ids, kept_prefix
from gateway.adk.workers.messages import Failed, Finished, Start, Unkept
from gateway.adk.workers.remote_session import RemoteSessions
from gateway.store.adk_json import parse_session
from tests.support.budgets import eventually
from tests.support.counting import counting
from tests.support.scripted_worker import WAIT, ScriptedWorker, pool_of_one

pytestmark = pytest.mark.server


def said(text: str) -> AdkEvent:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return AdkEvent(author="agent", invocation_id="i-1", content=content)


def session_of(events: list[AdkEvent], thread: str = "t-1") -> Session:
    return Session(app_name="app", user_id="u", id=thread, events=list(events))


def order(session: Session, run_id: str) -> WorkerRun:
    return WorkerRun(
        user_id=session.user_id,
        thread_id=session.id,
        session=session,
        message=None,
        invocation_id="i-1",
        state_delta=None,
        metadata={"runId": run_id},
        client_tools={},
    )


async def sent(
    pool: WorkerPool, worker: ScriptedWorker, session: Session, run_id: str
) -> tuple[AsyncGenerator[AdkEvent, None], Start, asyncio.Future[AdkEvent]]:
    """The run's events, its Start as the worker read it, and its first event to come."""
    events = pool.run(order(session, run_id), None)
    first = asyncio.ensure_future(anext(events))  # sends the run's Start
    start = await asyncio.wait_for(worker.started.get(), WAIT)
    assert start.metadata["runId"] == run_id
    return events, start, first


async def finished(
    worker: ScriptedWorker,
    events: AsyncGenerator[AdkEvent, None],
    first: asyncio.Future[AdkEvent],
    ending: Finished | Failed,
) -> None:
    worker.send(ending)
    ends = StopAsyncIteration if isinstance(ending, Finished) else RemoteFailure
    with pytest.raises(ends):
        await asyncio.wait_for(first, WAIT)
    await events.aclose()


def ended_keeping(start: Start, session: Session) -> Finished:
    """What a worker says as its run ends keeping ``session``'s events."""
    last = session.events[-1].id if session.events else None
    return Finished(start.run, kept=len(session.events), kept_last=last)


# --- the bookkeeping, both sides ------------------------------------------------------


def test_the_newest_threads_are_kept_and_a_take_removes_one() -> None:
    kept: Kept[str] = Kept(limit=2)
    kept.keep("a", "1")
    kept.keep("b", "2")
    kept.keep("a", "3")  # kept again: the newest
    kept.keep("c", "4")  # "b" is the oldest now, and goes
    assert "b" not in kept and len(kept) == 2
    assert kept.take("a") == "3" and kept.take("a") is None and len(kept) == 1


def test_the_kept_events_are_bounded_and_a_thread_longer_than_all_of_them_is_not_kept() -> None:
    kept: Kept[str] = Kept(limit=10, events=10)
    kept.keep("a", "1", 4)
    kept.keep("b", "2", 4)
    kept.keep("c", "3", 4)  # 12 events: "a", the oldest, goes
    assert "a" not in kept and kept.held == 8
    assert kept.take("b") == "2" and kept.held == 4
    kept.keep("long", "4", 11)  # more than all: not kept, nor what was
    assert len(kept) == 0 and kept.held == 0


def test_a_worker_and_its_account_let_go_of_the_same_threads_by_their_events() -> None:
    """The worker keeps each run's events; the main process's account keeps their ids, or
    None when it does not trust the copy: both by the count the Finished says."""
    worker: Kept[list[object]] = Kept(limit=4, events=6)
    account = Account(limit=4, events=6)
    for run, (thread, count) in enumerate([("t1", 2), ("t2", 3), ("t3", 2), ("t1", 2)]):
        events = [said(str(n)) for n in range(count)]
        worker.take(thread)
        account.started(run, thread, [])
        worker.keep(thread, list(events), count)
        trusted = events if thread != "t2" else None  # one not trusted here: same size
        account.finished(run, count, events[-1].id, trusted)
        held = {t for t in ("t1", "t2", "t3") if t in worker}
        assert held == {t for t in ("t1", "t2", "t3") if t in account.kept}
    assert {t for t in ("t1", "t2", "t3") if t in worker} == {"t3", "t1"}


def test_a_session_is_left_out_only_as_far_as_it_begins_with_the_kept_events() -> None:
    one, two, three = said("하나"), said("둘"), said("셋")
    ids = (one.id, two.id)
    assert kept_prefix([one, two, three], ids) == 2
    assert kept_prefix([one, two], ids) == 2
    assert kept_prefix([one], ids) == 0  # a branch cut it short
    assert kept_prefix([one, three, two], ids) == 0  # an edit changed the second
    assert kept_prefix([one, two], None) == 0 and kept_prefix([one, two], ()) == 0


def test_what_a_worker_kept_is_trusted_only_if_this_process_holds_the_same() -> None:
    one, two = said("하나"), said("둘")
    assert kept_ids([one, two], 2, two.id) == (one.id, two.id)
    assert kept_ids([one, two], 3, two.id) is None  # an append not stored here yet
    assert kept_ids([one, two], 2, one.id) is None
    assert kept_ids([], 0, None) == ()


def test_the_account_takes_a_threads_entry_at_each_start_and_keeps_it_at_a_finish() -> None:
    one, two = said("하나"), said("둘")
    account = Account()
    assert account.started(1, "t", [one]) == 0
    account.finished(1, 2, two.id, [one, two])
    assert account.holds("t")
    assert account.started(2, "t", [one, two, said("셋")]) == 2
    assert not account.holds("t")  # taken: the worker's copy is the run's now
    account.ended(2)  # it failed: nothing kept
    assert account.started(3, "t", [one, two]) == 0
    account.finished(3, 2, two.id, None)  # let go of: kept there, not trusted here
    assert not account.holds("t") and account.started(4, "t", [one, two]) == 0


# --- the pool -------------------------------------------------------------------------


async def test_a_threads_next_run_on_the_worker_that_kept_it_goes_without_those_events() -> None:
    one, two = said("하나"), said("둘")
    async with pool_of_one() as (pool, worker, _):
        session = session_of([one, two])
        events, start, first = await sent(pool, worker, session, "r-1")
        assert start.kept == 0 and len(parse_session(start.session).events) == 2
        await finished(worker, events, first, ended_keeping(start, session))

        three = said("셋")  # the browser's answer, stored by the hub before the next run
        later = session_of([one, two, three])
        later.state = {"screen": "MNU-3120"}
        events, start, first = await sent(pool, worker, later, "r-2")
        assert (start.kept, start.kept_last) == (2, two.id)
        head = parse_session(start.session)
        assert [e.id for e in head.events] == [three.id]
        assert head.state == {"screen": "MNU-3120"}  # the head is always this process's
        await finished(worker, events, first, Finished(start.run))
        assert pool.kept_starts == 1  # r-2's


async def test_a_thread_edited_since_or_a_run_that_failed_gets_its_whole_session() -> None:
    one, two = said("하나"), said("둘")
    async with pool_of_one() as (pool, worker, _):
        session = session_of([one, two])
        events, start, first = await sent(pool, worker, session, "r-1")
        await finished(worker, events, first, ended_keeping(start, session))
        # An edit: the thread now holds another second event.
        edited = session_of([one, said("다른")])
        events, start, first = await sent(pool, worker, edited, "r-2")
        assert start.kept == 0 and len(parse_session(start.session).events) == 2
        await finished(worker, events, first, Failed(start.run, "ValueError", "boom"))
        # That run failed: the worker keeps nothing of it, and the next goes whole.
        events, start, first = await sent(pool, worker, edited, "r-3")
        assert start.kept == 0 and len(parse_session(start.session).events) == 2
        await finished(worker, events, first, Finished(start.run))


async def test_a_worker_that_did_not_keep_the_events_gets_the_start_again_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """And the pool's last line counts the Starts sent without kept events and those
    answered ``Unkept`` (``scripts/load.py`` reports both)."""
    caplog.set_level(logging.INFO, logger=pool_module.__name__)
    one = said("하나")
    async with pool_of_one() as (pool, worker, _):
        session = session_of([one])
        events, start, first = await sent(pool, worker, session, "r-1")
        await finished(worker, events, first, ended_keeping(start, session))
        events, start, first = await sent(pool, worker, session_of([one, said("둘")]), "r-2")
        assert start.kept == 1
        worker.send(Unkept(start.run))
        again = await asyncio.wait_for(worker.started.get(), WAIT)
        assert (again.run, again.kept, again.kept_last) == (start.run, 0, None)
        assert len(parse_session(again.session).events) == 2
        await finished(worker, events, first, Finished(start.run))
    said_last = "kept sessions: Starts sent without the events their worker kept: 1;"
    assert f"{said_last} of them answered Unkept and sent again whole: 1" in caplog.text


async def test_a_worker_whose_process_ended_gets_no_run_and_no_waitpid_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's end is its sentinel, read by the loop: placing a run asks the process
    nothing (``is_alive`` was a ``waitpid`` a worker each time), and one that ended is
    given no run though its pipe is still open."""
    asked = counting(monkeypatch, ScriptedWorker, "is_alive")
    async with pool_of_one() as (pool, worker, _):
        for run_id in ("r-1", "r-2"):
            events, start, first = await sent(pool, worker, session_of([]), run_id)
            await finished(worker, events, first, Finished(start.run))
        assert asked == []
        worker.ended()  # its process ends; its pipe is not closed yet
        await eventually(lambda: not pool._ready_workers(), 5.0, what="the end was not seen")
        with pytest.raises(WorkerLost):
            await anext(pool.run(order(session_of([]), "r-3"), None))


class Sent:
    """A worker's channel that records what it sends."""

    def __init__(self) -> None:
        self.messages: list[object] = []

    def send(self, message: object, *, now: bool = False) -> None:
        self.messages.append(message)


def test_a_worker_that_does_not_keep_what_a_start_names_says_so_and_starts_nothing() -> None:
    channel = Sent()
    runs = worker_module._Runs(
        cast(Any, channel), cast(Any, None), cast(Any, None), RemoteSessions(), None, None, 0.0
    )
    one, two = said("하나"), said("둘")
    head = Session(app_name="app", user_id="u", id="t-1").model_dump_json().encode()

    def start(run: int, kept: int, last: str | None) -> Start:
        return Start(
            run,
            "u",
            "t-1",
            head,
            None,
            None,
            None,
            {"runId": f"r-{run}"},
            [],
            None,
            None,
            kept=kept,
            kept_last=last,
        )

    runs.handle(start(1, 2, two.id))  # nothing kept here
    runs.kept.keep(("u", "t-1"), [one, two])
    runs.handle(start(2, 2, one.id))  # not the copy it keeps
    assert channel.messages == [Unkept(1), Unkept(2)] and runs.tasks == {}
    assert len(runs.kept) == 0  # each Start took the thread's entry


async def test_a_threads_next_run_goes_to_the_worker_keeping_it_unless_it_is_much_busier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """And placing a run looks at the ready workers once: the least busy and the one
    keeping the thread are chosen from one list."""
    looks = counting(monkeypatch, WorkerPool, "_ready_workers")
    workers: list[ScriptedWorker] = []

    def spawn(path: str, index: int) -> ScriptedWorker:
        workers.append(ScriptedWorker())
        return workers[-1](path, index)

    pool = WorkerPool(2, spawn, cast(Any, None))
    await asyncio.wait_for(pool.start(), WAIT)
    try:
        first, second = workers
        session = session_of([said("하나")])
        events, start, ended = await sent(pool, first, session, "r-1")  # a tie: the first
        await finished(first, events, ended, ended_keeping(start, session))
        # Both idle again, a tie: the second, in turn (every tie went to the first before).
        events, start, ended = await sent(pool, second, session_of([], "t-2"), "o-1")
        await finished(second, events, ended, Finished(start.run))
        # Another thread's run makes the first worker the busier: the thread's next run
        # still goes to it, which keeps the thread's session.
        other, other_start, other_ended = await sent(pool, first, session_of([], "t-3"), "o-2")
        events, start, ended = await sent(pool, first, session, "r-2")
        assert start.kept == 1
        await finished(first, events, ended, ended_keeping(start, session))
        # Busier by more than KEEPING_SLACK: the least busy takes it, whole.
        monkeypatch.setattr(pool_module, "KEEPING_SLACK", 0)
        events, start, ended = await sent(pool, second, session, "r-3")
        assert start.kept == 0
        await finished(second, events, ended, Finished(start.run))
        await finished(first, other, other_ended, Finished(other_start.run))
        assert len(looks) == 5  # r-1, o-1, o-2, r-2 and r-3 placed
    finally:
        await pool.close()
