"""Every kind of stream the gateway emits, error streams included, through two outside
oracles: ``ag-ui-validate`` 0.4 (its core and transport rules, on the bytes as sent) and
@ag-ui/client's own checks (1.0's enforcer and verifier; 0.0.59's schemas for the streams
of a client that declares no version).

ag-ui-validate's catalogue is written against AG-UI 0.x; the rules of it that AG-UI 1.0
contradicts are listed, each with the 1.0 text, in docs/conformance.md, and exactly those
are turned off here. Every listed rule must still fire on some stream of the catalogue, so
the list cannot outlive the behaviour it excuses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui_validate import RULES, Diagnostic, ValidatorOptions
from ag_ui_validate.pytest_plugin import validate_agui
from ag_ui_validate.transport import TransportOptions, validate_body

from gateway.translate.translator import Phase
from tests.support.agui import StreamChecker, new_id, seq_of, sse_frames, user_input
from tests.support.auth import JWT
from tests.support.official_client import NEEDS_NODE, official_check
from tests.support.servers import RunningGateway, running_gateway
from tests.support.speakers import FlakyLlm
from tests.support.surfaces import BASIC

pytestmark = [NEEDS_NODE, pytest.mark.browser]

CONFORMANCE = Path(__file__).parents[2] / "docs" / "conformance.md"


def ignored_rules() -> set[str]:
    """The rule ids docs/conformance.md lists as contradicted by AG-UI 1.0."""
    return set(re.findall(r"^\| (AGUI\d{3}) \|", CONFORMANCE.read_text(), re.MULTILINE))


@dataclasses.dataclass
class Capture:
    """One answer of the SSE door as sent, or a /ws connection's whole stream (no body)."""

    name: str
    status: int
    content_type: str
    body: bytes | None
    old_client: bool = False
    features: tuple[str, ...] = ()
    received: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        if self.body is None:
            return self.received
        return [
            json.loads(line[len("data: ") :])
            for line in self.body.decode().split("\n")
            if line.startswith("data: ")
        ]


async def validated(capture: Capture) -> list[Diagnostic]:
    """ag-ui-validate's findings on the bytes (on /ws, the events), every rule on."""
    if capture.body is None:
        return list(validate_agui(capture.events, features=list(capture.features)).diagnostics)
    sent = capture.body

    async def body() -> AsyncIterator[bytes]:
        yield sent

    options = TransportOptions(
        validator=ValidatorOptions(features=list(capture.features)), recorded=True
    )
    result = await validate_body(body(), capture.content_type, options)
    return list(result.report.diagnostics)


class Door:
    """POST /invocations as a plain HTTP client, keeping what each answer said."""

    def __init__(self, gateway: RunningGateway, http: httpx.AsyncClient) -> None:
        self.gateway, self.http = gateway, http
        self.captures: list[Capture] = []

    async def post(
        self,
        name: str,
        frame: dict[str, Any] | bytes,
        *,
        user: str = "demo",
        headers: dict[str, str] | None = None,
        features: tuple[str, ...] = (),
    ) -> Capture:
        content = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
        answer = await self.http.post(
            f"{self.gateway.http}/invocations?user={user}",
            content=content,
            headers={"content-type": "application/json", **(headers or {})},
        )
        old = isinstance(frame, dict) and "protocolVersion" not in frame
        capture = Capture(
            name,
            answer.status_code,
            answer.headers.get("content-type", ""),
            answer.content,
            old_client=old,
            features=features,
        )
        self.captures.append(capture)
        return capture


def tool_result(thread: str, call_id: str) -> dict[str, Any]:
    frame = user_input(thread, "")
    frame["messages"] = [
        {
            "id": new_id("tool"),
            "role": "tool",
            "toolCallId": call_id,
            "content": json.dumps({"status": "navigated"}),
        }
    ]
    return frame


def resume(thread: str, interrupt_id: str) -> dict[str, Any]:
    frame = {**user_input(thread, ""), "messages": []}
    frame["resume"] = [
        {"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": True}}
    ]
    return frame


def legacy(frame: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in frame.items() if key != "protocolVersion"}


def showing(thread: str) -> dict[str, Any]:
    """'R-1042 보여줘' from a client that renders A2UI: the card streams as activity."""
    return user_input(thread, "R-1042 보여줘", context=BASIC)


def press(thread: str, surface: str = "work-request-R-1042") -> dict[str, Any]:
    """A press on the card's 승인: an activity opens the run its approval interrupts."""
    pressed = {"name": "approve", "surfaceId": surface, "sourceComponentId": "approve"}
    pressed["context"] = {"requestId": "R-1042", "status": "pending"}
    frame = {**user_input(thread, "", context=BASIC), "messages": []}
    return frame | {"forwardedProps": {"a2uiAction": {"userAction": pressed}}}


