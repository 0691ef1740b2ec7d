"""How many bytes each thread's event log holds, as far as the one writer knows: a run's end
trims the log only when it may be past its bound.

Every run's end asks to keep the newest ``GATEWAY_CURSOR_BYTES`` (1 MiB) of its thread's
log (``SessionService.trim_frames``), and a flagship story's log is a few KB, so that trim
almost never deletes a frame; yet each was a write (its SQL reads every frame of the thread
to sum their sizes), about 8% of the SQLite writer's samples in the main process at 200
paced users with workers (py-spy, session 43). One process owns a SQLite file and every
frame of it goes through its writer, so it can know each log's size: zero for a thread it
creates, the bytes a trim kept (the trim returns them), plus every frame queued since. A
trim asked of a log known to fit is not written; it would delete nothing.

The sizes are upper bounds, never less than the log holds: frames are counted when queued,
before their commit (one that fails leaves an overcount: the next trim is written and
corrects it). A thread not known (never seen, forgotten as the oldest of ``KEPT`` threads, or a
trim's result not back yet) is trimmed as before; a deleted thread's log is empty, which
its known size (an upper bound) allows. A database other
processes write (PostgreSQL) does not use this: another process may have logged frames.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Hashable
from functools import partial

from gateway.store.writes import TrimFrames

__all__ = ["KEPT", "LogSizes"]

# Threads whose size is kept at most, the least recently used let go first (a key and an
# int each: a few hundred KiB at most).
KEPT = 4096


class LogSizes:
    """Known upper bounds of threads' log sizes in bytes, by thread."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._sizes: collections.OrderedDict[Hashable, int] = collections.OrderedDict()
        # Threads whose trim is queued: the bytes queued since (a trim's own list, so that
        # the result of an older trim never counts a newer one's frames).
        self._trimming: dict[Hashable, list[int]] = {}
        # Trims not written because the log fit (for tests and the bench).
        self.spared = 0

    def created(self, thread: Hashable) -> None:
        """The thread was just created: its log is empty."""
        self._trimming.pop(thread, None)
        self._set(thread, 0)

    def grew(self, thread: Hashable, size: int) -> None:
        """Frames of ``size`` bytes were queued for the thread's log."""
        if (since := self._trimming.get(thread)) is not None:
            since[0] += size
        if thread in self._sizes:
            self._sizes[thread] += size
            self._sizes.move_to_end(thread)

    def trim(
        self,
        thread: Hashable,
        trim: TrimFrames,
        submit: Callable[[TrimFrames], asyncio.Future[object]],
    ) -> asyncio.Future[object]:
        """Submits ``trim`` of the thread's log, unless the log is known to fit its bound
        (the trim would keep every frame); learns the size the log keeps from its result."""
        size = self._sizes.get(thread)
        if size is not None and size <= trim.max_bytes:
            self.spared += 1
            spared: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            spared.set_result(None)
            return spared
        # Unknown until the trim's result; the frames queued meanwhile count after it.
        self._sizes.pop(thread, None)
        since = self._trimming[thread] = [0]
        try:
            trimmed = submit(trim)
        except BaseException:  # the store is closed: nothing was queued
            del self._trimming[thread]
            raise
        trimmed.add_done_callback(partial(self._trimmed, thread, since))
        return trimmed

    def _trimmed(self, thread: Hashable, since: list[int], done: asyncio.Future[object]) -> None:
        if self._trimming.get(thread) is not since:
            return  # a newer trim was queued meanwhile: its result counts
        del self._trimming[thread]
        kept = None if done.cancelled() or done.exception() is not None else done.result()
        if isinstance(kept, int):  # else not known (a failed trim, a backend that does not count)
            self._set(thread, kept + since[0])

    def _set(self, thread: Hashable, size: int) -> None:
        self._sizes[thread] = size
        self._sizes.move_to_end(thread)
        while len(self._sizes) > self.kept:
            self._sizes.popitem(last=False)
