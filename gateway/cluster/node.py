"""What the hub asks of the cluster it runs in, and the cluster of one process (SQLite).

The hub has one code path: before a run it takes the thread's lease, when the run's last
event is out it releases it, and a cancel for a run it does not hold it sends on. (A commit of
a thread's log tells the other processes by itself: on PostgreSQL the statement appending the
frames sends the notice, ``gateway.store.postgres.notify``.) On one process every answer is
local: the hub's own table of threads already allows one run a thread, so a lease is always
granted and nothing is sent anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from gateway.store.leases import DeadLease, Fence, Held, Taken
from gateway.store.writes import ReleaseLeases


class Members(Protocol):
    """What a process does for the rest of the cluster (the hub implements it)."""

    def cancel_requested(self, thread_id: str, user_id: str, run_id: str | None = None) -> None:
        """Another process was asked to cancel the run this one holds (``run_id``, if named)."""

    def committed(self, thread_id: str, seq: int) -> None:
        """The thread's log holds frames up to ``seq``, made by another process that runs
        it: told to the processes that watch the thread's user (``Cluster.watch``), not to
        its own (but of the frames closing a dead process's run,
        ``gateway.store.postgres.notify``)."""

    async def take_over(self, lease: DeadLease) -> None:
        """The holder of ``lease`` died: close the run it cut off (the lease is free to take)."""

    def lost(self) -> None:
        """This process can no longer show it is alive: others may take its threads, so
        its runs must stop."""

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        """A thread of ``user_id`` changed on another process (``thread_news``)."""

    def watched(self) -> set[str]:
        """The users whose threads this process has watchers of, or runs, or whose
        connections here hear of their threads' changes, now (``Cluster.watch``)."""


class Cluster(Protocol):
    node_id: str
    # Whether this process is the only one that runs threads: no run goes on elsewhere.
    alone: bool
    # Whether this process reaches the cluster's database now, as its last look found.
    reachable: bool
    # Told whenever ``reachable`` changes.
    health_listeners: list[Callable[[bool], None]]

    async def start(self, members: Members) -> None:
        """Joins the cluster; from now on ``members`` hears what other processes send."""

    async def close(self) -> None:
        """Leaves: the leases it holds are released."""

    async def take(self, thread_id: str, user_id: str, run_id: str) -> Taken | None:
        """The thread's lease for a run of this process; None while another process holds it."""

    async def watch(self, user_id: str) -> None:
        """Watchers of the user's threads are here, or about to be (a run, a reattach):
        from its return on, the frames of the user's threads that other processes store
        are told to this one (``Members.committed``), and only the processes that watch a
        thread's user are told of it, as are their thread changes (``thread_changed``). A
        user is let go of once ``Members.watched`` has not named it for a while."""

    def watch_soon(self, user_id: str) -> None:
        """``watch``, in the background: for a user's connection that hears of their
        threads' changes (a change missed meanwhile is told again by the thread's next)."""

    def release(
        self, thread_id: str, after: asyncio.Future[object] | None = None
    ) -> asyncio.Future[object]:
        """Lets go of the thread's lease, in the background after what was asked before,
        and not before ``after`` (the store's commit of the run's last frames) is done;
        the future is done once another process may take it (or the release failed)."""

    async def released(self, thread_id: str) -> None:
        """Returns when the thread's lease may be free: on its release, or after a while
        (a holder that dies sends nothing), so a caller tries ``take`` again."""

    async def cancel(self, thread_id: str, user_id: str, run_id: str | None = None) -> bool:
        """Asks the process running the thread to cancel its run; False when none runs
        one of this user's (or, with ``run_id``, that one)."""

    async def runs_elsewhere(self, thread_id: str) -> bool:
        """Whether another live process holds the thread's lease: its run goes on there."""

    async def held_elsewhere(self, thread_id: str) -> Held | None:
        """The thread's lease, if another live process holds it: for whose run, and which
        (a copy of an input finds its own run there, ``gateway.hub.dedupe``)."""

    def fence(self, thread_id: str) -> Fence | None:
        """The lease this process holds the thread under, which its writes of the thread
        carry (``gateway.store.leases``); None if it holds none, or nothing is fenced."""

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        """A thread of ``user_id`` changed here: the other processes are told, in the
        background (a change they miss is told again by the thread's next one)."""

    def commit_with(self, submit: Callable[[ReleaseLeases], asyncio.Future[object]]) -> None:
        """Lets the cluster's releases and messages go in the store's transactions
        (``SessionService.submit_cluster``), behind the writes queued before them."""


class SingleNode:
    """The cluster of one process: every lease granted, nothing sent."""

    node_id = "local"
    alone = True
    reachable = True

    def __init__(self) -> None:
        self.health_listeners: list[Callable[[bool], None]] = []

    async def start(self, members: Members) -> None:
        pass

    async def close(self) -> None:
        pass

    async def take(self, thread_id: str, user_id: str, run_id: str) -> Taken | None:
        return Taken(thread_id, None)

    async def watch(self, user_id: str) -> None:
        pass

    def watch_soon(self, user_id: str) -> None:
        pass

    def release(
        self, thread_id: str, after: asyncio.Future[object] | None = None
    ) -> asyncio.Future[object]:
        return settled()

    async def released(self, thread_id: str) -> None:
        pass

    async def cancel(self, thread_id: str, user_id: str, run_id: str | None = None) -> bool:
        return False

    async def runs_elsewhere(self, thread_id: str) -> bool:
        return False

    async def held_elsewhere(self, thread_id: str) -> Held | None:
        return None

    def fence(self, thread_id: str) -> Fence | None:
        return None

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        pass

    def commit_with(self, submit: Callable[[ReleaseLeases], asyncio.Future[object]]) -> None:
        pass


def settled() -> asyncio.Future[object]:
    """A future that is done already: a release with nothing to wait for."""
    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    future.set_result(None)
    return future