async def catalogue(door: Door) -> None:
    """Every kind of stream, as clients meet them."""
    await door.post("text turn", user_input(new_id("t"), "안녕"))
    thread = new_id("t")
    asked = await door.post("frontend tool call", user_input(thread, "업무 요청 목록 화면 열어줘"))
    [pending] = asked.events[-1]["outcome"]["pendingToolCallIds"]
    await door.post("tool result", tool_result(thread, pending))
    thread = new_id("t")
    asked = await door.post("approval asked", user_input(thread, "R-1042 승인해줘"))
    [interrupt] = asked.events[-1]["outcome"]["interrupts"]
    await door.post("approval answered", resume(thread, interrupt["id"]))
    await surfaces(door)
    state = {**user_input(new_id("t"), "안녕"), "state": {"theme": "dark"}}
    await door.post("declared state", state, features=("shared-state",))
    await door.post("agent error", user_input(new_id("t"), "explode"))
    await door.post("bad body", b'{"threadId": "t"')
    await door.post("bad version", {**user_input(new_id("t"), "안녕"), "protocolVersion": "2.0"})
    await door.post("unknown call", tool_result(new_id("t"), "no-such-call"))
    cancel = {**user_input(new_id("t"), ""), "forwardedProps": {"gateway": {"cancel": True}}}
    await door.post("nothing to cancel", cancel)
    await busy_and_cancelled(door)
    for _ in range(door.gateway.app.settings.user_burst + 1):
        flood = await door.post("rate limit", b"{}", user="flood")
        if flood.status == 429:
            break
    door.captures = [c for c in door.captures if c.name != "rate limit" or c.status == 429]
    # The same turns from a client that declares no version.
    await door.post("0.0.x text turn", legacy(user_input(new_id("t"), "안녕")))
    thread = new_id("t")
    await door.post(
        "0.0.x frontend tool call", legacy(user_input(thread, "업무 요청 목록 화면 열어줘"))
    )
    thread = new_id("t")
    asked = await door.post("0.0.x approval asked", legacy(user_input(thread, "R-1042 승인해줘")))
    [interrupt] = asked.events[-1]["outcome"]["interrupts"]
    await door.post("0.0.x approval answered", legacy(resume(thread, interrupt["id"])))


async def surfaces(door: Door) -> None:
    """A2UI: a card, a press on it, the card updated, a press refused; for 1.0 and 0.0.x.
    As a user of their own: the rate limit holds the catalogue's user to its burst. One of
    the demo's directory, who may see and approve R-1042 (``work_requests``)."""
    thread = new_id("t")
    await door.post("A2UI surface", showing(thread), user="approver")
    asked = await door.post("A2UI press", press(thread), user="approver")
    [interrupt] = asked.events[-1]["outcome"]["interrupts"]
    answer = resume(thread, interrupt["id"]) | {"context": BASIC}
    await door.post("A2UI surface updated", answer, user="approver")
    await door.post("A2UI press refused", press(thread, "no-such-surface"), user="approver")
    thread = new_id("t")
    await door.post("0.0.x A2UI surface", legacy(showing(thread)), user="approver")
    await door.post("0.0.x A2UI press", legacy(press(thread)), user="approver")


async def busy_and_cancelled(door: Door) -> None:
    """Runs in progress: a second input refused as busy, one that interrupts, a cancel."""
    thread = new_id("t")
    running = asyncio.create_task(
        door.post("interrupted run", user_input(thread, "자기소개를 길게 해 주세요"))
    )
    await streaming(door, thread)
    rejecting = {"forwardedProps": {"gateway": {"busy": "reject"}}}
    await door.post("busy thread", user_input(thread, "안녕") | rejecting)
    await door.post("interrupting message", user_input(thread, "안녕"))
    await running
    running = asyncio.create_task(
        door.post("cancelled run", user_input(thread, "자기소개를 길게 해 주세요"))
    )
    await streaming(door, thread)
    cancel = {**user_input(thread, ""), "forwardedProps": {"gateway": {"cancel": True}}}
    await door.post("cancel", cancel)
    await running


async def streaming(door: Door, thread: str) -> None:
    """Waits until the thread's run streams."""
    hub = door.gateway.app.hub
    assert hub is not None
    for _ in range(500):
        run = getattr(hub.threads.get(thread), "run", None)
        if run is not None and run.translator.phase is not Phase.NEW:
            return
        await asyncio.sleep(0.01)


