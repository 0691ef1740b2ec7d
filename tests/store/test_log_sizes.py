"""What the one writer knows of its threads' log sizes (``gateway.store.log_sizes``): a trim
is spared only for a log known to fit, and what is not known is trimmed; a database other
processes write knows no size, and sums none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from gateway.store.errors import StoreError
from gateway.store.frames import LoggedFrame
from gateway.store.log_sizes import LogSizes
from gateway.store.writes import TrimFrames
from tests.support.stores import session_store

pytestmark = pytest.mark.unit


class Writer:
    """Takes trims as the store's writer would, resolving each when the test says."""

    def __init__(self) -> None:
        self.trims: list[tuple[TrimFrames, asyncio.Future[object]]] = []

    def submit(self, trim: TrimFrames) -> asyncio.Future[object]:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.trims.append((trim, future))
        return future


def trim(thread: str, max_bytes: int) -> TrimFrames:
    return TrimFrames("app", "u", thread, max_bytes)


def frames(*sizes: int) -> list[LoggedFrame]:
    return [LoggedFrame(seq, b"x" * size) for seq, size in enumerate(sizes, 1)]


async def test_the_oldest_threads_are_let_go_of_and_then_trimmed() -> None:
    sizes, writer = LogSizes(shared=False, kept=2), Writer()
    for thread in ("a", "b", "c"):
        sizes.created(thread)
    sizes.grew("b", frames(4, 6))  # written to: the newest now, "c" the oldest
    sizes.created("d")
    for thread in ("a", "b", "c", "d"):
        sizes.trim(thread, trim(thread, 100), writer.submit)
    assert [t.session_id for t, _ in writer.trims] == ["a", "c"]
    assert sizes.spared == 2


async def test_frames_queued_while_a_trim_commits_count_after_what_it_kept() -> None:
    sizes, writer = LogSizes(shared=False), Writer()
    sizes.trim("t", trim("t", 100), writer.submit)  # not known: written
    sizes.grew("t", frames(30))  # after the trim was queued
    [(_, first)] = writer.trims
    first.set_result(80)  # what the trim kept, before those 30
    await asyncio.sleep(0)
    sizes.trim("t", trim("t", 100), writer.submit)  # 110 > 100: written
    assert len(writer.trims) == 2
    writer.trims[1][1].set_result(100)
    await asyncio.sleep(0)
    assert (await sizes.trim("t", trim("t", 100), writer.submit)) is None  # 100 fits
    assert len(writer.trims) == 2


async def test_a_trim_that_failed_or_was_overtaken_teaches_nothing() -> None:
    sizes, writer = LogSizes(shared=False), Writer()
    sizes.trim("t", trim("t", 100), writer.submit)
    sizes.trim("t", trim("t", 100), writer.submit)  # a newer trim: its result counts
    older, newer = (future for _, future in writer.trims)
    older.set_result(0)
    await asyncio.sleep(0)
    sizes.trim("t", trim("t", 100), writer.submit)  # still not known: written
    assert len(writer.trims) == 3
    newer.set_exception(RuntimeError("the commit failed"))
    writer.trims[2][1].set_exception(RuntimeError("the commit failed"))
    await asyncio.sleep(0)
    sizes.trim("t", trim("t", 100), writer.submit)
    assert len(writer.trims) == 4 and sizes.spared == 0


class Unread(list[LoggedFrame]):
    """Frames that count each time they are gone through."""

    reads = 0

    def __iter__(self) -> Iterator[LoggedFrame]:
        self.reads += 1
        return super().__iter__()


async def test_a_shared_database_trims_every_time_and_sums_no_frame() -> None:
    """Other processes log frames of its threads too (PostgreSQL): no size is known here,
    so summing the frames at every append would be for nothing."""
    sizes, writer = LogSizes(shared=True), Writer()
    sizes.created("t")
    queued = Unread(frames(10, 20))
    sizes.grew("t", queued)
    for _ in range(2):
        sizes.trim("t", trim("t", 1000), writer.submit)
    assert len(writer.trims) == 2 and sizes.spared == 0
    assert queued.reads == 0
    alone, mine = LogSizes(shared=False), Unread(frames(10, 20))
    alone.created("t")
    alone.grew("t", mine)
    assert mine.reads == 1 and alone.trim("t", trim("t", 30), writer.submit).done()
    assert len(writer.trims) == 2 and alone.spared == 1


async def test_a_store_knows_its_log_sizes_once_open_says_whether_others_write_it(db: str) -> None:
    """Before ``open`` nobody knows whether other processes write the database: no sizes,
    and a trim is refused as any write is; once open, a SQLite file is this process's alone."""
    service = session_store(db)
    assert service.log_sizes is None
    with pytest.raises(StoreError, match="not open"):
        service.trim_frames("app", "u", "t-1", 1024)
    await service.open()
    try:
        assert service.log_sizes is not None
        assert service.log_sizes.shared is db.startswith("postgres")
    finally:
        await service.close()
