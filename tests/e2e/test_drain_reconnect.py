"""A deploy as agui-websocket's ThreadConnection (the reference web client's connection, the
same file) lives it: SIGTERM mid-reply, the reply streams to its end, the socket closes
with 1012, the client reconnects by itself to the process that replaced the old one and
finds the whole reply in the thread."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from gateway.doors.drain import CLOSE_CODE, CLOSE_REASON
from tests.support import ROOT
from tests.support.agui import new_id
from tests.support.budgets import scaled
from tests.support.processes import free_port, gateway_process

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="needs node"),
    pytest.mark.browser,
]

SCRIPT = ROOT / "tests" / "e2e" / "node" / "drain_reconnect.mjs"


async def lines(stream: asyncio.StreamReader) -> list[dict[str, Any]]:
    """What the client printed, to its exit."""
    said = []
    while line := await stream.readline():
        said.append(json.loads(line))
    return said


async def test_a_client_mid_reply_gets_the_whole_reply_and_reconnects_after_a_restart(
    tmp_path: Path,
) -> None:
    db, log, port, thread = (
        tmp_path / "gateway.db",
        tmp_path / "gateway.log",
        free_port(),
        new_id("t"),
    )
    async with gateway_process(db, log, port=port, pace_ms=30, drain_seconds=scaled(30)) as (
        old,
        _,
    ):
        client = await asyncio.create_subprocess_exec(
            "node",
            "--experimental-websocket",
            str(SCRIPT),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            env={
                **os.environ,
                "AGUI_GATEWAY_WS": f"ws://127.0.0.1:{port}/ws?user=demo",
                "AGUI_THREAD": thread,
                "AGUI_GIVE_UP_MS": str(int(scaled(120) * 1000)),
            },
        )
        assert client.stdout is not None
        said: list[dict[str, Any]] = []
        while not any(line.get("event") == "TEXT_MESSAGE_CONTENT" for line in said):
            said.append(json.loads(await asyncio.wait_for(client.stdout.readline(), scaled(30))))
        old.send_signal(signal.SIGTERM)
        old.wait(timeout=scaled(60))
    # The deploy's new process, where the old one was.
    async with gateway_process(db, log, port=port):
        said += await asyncio.wait_for(lines(client.stdout), scaled(120))
        assert await client.wait() == 0, said[-5:]

    # The reply's own end: the first RUN_FINISHED ends the sync (the reattach's snapshot run).
    began = next(i for i, line in enumerate(said) if line.get("event") == "TEXT_MESSAGE_CONTENT")
    finished = next(
        i for i, line in enumerate(said) if i > began and line.get("event") == "RUN_FINISHED"
    )
    closed = next(i for i, line in enumerate(said) if line.get("code") is not None)
    assert finished < closed, "the socket closed before the reply finished"
    assert (said[closed]["code"], said[closed]["reason"]) == (CLOSE_CODE, CLOSE_REASON)
    assert said[-1]["status"] == "open", "the client did not come back by itself"
    streamed = "".join(line["delta"] for line in said[began:finished] if "delta" in line)
    [snapshot] = [line for line in said[closed:] if line.get("event") == "MESSAGES_SNAPSHOT"]
    assert snapshot["messages"][-1]["content"] == streamed
