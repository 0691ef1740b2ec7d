"""A gateway killed mid-run loses nothing a client was sent but the last of a streamed reply,
and the thread goes on at once.

The real server runs as a subprocess on a database (a SQLite file, or PostgreSQL). A client
finishes one run, starts a long streamed answer, and the server is killed with SIGKILL in
the middle of it. After a restart on the same database the thread holds every message the
client saw, with the ids it saw, including the one cut off mid-stream: at least the text
the client was sent of it, marked ``metadata.ended`` "interrupted", with no note in any
language for a client to show. The cut-off run is closed; a new run works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import MessagesSnapshotEvent
from websockets.asyncio.client import ClientConnection, connect

from gateway.store.cut_off import LEGACY_NOTE, NOTES
from tests.support.backends import logged
from tests.support.budgets import scaled
from tests.support.processes import ROOT, gateway_process

pytestmark = pytest.mark.process

THREAD = "t1"
INTRO = {"id": "m1", "role": "user", "content": "자기소개를 길게 해 주세요"}
# Text chunks the client receives before the kill, of the 94 the answer streams 20 ms apart.
CHUNKS_BEFORE_KILL = 8


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


def received_texts(frames: list[dict[str, Any]]) -> dict[str, str]:
    """Every text message the client received, whole or in part: id -> text so far."""
    texts: dict[str, str] = {}
    for frame in frames:
        if frame["type"] == "TEXT_MESSAGE_START":
            texts[frame["messageId"]] = ""
        elif frame["type"] == "TEXT_MESSAGE_CONTENT":
            texts[frame["messageId"]] += frame["delta"]
    return texts


def completed_texts(frames: list[dict[str, Any]]) -> dict[str, str]:
    """Text messages the client received whole: id -> text."""
    ended = {frame["messageId"] for frame in frames if frame["type"] == "TEXT_MESSAGE_END"}
    return {id_: text for id_, text in received_texts(frames).items() if id_ in ended}


def export(db: str) -> list[dict[str, Any]]:
    """``agent-gateway export`` of the thread, as an operator would run it."""
    command = [sys.executable, "-m", "gateway", "--db", str(db), "export", THREAD]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=60, check=True)
    messages: list[dict[str, Any]] = json.loads(done.stdout)
    return messages


async def test_sigkill_mid_stream_keeps_the_thread_and_it_takes_a_new_run(
    db: str, tmp_path: Path
) -> None:
    """On a SQLite file, and on a PostgreSQL database the restarted gateway is alone on."""
    log = tmp_path / "gateway.log"
    hello = {"id": "m1", "role": "user", "content": "안녕하세요"}
    intro = {**INTRO, "id": "m2"}

    async with (
        gateway_process(db, log) as (process, port),
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
            lambda _, frames: (
                sum(f["type"] == "TEXT_MESSAGE_CONTENT" for f in frames) >= CHUNKS_BEFORE_KILL
            ),
        )
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    assert not any(run_ended(frame, []) for frame in second), "the run ended before the kill"
    ((cut_id, cut_text),) = (
        (id_, text)
        for id_, text in received_texts(second).items()
        if id_ not in completed_texts(second)
    )
    assert cut_text, "the client was sent none of the cut-off message"

    # Restarted as agent-gateway starts, warm-up included: on PostgreSQL its first sweep takes
    # the dead process's lease and ends its run in the log while the warm-up runs, not after
    # this client's reattach (the test waited for the warm-up before it started servers cold).
    async with (
        gateway_process(db, log, warm_up_runs=3) as (_, port),
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
        # The message cut off mid-stream closes the run, under the id the client saw: the
        # text as far as it was stored (perhaps a few chunks more than the client was sent,
        # or fewer: streamed text goes out ahead of its commit), and how the run ended.
        last = snapshot["messages"][-1]
        assert last["id"] == cut_id and last["role"] == "assistant"
        assert last["content"].startswith(cut_text) or cut_text.startswith(last["content"])
        assert last["metadata"] == {"ended": "interrupted"}
        shown = json.dumps(snapshot, ensure_ascii=False)
        assert not any(note.strip() in shown for note in [LEGACY_NOTE, *NOTES.values()])
        assert await asyncio.to_thread(export, db) == snapshot["messages"]

        started = time.monotonic()
        await ws.send(
            run_input("r3", [*history, {"id": "m3", "role": "user", "content": "고마워"}])
        )
        third = await receive_until(ws, run_ended)
        assert third[-1]["type"] == "RUN_FINISHED", third[-1]
        assert third[-1]["outcome"]["type"] == "success"
        assert completed_texts(third), "the new run answered nothing"
        assert time.monotonic() - started < scaled(10)


def seq(frame: dict[str, Any]) -> int:
    number = (frame.get("metadata") or {}).get("gateway.seq")
    assert isinstance(number, int), frame
    return number


async def test_chunks_sent_ahead_of_a_held_store_are_what_a_kill_cuts(tmp_path: Path) -> None:
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    async with (
        gateway_process(db, log) as (process, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws,
    ):
        await ws.send(run_input("r1", [INTRO]))
        frames = await receive_until(ws, lambda frame, _: frame["type"] == "TEXT_MESSAGE_CONTENT")
        await logged(str(db), THREAD, seq(frames[-1]))
        # Another connection takes the file's write lock: every commit of the gateway waits.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            ((head,),) = holder.execute("SELECT MAX(seq) FROM frames").fetchall()

            def cut(_: dict[str, Any], frames: list[dict[str, Any]]) -> bool:
                return sum(has_seq(f) and seq(f) > head for f in frames) >= 3

            frames += await receive_until(ws, cut)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        finally:
            holder.rollback()
            holder.close()
    ((message_id, seen),) = received_texts(frames).items()
    stored = [f for f in frames if not has_seq(f) or seq(f) <= head]
    assert stored[-1]["type"] == "TEXT_MESSAGE_CONTENT"

    async with gateway_process(db, log) as (_, port):
        # A cursor the store never held: the thread as it stands, whose reply is cut where
        # the store had it, short of what the client was sent.
        reattached = await reattach(port, seq(frames[-1]))
        (snapshot,) = [f for f in reattached if f["type"] == "MESSAGES_SNAPSHOT"]
        reply = snapshot["messages"][-1]
        assert reply["id"] == message_id and reply["metadata"] == {"ended": "interrupted"}
        assert reply["content"] == received_texts(stored)[message_id] != seen
        # A cursor it held: the run's end as the restart logged it, after what it had stored.
        replayed = await reattach(port, seq(stored[-1]))
        assert [f["type"] for f in replayed] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
        assert replayed[-1]["code"] == "RUN_INTERRUPTED"


async def reattach(port: int, after: int) -> list[dict[str, Any]]:
    """What a client that comes back with the cursor ``after`` is sent, to the run's end."""
    async with connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws:
        await ws.send(json.dumps({"type": "reattach", "threadId": THREAD, "after": after}))
        return await receive_until(ws, run_ended)


