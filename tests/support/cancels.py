"""A reply stopped mid-stream: the demo's long introduction cancelled over /ws, and a
storyteller's story stopped a few chunks in.

``cancel_mid_reply_then_go_on`` tells the demo's version whole (cancel, the run's end, the
next turn); ``stop_mid_reply`` only starts ``storyteller``'s ``STORY`` and stops it, for the
tests of what a stopped reply leaves behind.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent

from tests.support.agui import AgUiSocket, new_id, outcome, text_of, user_input
from tests.support.speakers import Speaker

# Chunks in a second at the callers' pace (30 ms each); the scripted introduction has 94.
CHUNKS_IN_A_SECOND = 33


async def cancel_mid_reply_then_go_on(ws: Any) -> None:
    """A cancel sent while the long introduction streams ends the run cancelled within a
    second's worth of chunks, its message closed; the thread's next turn is answered.

    A second is counted in chunks (the callers stream one every 30 ms), not on the clock:
    a busy machine slows the chunks and the cancel alike.
    """
    thread = new_id("t")
    await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
    while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
        pass
    await ws.send({"type": "cancel", "threadId": thread})
    rest = await ws.until_end()
    assert sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in rest) < CHUNKS_IN_A_SECOND
    assert outcome(rest) == {"type": "cancelled"}
    assert [e["type"] for e in rest][-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    after = await ws.run(user_input(thread, "안녕"))
    assert text_of(after).startswith("안녕하세요")


# Two hundred words, a chunk each: long enough to stop in the middle.
STORY = " ".join(f"word{n}" for n in range(200))


CHUNKS_BEFORE_STOP = 5


def storyteller(model: Speaker) -> LlmAgent:
    return LlmAgent(name="storyteller", model=model)


async def stop_mid_reply(ws: AgUiSocket, thread: str) -> list[dict[str, Any]]:
    """Starts the story and stops it a few chunks in; the run's events."""
    await ws.send(user_input(thread, "tell me a story", tools=[], message_id="m1"))
    events = []
    while sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events) < CHUNKS_BEFORE_STOP:
        events.append(await ws.next())
    await ws.send({"type": "cancel", "threadId": thread})
    return events + await ws.until_end()
