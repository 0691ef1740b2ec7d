"""A gateway killed mid-run loses nothing it acknowledged, and the thread goes on at once.

The real server runs as a subprocess on a database file. A client finishes one run, starts
a long streamed answer, and the server is killed with SIGKILL in the middle of it. After a
restart on the same file the thread still holds every message the client saw complete, with
the ids it saw; the cut-off run is closed and marked as interrupted; a new run works.

A message still streaming at the kill is not in the thread: ADK stores streamed text only
once the message completes, so what survives is the interrupted note that replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import MessagesSnapshotEvent
from websockets.asyncio.client import ClientConnection, connect

from gateway.store import INTERRUPTED_TEXT

ROOT = Path(__file__).resolve().parent.parent
THREAD = "t1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def gateway(db: Path, log: Path) -> AsyncIterator[tuple[subprocess.Popen[bytes], int]]:
    """A real gateway process on ``db``; stopped (if still alive) on the way out."""
    port = free_port()
    with log.open("ab") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gateway",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--db",
                str(db),
                "--scripted-pace-ms",
                "20",
            ],
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        await _ready(process, port, log)
        yield process, port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _ready(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gateway exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status = await reader.readline()
            writer.close()
            if b" 200 " in status:
                return
        await asyncio.sleep(0.2)
    pytest.fail(f"gateway did not become ready:\n{log.read_text()[-3000:]}")


def run_input(run_id: str, messages: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "threadId": THREAD,
            "runId": run_id,
            "messages": messages,
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        },
        ensure_ascii=False,
    )


async def receive_until(
    ws: ClientConnection, done: Any, timeout: float = 20.0
) -> list[dict[str, Any]]:
    """Frames until ``done(frame)`` holds for one (included)."""
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            frame = json.loads(await ws.recv())
            frames.append(frame)
            if done(frame, frames):
                return frames


def run_ended(frame: dict[str, Any], _: list[dict[str, Any]]) -> bool:
    return frame["type"] in ("RUN_FINISHED", "RUN_ERROR")


def completed_texts(frames: list[dict[str, Any]]) -> dict[str, str]:
    """Text messages the client received whole: id -> text."""
    texts: dict[str, str] = {}
    ended: set[str] = set()
    for frame in frames:
        if frame["type"] == "TEXT_MESSAGE_START":
            texts[frame["messageId"]] = ""
        elif frame["type"] == "TEXT_MESSAGE_CONTENT":
            texts[frame["messageId"]] += frame["delta"]
        elif frame["type"] == "TEXT_MESSAGE_END":
            ended.add(frame["messageId"])
    return {message_id: text for message_id, text in texts.items() if message_id in ended}


async def test_sigkill_mid_stream_keeps_the_thread_and_it_takes_a_new_run(tmp_path: Path) -> None:
    db, log = tmp_path / "crash.db", tmp_path / "gateway.log"
    hello = {"id": "m1", "role": "user", "content": "안녕하세요"}
    intro = {"id": "m2", "role": "user", "content": "자기소개를 길게 해 주세요"}

    async with (
        gateway(db, log) as (process, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws,
    ):
        await ws.send(run_input("r1", [hello]))
        first = await receive_until(ws, run_ended)
        assert first[-1]["type"] == "RUN_FINISHED", first[-1]
        (answer_id, answer), *_ = completed_texts(first).items()

        history = [hello, {"id": answer_id, "role": "assistant", "content": answer}, intro]
        await ws.send(run_input("r2", history))
        second = await receive_until(
            ws,
            lambda _, frames: sum(f["type"] == "TEXT_MESSAGE_CONTENT" for f in frames) >= 5,
        )
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    assert not any(run_ended(frame, []) for frame in second), "the run ended before the kill"

    async with (
        gateway(db, log) as (_, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws,
    ):
        await ws.send(json.dumps({"type": "reattach", "threadId": THREAD}))
        reattached = await receive_until(ws, run_ended)
        (snapshot,) = [f for f in reattached if f["type"] == "MESSAGES_SNAPSHOT"]
        MessagesSnapshotEvent.model_validate(snapshot)
        messages = {m["id"]: m for m in snapshot["messages"]}

        # Everything the client received whole is there, under the ids it saw.
        assert messages["m1"]["content"] == "안녕하세요"
        assert messages["m2"]["content"] == "자기소개를 길게 해 주세요"
        for message_id, text in completed_texts(first + second).items():
            assert messages[message_id]["content"] == text
        # The cut-off run is closed, visibly.
        last = snapshot["messages"][-1]
        assert last["role"] == "assistant" and last["content"] == INTERRUPTED_TEXT

        started = time.monotonic()
        await ws.send(
            run_input("r3", [*history, {"id": "m3", "role": "user", "content": "고마워"}])
        )
        third = await receive_until(ws, run_ended)
        assert third[-1]["type"] == "RUN_FINISHED", third[-1]
        assert third[-1]["outcome"]["type"] == "success"
        assert completed_texts(third), "the new run answered nothing"
        assert time.monotonic() - started < 10
