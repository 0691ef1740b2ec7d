"""What every test stream must satisfy, and a small AG-UI client over /ws.

``StreamChecker`` is the one ordering checker of the suite: every event any test receives
goes through it, and through the official ``ag_ui.core`` pydantic models.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from ag_ui.core import Event as OfficialEvent
from pydantic import BaseModel, TypeAdapter
from websockets.asyncio.client import ClientConnection

from tests.support.budgets import scaled

_official = TypeAdapter(OfficialEvent)

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
# What a 1.0 client declares on its inputs; without it the gateway answers as to 0.0.x.
PROTOCOL_VERSION = "1.0"


def validate_official(event: dict[str, Any]) -> None:
    """The official models accept the event and find no field they do not know."""
    model = _official.validate_python(event)
    _no_extras(model, event["type"])


def _no_extras(model: BaseModel, where: str) -> None:
    assert not model.model_extra, f"{where}: fields unknown to AG-UI 1.0: {model.model_extra}"
    for name in type(model).model_fields:
        value = getattr(model, name)
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, BaseModel):
                _no_extras(child, f"{where}.{name}")


class StreamChecker:
    """AG-UI ordering rules for one connection's stream, checked event by event.

    Besides AG-UI 1.0's own rules, the gateway's: at most one message (text or reasoning)
    or tool call open at a time, no activity while one is, every ``subagentRunId``
    announced by SUBAGENT_STARTED before it is used, and an ACTIVITY_DELTA only for an
    activity message the connection has (from an ACTIVITY_SNAPSHOT or a MESSAGES_SNAPSHOT,
    in any run), of its type and its sub-agent. ``official=False`` checks the ordering
    only: ``scripts/load.py`` checks thousands of streams and cannot spend the official
    models' CPU on each event.
    ``declared`` is the version RUN_STARTED must declare: None for a 0.0.x client's stream.
    """

    def __init__(self, *, official: bool = True, declared: str | None = PROTOCOL_VERSION) -> None:
        self.official = official
        self.declared = declared
        self.in_run = False
        self.open_text: set[str] = set()
        self.open_tools: set[str] = set()
        self.open_reasoning: set[str] = set()
        self.open_spans: set[str] = set()
        self.run_tool_calls: set[str] = set()
        self.subagents: set[str] = set()
        self.subagents_done: set[str] = set()
        # message id -> (subagentRunId, name) it was opened with, for reopenings
        self.openers: dict[str, tuple[Any, Any]] = {}
        # activity message id -> (activityType, subagentRunId): kept across runs
        self.activities: dict[str, tuple[Any, Any]] = {}

    def feed(self, event: dict[str, Any]) -> None:
        if self.official:
            validate_official(event)
        kind = event["type"]
        if kind == "RUN_STARTED":
            assert not self.in_run, "RUN_STARTED while a run is still active"
            said = event.get("protocolVersion")
            assert said == self.declared, f"RUN_STARTED declares {said}, not {self.declared}"
            self.in_run = True
            self.run_tool_calls = set()
            self.subagents, self.subagents_done, self.openers = set(), set(), {}
            return
        if kind == "RUN_ERROR":
            # A rejected input gets a RUN_ERROR outside any run; inside one it ends the run.
            self._end()
            return
        assert self.in_run, f"{kind} outside a run"
        owner = event.get("subagentRunId")
        if owner is not None and not kind.startswith("SUBAGENT_"):
            assert owner in self.subagents, f"{kind} attributed to {owner!r}, not announced"
        if kind in ("TEXT_MESSAGE_START", "REASONING_START", "TOOL_CALL_START"):
            assert not self._open_items(), f"{kind} while another item is open"
        if kind == "TEXT_MESSAGE_START":
            self._opened(event["messageId"], owner, event.get("name"))
            self.open_text.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in self.open_text, "content for a message not started"
            assert event["delta"], "empty delta"
        elif kind == "TEXT_MESSAGE_END":
            self.open_text.remove(event["messageId"])
        elif kind == "REASONING_START":
            self.open_spans.add(event["messageId"])
        elif kind == "REASONING_MESSAGE_START":
            assert self.open_spans and not self.open_reasoning, "reasoning message outside a span"
            self._opened(event["messageId"], owner, None)
            self.open_reasoning.add(event["messageId"])
        elif kind == "REASONING_MESSAGE_CONTENT":
            assert event["messageId"] in self.open_reasoning, "reasoning for a message not started"
            assert event["delta"], "empty delta"
        elif kind == "REASONING_MESSAGE_END":
            self.open_reasoning.remove(event["messageId"])
        elif kind == "REASONING_END":
            assert not self.open_reasoning, "span ended with its message open"
            self.open_spans.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            self.open_tools.add(event["toolCallId"])
            self.run_tool_calls.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event["toolCallId"] in self.open_tools, f"{kind} for a call not started"
            if kind == "TOOL_CALL_END":
                self.open_tools.remove(event["toolCallId"])
        elif kind == "SUBAGENT_STARTED":
            run_id = event["subagentRunId"]
            assert run_id not in self.subagents | self.subagents_done, f"{run_id} reused"
            parent = event.get("parentSubagentRunId")
            assert parent is None or parent in self.subagents, f"parent {parent} not running"
            self.subagents.add(run_id)
        elif kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            run_id = event["subagentRunId"]
            assert run_id in self.subagents, f"{kind} for {run_id}, not running"
            self.subagents.remove(run_id)
            self.subagents_done.add(run_id)
        elif kind == "ACTIVITY_SNAPSHOT":
            assert not self._open_items(), f"{kind} while another item is open"
            self.activities[event["messageId"]] = (event["activityType"], owner)
        elif kind == "ACTIVITY_DELTA":
            assert not self._open_items(), f"{kind} while another item is open"
            known = self.activities.get(event["messageId"])
            assert known is not None, f"{kind} for {event['messageId']}, never sent"
            assert known[0] == event["activityType"], f"{kind} of another activity type"
            assert owner is None or owner == known[1], f"{kind} attributed to {owner!r}"
        elif kind == "MESSAGES_SNAPSHOT":
            for message in event["messages"]:
                if message["role"] == "activity":
                    known_as = (message["activityType"], message.get("subagentRunId"))
                    self.activities[message["id"]] = known_as
        elif kind == "RUN_FINISHED":
            assert not self._open_items(), "RUN_FINISHED with open items"
            assert not self.subagents, f"RUN_FINISHED with subagents running: {self.subagents}"
            self._end()

    def _open_items(self) -> set[str]:
        return self.open_text | self.open_tools | self.open_reasoning | self.open_spans

    def _opened(self, message_id: str, owner: Any, name: Any) -> None:
        known = self.openers.setdefault(message_id, (owner, name))
        assert known == (owner, name), f"{message_id} reopened as {(owner, name)}, was {known}"

    def _end(self) -> None:
        assert not self.open_tools, "run ended inside a tool call"
        self.in_run = False
        self.open_text.clear()
        self.open_reasoning.clear()
        self.open_spans.clear()


NAVIGATE_TOOL = {
    "name": "navigateToScreen",
    "description": "Open a screen in the browser.",
    "parameters": json.loads(
        open(  # noqa: SIM115 - read once at import
            __file__.rsplit("/tests/", 1)[0]
            + "/gateway/examples/navigator/tools/navigateToScreen.json",
            encoding="utf-8",
        ).read()
    )["parameters"],
}


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def user_input(
    thread_id: str,
    text: str,
    *,
    tools: list[dict[str, Any]] | None = None,
    context: list[dict[str, str]] | None = None,
    message_id: str | None = None,
) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": new_id("run"),
        "protocolVersion": PROTOCOL_VERSION,
        "messages": [{"id": message_id or new_id("msg"), "role": "user", "content": text}],
        "tools": [NAVIGATE_TOOL] if tools is None else tools,
        "context": context or [],
        "state": {},
        "forwardedProps": {},
    }


def tool_answer(
    thread_id: str, answers: list[tuple[str, dict[str, Any]]], *, tools: Any = None
) -> dict[str, Any]:
    """The next RunAgentInput carrying the browser's results, as a stock client sends it."""
    return {
        "threadId": thread_id,
        "runId": new_id("run"),
        "protocolVersion": PROTOCOL_VERSION,
        "messages": [
            {
                "id": new_id("tool"),
                "role": "tool",
                "toolCallId": call_id,
                "content": json.dumps(result, ensure_ascii=False),
            }
            for call_id, result in answers
        ],
        "tools": [NAVIGATE_TOOL] if tools is None else tools,
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def resume(
    thread: str, interrupt_id: str, status: str = "resolved", payload: Any = None
) -> dict[str, Any]:
    """The next RunAgentInput answering an interrupt (AG-UI 1.0's ``resume``), no message."""
    frame = user_input(thread, "")
    frame["messages"] = []
    frame["resume"] = [{"interruptId": interrupt_id, "status": status, "payload": payload}]
    return frame


class AgUiSocket:
    """A /ws connection whose every received event is checked."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.checker = StreamChecker()
        self.received: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def next(self, timeout: float | None = None) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.ws.recv(), timeout or scaled(10))
        event: dict[str, Any] = json.loads(raw)
        self.checker.feed(event)
        self.received.append(event)
        return event

    async def until_end(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Events up to and including the next RUN_FINISHED or RUN_ERROR."""
        events = []
        while True:
            event = await self.next(timeout or scaled(15))
            events.append(event)
            if event["type"] in TERMINAL:
                return events

    async def refused(self, frame: dict[str, Any] | str) -> dict[str, Any]:
        """The RUN_ERROR a refused frame gets: alone as the stream's first event, else in a
        run of its own (after a run's end a lone RUN_ERROR would say that run failed)."""
        *opened, error = await self.run(frame)
        assert error["type"] == "RUN_ERROR", error
        assert [event["type"] for event in opened] == (["RUN_STARTED"] if opened else [])
        return error

    async def run(self, frame: dict[str, Any] | str) -> list[dict[str, Any]]:
        await self.send(frame)
        return await self.until_end()


def sse_frames(body: bytes) -> list[tuple[int | None, dict[str, Any]]]:
    """An SSE body's frames: each one's ``id:`` (None without one) and its event, checking
    that a frame is at most an ``id:`` line and one ``data:`` line, LF only."""
    assert body.endswith(b"\n\n") or not body, body[-40:]
    frames: list[tuple[int | None, dict[str, Any]]] = []
    for frame in body.split(b"\n\n")[:-1]:
        assert b"\r" not in frame
        seq = None
        if frame.startswith(b"id: "):
            line, frame = frame.split(b"\n", 1)
            seq = int(line[len(b"id: ") :])
        assert frame.startswith(b"data: ") and b"\n" not in frame, frame
        frames.append((seq, json.loads(frame[len(b"data: ") :])))
    return frames


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """An SSE body's events (``sse_frames`` without the ids)."""
    return [event for _, event in sse_frames(body)]


def seq_of(event: dict[str, Any]) -> int | None:
    """An event's number in its thread's log (``gateway.hub.eventlog``), if it has one."""
    seq: int | None = (event.get("metadata") or {}).get("gateway.seq")
    return seq


def text_of(events: list[dict[str, Any]]) -> str:
    """What the agent said: the text of its messages (not the user's, sent to other tabs)."""
    said_by_user = {
        e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START" and e["role"] == "user"
    }
    return "".join(
        e["delta"]
        for e in events
        if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] not in said_by_user
    )


def tool_calls(events: list[dict[str, Any]], name: str | None = None) -> list[dict[str, Any]]:
    """Each call with its parsed arguments: {"id", "name", "args"}."""
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "TOOL_CALL_START":
            calls[event["toolCallId"]] = {"id": event["toolCallId"], "name": event["toolCallName"]}
            calls[event["toolCallId"]]["raw"] = ""
        elif event["type"] == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["raw"] += event["delta"]
    for call in calls.values():
        call["args"] = json.loads(call.pop("raw") or "{}")
    return [c for c in calls.values() if name is None or c["name"] == name]


def tool_result(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The parsed result of the one call of ``name`` the events hold."""
    [call] = tool_calls(events, name)
    [found] = [
        e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call["id"]
    ]
    result: dict[str, Any] = json.loads(found["content"])
    return result


def outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] == "RUN_FINISHED", f"run did not finish: {last}"
    result: dict[str, Any] = last.get("outcome", {"type": "success"})
    return result


def snapshot_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the one MESSAGES_SNAPSHOT among ``events``."""
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    messages: list[dict[str, Any]] = snapshot["messages"]
    return messages
