"""One process writes a database file: a second one refuses to start, readers go on.

Issue 11: two gateways started on one file without complaint, and the second one's crash
recovery marked the first one's live run interrupted. The writing store takes an flock on
``<file>.lock`` holding its pid; the kernel drops it when the process dies, so a SIGKILLed
gateway never blocks its restart. The process tests run real ``agent-gateway`` processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from gateway.store import StoreError
from tests.support.agui import new_id, user_input
from tests.support.processes import (
    GATEWAY,
    ROOT,
    free_port,
    gateway_process,
    operator_command,
    run_over_ws,
)
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = "gateway"


async def test_a_second_writer_of_a_file_is_refused_and_readers_are_not(tmp_path: Path) -> None:
    path = str(tmp_path / "gateway.db")
    first = session_store(path)
    await first.open()
    try:
        await first.create_session(app_name=APP, user_id="u", session_id="t")
        second = session_store(path)
        with pytest.raises(StoreError) as refused:
            await second.open()
        message = str(refused.value)
        assert path in message and f"pid {os.getpid()}" in message
        reader = session_store(path, read_only=True)
        await reader.open()
        assert [t.thread_id for t in await reader.threads(APP)] == ["t"]
        await reader.close()
    finally:
        await first.close()
    # Closing lets go of the file.
    again = session_store(path)
    await again.open()
    await again.close()


async def test_a_store_that_fails_to_open_lets_go_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway.db"
    path.write_bytes(b"not a database, but a file someone cares about" * 100)
    for _ in range(2):  # the second attempt would meet the first one's lock if it were kept
        with pytest.raises(StoreError) as refused:
            await session_store(str(path)).open()
        assert "not a usable session store" in str(refused.value)


@pytest.mark.process
async def test_a_second_gateway_on_one_file_refuses_to_start(tmp_path: Path) -> None:
    db, log = tmp_path / "gateway.db", tmp_path / "gateway.log"
    thread = new_id("t")
    async with gateway_process(db, log) as (first, port):
        events = await run_over_ws(port, user_input(thread, "안녕"))
        assert events[-1]["type"] == "RUN_FINISHED"

        second_port = free_port()
        second = await asyncio.to_thread(
            subprocess.run,
            [*GATEWAY, "--db", str(db), "--host", "127.0.0.1", "--port", str(second_port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode != 0
        refusal = [line for line in second.stderr.splitlines() if "in use by" in line]
        assert refusal, second.stderr[-2000:]
        assert str(db) in refusal[0] and f"pid {first.pid}" in refusal[0]

        # Read-only operator commands keep working beside the running gateway.
        threads = await asyncio.to_thread(operator_command, db, "threads", "--user", "demo")
        assert threads.returncode == 0, threads.stderr
        assert [t["threadId"] for t in json.loads(threads.stdout)] == [thread]
        exported = await asyncio.to_thread(operator_command, db, "export", thread)
        assert exported.returncode == 0, exported.stderr
        assert [m["role"] for m in json.loads(exported.stdout)] == ["user", "assistant"]
        audit = await asyncio.to_thread(operator_command, db, "audit", "--user", "demo")
        assert audit.returncode == 0, audit.stderr

        # The first one still serves: the refused start touched nothing of it.
        events = await run_over_ws(port, user_input(thread, "고마워"))
        assert events[-1]["type"] == "RUN_FINISHED"

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    # The kernel let go of the lock with the killed process: a restart starts at once.
    async with gateway_process(db, log) as (_, port):
        events = await run_over_ws(port, user_input(thread, "다시 왔어요"))
        assert events[-1]["type"] == "RUN_FINISHED"
