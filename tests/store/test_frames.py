"""Each thread's event log in the store (``gateway.store.frames``), on every backend.

Frames are appended through the group commit and numbered by their thread's one writer;
a read after a cursor gives those above it and where the log stands; a trim keeps the
newest that fit a size, and always the newest one; a thread's frames go with the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from google.adk.errors.session_not_found_error import SessionNotFoundError

from gateway.store import SessionService
from gateway.store.frames import LoggedFrame
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = "app"


@pytest.fixture
async def store(db: str) -> AsyncIterator[SessionService]:
    service = session_store(db)
    await service.open()
    await service.create_session(app_name=APP, user_id="u", session_id="t")
    yield service
    await service.close()


def frames(*seqs: int, size: int = 10, only_for: str | None = None) -> list[LoggedFrame]:
    return [LoggedFrame(seq, bytes([seq % 256]) * size, only_for, None) for seq in seqs]


async def test_frames_read_after_a_cursor_come_in_order_with_the_logs_bounds(
    store: SessionService,
) -> None:
    assert await store.append_frames(APP, "u", "t", frames(1, 2)) == 2
    assert await store.append_frames(APP, "u", "t", frames(3, only_for="client-a")) == 3
    log = await store.frames_after(APP, "u", "t", 1)
    assert [(f.seq, f.data, f.only_for) for f in log.frames] == [
        (2, b"\x02" * 10, None),
        (3, b"\x03" * 10, "client-a"),
    ]
    assert (log.oldest, log.head) == (1, 3)
    first = await store.frames_after(APP, "u", "t", 0, limit=2)
    assert [f.seq for f in first.frames] == [1, 2] and first.head == 3
    assert await store.log_head(APP, "u", "t") == 3
    assert (await store.open_thread(APP, "u", "t")).log_head == 3
    empty = await store.frames_after(APP, "u", "nowhere", 0)
    assert (empty.frames, empty.head) == ([], 0)


async def test_a_frames_bytes_come_back_as_written_whatever_they_hold(
    store: SessionService,
) -> None:
    """Every byte value, a NUL, quotes and backslashes, bytes that are no UTF-8 (PostgreSQL
    is sent them in binary, escaped by nobody)."""
    held = [bytes(range(256)), b'{"a": "\\"}\x00', "업무 요청".encode(), b""]
    written = [LoggedFrame(seq, data, None, None) for seq, data in enumerate(held, 1)]
    assert await store.append_frames(APP, "u", "t", written) == 4
    log = await store.frames_after(APP, "u", "t", 0)
    assert [f.data for f in log.frames] == held


async def test_frames_queued_together_cost_one_write(store: SessionService) -> None:
    commits = store.commits
    futures = [store.append_frames(APP, "u", "t", frames(seq)) for seq in range(1, 6)]
    assert await asyncio.gather(*futures) == [5] * 5
    assert store.commits == commits + 1
    assert [f.seq for f in (await store.frames_after(APP, "u", "t", 0)).frames] == [1, 2, 3, 4, 5]


async def test_a_number_the_log_holds_fails_that_write_alone(store: SessionService) -> None:
    await store.append_frames(APP, "u", "t", frames(1))
    await store.create_session(app_name=APP, user_id="u", session_id="other")
    twice, elsewhere = await asyncio.gather(
        store.append_frames(APP, "u", "t", frames(1)),
        store.append_frames(APP, "u", "other", frames(1)),
        return_exceptions=True,
    )
    assert isinstance(twice, Exception) and elsewhere == 1
    assert store.can_commit
    assert await store.log_head(APP, "u", "other") == 1


async def test_a_trim_keeps_the_newest_that_fit_and_always_the_head(store: SessionService) -> None:
    await store.append_frames(APP, "u", "t", frames(1, 2, 3, 4, size=100))
    await store.trim_frames(APP, "u", "t", 250)
    log = await store.frames_after(APP, "u", "t", 0)
    assert [f.seq for f in log.frames] == [3, 4] and log.oldest == 3
    await store.trim_frames(APP, "u", "t", 10)
    log = await store.frames_after(APP, "u", "t", 0)
    assert [f.seq for f in log.frames] == [4] and log.head == 4


async def test_a_threads_frames_go_with_it(store: SessionService) -> None:
    await store.append_frames(APP, "u", "t", frames(1, 2))
    await store.delete_session(app_name=APP, user_id="u", session_id="t")
    assert await store.log_head(APP, "u", "t") == 0
    await store.create_session(app_name=APP, user_id="u", session_id="t")
    assert await store.append_frames(APP, "u", "t", frames(1)) == 1


async def test_frames_of_a_thread_that_is_not_there_fail_alone(store: SessionService) -> None:
    nowhere, here = await asyncio.gather(
        store.append_frames(APP, "u", "nowhere", frames(1)),
        store.append_frames(APP, "u", "t", frames(1)),
        return_exceptions=True,
    )
    assert isinstance(nowhere, SessionNotFoundError) and here == 1
    assert store.can_commit
    assert await store.log_head(APP, "u", "nowhere") == 0


async def test_a_trim_of_a_log_known_to_fit_is_not_written(db: str) -> None:
    """One process writes a SQLite file, so it knows each log's size: a thread it created
    starts empty, and a run's end trims only a log that may be past the bound. On a
    database other processes write (PostgreSQL) every trim is written, as before."""
    store = session_store(db)
    await store.open()

    async def trimmed_to(size: int, max_bytes: int = 300) -> list[int]:
        """Appends a frame of ``size`` bytes (none for 0), trims, says what the log keeps."""
        if size:
            head = await store.log_head(APP, "u", "new")
            await store.append_frames(APP, "u", "new", frames(head + 1, size=size))
        commits = store.commits
        await store.trim_frames(APP, "u", "new", max_bytes)
        written.append(store.commits - commits)
        return [f.seq for f in (await store.frames_after(APP, "u", "new", 0)).frames]

    written: list[int] = []
    try:
        assert (await store.open_thread(APP, "u", "new")).created
        await store.append_frames(APP, "u", "new", frames(1, 2, size=100))
        assert await trimmed_to(100) == [1, 2, 3]  # 300 bytes: they fit
        assert await trimmed_to(100) == [2, 3, 4]  # 400: the trim is written, and trims
        assert await trimmed_to(0) == [2, 3, 4]  # it kept 300, which fit
        assert await trimmed_to(50) == [3, 4, 5]  # 350: past the bound again
        assert written == ([1, 1, 1, 1] if store.shared else [0, 1, 0, 1])
    finally:
        await store.close()


async def test_a_log_this_process_did_not_see_written_is_trimmed(db: str) -> None:
    """After a restart nothing is known of a log: its first trim is written, whatever the
    frames written before it."""
    first = session_store(db)
    await first.open()
    assert (await first.open_thread(APP, "u", "old")).created
    await first.append_frames(APP, "u", "old", frames(1, 2, 3, 4, size=100))
    await first.close()
    again = session_store(db)
    await again.open()
    try:
        await again.trim_frames(APP, "u", "old", 250)
        log = await again.frames_after(APP, "u", "old", 0)
        assert [f.seq for f in log.frames] == [3, 4]
    finally:
        await again.close()
