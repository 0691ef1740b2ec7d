"""A worker process's stand-in for tests of the pool (``gateway.adk.workers.pool``): it
speaks the worker's side of the pipe over the pool's own socket, so that a test can send
what a real worker would only send by a bug, or read what the main process sent it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, cast

from gateway.adk.workers import WorkerPool
from gateway.adk.workers.channel import Channel, ChannelClosed
from gateway.adk.workers.messages import FromMain, Hello, Start, Stop
from gateway.audit.records import AuditRecord
from tests.support.budgets import scaled

WAIT = scaled(5.0)


class ScriptedWorker:
    """A worker process's stand-in: says Hello on the pool's socket, records what the
    main process sends, and sends what the test tells it to."""

    def __init__(self) -> None:
        self.spawned = 0
        self.started: asyncio.Queue[Start] = asyncio.Queue()
        self.stopped: list[int] = []
        self.channel: Channel[FromMain] | None = None
        self._serving: asyncio.Task[None] | None = None
        # Its sentinel, as a process's: readable once the stand-in has stopped serving.
        self._sentinel, self._alive = os.pipe()

    # The pool's Spawn: this object is the process as well.
    def __call__(self, path: str, index: int) -> ScriptedWorker:
        self.spawned += 1
        self._serving = asyncio.get_running_loop().create_task(self._serve(path, index))
        return self

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def sentinel(self) -> int:
        return self._sentinel

    @property
    def exitcode(self) -> int | None:
        return None if self.is_alive() else 0

    def is_alive(self) -> bool:
        return self._serving is not None and not self._serving.done()

    def terminate(self) -> None:
        pass

    def kill(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> None:
        pass

    async def _serve(self, path: str, index: int) -> None:
        reader, writer = await asyncio.open_unix_connection(path)
        self.channel = Channel(reader, writer, FromMain)
        self.channel.send(Hello(index, os.getpid()))
        try:
            with contextlib.suppress(ChannelClosed):
                while True:
                    match await self.channel.receive():
                        case Start() as start:
                            self.started.put_nowait(start)
                        case Stop(run=run):
                            self.stopped.append(run)
        finally:
            self.ended()

    def ended(self) -> None:
        """Its process ends: the sentinel becomes readable (its pipe may still be open)."""
        if self._alive >= 0:
            os.close(self._alive)
            self._alive = -1

    def send(self, *messages: Any) -> None:
        assert self.channel is not None
        for message in messages:
            self.channel.send(message)


class Audit:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def record(self, record: AuditRecord) -> None:
        self.records.append(record)

    def note_sent(self, call_id: str) -> None:
        pass


@contextlib.asynccontextmanager
async def pool_of_one() -> AsyncIterator[tuple[WorkerPool, ScriptedWorker, Audit]]:
    worker, audit = ScriptedWorker(), Audit()
    # No run here stores anything: the store is never asked.
    pool = WorkerPool(1, worker, cast(Any, None), audit=audit)
    await asyncio.wait_for(pool.start(), WAIT)
    try:
        yield pool, worker, audit
    finally:
        await pool.close()
