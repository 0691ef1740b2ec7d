"""A holder frozen past its lease cannot write into the thread another process took over.

Two real gateway processes on one PostgreSQL database, with a short lease. A streams a long
reply and is frozen (SIGSTOP: what a GC pause, a VM stall or a slow host does); the user's
next message goes to B, which takes the thread over once A's lease has run out, closes A's
run as interrupted and runs the message; A is woken (SIGCONT) while B's reply streams. The
database refuses everything A writes of the thread from then on (its lease's epoch is no
longer the thread's), A's client is told to reattach, B's run ends normally, and the thread
reads the same from either process: A's cut-off reply once, then B's turn, nothing after.
Several times over, on the same two processes, A's client on /ws and on SSE in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.support.agui import AgUiSocket, new_id, outcome, seq_of, text_of, user_input
from tests.support.backends import rows
from tests.support.postgres import Postgres
from tests.support.processes import gateway_process

pytestmark = pytest.mark.process

LONG = "자기소개를 길게 해 주세요"
LEASE_SECONDS = 3
TRIALS = 3


@pytest.fixture(scope="module")
def short_leases() -> Iterator[None]:
    """The processes' leases run out in seconds, and are looked for four times a second."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GATEWAY_LEASE_SECONDS", str(LEASE_SECONDS))
        env.setenv("GATEWAY_LEASE_CHECK_SECONDS", "0.25")
        env.setenv("GATEWAY_METRICS", "on")  # dev mode: scraped without a credential
        yield


@pytest.fixture(scope="module")
async def pair(
    postgres: Postgres, short_leases: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[str, Path, Any, int, int]]:
    """The database, A's log, A's process and the ports of A and B."""
    database = postgres.fresh_database()
    logs = tmp_path_factory.mktemp("split-brain")
    async with (
        gateway_process(database, logs / "a.log", pace_ms=40) as (a, a_port),
        gateway_process(database, logs / "b.log", pace_ms=40) as (_, b_port),
    ):
        yield database, logs / "a.log", a, a_port, b_port


@contextlib.asynccontextmanager
async def tab(port: int) -> AsyncIterator[AgUiSocket]:
    async with connect(f"ws://127.0.0.1:{port}/ws?user=demo", max_size=None) as ws:
        yield AgUiSocket(ws)


async def until_text(ws: AgUiSocket, events: list[dict[str, Any]]) -> None:
    while chunks(events) < 3:
        events.append(await ws.next())


def chunks(events: list[dict[str, Any]]) -> int:
    return sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)


class Asking:
    """A's client, asking for the long reply over /ws or over SSE (POST /invocations)."""

    def __init__(self, port: int, thread: str, *, sse: bool) -> None:
        self.events: list[dict[str, Any]] = []
        self.task = asyncio.create_task(self._sse(port, thread) if sse else self._ws(port, thread))

    async def replying(self) -> None:
        """Returns once the reply has streamed some of its text."""
        while chunks(self.events) < 3:
            if self.task.done():
                self.task.result()  # raises what stopped it, if anything did
                raise AssertionError(f"the reply ended early: {self.events}")
            await asyncio.sleep(0.01)

    async def end(self) -> dict[str, Any]:
        await asyncio.wait_for(self.task, 30)
        return self.events[-1]

    async def _ws(self, port: int, thread: str) -> None:
        async with tab(port) as ws:
            await ws.send(user_input(thread, LONG))
            while not self.events or self.events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                self.events.append(await ws.next(timeout=60))

    async def _sse(self, port: int, thread: str) -> None:
        async with (
            httpx.AsyncClient(timeout=60) as client,
            client.stream(
                "POST",
                f"http://127.0.0.1:{port}/invocations",
                json=user_input(thread, LONG),
                headers={"X-Gateway-User": "demo"},
            ) as response,
        ):
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    self.events.append(json.loads(line.removeprefix("data: ")))


def thread_rows(database: str, thread: str) -> list[tuple[str, str]]:
    """The thread's stored events, oldest first: (invocation, author)."""
    return [
        (str(invocation), str(author))
        for invocation, author in rows(
            database,
            "SELECT e.invocation_id, e.author FROM events e JOIN sessions s ON s.pk = e.session_pk"
            f" WHERE s.id = '{thread}' ORDER BY e.seq",
        )
    ]


def messages(snapshot: list[dict[str, Any]]) -> list[tuple[str, str]]:
    [shown] = [e for e in snapshot if e["type"] == "MESSAGES_SNAPSHOT"]
    return [(m["role"], m.get("content") or "") for m in shown["messages"]]


