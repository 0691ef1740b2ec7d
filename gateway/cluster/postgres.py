"""The cluster on PostgreSQL: leases in a table, messages over LISTEN/NOTIFY.

A process has two connections. Its *listening* connection LISTENs on the cluster's channel,
and its backend is the process's proof of life: while it is in ``pg_stat_activity`` the
process's leases stand, and once it is gone (the process was killed) any other process may
take them at once, without waiting for the expiry. Its *working* connection takes and renews
leases and sends messages, one statement at a time in the order they were asked. Leases let
go of and thread changes go to the store's writer (``commit_with``): a release in the commit
of its run's last frames, and a batch's in one statement. Without a writer, or should it
fail to commit one, they go on the working connection, those queued meanwhile in one
(``_send``). The thread changes made here within ``CHANGES_SECONDS`` are one notice
(``messages.ThreadsChanged``), and go with a release queued meanwhile: every process hears
every notice, and each costs its event loop.

The frames a run stores are told to the processes that watch the thread's user
(``watch``: a run's claim or a reattach names the user, once, in ``gateway_node_users``);
a user neither asked for nor watched by the hub for ``UNWATCHED_SECONDS`` is let go of by
the keeper.

Every ``check_seconds`` a keeper looks for dead leases of other processes (one indexed query,
at most ``SWEEP_LIMIT`` rows) and hands each to the hub, which takes it, closes the cut-off
run and releases it; every ``lease_seconds / 3`` it renews this process's leases. Should it
fail to renew for a whole ``lease_seconds``, or lose its listening connection, other
processes may already have taken its threads: it tells the hub (``Members.lost``), which
stops its runs rather than run a thread twice. Whether it stopped in time is not left to
its clock: each lease it takes comes with an epoch, which every write it makes of the thread
carries (``fence``), and the database refuses a write whose epoch is no longer the thread's.

Each keeper round is also this process's look at its database: ``reachable`` says whether
the last one succeeded, and ``health_listeners`` hear when that changes (``/ping`` does).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import psycopg
from psycopg.rows import TupleRow

from gateway.cluster import hearing, messages
from gateway.cluster.messages import (
    Cancel,
    Change,
    Committed,
    Released,
    ThreadChanged,
    ThreadsChanged,
    threads_changed,
)
from gateway.cluster.node import Members, settled
from gateway.store.errors import StoreError
from gateway.store.leases import Fence, Held, Taken
from gateway.store.postgres import leases, notify
from gateway.store.postgres.connection import CONNECT_SECONDS, said
from gateway.store.postgres.cursors import AsyncKeptCursors
from gateway.store.urls import described
from gateway.store.writes import ReleaseLeases

log = logging.getLogger("gateway.cluster")

T = TypeVar("T")

# Dead leases one sweep hands over at most; the next sweep takes the rest.
SWEEP_LIMIT = 16
# How long a thread change made here waits for others to go in one notice with it: a
# user's thread list hears of changes at most every 0.5 s anyway (``gateway.hub.thread_news``).
CHANGES_SECONDS = 0.1
# How long a user watched here (``watch``) stays named after the hub last asked for it or
# named it (``Members.watched``): naming one again locks the users' table, so a user whose
# tab reloads is not let go of and named again each time.
UNWATCHED_SECONDS = 60.0


def _unreachable(error: psycopg.Error, url: str) -> StoreError:
    log.warning("the cluster's database %s cannot be used: %s", described(url), said(error, url))
    return StoreError("the cluster's PostgreSQL database cannot be reached")


class PostgresCluster:
    """This process as a member of the cluster of gateway processes on one database."""

    def __init__(self, url: str, *, lease_seconds: float = 10.0, check_seconds: float = 1.0):
        if lease_seconds <= 0 or check_seconds <= 0:
            raise ValueError("lease_seconds and check_seconds must be more than 0")
        self.url = url
        self.lease_seconds = lease_seconds
        self.check_seconds = check_seconds
        self.node_id = uuid.uuid4().hex
        self.alone = False
        self._members: Members | None = None
        self._listening: psycopg.AsyncConnection[TupleRow] | None = None
        self._working: psycopg.AsyncConnection[TupleRow] | None = None
        # The working connection, one caller at a time, first come first served.
        self._turn = asyncio.Lock()
        # Takes not yet released, by thread: the lease goes when the last is released.
        self._holding: collections.Counter[str] = collections.Counter()
        # The lease each held thread is held under: its writes' fencing token.
        self._fences: dict[str, Fence] = {}
        self.reachable = True
        self.health_listeners: list[Callable[[bool], None]] = []
        # Callers waiting for a thread's lease to be released elsewhere.
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}
        # Leases let go of here not yet released, each with its callers' futures, and
        # changes to threads made here not yet told to the others: sent together (``_send``).
        self._releasing: dict[str, list[asyncio.Future[object]]] = {}
        self._changes: list[Change] = []
        # The end of the changes' wait (``CHANGES_SECONDS``), while one is set.
        self._telling: asyncio.TimerHandle | None = None
        self._sending: asyncio.Task[None] | None = None
        # The store's writer, when the hub lends it (``commit_with``): releases and thread
        # changes then go in its transactions, and each release not yet committed there is
        # here, by thread, for a take of the thread to wait for.
        self._submit: Callable[[ReleaseLeases], asyncio.Future[object]] | None = None
        self._committing: dict[str, asyncio.Future[object]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._renewed_at = time.monotonic()
        self._lost = False
        self._closed = False
        # The notices this process heard, by kind: what every other process's work costs it.
        self.notices: collections.Counter[str] = collections.Counter()
        # The users named as watched here (``watch``), and when last asked for or seen watched;
        # those asked for and not yet named, each with its naming; what names them.
        self._watched: dict[str, float] = {}
        self._naming: dict[str, asyncio.Future[None]] = {}
        self._namer: asyncio.Task[None] | None = None

    # --- joining and leaving -------------------------------------------------------------

    async def start(self, members: Members) -> None:
        self._members = members
        try:
            await self._work(leases.create_schema)
            await self._listen()
            # The rows of processes killed (their backend gone) that hold no lease any more
            # go as one joins: nothing reads them again, and a cluster restarted often
            # would keep every one. One delete, beside the others' work, not in its way.
            if forgotten := await self._work(leases.forget_dead_nodes):
                log.info("forgot %d processes of the cluster that are gone", forgotten)
        except psycopg.Error as error:
            await self.close()
            raise _unreachable(error, self.url) from None
        # Its leases stand from here: the first renewal is due a third of their time on.
        self._renewed_at = time.monotonic()
        self._spawn(self._hear(), "cluster listener")
        self._spawn(self._keep(), "cluster keeper")
        log.info("joined the cluster as node %s", self.node_id)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._telling is not None:  # the changes not yet told go as it leaves
            self._telling.cancel()
            self._telling = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(psycopg.Error, StoreError):
            await self._work(self._leave)
        for conn in (self._listening, self._working):
            if conn is not None:
                await conn.close()
        self._listening = self._working = None

    async def _leave(self, conn: psycopg.AsyncConnection[TupleRow]) -> None:
        # Waiters for its threads try again at once, and find their holder dead.
        async with conn.transaction():
            threads = await leases.forget_node(conn, self.node_id)
            changes, self._changes = self._changes, []
            released = _payloads(Released(thread) for thread in threads)
            await notify.notify(conn, [*released, *threads_changed(self.node_id, changes)])

    async def _listen(self) -> None:
        conn = await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
        )
        try:
            # What arrives during its statements psycopg reads; the rest, ``hearing.hear``.
            conn.add_notify_handler(lambda notice: self._hear_one(notice.payload))
            await notify.listen(conn, self.node_id)
            await leases.register_node(conn, self.node_id)
        except BaseException:
            await conn.close()  # each failed try of ``_hear``'s would keep a backend open
            raise
        self._listening = conn

    # --- leases --------------------------------------------------------------------------

    async def take(self, thread_id: str, user_id: str, run_id: str) -> Taken | None:
        if (releasing := self._committing.get(thread_id)) is not None:
            # Once in the writer's queue a release cannot be called back: taken before it
            # commits, the lease would go from under the new run.
            await asyncio.shield(releasing)
        try:
            taken = await self._work(
                lambda conn: leases.take(
                    conn,
                    thread_id=thread_id,
                    node_id=self.node_id,
                    user_id=user_id,
                    run_id=run_id,
                    ttl=self.lease_seconds,
                )
            )
        except psycopg.Error as error:
            raise _unreachable(error, self.url) from None
        if taken is not None:
            self._holding[thread_id] += 1
            if taken.epoch is not None:
                self._fences[thread_id] = Fence(thread_id, taken.epoch)
        return taken

    def fence(self, thread_id: str) -> Fence | None:
        return self._fences.get(thread_id)

    # --- the users watched here ----------------------------------------------------------

    async def watch(self, user_id: str) -> None:
        if user_id in self._watched:
            self._watched[user_id] = time.monotonic()
            return
        if self._closed:
            raise StoreError("the cluster is closing")
        await asyncio.shield(self._ask(user_id))

    def watch_soon(self, user_id: str) -> None:
        if user_id in self._watched:
            self._watched[user_id] = time.monotonic()
        elif not self._closed:
            self._ask(user_id)

    def _ask(self, user_id: str) -> asyncio.Future[None]:
        """The naming of the user (``_name_asked``): done once it is named, or failed with
        ``StoreError``."""
        if (named := self._naming.get(user_id)) is None:
            named = self._naming[user_id] = asyncio.get_running_loop().create_future()
            named.add_done_callback(_retrieved)  # a caller that stopped waiting is not told
            if self._namer is None:
                self._namer = self._spawn(self._name_asked(), "naming of watched users")
        return named

    async def _name_asked(self) -> None:
        """Names the users asked for (``watch``), those asked for together in one insert:
        each locks the table every process's batches read, so a ramp of new users costs a
        lock a round, not one a user."""
        asked: list[str] = []

        async def name(conn: psycopg.AsyncConnection[TupleRow]) -> bool:
            asked[:] = self._naming  # at its turn: every user asked for until then
            return await leases.watch_users(conn, self.node_id, asked)

        try:
            while self._naming:
                try:
                    await leases.until_locked(lambda: self._work(name))
                except psycopg.Error as error:  # every user asked for waits in vain
                    self._settle_naming(list(self._naming), _unreachable(error, self.url))
                    continue
                now = time.monotonic()
                for user in asked:
                    self._watched[user] = now
                self._settle_naming(asked)
        finally:
            self._namer = None
            self._settle_naming(list(self._naming), StoreError("the cluster is closing"))

    def _settle_naming(self, users: list[str], error: StoreError | None = None) -> None:
        for user in users:
            named = self._naming.pop(user, None)
            if named is not None and not named.done():
                if error is None:
                    named.set_result(None)
                else:
                    named.set_exception(error)

    async def _name(self, users: list[str]) -> None:
        """Names ``users`` as watched here (``leases.watch_users``), trying again while the
        table's lock is not had: between tries, a take or release goes first."""
        await leases.until_locked(
            lambda: self._work(lambda conn: leases.watch_users(conn, self.node_id, users))
        )

    async def _unwatch_idle(self) -> None:
        """Lets go of the users neither asked for (``watch``) nor watched by the hub
        (``Members.watched``) for ``UNWATCHED_SECONDS``: the frames of their threads are
        told to this process no more."""
        members = self._members
        if members is None or not any(map(self._idle, self._watched.values())):
            return
        watched = members.watched()
        now = time.monotonic()
        for user in watched & self._watched.keys():  # looked at again in a while
            self._watched[user] = now

        async def unwatch(conn: psycopg.AsyncConnection[TupleRow]) -> None:
            # At its turn: a user asked for meanwhile stays, and one asked for from now on
            # is named again after this.
            watched = members.watched()
            idle = [u for u, at in self._watched.items() if self._idle(at) and u not in watched]
            for user in idle:
                del self._watched[user]
            if idle:
                await leases.unwatch_users(conn, self.node_id, idle)

        await self._work(unwatch)

    @staticmethod
    def _idle(asked_at: float) -> bool:
        return time.monotonic() - asked_at > UNWATCHED_SECONDS

    def commit_with(self, submit: Callable[[ReleaseLeases], asyncio.Future[object]]) -> None:
        self._submit = submit

    def release(
        self, thread_id: str, after: asyncio.Future[object] | None = None
    ) -> asyncio.Future[object]:
        self._holding[thread_id] -= 1
        if self._holding[thread_id] > 0:
            return settled()
        del self._holding[thread_id]
        self._fences.pop(thread_id, None)
        released: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        notice = messages.encoded(Released(thread_id))
        if committed := self._submitted_with_changes(((thread_id, notice),)):
            # Behind ``after`` in the writer's queue: in its transaction, or a later one.
            self._committing[thread_id] = released
            committed.add_done_callback(partial(self._committed, thread_id, released))
            return released
        if after is None or after.done():
            self._release_here(thread_id, released)
        else:
            after.add_done_callback(lambda _: self._release_here(thread_id, released))
        return released

    def _release_here(self, thread_id: str, released: asyncio.Future[object]) -> None:
        """The release on the working connection, with what else is queued (``_send``)."""
        self._releasing.setdefault(thread_id, []).append(released)
        self._send_soon()

    def _committed(
        self, thread_id: str, released: asyncio.Future[object], committed: asyncio.Future[object]
    ) -> None:
        """A release sent through the writer is done; if it failed, it is tried again on
        the working connection (a take of the thread waits for that too)."""
        if not committed.cancelled() and committed.exception() is None:
            if self._committing.get(thread_id) is released:
                del self._committing[thread_id]
            if not released.done():
                released.set_result(None)
            return
        released.add_done_callback(lambda _: self._forget_committing(thread_id, released))
        self._release_here(thread_id, released)

    def _forget_committing(self, thread_id: str, released: asyncio.Future[object]) -> None:
        if self._committing.get(thread_id) is released:
            del self._committing[thread_id]

    def _submitted_with_changes(
        self, threads: tuple[tuple[str, str | None], ...] = ()
    ) -> asyncio.Future[object] | None:
        """The release of ``threads`` queued in the store's writer with the thread changes
        made here not yet told; None without a writer, and the changes wait on."""
        told = tuple(threads_changed(self.node_id, self._changes))
        committed = self._submitted(ReleaseLeases(self.node_id, threads, told))
        if committed is not None and self._changes:
            self._changes = []
            if self._telling is not None:
                self._telling.cancel()
                self._telling = None
            committed.add_done_callback(_told)
        return committed

    def _submitted(self, write: ReleaseLeases) -> asyncio.Future[object] | None:
        """The write queued in the store's writer, or None without one (or a closed one)."""
        if self._submit is None or self._closed:
            return None
        try:
            return self._submit(write)
        except StoreError:
            return None

    async def released(self, thread_id: str) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(thread_id, []).append(waiter)
        # Its holder tells of the release only if asked; in a task of its own, so that a
        # caller that stops waiting never cuts a statement short on the working connection.
        self._spawn(self._want(thread_id, waiter), f"want of {thread_id}")
        try:
            await asyncio.wait_for(waiter, self.check_seconds)
        except TimeoutError:
            pass
        finally:
            waiting = self._waiting.get(thread_id, [])
            if waiter in waiting:
                waiting.remove(waiter)
            if not waiting:
                self._waiting.pop(thread_id, None)

    async def _want(self, thread_id: str, waiter: asyncio.Future[None]) -> None:
        try:
            held = await self._work(lambda conn: leases.want(conn, thread_id))
        except psycopg.Error:
            return  # the wait runs out instead, and the caller tries again
        if not held and not waiter.done():
            waiter.set_result(None)  # released already: the caller tries again at once

    # --- messages ------------------------------------------------------------------------

    async def cancel(self, thread_id: str, user_id: str, run_id: str | None = None) -> bool:
        try:
            held = await self._work(lambda conn: leases.held(conn, thread_id))
            if held is None or held.user_id != user_id or run_id not in (None, held.run_id):
                return False
            sent = _payloads([Cancel(held.holder, thread_id, user_id, run_id)])
            await self._work(lambda conn: notify.notify(conn, sent))
        except psycopg.Error as error:
            raise _unreachable(error, self.url) from None
        return True

    async def runs_elsewhere(self, thread_id: str) -> bool:
        return await self.held_elsewhere(thread_id) is not None

    async def held_elsewhere(self, thread_id: str) -> Held | None:
        try:
            held = await self._work(lambda conn: leases.held(conn, thread_id))
        except psycopg.Error as error:
            raise _unreachable(error, self.url) from None
        return held if held is not None and held.holder != self.node_id else None

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        self._changes.append((user_id, thread_id, change))
        if self._telling is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._telling = loop.call_later(CHANGES_SECONDS, self._tell)

    def _tell(self) -> None:
        """The thread changes made here meanwhile go to the others, in one notice: in the
        store's next commit, or, without a writer, on the working connection."""
        self._telling = None
        if self._changes and self._submitted_with_changes() is None:
            self._send_soon()

    def _send_soon(self) -> None:
        if self._sending is None:
            self._sending = self._spawn(self._send(), "releases and thread changes")

    async def _send(self) -> None:
        """Releases the leases let go of and tells the thread changes queued, one statement
        for what met in the queue (``leases.release``), where each took one of its own:
        at a run's end its lease goes and its thread changes (its preview, its title)
        together. A lease not released, the statement failing, runs out instead (a
        waiter's next try takes it); changes not told are missed by their listeners
        elsewhere (a thread's next change tells all)."""
        taken: dict[str, list[asyncio.Future[object]]] = {}

        async def send(conn: psycopg.AsyncConnection[TupleRow]) -> None:
            nonlocal taken
            taken, self._releasing = self._releasing, {}
            changes, self._changes = self._changes, []
            if self._telling is not None:  # they go now
                self._telling.cancel()
                self._telling = None
            # At its turn: a lease taken again meanwhile (another run here) is kept.
            threads = [
                (thread, messages.encoded(Released(thread)))
                for thread in taken
                if not self._holding[thread]
            ]
            if threads or changes:
                told = threads_changed(self.node_id, changes)
                await leases.release(conn, node_id=self.node_id, threads=threads, told=told)

        try:
            while self._releasing or self._changes:
                try:
                    await self._work(send)
                except (psycopg.Error, StoreError) as error:
                    text = said(error, self.url) if isinstance(error, psycopg.Error) else error
                    log.warning("leases not released, thread changes not told: %s", text)
                    for thread, futures in self._releasing.items():  # queued meanwhile
                        taken.setdefault(thread, []).extend(futures)
                    self._releasing = {}
                    self._changes.clear()
                _settle(taken)
                taken = {}
        finally:
            self._sending = None
            _settle(taken)
            if self._closed:  # its leases go with the node (``_leave``)
                _settle(self._releasing)

    def _hear_one(self, payload: str) -> None:
        message = messages.decoded(payload)
        members = self._members
        if message is None or members is None:
            return
        self.notices[type(message).__name__] += 1
        match message:
            case Committed(thread=thread, seq=seq):
                members.committed(thread, seq)
            case Cancel(to=to, thread=thread, user=user, run=run) if to == self.node_id:
                members.cancel_requested(thread, user, run)
            case ThreadsChanged(origin=origin, changes=changes) if origin != self.node_id:
                for user, thread, change in changes:
                    members.thread_changed(user, thread, change)
            case ThreadChanged(origin=origin, user=user, thread=thread, change=change):
                if origin != self.node_id:
                    members.thread_changed(user, thread, change)
            case Released(thread=thread):
                for waiter in self._waiting.pop(thread, []):
                    if not waiter.done():
                        waiter.set_result(None)

    # --- the background ------------------------------------------------------------------

    async def _hear(self) -> None:
        while True:
            conn = self._listening
            try:
                if conn is None:
                    await self._listen()
                    self._lost = False
                    log.warning("node %s is listening again", self.node_id)
                    # Its rows may have been forgotten meanwhile (``leases.forget_dead_nodes``).
                    if users := list(self._watched):
                        await self._name(users)
                    continue
                await hearing.hear(conn, self._hear_one)
            except psycopg.Error as error:
                if self._listening is not None:
                    log.error(
                        "node %s lost its listening connection: %s",
                        self.node_id,
                        said(error, self.url),
                    )
                    with contextlib.suppress(psycopg.Error):
                        await self._listening.close()
                    self._listening = None
                    self._lose()
                await asyncio.sleep(self.check_seconds)

    async def _keep(self) -> None:
        renew_every = self.lease_seconds / 3
        next_renewal = time.monotonic() + renew_every
        while True:
            await asyncio.sleep(min(self.check_seconds, renew_every))
            try:
                if time.monotonic() >= next_renewal:
                    await self._work(
                        lambda conn: leases.renew(
                            conn, node_id=self.node_id, threads=self._kept(), ttl=self.lease_seconds
                        )
                    )
                    self._renewed_at = time.monotonic()
                    if self._listening is not None:
                        self._lost = False
                    next_renewal = self._renewed_at + renew_every
                await self._sweep()
                await self._unwatch_idle()
                self._reach(True)
            except psycopg.Error as error:
                log.warning(
                    "node %s cannot reach the database: %s", self.node_id, said(error, self.url)
                )
                self._reach(False)
            if time.monotonic() - self._renewed_at > self.lease_seconds and self._holding:
                self._lose()

    def _kept(self) -> list[str]:
        """The leases the heartbeat renews, read at its turn: those held here, and those let
        go of whose release is still on its way (in the writer's queue, or this connection's);
        not one whose release failed, which runs out instead of being held forever."""
        return [*self._holding, *self._committing, *self._releasing]

    async def _sweep(self) -> None:
        found = await self._work(lambda conn: leases.dead(conn, self.node_id, SWEEP_LIMIT))
        members = self._members
        for lease in found:
            if members is None or lease.thread_id in self._holding:
                continue
            try:
                await members.take_over(lease)
            except Exception:  # one thread's failure must not stop the sweeps of the rest
                log.exception("taking over thread %s failed", lease.thread_id)

    def _reach(self, reachable: bool) -> None:
        if reachable == self.reachable:
            return
        self.reachable = reachable
        if reachable:
            log.warning("node %s reaches the database again", self.node_id)
        for listener in self.health_listeners:
            listener(reachable)

    def _lose(self) -> None:
        if self._lost:
            return
        self._lost = True
        log.error(
            "node %s may have lost its leases to other processes; its runs stop", self.node_id
        )
        if self._members is not None:
            self._members.lost()

    async def _work(self, fn: Callable[[psycopg.AsyncConnection[TupleRow]], Awaitable[T]]) -> T:
        """``fn`` on the working connection (connected again if it broke), in turn."""
        async with self._turn:
            if self._working is None or self._working.closed:
                self._working = await AsyncKeptCursors.connect(
                    self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
                )
            return await fn(self._working)

    def _spawn(self, work: Awaitable[None], name: str) -> asyncio.Task[None]:
        async def run() -> None:
            await work

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _told(committed: asyncio.Future[object]) -> None:
    """A thread change sent through the writer: one its commit failed is missed elsewhere
    (the thread's next change tells all), as on the working connection (``_send``)."""
    if not committed.cancelled() and (error := committed.exception()) is not None:
        log.warning("thread changes not told: %s", error)


def _retrieved(named: asyncio.Future[None]) -> None:
    if not named.cancelled():
        named.exception()


def _settle(waiting: dict[str, list[asyncio.Future[object]]]) -> None:
    for futures in waiting.values():
        for future in futures:
            if not future.done():
                future.set_result(None)


def _payloads(batch: collections.abc.Iterable[messages.Message]) -> list[str]:
    return [payload for message in batch if (payload := messages.encoded(message)) is not None]
