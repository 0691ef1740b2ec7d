"""A run's log, its outbox and a replay to a watcher who comes back mid-run, driven by hand
with futures standing in for commits (``gateway.hub.threads``, ``gateway.hub.joining``).

A frame can be committed while its delivery still waits in the run's outbox (a commit's
callbacks run a turn after it): a replay that reads it then must not send it as well, since
the watcher is sent it live. A run's last event queues the trim of the thread's log with
its own frames, so one commit stores both, unless something outside stopped the run.
"""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.cluster import Cluster
from gateway.hub import eventlog
from gateway.hub.following import Followers
from gateway.hub.joining import Joiner
from gateway.hub.outbox import Commit
from gateway.hub.refusals import taken_over
from gateway.hub.threads import Run, Thread
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.translate.translator import RunTranslator
from tests.support.subscribers import Recorder

pytestmark = pytest.mark.unit


class Store:
    """The run's frames as the store keeps them, each once its commit is done."""

    def __init__(self) -> None:
        self.writes: list[tuple[list[LoggedFrame], Commit]] = []
        self.trims = 0

    def log(self, frames: list[LoggedFrame], *, rides: bool = False) -> Commit:
        commit: Commit = asyncio.get_running_loop().create_future()
        self.writes.append((frames, commit))
        return commit

    def trim(self) -> None:
        self.trims += 1

    async def frames_after(self, user_id: str, thread_id: str, after: int) -> FrameLog:
        committed = [f for frames, commit in self.writes if commit.done() for f in frames]
        shown = [frame for frame in committed if frame.seq > after]
        return FrameLog(shown, shown[0].seq if shown else None, committed[-1].seq)


def logged_run(store: Store) -> Run:
    thread = Thread("t1", "demo", head=0)
    run = Run(thread, "r1", None, RunTranslator("t1", "r1"))
    run.log = store.log
    run.trim = store.trim
    thread.run = run
    return run


def text(delta: str) -> list[p.Event]:
    return [p.TextMessageContent(message_id="m1", delta=delta)]


async def test_a_frame_committed_but_still_in_the_outbox_is_sent_live_not_replayed() -> None:
    store = Store()
    run = logged_run(store)
    run.emit(run.translator.start())
    run.emit(text("하나 "))
    for _, commit in store.writes:
        commit.set_result(None)
    await asyncio.sleep(0)  # the outbox lets both out
    assert run.routed == 2
    run.emit(text("둘"))
    store.writes[-1][1].set_result(None)  # committed; its delivery is a turn away

    watcher = Recorder()
    joiner = Joiner(
        cast(Engine, store),
        cast(Cluster, None),
        cast(Followers, None),
        snapshot_bytes=None,
        take_over=lambda user_id, thread_id: asyncio.sleep(0, False),
        waiting_for=lambda calls: p.SuccessOutcome(),
    )
    await joiner.replay(run.thread, watcher, 1)
    await asyncio.sleep(0)
    assert [eventlog.seq_of(event) for event in watcher.events] == [2, 3]


async def test_the_last_event_queues_the_trim_with_its_frames() -> None:
    store = Store()
    run = logged_run(store)
    run.emit(run.translator.start())
    assert store.trims == 0
    run.emit(run.translator.finish())
    assert store.trims == 1 and run.trim is None
    assert len(store.writes) == 2


async def test_a_run_stopped_from_outside_leaves_its_log_untrimmed() -> None:
    store = Store()
    run = logged_run(store)
    run.emit(run.translator.start())
    run.stopped_by = taken_over("t1")
    run.fail(run.stopped_by)
    assert store.trims == 0