async def test_a_frozen_holder_woken_after_a_takeover_stores_nothing_more(pair) -> None:
    database, a_log, a, a_port, b_port = pair
    for trial in range(TRIALS):
        thread = new_id("t")
        # A's client asks over /ws, then over SSE, in turn.
        asking = Asking(a_port, thread, sse=trial % 2 == 1)
        await asking.replying()
        async with tab(b_port) as on_b:
            a.send_signal(signal.SIGSTOP)
            try:
                # The user's next message reaches B, which runs it once A's lease ran out.
                message = user_input(thread, LONG)
                await on_b.send(message)
                started = await on_b.next(timeout=LEASE_SECONDS * 5)
                assert started["type"] == "RUN_STARTED" and started["runId"] == message["runId"], (
                    started
                )
                replying = [started]
                await until_text(on_b, replying)
            finally:
                a.send_signal(signal.SIGCONT)
            # A wakes in the middle of B's reply.
            replying += await on_b.until_end(timeout=30)
        ended = await asking.end()
        assert outcome(replying)["type"] == "success"
        reply = text_of(replying)
        # A's client is told its run was taken over, and to reattach.
        assert ended["type"] == "RUN_ERROR"
        assert ended["code"] == "THREAD_TAKEN_OVER", ended
        assert "Reattach" in ended["message"]
        # Stored: A's turn (its reply cut off, closed by B), then B's turn; nothing of A's
        # run after B's began.
        invocations = [invocation for invocation, _ in thread_rows(database, thread)]
        b_started = next(i for i, inv in enumerate(invocations) if inv != invocations[0])
        assert invocations[0] not in invocations[b_started:]
        # The thread reads the same from either process, its log whole and in order.
        snapshots = []
        for port in (a_port, b_port):
            async with tab(port) as reader:
                snapshots.append(await reader.run({"type": "reattach", "threadId": thread}))
        assert messages(snapshots[0]) == messages(snapshots[1])
        assert [role for role, _ in messages(snapshots[1])] == ["user", "assistant"] * 2
        assert messages(snapshots[1])[-1] == ("assistant", reply)
        async with tab(a_port) as reader:
            await reader.send({"type": "reattach", "threadId": thread, "after": 0})
            replayed = [await reader.next()]
            while replayed[-1]["type"] != "RUN_FINISHED":
                replayed.append(await reader.next())
        assert replayed[-1]["runId"] == message["runId"]
        cut_off = [e for e in replayed if e["type"] == "RUN_ERROR"]
        assert [e["code"] for e in cut_off] == ["RUN_INTERRUPTED"]  # A's run, closed by B
        numbers = [seq_of(e) for e in replayed if seq_of(e) is not None]
        assert numbers == sorted(set(numbers))
        assert text_of(replayed).endswith(reply)
    logged = a_log.read_text()
    assert "UniqueViolation" not in logged and "StaleSessionError" not in logged
    assert "taken over by another process" in logged
    # Operators see it too: B counts each takeover, A the writes the database refused it.
    assert counted(b_port, "gateway_lease_takeovers_total") == TRIALS
    assert counted(a_port, "gateway_fencing_refusals_total") >= TRIALS
    assert counted(a_port, "gateway_runs_total", 'code="THREAD_TAKEN_OVER",outcome="error"') == (
        TRIALS
    )


def counted(port: int, name: str, labels: str = "") -> float:
    """A sample of the process's GET /metrics."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    wanted = f"{name}{{{labels}}} " if labels else f"{name} "
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(wanted)]
    return values[0] if values else 0.0


async def test_a_message_sent_just_after_its_holder_was_killed_runs_with_no_internal_error(
    pair, tmp_path: Path
) -> None:
    """Sent the moment the process streaming the thread is killed: the message waits for
    the takeover and runs; nothing anyone is sent is INTERNAL_ERROR."""
    database, _, _, _, b_port = pair
    thread = new_id("t")
    async with gateway_process(database, tmp_path / "victim.log", pace_ms=40) as (victim, port):
        asking = Asking(port, thread, sse=False)
        await asking.replying()
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        async with tab(b_port) as on_b:
            message = user_input(thread, "안녕하세요")
            await on_b.send(message)
            answered = await on_b.until_end(timeout=LEASE_SECONDS * 5)
        with contextlib.suppress(Exception):
            await asking.task  # its connection died with the process
    assert answered[0]["type"] == "RUN_STARTED" and answered[0]["runId"] == message["runId"]
    assert outcome(answered)["type"] == "success"
    assert not [e for e in answered if e.get("code") == "INTERNAL_ERROR"]
    async with tab(b_port) as reader:
        await reader.send({"type": "reattach", "threadId": thread, "after": 0})
        replayed = [await reader.next()]
        while replayed[-1]["type"] != "RUN_FINISHED":
            replayed.append(await reader.next())
    # The killed run's end, as the process that took it over wrote it: a code of its own.
    assert [e["code"] for e in replayed if e["type"] == "RUN_ERROR"] == ["RUN_INTERRUPTED"]
