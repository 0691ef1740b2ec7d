"""Joining a run another process is streaming (``gateway.hub.joining``), from its start or
by cursor, with the engine and the cluster as stand-ins: a run of this process that begins
during the join's reads is the one the subscriber follows, never both, which the
end-to-end cluster tests (tests/cluster/) cannot time precisely."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from gateway import wire as p
from gateway.hub import eventlog
from gateway.hub.following import Followers
from gateway.hub.joining import Joiner
from gateway.hub.threads import Thread
from gateway.store.frames import FrameLog
from gateway.store.projection import ThreadPage
from tests.support.budgets import eventually
from tests.support.watchers import Watcher, logged

pytestmark = pytest.mark.unit


def started(run_id: str) -> p.RunStarted:
    return p.RunStarted(thread_id="t-1", run_id=run_id, protocol_version="1.0")


class RunElsewhere:
    """An engine whose thread's log shows another process's run open, and whose read of the
    thread as it was before that run waits until the test lets it answer."""

    def __init__(self) -> None:
        self.log = FrameLog(
            [
                logged(1, started("run-there")),
                logged(2, p.TextMessageStart(message_id="m-1", role="assistant")),
            ],
            oldest=1,
            head=2,
        )
        self.reads = 0
        self.viewing = asyncio.Event()
        self.answer = asyncio.Event()

    async def frames_after(self, user_id: str, thread_id: str, after: int) -> FrameLog:
        self.reads += 1
        read = [frame for frame in self.log.frames if frame.seq > after]
        return FrameLog(read, self.log.oldest, self.log.head)

    async def run_start(self, user_id: str, thread_id: str, run_id: str) -> int:
        return 0

    async def thread_view(
        self, user_id: str, thread_id: str, max_bytes: int | None = None, *, before: int
    ) -> tuple[ThreadPage, None]:
        self.viewing.set()
        await self.answer.wait()
        return ThreadPage(messages=[], latest=None, earlier=None), None

    async def branches(self, user_id: str, thread_id: str) -> None:
        return None


async def unread(thread: Thread, after: int) -> FrameLog:
    raise AssertionError("nothing is followed from the log")


class SlowCluster:
    """Another process holds the thread, as the cluster answers once the test lets it."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def runs_elsewhere(self, thread_id: str) -> bool:
        self.asked.set()
        await self.answer.wait()
        return True


def joiner(engine: RunElsewhere, cluster: SlowCluster | None = None) -> Joiner:
    async def take_over(user_id: str, thread_id: str) -> bool:
        return False

    return Joiner(
        cast(Any, engine),
        cast(Any, cluster),
        Followers(unread),
        snapshot_bytes=None,
        take_over=take_over,
        waiting_for=lambda calls: p.SuccessOutcome(),
    )


async def test_a_join_elsewhere_sends_that_runs_start_snapshot_and_frames() -> None:
    engine, watcher, thread = RunElsewhere(), Watcher(), Thread("t-1", "demo")
    engine.answer.set()
    assert await joiner(engine).join_elsewhere(thread, watcher) is not None
    kinds = [type(event).__name__ for event in watcher.events]
    assert kinds == ["RunStarted", "MessagesSnapshot", "StateSnapshot", "TextMessageStart"]
    assert thread.positions[watcher] == 2  # it follows the log from its head


async def test_a_run_begun_here_during_the_join_is_the_one_followed() -> None:
    """A run of this process starts (its lease released there, taken here) while the join
    reads the thread: the subscriber is sent nothing of the other run, whose start would
    leave a run open in its stream before this one's RUN_STARTED, and is no longer a
    watcher, so the hub joins it to the run here."""
    engine, watcher, thread = RunElsewhere(), Watcher(), Thread("t-1", "demo")
    joining = asyncio.create_task(joiner(engine).join_elsewhere(thread, watcher))
    await engine.viewing.wait()
    thread.run = cast(Any, object())  # claimed here meanwhile; its first event goes out
    here = eventlog.numbered(started("run-here"), 3)
    for each in thread.watchers:
        thread.send(each, here)
    engine.answer.set()
    assert await joining is None
    assert watcher.events == []
    assert watcher not in thread.watchers and watcher not in thread.positions


async def test_a_run_begun_here_while_a_replay_asks_the_cluster_gets_the_snapshot() -> None:
    """A cursor into the other process's run: while the cluster is asked whether that run
    goes on, one of this process begins. The replay sends nothing (the read ends before
    the other run's end, which this one's start would follow), so the hub sends the
    snapshot, which is never wrong."""
    engine, cluster, watcher = RunElsewhere(), SlowCluster(), Watcher()
    thread = Thread("t-1", "demo")
    replaying = asyncio.create_task(joiner(engine, cluster).replay(thread, watcher, 1))
    await cluster.asked.wait()
    thread.run = cast(Any, object())
    for each in thread.watchers:
        thread.send(each, eventlog.numbered(started("run-here"), 4))
    cluster.answer.set()
    assert await replaying is None
    assert watcher.events == [] and watcher not in thread.watchers


async def test_a_replay_into_a_run_elsewhere_follows_it_from_the_cursor() -> None:
    engine, cluster, watcher = RunElsewhere(), SlowCluster(), Watcher()
    thread = Thread("t-1", "demo")
    cluster.answer.set()
    assert await joiner(engine, cluster).replay(thread, watcher, 1) is not None
    assert [type(event).__name__ for event in watcher.events] == ["TextMessageStart"]
    assert thread.positions[watcher] == 2


async def test_a_cursor_sent_ahead_of_the_other_processs_commit_is_answered_once_it_commits():
    """The other process sent its client text before committing its frame (the outbox
    lets text go first): a reattach here with that number waits for the commit's notice
    and replays from the log, rather than take the cursor for lost and send a snapshot
    with a second RUN_STARTED inside the client's run."""
    engine, cluster, watcher = RunElsewhere(), SlowCluster(), Watcher()
    thread = Thread("t-1", "demo")
    cluster.answer.set()
    replaying = asyncio.create_task(joiner(engine, cluster).replay(thread, watcher, 3))
    await eventually(lambda: engine.reads == 1, 5, what="the log was not read")
    await asyncio.sleep(0.05)
    assert not replaying.done()  # it waits for the commit
    engine.log = FrameLog(
        [
            *engine.log.frames,
            logged(3, p.TextMessageContent(message_id="m-1", delta="안녕")),
            logged(4, p.TextMessageContent(message_id="m-1", delta="하세요")),
        ],
        oldest=1,
        head=4,
    )
    thread.hear(4)  # the commit's notice: the read follows at once, not on a later look
    for _ in range(10):
        await asyncio.sleep(0)
    assert replaying.done() and replaying.result() is not None
    [sent] = watcher.events
    assert isinstance(sent, p.TextMessageContent) and sent.delta == "하세요"
    assert thread.positions[watcher] == 4
