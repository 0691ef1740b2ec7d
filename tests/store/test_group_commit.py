"""The single writer wakes a commit's callers a few a turn of the event loop, oldest first,
and goes on committing meanwhile: a commit of hundreds of runs' writes does not make one
turn of all their work that a frame just read (an input to acknowledge) waits behind. An
urgent write's caller (a run's input, which its first text waits for) is woken first. A
burst of a thread's frames lingers a few quiet turns to become one write."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import pytest

from gateway.store import group_commit
from gateway.store.frames import LoggedFrame
from gateway.store.group_commit import GroupCommit
from gateway.store.writes import AppendFrames, Probe, ReleaseLeases, Write

pytestmark = pytest.mark.unit


async def test_a_commit_wakes_its_callers_a_few_a_turn_and_the_writer_goes_on() -> None:
    # Each commit: how many writes, and how many of the first commit's callers were woken.
    batches: list[tuple[int, int]] = []
    woken: list[int] = []

    async def commit(writes: Sequence[Write]) -> list[object]:
        batches.append((len(writes), len(woken)))
        return [None] * len(writes)

    writer = GroupCommit(commit, lambda healthy: None)
    callers = 40
    futures = [writer.submit(Probe()) for _ in range(callers)]
    for number, future in enumerate(futures):
        future.add_done_callback(lambda _, number=number: woken.append(number))
    done_by_turn: list[int] = []
    later: asyncio.Future[object] | None = None
    while len(woken) < callers:
        await asyncio.sleep(0)
        done_by_turn.append(sum(future.done() for future in futures))
        if later is None and done_by_turn[-1]:
            later = writer.submit(Probe())  # while the first commit's callers are woken
    assert later is not None
    await later
    await writer.close()
    [(first, _), (second, seen)] = batches
    assert (first, second) == (callers, 1) and seen < callers, "the writer went on"
    a_turn = [after - before for before, after in itertools.pairwise([0, *done_by_turn])]
    assert max(a_turn) == group_commit._WOKEN_A_TURN
    assert len([count for count in a_turn if count]) == -(-callers // group_commit._WOKEN_A_TURN)
    assert woken == list(range(callers)), "oldest first"


async def test_an_urgent_writes_caller_is_woken_in_its_commits_first_turn() -> None:
    # A run's input, queued behind a commit's worth of other runs' writes: the run's first
    # text waits for it, the others lose a turn at most.
    writer, _ = recording_writer()
    woken: list[str] = []
    others = [writer.submit(Probe()) for _ in range(3 * group_commit._WOKEN_A_TURN)]
    urgent = writer.submit(Probe(), urgent=True)
    for number, future in enumerate(others):
        future.add_done_callback(lambda _, number=number: woken.append(str(number)))
    urgent.add_done_callback(lambda _: woken.append("urgent"))
    while not urgent.done():
        await asyncio.sleep(0)
    # Woken in its commit's first turn, with the oldest of the rest.
    assert sum(future.done() for future in others) < group_commit._WOKEN_A_TURN
    await asyncio.gather(*others)
    await writer.close()
    assert woken[0] == "urgent"
    assert woken[1:] == [str(number) for number in range(len(others))], "the rest oldest first"


def logged(*seqs: int) -> AppendFrames:
    return AppendFrames("app", "u", "t", tuple(LoggedFrame(seq, b"{}", None, None) for seq in seqs))


def recording_writer() -> tuple[GroupCommit, list[Sequence[Write]]]:
    """A writer whose commits keep each batch they were given."""
    batches: list[Sequence[Write]] = []

    async def commit(writes: Sequence[Write]) -> list[object]:
        batches.append(writes)
        return [None] * len(writes)

    return GroupCommit(commit, lambda healthy: None), batches


async def test_frames_of_a_burst_are_one_write_in_their_order_after_a_few_quiet_turns() -> None:
    writer, batches = recording_writer()
    await asyncio.sleep(0)  # the writer waits for writes
    futures = []
    for seq in range(1, 4):  # a chunk a turn: the burst goes on
        futures.append(writer.submit(logged(seq), extends="t"))
        await asyncio.sleep(0)
    # While it lingers, the writer waits on one future, not resumed a turn at a time.
    waiting_on = set()
    turns = 0
    while not batches:
        waiting_on.add(writer._task._fut_waiter)  # type: ignore[attr-defined]
        await asyncio.sleep(0)
        turns += 1
    assert len(waiting_on) == 1 and None not in waiting_on
    assert turns <= group_commit._QUIET_TURNS + 1
    await asyncio.gather(*futures)
    await writer.close()
    [[write]] = batches
    assert isinstance(write, AppendFrames)
    assert [frame.seq for frame in write.frames] == [1, 2, 3]


async def test_any_other_write_ends_the_linger_at_once() -> None:
    writer, batches = recording_writer()
    frames = writer.submit(logged(1), extends="t")
    probe = writer.submit(Probe())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [len(batch) for batch in batches] == [2]
    await asyncio.gather(frames, probe)
    await writer.close()


async def test_a_clusters_notices_ride_the_next_commit_and_go_alone_only_after_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cluster's notices of changed threads (a ``ReleaseLeases`` letting go of no lease)
    need no commit of their own: queued, they wait for the next write and commit with it,
    in their order; none coming, they go alone after ``RIDE_SECONDS``. A release of a
    lease does not wait."""
    monkeypatch.setattr(group_commit, "RIDE_SECONDS", 60)  # no luck of the clock below
    writer, batches = recording_writer()
    told = ReleaseLeases("n", (), ('{"type":"changed"}',))
    first = writer.submit(told)
    for _ in range(10):
        await asyncio.sleep(0)
    assert batches == []  # waiting for a write to ride with
    probe = writer.submit(Probe())
    await asyncio.gather(first, probe)
    assert [list(batch) for batch in batches] == [[told, Probe()]]
    # Alone, it goes once its wait is over, not before.
    batches.clear()
    monkeypatch.setattr(group_commit, "RIDE_SECONDS", 0.05)
    loop = asyncio.get_running_loop()
    submitted = loop.time()
    await writer.submit(told)
    assert loop.time() - submitted >= 0.05 * 0.9
    assert [list(batch) for batch in batches] == [[told]]
    # A lease let go of is a write of its own: it goes at once.
    batches.clear()
    released = writer.submit(ReleaseLeases("n", (("t1", None),)))
    for _ in range(10):
        await asyncio.sleep(0)
    assert released.done() and len(batches) == 1
    await writer.close()


