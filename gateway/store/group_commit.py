"""The single writer: every write queued at a moment commits in one transaction.

Writes (create, append, delete) queue up for one writer task. It takes whatever is queued,
commits it in one transaction and then wakes each caller: ``append_event`` returns only
once its event is committed, yet a run never waits on another run's model, only on the
shared commit it joined. A write that fails is undone alone (the backend's ``commit``); a
commit that fails fails every write of it.

A write nobody waits on and that needs no commit of its own rides the next one: a cluster's
notices of changed threads (``ReleaseLeases`` with no lease to let go of) are queued without
waking the writer, which takes them with the next write queued, or after ``RIDE_SECONDS``
if none comes. Alone, each cost a transaction (BEGIN, its statement, COMMIT) at low load.
Queued in order, a notice still commits after every write queued before it. Streamed text
sent ahead of its commit (its frames, its text so far: ``submit``'s ``rides``) rides the
same way, for ``_LINGER_SECONDS`` at most, the longest the linger held it before: in a
run it is followed within a millisecond or two by the message's final event, which ADK
waits for, and it took a commit of its own, one of a run's ten on the expenses example
(docs/performance.md, session 52). A write that someone waits for and that joins a riding
one (frames of the same thread, ``extends``) takes it along at once, as does ``hurry``.
It rides only while the store's writes keep coming (the last one queued less than
``_LINGER_SECONDS`` before it): after a longer pause the next write is unlikely to come
in time either, and the ride would end in a wake-up of the loop and a commit alone, later
than the linger's. A model streaming at a human pace (a chunk every 10 ms) so made the
loop sleep and wake twice as often a run, for no commit saved (session 53).

Health: ``can_commit`` says whether the writer's last commit succeeded; while it fails the
writer tries a one-page commit of its own every ``PROBE_SECONDS``, so it also learns of the
recovery when no write comes (``/ping`` is Unhealthy meanwhile).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import cast

from opentelemetry.trace import Span

from gateway import tracing
from gateway.metrics import OFF, Metrics
from gateway.store.errors import CommitFailedError, StoreError
from gateway.store.writes import (
    AppendFrames,
    Failed,
    Fenced,
    Probe,
    ReleaseLeases,
    SaveStreamedText,
    TrimFrames,
    Write,
)

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")

_MAX_BATCH = 1024
# How long the writer may wait for the rest of a burst of streamed text (see _linger),
# and the turns of the event loop without a new chunk that end a burst: ADK takes three
# turns between two chunks of one stream.
_LINGER_SECONDS = 0.005
_QUIET_TURNS = 4


# Callers of one commit woken a turn of the event loop (see _settle_in_turns).
_WOKEN_A_TURN = 16

# While commits fail, how often the writer tries one of its own (a Probe).
PROBE_SECONDS = 1.0

# How long a write that rides (``_rides``) waits for another to commit with, at most:
# thread changes, which a user's thread list hears at most every 0.5 s anyway.
RIDE_SECONDS = 0.05


@dataclasses.dataclass(slots=True)
class _Pending:
    write: Write
    committed: asyncio.Future[object]
    # Called with the write's result once committed, even if its caller was cancelled
    # meanwhile: the write is durable, so the caller's objects must show it.
    on_commit: Callable[[object], None] | None
    # A later write under the same key replaces this one while it is still queued.
    key: Hashable | None = None
    # The span of the work that queued it (traces on), for the commit's event.
    span: Span | None = None
    # Frames submitted after it under its key (``extends``), joined to it once taken:
    # joined at each submit, a burst of chunks would copy its frames once a chunk.
    followers: list[Write] = dataclasses.field(default_factory=list)
    # A client's next event waits for it (a run's input: its first text): woken first.
    urgent: bool = False
    # Nobody waits for it: it waits for the next write to commit with (``_rides``).
    rides: bool = False


class GroupCommit:
    """The single writer: commits everything queued at a moment in one transaction."""

    def __init__(
        self,
        commit: Callable[[Sequence[Write]], Awaitable[list[object]]],
        on_health: Callable[[bool], None],
    ) -> None:
        self._commit = commit  # the backend's: one transaction for a batch
        self._on_health = on_health
        # False from a failed commit until one succeeds; see _await_writes.
        self.can_commit = True
        self._failing_since = 0.0
        self._queue: collections.deque[_Pending] = collections.deque()
        # Queued writes a newer one may replace, by key; the writer drops those it takes.
        self._replaceable: dict[Hashable, _Pending] = {}
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._submitted = 0
        # The writer's wake-up for writes that ride (``_rides``), while one is set.
        self._ride: asyncio.TimerHandle | None = None
        # When the last write was queued (the loop's clock): streamed text rides only
        # while writes keep coming (``submit``).
        self._last_queued = asyncio.get_running_loop().time()
        self.commits = 0
        # Each transaction's time and writes (``gateway.metrics``); nothing unless set.
        self.metrics: Metrics = OFF
        self._task = asyncio.create_task(self._run(), name="store-group-commit")

    def submit(
        self,
        write: Write,
        on_commit: Callable[[object], None] | None = None,
        *,
        replaces: Hashable | None = None,
        extends: Hashable | None = None,
        urgent: bool = False,
        rides: bool = False,
    ) -> asyncio.Future[object]:
        """Queues a write; the future resolves once it is committed (or fails alone).

        With ``replaces``, a queued write under the same key that the writer has not taken
        yet is replaced by this one, in its place, and both callers share its future: a
        newer state supersedes an older one at no extra cost. With ``extends`` (frames of
        a thread's log), such a queued write takes this one's frames after its own: frames
        made together cost one write, and their deliveries one commit. An ``urgent``
        write's caller is woken first of its commit's (``_settle_in_turns``). A write that
        ``rides`` (streamed text sent ahead of its commit: nobody waits for it) waits for
        the next write to commit with, ``_LINGER_SECONDS`` at most; unless the write before
        it was queued longer ago than that, when it is committed as any other.
        """
        if self._closing:
            raise StoreError("the session store is closed")
        self._submitted += 1
        now = asyncio.get_running_loop().time()
        rides = rides and now - self._last_queued < _LINGER_SECONDS
        self._last_queued = now
        key = replaces if replaces is not None else extends
        if key is not None and (queued := self._replaceable.get(key)) is not None:
            if extends is None:
                queued.write = write
            else:
                queued.followers.append(write)
            if queued.rides and not rides:
                queued.rides = False  # now someone waits for it
                self._wakeup.set()
            return queued.committed
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        pending = _Pending(write, future, on_commit, key, _traced(write), urgent=urgent)
        self._queue.append(pending)
        if key is not None:
            self._replaceable[key] = pending
        self._idle.clear()
        if rides:
            pending.rides = True
            self._ride_at_most(_LINGER_SECONDS)
        elif _rides(write):
            pending.rides = True
            self._ride_at_most(RIDE_SECONDS)
        else:
            self._wakeup.set()
        return future

    def hurry(self) -> None:
        """Commits what rides now, for a caller that waits for it after all (a reattach
        waiting for the commits of the streamed text it was sent)."""
        if self._ride is not None:
            self._ride.cancel()
            self._ride_over()

    def _ride_at_most(self, seconds: float) -> None:
        """Wakes the writer ``seconds`` from now at the latest, unless it is woken already
        (the write rides with the commit it is about to make)."""
        if self._wakeup.is_set():
            return
        loop = asyncio.get_running_loop()
        if self._ride is not None:
            if self._ride.when() <= loop.time() + seconds:
                return
            self._ride.cancel()
        self._ride = loop.call_later(seconds, self._ride_over)

    def queued(self) -> int:
        """Writes waiting for the writer."""
        return len(self._queue)

    async def drained(self) -> None:
        await self._idle.wait()

    async def close(self) -> None:
        self._closing = True
        self._wakeup.set()
        await self._task

    async def _run(self) -> None:
        while True:
            await self._await_writes()
            while self._queue and not self._waits_to_ride():
                await self._linger()
                await self._commit_batch()
            if not self._queue:
                self._idle.set()
            if self._closing:
                return

    def _waits_to_ride(self) -> bool:
        """Whether every write queued rides (``_rides``), and may still wait for another."""
        return (
            self._ride is not None
            and not self._closing
            and all(pending.rides for pending in self._queue)
        )

    def _ride_over(self) -> None:
        """The writes that ride waited long enough: they go alone."""
        self._ride = None
        self._wakeup.set()

    async def _await_writes(self) -> None:
        """Waits for queued writes; while commits fail, probes the database meanwhile."""
        while not self.can_commit and not self._wakeup.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), PROBE_SECONDS)
            if not self._wakeup.is_set():
                await self._try_commit([Probe()])
        await self._wakeup.wait()
        self._wakeup.clear()

    async def _commit_batch(self) -> None:
        """Commits what is queued, up to _MAX_BATCH; a method so the batch dies with its call."""
        count = min(len(self._queue), _MAX_BATCH)
        batch = [self._queue.popleft() for _ in range(count)]
        if self._ride is not None:  # the writes that rode go now
            self._ride.cancel()
            self._ride = None
        for pending in batch:
            if pending.key is not None:
                del self._replaceable[pending.key]
            if pending.followers:
                pending.write = _followed_by(pending.write, pending.followers)
                pending.followers = []
        started = time.time_ns()
        results = await self._try_commit([pending.write for pending in batch])
        tracing.store_commit({p.span for p in batch if p.span is not None}, started, len(batch))
        if results is None:
            # Nobody's write is durable. Each caller gets an error of its own: one shared
            # would gather every caller's frames in its traceback.
            results = [
                Failed(CommitFailedError("the session store could not commit")) for _ in batch
            ]
        for pending, result in zip(batch, results, strict=True):
            # Now, for every write: the next commit may hold writes that build on it.
            if pending.on_commit is not None and not isinstance(result, Failed):
                pending.on_commit(result)
                pending.on_commit = None
        settled = list(zip(batch, results, strict=True))
        # Stable: the urgent first, each side oldest first.
        _settle_in_turns(sorted(settled, key=lambda done: not done[0].urgent))

    async def _try_commit(self, writes: list[Write]) -> list[object] | None:
        """The writes' results, committed in one transaction; None if the commit failed."""
        started = time.perf_counter()
        try:
            results = await self._commit(writes)
        except Exception as error:
            self.metrics.store_committed(time.perf_counter() - started, len(writes), ok=False)
            if self.can_commit:  # logged once an outage, not once a batch
                log.exception("the session store cannot commit; /ping is Unhealthy until it can")
                self._failing_since = time.monotonic()
                self._health(False)
            # The database thread may keep the error a while; the batch need not stay with it.
            traceback.clear_frames(error.__traceback__)
            return None
        self.commits += 1
        self.metrics.store_committed(time.perf_counter() - started, len(writes), ok=True)
        if not self.can_commit:
            seconds = time.monotonic() - self._failing_since
            log.warning("the session store commits again, after %.1f s", seconds)
            self._health(True)
        return results

    def _health(self, can_commit: bool) -> None:
        self.can_commit = can_commit
        self._on_health(can_commit)

    async def _linger(self) -> None:
        """Lets a burst of replaceable writes gather before they are committed.

        A model that streams faster than a commit takes makes a burst of chunks, each
        superseding the last. Committing the first one alone costs a commit (a hop to the
        database thread, fighting the busy loop for the GIL) for text that the next write,
        often the message's final event, stores anyway. So while only replaceable writes
        are queued, the writer waits for ``_QUIET_TURNS`` quiet turns of the loop, at most
        ``_LINGER_SECONDS``. A model that streams at a human pace leaves the loop idle
        between chunks, so each chunk waits only those few turns; any other write ends
        the wait at once.

        The turns are counted by a callback the loop calls once a turn (``_count_turn``),
        and the writer waits on its answer: a task resumed every turn would cost a step of
        the writer's coroutines each time, tens of times a run.
        """
        if len(self._queue) != len(self._replaceable):
            return
        loop = asyncio.get_running_loop()
        over: asyncio.Future[None] = loop.create_future()
        deadline = time.monotonic() + _LINGER_SECONDS
        loop.call_soon(self._count_turn, over, deadline, self._submitted, 0)
        await over

    def _count_turn(
        self, over: asyncio.Future[None], deadline: float, submitted: int, quiet_turns: int
    ) -> None:
        """One turn of ``_linger``: ends the wait, or counts the turn and looks again next."""
        if over.done():
            return  # the writer was cancelled meanwhile (the loop shuts down)
        quiet_turns = quiet_turns + 1 if self._submitted == submitted else 0
        if (
            len(self._queue) != len(self._replaceable)
            or quiet_turns >= _QUIET_TURNS
            or time.monotonic() >= deadline
        ):
            over.set_result(None)
            return
        asyncio.get_running_loop().call_soon(
            self._count_turn, over, deadline, self._submitted, quiet_turns
        )


def _rides(write: Write) -> bool:
    """Whether a write waits for the next commit rather than making one: a cluster's
    notices alone (a release of leases does not: a take elsewhere may wait for it)."""
    return isinstance(write, ReleaseLeases) and not write.threads


def _traced(write: Write) -> Span | None:
    """The span a write's commit is recorded on: the current one, except for the writes
    of each streamed chunk (its text so far, its frames), which would outnumber the rest
    of a run's trace tenfold (27 commits in the demo's greeting), and the frame log's
    trimming at a run's end, which stores none of the run's events."""
    inner = write.write if isinstance(write, Fenced) else write
    untraced = (SaveStreamedText, AppendFrames, TrimFrames)
    return None if isinstance(inner, untraced) else tracing.current_span()


def _followed_by(queued: Write, newer: list[Write]) -> Write:
    """Frames of a thread queued and newer ones as one write; the key they were submitted
    under (``extends``) names the thread and its fence, so all have the same."""
    if isinstance(queued, Fenced):
        assert all(isinstance(write, Fenced) for write in newer)
        return queued.followed_by([cast(Fenced, write) for write in newer])
    assert isinstance(queued, AppendFrames)
    assert all(isinstance(write, AppendFrames) for write in newer)
    return queued.followed_by([cast(AppendFrames, write) for write in newer])


def _settle_in_turns(settled: list[tuple[_Pending, object]]) -> None:
    """Wakes a commit's callers ``_WOKEN_A_TURN`` a turn of the event loop, in order.

    Each caller woken runs its run's work up to its next wait (ADK's next step, a chunk
    translated and sent) in the next turn. A commit of hundreds of runs' writes woken at
    once makes one turn of all that work, and whatever else is ready (a frame just read,
    an input's RUN_STARTED to write) waits behind all of it; woken a few at a time, it
    waits behind a few. The writer is not held meanwhile: the next commit goes on.

    The order puts the urgent first (``GroupCommit.submit``): a run's input, whose commit
    the run's first text waits for. At 200 paced users a commit held 20-100 writes and the
    input was past the first 16 in 45% of its commits, a turn later for each 16 before it;
    the rest (frames, streamed text, other events) lose a turn for each 16 inputs in their
    commit.
    """
    for pending, result in settled[:_WOKEN_A_TURN]:
        _settle(pending, result)
    if len(settled) > _WOKEN_A_TURN:
        asyncio.get_running_loop().call_soon(_settle_in_turns, settled[_WOKEN_A_TURN:])


def _settle(pending: _Pending, result: object) -> None:
    if isinstance(result, Failed):
        # The frames of the finished commit hold the whole batch, and the error holds them:
        # clear them, so the batch goes now and not at the next full collection.
        traceback.clear_frames(result.error.__traceback__)
        if not pending.committed.done():
            pending.committed.set_exception(result.error)
        return
    if pending.on_commit is not None:
        pending.on_commit(result)
    if not pending.committed.done():
        pending.committed.set_result(result)
