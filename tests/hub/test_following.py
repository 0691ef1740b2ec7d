"""Watchers of a thread whose run is on another process, fed from the thread's log
(``gateway.hub.following``), driven with a log in memory: each frame once and in order, a live
client-tool call only to the owner's instance, and no read without end when the log holds
less than was announced."""

from __future__ import annotations

import asyncio

import pytest

from gateway import wire as p
from gateway.hub import eventlog
from gateway.hub.following import Followers
from gateway.hub.threads import Thread
from gateway.store.frames import FrameLog, LoggedFrame
from tests.support.watchers import Watcher, logged

pytestmark = pytest.mark.unit


class Log:
    """A thread's log in memory, and the reads made of it."""

    def __init__(self, frames: list[LoggedFrame]) -> None:
        self.frames = frames
        self.reads: list[int] = []

    async def read(self, thread: Thread, after: int) -> FrameLog:
        self.reads.append(after)
        kept = [f for f in self.frames if f.seq > after]
        head = self.frames[-1].seq if self.frames else 0
        return FrameLog(kept, self.frames[0].seq if self.frames else None, head)


def text(seq: int) -> LoggedFrame:
    return logged(seq, p.TextMessageContent(message_id="m1", delta=f"{seq} "))


def seqs(watcher: Watcher) -> list[int | None]:
    return [eventlog.seq_of(event) for event in watcher.events]


async def settled() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_each_watcher_is_sent_each_frame_after_its_own_position_once():
    log = Log([text(n) for n in range(1, 7)])
    thread = Thread("t1", "u1")
    early, late = Watcher(), Watcher()
    for watcher, seen in ((early, 2), (late, 4)):
        thread.watch(watcher)
        thread.positions[watcher] = seen
    followers = Followers(log.read)
    followers.heard(thread, 6)
    followers.heard(thread, 6)  # a second notice while the first is read: one read
    await settled()
    assert seqs(early) == [3, 4, 5, 6]
    assert seqs(late) == [5, 6]
    assert log.reads == [2]
    followers.heard(thread, 6)  # nothing new: no read
    await settled()
    assert log.reads == [2]


async def test_a_live_client_tool_call_goes_only_to_a_watcher_of_its_owner_instance():
    call = p.ToolCallStart(tool_call_id="c1", tool_call_name="navigateToScreen")
    log = Log([text(1), logged(2, call, only_for="tab-1"), text(3)])
    thread = Thread("t1", "u1")
    owner, other, anonymous = Watcher("tab-1"), Watcher("tab-2"), Watcher()
    for watcher in (owner, other, anonymous):
        thread.watch(watcher)
        thread.positions[watcher] = 0
    Followers(log.read).heard(thread, 3)
    await settled()
    assert seqs(owner) == [1, 2, 3]
    assert seqs(other) == seqs(anonymous) == [1, 3]


async def test_a_log_holding_less_than_was_announced_is_read_once_not_forever():
    log = Log([text(1), text(2), text(3)])
    thread = Thread("t1", "u1")
    watcher = Watcher()
    thread.watch(watcher)
    thread.positions[watcher] = 0
    Followers(log.read).heard(thread, 10)  # the rest was deleted with its thread
    await settled()
    assert seqs(watcher) == [1, 2, 3]
    assert len(log.reads) == 2  # the read that delivered, and one that found nothing more


async def test_a_run_of_this_process_first_catches_its_watchers_up_then_goes_live():
    log = Log([text(n) for n in range(1, 5)])
    thread = Thread("t1", "u1")
    watcher = Watcher()
    thread.watch(watcher)
    thread.positions[watcher] = 1
    await Followers(log.read).catch_up(thread)
    assert seqs(watcher) == [2, 3, 4]
    assert thread.positions == {}  # from here on the run's own events reach it live


async def test_a_notice_heard_as_the_last_read_returns_gets_a_read_of_its_own():
    # The gap the fan-out bench found: a read's task has returned, its done callbacks have not
    # run yet, and the notice of the run's last frames arrives in between.
    log = Log([text(n) for n in range(1, 4)])
    thread = Thread("t1", "u1")
    watcher = Watcher()
    thread.watch(watcher)
    thread.positions[watcher] = 0
    followers = Followers(log.read)
    followers.heard(thread, 3)
    reading = followers._reading["t1"]
    ended = asyncio.get_running_loop().create_future()
    # Registered after the follower's own callback, it runs in the same batch of callbacks,
    # before the loop gets to anything the notice starts.
    reading.add_done_callback(lambda _: ended.set_result(None))
    await ended
    log.frames += [text(4), text(5)]
    followers._reading["t1"] = reading  # as it stands while its done callbacks are pending
    followers.heard(thread, 5)
    await settled()
    assert seqs(watcher) == [1, 2, 3, 4, 5]