async def test_a_notice_queued_while_a_commit_is_on_waits_for_the_next_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer commits what came in meanwhile after each commit, but notices alone wait
    on: they would otherwise make a commit of their own whenever a commit was on."""
    monkeypatch.setattr(group_commit, "RIDE_SECONDS", 60)
    committing = asyncio.Event()
    go_on = asyncio.Event()
    batches: list[Sequence[Write]] = []

    async def commit(writes: Sequence[Write]) -> list[object]:
        batches.append(writes)
        committing.set()
        await go_on.wait()
        return [None] * len(writes)

    writer = GroupCommit(commit, lambda healthy: None)
    probe = writer.submit(Probe())
    await committing.wait()
    notice = writer.submit(ReleaseLeases("n", (), ("x",)))
    go_on.set()
    await probe
    for _ in range(10):
        await asyncio.sleep(0)
    assert len(batches) == 1 and not notice.done()
    await asyncio.gather(notice, writer.submit(Probe()))
    assert [len(batch) for batch in batches] == [1, 2]
    await writer.close()


async def test_streamed_text_rides_the_next_write_and_goes_alone_only_after_the_linger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streamed text sent ahead of its commit (``rides``): nobody waits for its writes, so
    they wait for the next write and commit with it, one transaction where each took its
    own; none coming, they go alone after ``_LINGER_SECONDS``, as the linger let them."""
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 60)  # no luck of the clock below
    writer, batches = recording_writer()
    chunk = writer.submit(logged(1), extends="t", rides=True)
    for _ in range(3 * group_commit._QUIET_TURNS):  # quiet turns do not end its wait
        await asyncio.sleep(0)
    assert batches == []
    final = writer.submit(Probe())  # the message's final event, which ADK waits for
    await asyncio.gather(chunk, final)
    assert [[type(write) for write in batch] for batch in batches] == [[AppendFrames, Probe]]
    # Alone, it goes once the linger's wait is over.
    batches.clear()
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 0.01)
    loop = asyncio.get_running_loop()
    submitted = loop.time()
    await writer.submit(logged(2), extends="t", rides=True)
    assert loop.time() - submitted >= 0.01 * 0.9
    assert len(batches) == 1
    await writer.close()


async def test_riding_text_goes_at_once_when_someone_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames someone waits for that join riding ones (a message's end after its chunks)
    take them along without the ride's wait, as does ``hurry`` (a reattach waiting for
    the commits of the text it was sent); a cluster's notice keeps its longer wait only
    while the text's is not shorter."""
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 60)
    monkeypatch.setattr(group_commit, "RIDE_SECONDS", 60)
    writer, batches = recording_writer()
    chunk = writer.submit(logged(1), extends="t", rides=True)
    end = writer.submit(logged(2), extends="t")
    assert end is chunk  # one write
    await end
    [[write]] = batches
    assert isinstance(write, AppendFrames) and [f.seq for f in write.frames] == [1, 2]
    batches.clear()
    riding = writer.submit(logged(3), extends="t", rides=True)
    for _ in range(3 * group_commit._QUIET_TURNS):
        await asyncio.sleep(0)
    assert not riding.done()
    writer.hurry()
    await riding
    assert len(batches) == 1
    # The earliest wait wins: text that rides after a notice does not wait the notice's.
    batches.clear()
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 0.01)
    notice = writer.submit(ReleaseLeases("n", (), ("x",)))
    text = writer.submit(logged(4), extends="t", rides=True)
    await asyncio.wait_for(asyncio.gather(notice, text), 5)
    assert [len(batch) for batch in batches] == [2]
    await writer.close()


async def test_streamed_text_after_a_pause_is_committed_at_once_not_held_for_a_ride(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streamed text rides only while the store's writes keep coming: after a pause longer
    than the ride's bound (a model at a human pace, a chunk every 10 ms) no write would come
    in time, and the ride would only end in a wake-up of the loop and a commit alone. So it
    commits after the linger's quiet turns, as any write; text right after it rides again."""
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 60)  # no luck of the clock below
    writer, batches = recording_writer()
    loop = asyncio.get_running_loop()
    writer._last_queued = loop.time() - 120  # the store's last write, two minutes ago
    chunk = writer.submit(logged(1), extends="t", rides=True)
    for _ in range(3 * group_commit._QUIET_TURNS):
        await asyncio.sleep(0)
    assert chunk.done() and len(batches) == 1
    riding = writer.submit(logged(2), extends="t", rides=True)  # a write just came
    for _ in range(3 * group_commit._QUIET_TURNS):
        await asyncio.sleep(0)
    assert not riding.done() and len(batches) == 1
    writer.hurry()
    await riding
    assert len(batches) == 2
    await writer.close()