async def websocket_streams(gateway: RunningGateway) -> list[Capture]:
    """/ws connections: runs in order, a reattach's snapshots, a cancel, refused frames."""
    captures = []
    async with gateway.socket() as ws:
        thread = new_id("t")
        await ws.run(user_input(thread, "업무 요청 목록 화면 열어줘"))
        await ws.run({"type": "reattach", "threadId": thread})
        await ws.run({**user_input(thread, "안녕"), "state": {"theme": "dark"}})
        await ws.send(user_input(new_id("t"), "자기소개를 길게 해 주세요"))
        started = await ws.next()
        await ws.send({"type": "cancel", "threadId": started["threadId"]})
        await ws.until_end()
        await ws.run({"type": "cancel", "threadId": thread})  # nothing to cancel
        await ws.run("not json")
        await ws.run(user_input(new_id("t"), "explode"))
        captures.append(Capture("ws: one connection", 101, "", None, received=ws.received))
    async with gateway.socket() as ws:
        ws.checker.declared = None  # it declares no version: its runs declare none either
        thread = new_id("t")
        asked = await ws.run(legacy(user_input(thread, "R-1042 승인해줘")))
        [interrupt] = asked[-1]["outcome"]["interrupts"]
        await ws.run(legacy(resume(thread, interrupt["id"])))
        await ws.send(legacy(user_input(new_id("t"), "자기소개를 길게 해 주세요")))
        started = await ws.next()
        await ws.send({"type": "cancel", "threadId": started["threadId"]})
        await ws.until_end()
        captures.append(Capture("ws: a 0.0.x client", 101, "", None, True, received=ws.received))
    async with gateway.socket("approver") as ws:
        card = new_id("t")
        await ws.run(showing(card))
        await ws.run(press(card))
        await ws.run({"type": "reattach", "threadId": card})  # with activity messages
        captures.append(Capture("ws: A2UI", 101, "", None, received=ws.received))
    return captures


async def resumed_streams(gateway: RunningGateway) -> list[Capture]:
    """A stream resumed by cursor, joined to what its client saw before (alone it begins
    mid-run, by design): on /ws, and on SSE through Last-Event-ID."""
    async with gateway.socket() as ws, gateway.socket() as back:
        thread = new_id("t")
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        for _ in range(6):
            await ws.next()
        seen = ws.received[:5]
        back.checker = StreamChecker()
        for event in seen:
            back.checker.feed(event)
        await back.run({"type": "reattach", "threadId": thread, "after": seq_of(seen[-1])})
        await ws.until_end()
        joined = Capture("ws: resumed by cursor", 101, "", None, received=seen + back.received)
    async with httpx.AsyncClient(timeout=30) as http:
        thread = new_id("t")
        whole = await http.post(
            f"{gateway.http}/invocations?user=demo", json=user_input(thread, "안녕")
        )
        frames = whole.content.split(b"\n\n")
        rest = await http.get(
            f"{gateway.http}/invocations?threadId={thread}&user=demo",
            headers={"Last-Event-ID": str(sse_frames(frames[2] + b"\n\n")[0][0])},
        )
    body = b"\n\n".join(frames[:3]) + b"\n\n" + rest.content
    kind = rest.headers["content-type"]
    return [joined, Capture("sse: resumed by Last-Event-ID", 200, kind, body)]


async def all_captures() -> list[Capture]:
    captures: list[Capture] = []
    async with (
        running_gateway(model=FlakyLlm(), scripted_pace_ms=40, user_rate=0.5, user_burst=30) as gw,
        httpx.AsyncClient(timeout=30) as http,
    ):
        door = Door(gw, http)
        await catalogue(door)
        captures += door.captures
        captures += await websocket_streams(gw)
    async with running_gateway(scripted_pace_ms=20) as gw:
        captures += await resumed_streams(gw)
    async with running_gateway(**JWT) as gw, httpx.AsyncClient(timeout=30) as http:
        door = Door(gw, http)
        await door.post("auth refusal", user_input(new_id("t"), "안녕"), user="")
        captures += door.captures
    return captures


async def test_every_stream_passes_ag_ui_validate_and_the_official_clients() -> None:
    captures = await all_captures()
    names = {c.name for c in captures}
    assert {"cancel", "busy thread", "rate limit", "auth refusal", "bad body"} <= names
    activity = {c.name for c in captures if any(e["type"] == "ACTIVITY_SNAPSHOT" for e in c.events)}
    assert {"A2UI surface", "A2UI press", "A2UI surface updated", "ws: A2UI"} <= activity
    assert "0.0.x A2UI surface" in activity
    ended = {c.name: c.events[-1].get("outcome", {}).get("type") for c in captures if c.events}
    assert ended["interrupted run"] == ended["cancelled run"] == "cancelled"
    statuses = {c.name: c.status for c in captures}
    assert statuses["busy thread"] == 409 and statuses["rate limit"] == 429
    assert statuses["auth refusal"] == 401 and statuses["bad body"] == 400
    ignored = ignored_rules()
    problems: list[str] = []
    fired: set[str] = set()
    for capture in captures:
        for finding in await validated(capture):
            fired.add(finding.rule)
            if finding.rule not in ignored and finding.severity in ("error", "warning"):
                problems.append(f"{capture.name}: {finding.rule} {finding.message}")
        checked = await official_check(capture.events, old_client=capture.old_client)
        if checked["failed"] or checked["warnings"]:
            problems.append(f"{capture.name}: client: {checked['failed']} {checked['warnings']}")
    assert not problems, "\n".join(problems)
    assert ignored <= fired, f"listed in docs/conformance.md but never fired: {ignored - fired}"


def test_the_ignored_rules_are_rules_of_ag_ui_validate() -> None:
    ignored = ignored_rules()
    assert ignored and ignored <= set(RULES)
