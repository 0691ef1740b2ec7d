"""A stand-in for the hub a cluster calls back (``Heard``), and a wait for what it hears."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable

from gateway.cluster.postgres import PostgresCluster
from gateway.store.leases import DeadLease
from tests.support.budgets import eventually


@dataclasses.dataclass
class Heard:
    """A fake hub: what the cluster told it."""

    cancels: list[tuple[str, str, str | None]] = dataclasses.field(default_factory=list)
    commits: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    changes: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    dead: list[DeadLease] = dataclasses.field(default_factory=list)
    losses: int = 0
    # The users whose threads it says it has watchers of (``Members.watched``).
    watching: set[str] = dataclasses.field(default_factory=set)
    # What take_over does with a dead lease, if anything.
    on_dead: Callable[[DeadLease], object] | None = None

    def cancel_requested(self, thread_id: str, user_id: str, run_id: str | None = None) -> None:
        self.cancels.append((thread_id, user_id, run_id))

    def committed(self, thread_id: str, seq: int) -> None:
        self.commits.append((thread_id, seq))

    def watched(self) -> set[str]:
        return set(self.watching)

    def thread_changed(self, user_id: str, thread_id: str, change: str) -> None:
        self.changes.append((user_id, thread_id, change))

    async def take_over(self, lease: DeadLease) -> None:
        self.dead.append(lease)
        if self.on_dead is not None:
            result = self.on_dead(lease)
            if asyncio.iscoroutine(result):
                await result

    def lost(self) -> None:
        self.losses += 1


async def until(condition: Callable[[], object], seconds: float = 5) -> None:
    await eventually(condition, seconds, what="the cluster did not get there in time", every=0.01)


@contextlib.asynccontextmanager
async def joined(
    url: str, count: int, *, check_seconds: float
) -> AsyncIterator[list[tuple[PostgresCluster, Heard]]]:
    """``count`` processes of a cluster on ``url``, each with the fake hub it tells."""
    nodes = [
        (PostgresCluster(url, lease_seconds=30, check_seconds=check_seconds), Heard())
        for _ in range(count)
    ]
    try:
        for cluster, heard in nodes:
            await cluster.start(heard)
        yield nodes
    finally:
        for cluster, _ in nodes:
            with contextlib.suppress(Exception):
                await cluster.close()
