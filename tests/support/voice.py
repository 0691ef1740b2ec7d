"""A voice client over /ws for tests: JSON events checked as any stream's, audio kept apart.

``VoiceSocket`` wraps a websockets connection: every text frame goes through the suite's
``StreamChecker`` (and the official models), every binary frame is an audio-out frame kept
in ``audio`` with its turn, in the order it arrived among the events (``arrivals``).
``live_gateway`` runs a gateway hosting a voice agent on the local Live server, and
``voice_client`` connects one; ``NAVIGATE`` and ``find_screen`` are the flagship's tools,
``navigated`` the tab's answer to the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from google.adk.agents import LlmAgent
from websockets.asyncio.client import ClientConnection, connect

from gateway.wire import live
from tests.support import gemini_live
from tests.support.agui import TERMINAL, StreamChecker
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway, running_gateway

# The flagship's browser action, as a client declares it.
NAVIGATE = {
    "name": "navigateToScreen",
    "description": "Opens a screen of the app in the browser.",
    "parameters": {
        "type": "object",
        "properties": {"screenId": {"type": "string"}},
        "required": ["screenId"],
    },
}


def navigated(thread_id: str, call_id: str) -> dict[str, Any]:
    """The tab's ``liveToolResult`` once it opened the screen a navigateToScreen call named."""
    return {
        "type": "liveToolResult",
        "threadId": thread_id,
        "message": {
            "id": "result-1",
            "role": "tool",
            "toolCallId": call_id,
            "content": '{"status": "navigated", "screenId": "MNU-3120"}',
        },
    }


def find_screen(query: str) -> dict[str, str]:
    """Finds the screen the person asks for in the catalog."""
    return {"screenId": "MNU-3120", "asked": query}


# 100 ms of 16 kHz s16le audio: what a browser's worklet sends at a time.
CHUNK_BYTES = 3200


@contextlib.asynccontextmanager
async def live_gateway(
    scripts: Sequence[Sequence[gemini_live.Step]], tools: Sequence[Any], **settings: Any
) -> AsyncIterator[tuple[gemini_live.LiveServer, RunningGateway]]:
    """A gateway hosting a voice agent with ``tools`` (functions or ADK tools), its model the
    local Live server playing ``scripts``; ``settings`` as ``running_gateway`` takes them."""
    async with (
        gemini_live.LiveServer(scripts) as server,
        running_gateway(agent=voice_agent(server, tools), **settings) as gateway,
    ):
        yield server, gateway


def voice_agent(server: gemini_live.LiveServer, tools: Sequence[Any] = ()) -> LlmAgent:
    """The voice agent with ``tools``, its model the local Live server ``server``."""
    return LlmAgent(
        name="voice",
        model=server.live_model(),
        instruction="Answer briefly.",
        tools=list(tools),
    )


@contextlib.asynccontextmanager
async def voice_client(
    gateway: RunningGateway, query: str = "", user: str = "demo"
) -> AsyncIterator[VoiceSocket]:
    """A /ws connection of ``user`` as a voice client; ``query``: more of its query string."""
    async with connect(gateway.ws_url(user, query), max_size=None) as ws:
        yield VoiceSocket(ws)


class VoiceSocket:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.checker = StreamChecker()
        self.events: list[dict[str, Any]] = []
        # Audio out as received: (turn, PCM).
        self.audio: list[tuple[int, bytes]] = []
        # Everything in arrival order: an event's type (a custom one's "CUSTOM:<name>"),
        # or "audio:<turn>".
        self.arrivals: list[str] = []

    async def start(self, thread_id: str, run_id: str) -> None:
        await self.ws.send(
            json.dumps({"type": "liveStart", "threadId": thread_id, "runId": run_id})
        )

    async def stop(self, thread_id: str) -> None:
        await self.ws.send(json.dumps({"type": "liveStop", "threadId": thread_id}))

    async def speak(self, pcm: bytes, *, pace: float = 0.0) -> None:
        """Sends ``pcm`` as audio-in frames of ``CHUNK_BYTES``, ``pace`` seconds apart."""
        for start in range(0, len(pcm), CHUNK_BYTES):
            await self.ws.send(live.audio_in_frame(pcm[start : start + CHUNK_BYTES]))
            if pace:
                await asyncio.sleep(pace)

    async def next(self, timeout: float | None = None) -> dict[str, Any]:
        """The next JSON event; audio frames before it are kept."""
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), timeout or scaled(10))
            if isinstance(raw, bytes):
                turn = live.audio_out_turn(raw)
                self.audio.append((turn, raw[live.HEADER_BYTES :]))
                self.arrivals.append(f"audio:{turn}")
                continue
            event: dict[str, Any] = json.loads(raw)
            self.checker.feed(event)
            self.events.append(event)
            self.arrivals.append(":".join(filter(None, [event["type"], event.get("name")])))
            return event

    async def until(self, kind: str, name: str | None = None) -> dict[str, Any]:
        """Events up to the next of ``kind`` (a CUSTOM one named ``name``), returned."""
        while True:
            event = await self.next()
            if event["type"] == kind and (name is None or event.get("name") == name):
                return event
            assert event["type"] not in TERMINAL or kind in TERMINAL, event

    async def until_end(self) -> list[dict[str, Any]]:
        start = len(self.events)
        await self.until_terminal()
        return self.events[start:]

    async def until_terminal(self) -> dict[str, Any]:
        while (event := await self.next())["type"] not in TERMINAL:
            pass
        return event


def messages(events: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """The text messages streamed in ``events``: id -> (role, text)."""
    found: dict[str, tuple[str, str]] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            role, text = found.get(event["messageId"], (event["role"], ""))
            found[event["messageId"]] = (role, text)
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            role, text = found[event["messageId"]]
            found[event["messageId"]] = (role, text + event["delta"])
    return found
