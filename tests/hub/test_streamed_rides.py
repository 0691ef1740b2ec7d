"""Streamed text sent ahead of its commit rides the run's next write (session 52).

Nobody waits for the commit of a chunk that went out ahead of it (docs/durability.md), so
its writes (its frames, its text so far on a file) wait for the next write of the store
and commit with it: in a run, the message's final event, which ADK waits for. Each burst
of a reply took a commit of its own before; on the expenses example that was one of a
run's ten. What is checked is what each commit held, with the ride's wait made long
enough that only another write can end it: no commit holds streamed text alone, and the
reply is stored whole when the run's end goes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from gateway import wire as p
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.hub.outbox import Outbox
from gateway.store import group_commit
from gateway.store.writes import AppendFrames, Fenced, SaveStreamedText, Write
from tests.support.agui import new_id, user_input
from tests.support.held_store import before_each_commit, navigator_hub
from tests.support.subscribers import Recorder

INTRO = "자기소개를 길게 해 주세요"  # the scripted model answers in 94 chunks
pytestmark = pytest.mark.unit

_STREAMED = frozenset({"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"})


def streamed_only(writes: Sequence[Write]) -> bool:
    """Whether a commit holds nothing but streamed text: chunks' frames, text so far."""
    for write in writes:
        inner = write.write if isinstance(write, Fenced) else write
        if isinstance(inner, SaveStreamedText):
            continue
        if not isinstance(inner, AppendFrames):
            return False
        if any(json.loads(frame.data)["type"] not in _STREAMED for frame in inner.frames):
            return False
    return True


@contextlib.contextmanager
def recorded_commits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Sequence[Write]]]:
    """Each group commit's writes, of every store made within the block."""
    batches: list[Sequence[Write]] = []

    async def record(writes: Sequence[Write]) -> None:
        batches.append(list(writes))

    before_each_commit(monkeypatch, record)
    yield batches


@pytest.mark.parametrize("where", ["memory", "file"])
async def test_a_streamed_reply_commits_with_its_final_event_not_alone(
    where: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only another write ends the ride, whatever the machine's speed.
    monkeypatch.setattr(group_commit, "_LINGER_SECONDS", 60)
    db = ":memory:" if where == "memory" else str(tmp_path / "threads.db")
    with recorded_commits(monkeypatch) as batches:
        async with navigator_hub(db, ScriptedLlm(pace_ms=0)) as hub:
            client = Recorder()
            thread = new_id("t")
            started = len(batches)
            run = await hub.start(
                "demo", p.decode_input(json.dumps(user_input(thread, INTRO))), client
            )
            await asyncio.wait_for(run.done.wait(), 30)
            assert client.text().startswith("안녕하세요")
            assert client.frames()[-1]["type"] == "RUN_FINISHED"
            ran = batches[started:]
            reply = [batch for batch in ran if any(_holds_text(write) for write in batch)]
            assert reply, "the reply was streamed and stored"
            assert not [batch for batch in ran if streamed_only(batch)]
            page = await hub.engine.thread_page("demo", thread, max_bytes=None)
            assert page.messages[-1]["content"] == client.text()


def _holds_text(write: Write) -> bool:
    inner = write.write if isinstance(write, Fenced) else write
    return isinstance(inner, AppendFrames) and any(
        json.loads(frame.data)["type"] == "TEXT_MESSAGE_CONTENT" for frame in inner.frames
    )


async def test_a_reattach_waiting_for_text_sent_ahead_has_its_ride_cut_short() -> None:
    """A client that reattaches with a cursor it was sent ahead of the store waits for the
    run's commits in flight (``Outbox.stored``): those of streamed text ride, so the
    outbox has the store commit them at once rather than wait for the run's next write."""
    box = Outbox()
    hurried: list[bool] = []
    commit: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    def hurry() -> None:  # the store commits what rides at once
        hurried.append(True)
        commit.set_result(None)

    box.hurry = hurry
    sent: list[int] = []
    assert box.goes_ahead(1)
    box.send(lambda: sent.append(1), commit, unstored=1)
    assert sent == [1] and box.unstored == 1
    await asyncio.wait_for(box.stored(), 5)
    assert hurried == [True] and box.unstored == 0
    await box.stored()  # nothing ahead: nothing to hurry
    assert hurried == [True]