def has_seq(frame: dict[str, Any]) -> bool:
    return "gateway.seq" in (frame.get("metadata") or {})


async def test_an_input_killed_before_its_commit_was_never_answered(tmp_path: Path) -> None:
    """The model is called while a run's input commits (docs/first-event.md), and nothing
    of the reply goes out before that commit: a kill before it leaves the thread as it was,
    with nothing answered, and the input sent again is answered once."""
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    hello = {"id": "m1", "role": "user", "content": "안녕하세요"}
    async with (
        gateway_process(db, log) as (process, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws,
    ):
        await ws.send(run_input("r1", [hello]))
        first = await receive_until(ws, run_ended)
        (answer_id, answer), *_ = completed_texts(first).items()
        history = [hello, {"id": answer_id, "role": "assistant", "content": answer}, INTRO]
        # Another connection takes the file's write lock: the input's commit waits for it.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            await ws.send(run_input("r2", history))
            assert json.loads(await ws.recv())["type"] == "RUN_STARTED"  # not stored
            # Long enough for a dozen chunks at the model's pace, were any let out.
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5):
                    await ws.recv()
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        finally:
            holder.rollback()
            holder.close()

    async with (
        gateway_process(db, log) as (_, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws,
    ):
        await ws.send(json.dumps({"type": "reattach", "threadId": THREAD}))
        reattached = await receive_until(ws, run_ended)
        (snapshot,) = [f for f in reattached if f["type"] == "MESSAGES_SNAPSHOT"]
        assert [m["id"] for m in snapshot["messages"]] == ["m1", answer_id]
        await ws.send(run_input("r3", history))
        again = await receive_until(ws, run_ended)
        assert again[-1]["type"] == "RUN_FINISHED", again[-1]
        assert completed_texts(again), "the input sent again was not answered"
    # The thread holds the input once: the one answered.
    with contextlib.closing(sqlite3.connect(db)) as stored:
        said = [
            json.loads(data)["content"]["parts"][0]["text"]
            for (data,) in stored.execute("SELECT data FROM events WHERE author = 'user'")
        ]
    assert said.count(INTRO["content"]) == 1, said
