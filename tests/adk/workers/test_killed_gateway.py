"""A real ``agent-gateway`` with two workers, killed with SIGKILL mid-run: its workers go
with it, and the gateway restarted on the same file finishes the flagship story.

The issue-32 proof of crash recovery in the multi-core setup: the main process keeps the
store, so a kill of it is today's crash recovery; the workers see their pipe close and exit
(no orphan keeps running the agent), and the restart closes the cut-off run and asks the
model again for the reply it owed the browser's answer, in a run of its own.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.support.agui import (
    AgUiSocket,
    new_id,
    snapshot_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.budgets import eventually, scaled
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.processes import gateway_process

pytestmark = pytest.mark.process

WORKERS = {"GATEWAY_WORKERS": "2"}


def workers_of(pid: int) -> list[int]:
    """The worker processes ``pid`` spawned (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie left to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def thread_shown(port: int, thread: str) -> list[dict[str, Any]]:
    async with connect(f"ws://127.0.0.1:{port}/ws?user=demo", max_size=None) as raw:
        return snapshot_of(await AgUiSocket(raw).run({"type": "reattach", "threadId": thread}))


async def test_a_gateway_killed_mid_run_takes_its_workers_and_the_restart_finishes_the_story(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    thread = new_id("t")
    # The gateways' own temporary directory: where the workers' pipe is made.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = {**WORKERS, "TMPDIR": str(temporary)}
    # A slow model, so that the reply is still streaming when the gateway is killed.
    async with gateway_process(db, log, pace_ms=150, environment=environment) as (process, port):
        workers = workers_of(process.pid)
        assert len(workers) == 2, log.read_text()[-3000:]
        async with connect(f"ws://127.0.0.1:{port}/ws?user=demo", max_size=None) as raw:
            ws = AgUiSocket(raw)
            [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
            await ws.send(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
            while (await ws.next(scaled(30)))["type"] != "TEXT_MESSAGE_CONTENT":
                pass
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=scaled(10))
    # The workers see their pipe close and exit: none runs on without its gateway.
    await eventually(
        lambda: not any(running(pid) for pid in workers), 15, what="the workers to exit"
    )
    # The killed gateway could not remove its pipe's directory: the next one does.
    [left] = pipe_directories(temporary)

    async with gateway_process(db, log, environment=environment) as (process, port):
        assert len(workers_of(process.pid)) == 2
        [own] = pipe_directories(temporary)
        assert own != left
        assert "removed 1 workers' pipe directories left by gateways that were killed" in (
            log.read_text()
        )
        # The restart asks the model again for the reply it owed the browser's answer.
        deadline = time.monotonic() + scaled(30)
        while (shown := await thread_shown(port, thread))[-1].get("content") != MOVED:
            assert time.monotonic() < deadline, shown
            await asyncio.sleep(0.2)
        assert shown[-1]["role"] == "assistant"
        asked = [c["id"] for m in shown for c in m.get("toolCalls") or []]
        answered = [m["toolCallId"] for m in shown if m["role"] == "tool"]
        assert sorted(asked) == sorted(answered) and asked.count(navigate["id"]) == 1
        # And the thread takes its next input at once, in a worker.
        async with connect(f"ws://127.0.0.1:{port}/ws?user=demo", max_size=None) as raw:
            again = await AgUiSocket(raw).run(user_input(thread, FLAGSHIP))
        assert tool_calls(again, "navigateToScreen") and again[-1]["type"] == "RUN_FINISHED"
    assert "[worker 1]" in log.read_text()
    assert pipe_directories(temporary) == []  # stopped, it removed its own


def pipe_directories(temporary: Path) -> list[str]:
    return [p.name for p in temporary.iterdir() if p.name.startswith("gateway-workers-")]
