"""A model that streams faster than a person reads: its reply reaches the client in a few
events, each a frame of the thread's log, and a tab that joins while text is held is sent
the reply once (``gateway.hub.text_bursts``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.examples.navigator.agent import APP_NAME
from gateway.hub import text_bursts
from gateway.models.script import ScriptLlm
from tests.support.agui import new_id, outcome, seq_of, text_of, user_input
from tests.support.budgets import scaled
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

WORDS = 1500
REPLY = " ".join(f"w{n}" for n in range(WORDS)) + "."


def long_replies(tmp_path: Path) -> ScriptLlm:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"user": "long", "say": REPLY}]}))
    return ScriptLlm.from_file(script)


async def test_a_fast_models_reply_is_a_few_events_each_a_frame_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bursts end when the model pauses, not by the clock: with the hold's 10 ms the count
    # would follow the machine's speed (1,500 chunks take ~0.5 s quiet, ~2 s on a busy one).
    monkeypatch.setattr(text_bursts, "HOLD_SECONDS", 30.0)
    async with running_gateway(model=long_replies(tmp_path), scripted_pace_ms=0) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            events = await ws.run(user_input(thread, "a long one, please"))
        assert outcome(events) == {"type": "success"}
        assert text_of(events) == REPLY
        contents = [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert len(contents) < WORDS / 10, "the chunks of a burst are one event"
        engine = gateway.app.hub.engine  # type: ignore[union-attr]
        log = await engine.sessions.frames_after(APP_NAME, "demo", thread, 0)
        logged = {frame.seq: json.loads(frame.data)["type"] for frame in log.frames}
        received = {seq_of(e) for e in events if seq_of(e) is not None}
        assert received <= set(logged), "each event the client was sent is a frame of the log"
        assert [logged[seq] for seq in sorted(received)] == [
            e["type"] for e in events if seq_of(e) is not None
        ]


async def test_a_tab_joining_while_text_is_held_is_sent_the_reply_once(tmp_path: Path) -> None:
    async with running_gateway(model=long_replies(tmp_path), scripted_pace_ms=0) as gateway:
        thread = new_id("t")
        async with gateway.socket() as first:
            await first.send(user_input(thread, "a long one, please"))
            while (await first.next(scaled(10)))["type"] != "TEXT_MESSAGE_CONTENT":
                pass
            async with gateway.socket(query=f"&threadId={thread}") as second:
                joined = await second.until_end()
            await first.until_end()
        assert outcome(joined) == {"type": "success"}
        assert text_of(joined) == REPLY
