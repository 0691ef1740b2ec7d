"""How many bytes each thread's event log holds, as far as the one writer knows: a run's end
trims the log only when it may be past its bound.

Every run's end asks to keep the newest ``GATEWAY_CURSOR_BYTES`` (1 MiB) of its thread's
log (``SessionService.trim_frames``), and a flagship story's log is a few KB, so that trim
almost never deletes a frame; yet each was a write whose SQL reads every frame of the
thread to sum their sizes: 4 of a story's ~155 statements, ~5% of the SQLite writer's busy
samples (py-spy of the main process, 200 paced users with workers, session 44). One process
owns a SQLite file and every frame of it goes through its writer, so it can know each log's
size: zero for a thread it creates, the bytes a trim kept (the trim returns them), plus
every frame queued since. A trim asked of a log known to fit is not written; it would
delete nothing.

The sizes are upper bounds, never less than the log holds: frames are counted when queued,
before their commit (one that fails leaves an overcount: the next trim is written and
corrects it), and a deleted thread's log is empty. A thread not known (never seen, let go
of as the oldest of ``KEPT``, or its trim's result not back yet) is trimmed as before. On a
database other processes write (PostgreSQL, ``shared``) they log frames too: no size is
known, every trim is written, and no frame's size is summed (session 45: it was, at every
append of frames, for sizes nobody read). The decision is here alone; the store
(``SessionService.trim_frames``) hands every trim to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from functools import partial

from gateway.store.frames import LoggedFrame
from gateway.store.writes import TrimFrames

__all__ = ["KEPT", "LogSizes"]

# Threads whose size is kept at most, the least recently written let go first: ~200 bytes
# each (a dict's slot, the key, the id it keeps alive), so at most ~200 KiB. At 200 paced
# users a story's thread sees ~500 others start between its two run ends.
KEPT = 1024


class LogSizes:
    """Known upper bounds of threads' log sizes in bytes, by thread; none where the database
    is ``shared`` with other processes."""

    def __init__(self, *, shared: bool, kept: int = KEPT) -> None:
        self.shared = shared
        self.kept = kept
        # Oldest first: a thread written to is put back at the end (a plain dict is smaller
        # than an OrderedDict, and the order is its insertion order).
        self._sizes: dict[Hashable, int] = {}
        # Threads whose trim is queued: the bytes queued since (a trim's own list, so that
        # the result of an older trim never counts a newer one's frames).
        self._trimming: dict[Hashable, list[int]] = {}
        # Trims not written because the log fit (for tests and the bench).
        self.spared = 0

    def created(self, thread: Hashable) -> None:
        """The thread was just created: its log is empty."""
        if self.shared:
            return  # another process may log frames of it at once
        self._trimming.pop(thread, None)
        self._set(thread, 0)

    def grew(self, thread: Hashable, frames: Iterable[LoggedFrame]) -> None:
        """``frames`` were queued for the thread's log."""
        if self.shared:
            return  # no size is kept: summing them would be for nothing
        size = sum(len(frame.data) for frame in frames)
        if (since := self._trimming.get(thread)) is not None:
            since[0] += size
        if (known := self._sizes.pop(thread, None)) is not None:
            self._sizes[thread] = known + size

    def trim(
        self,
        thread: Hashable,
        trim: TrimFrames,
        submit: Callable[[TrimFrames], asyncio.Future[object]],
    ) -> asyncio.Future[object]:
        """Submits ``trim`` of the thread's log, unless the log is known to fit its bound
        (the trim would keep every frame); learns the size the log keeps from its result."""
        if self.shared:
            return submit(trim)  # other processes log frames too: no size is known here
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
        self._sizes.pop(thread, None)
        self._sizes[thread] = size
        while len(self._sizes) > self.kept:
            del self._sizes[next(iter(self._sizes))]
