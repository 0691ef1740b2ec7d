"""A stand-in for the gateway's /ws that speaks docs/a2ui.md, so the page's half of A2UI
(drawing surfaces, sending presses, showing what the gateway said) is tested on its own.

``SurfaceThread`` holds one thread the way the contract has the gateway hold it: the
messages it streamed (activity messages included) come back in the snapshot of every
reattach, so a reload redraws the surfaces. A test scripts what each typed message gets
(``answer``) and whether a press is accepted or refused (``refuse``); every frame the stub
sends goes through the suite's AG-UI checker, so the stub speaks AG-UI 1.0 as the gateway
must.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from typing import Any

from playwright.async_api import Page, WebSocketRoute

from tests.support.agui import StreamChecker
from tests.support.browser import route_sockets

BASIC_CATALOG = "https://a2ui.org/specification/v0_9/basic_catalog.json"


def surface_event(message_id: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": message_id,
        "activityType": "a2ui-surface",
        "content": {"operations": operations},
        "replace": True,
    }


def surface_delta(message_id: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
    patch = [{"op": "add", "path": "/operations/-", "value": op} for op in operations]
    return {
        "type": "ACTIVITY_DELTA",
        "messageId": message_id,
        "activityType": "a2ui-surface",
        "patch": patch,
    }


def reply_events(message_id: str, text: str, chunks: int = 1) -> list[dict[str, Any]]:
    size = max(1, -(-len(text) // chunks))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
        *(
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": part}
            for part in parts
        ),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


class SurfaceThread:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.inputs: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.refuse: str | None = None
        self.pace = 0.0
        self._answers: dict[str, list[dict[str, Any]]] = {}
        self._runs = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.problems: list[str] = []

    async def serve(self, page: Page) -> None:
        await route_sockets(page, self._connected)

    def answer(self, text: str, events: Iterable[dict[str, Any]]) -> None:
        """What the typed message ``text`` gets: these events, inside its run."""
        self._answers[text] = list(events)

    def _connected(self, route: WebSocketRoute) -> None:
        checker = StreamChecker()
        route.on_message(lambda message: self._received(route, checker, message))

    def _received(
        self, route: WebSocketRoute, checker: StreamChecker, message: str | bytes
    ) -> None:
        frame = json.loads(message)
        if frame.get("type") == "reattach":
            snapshot: list[dict[str, Any]] = [
                {"type": "MESSAGES_SNAPSHOT", "messages": self.messages},
                {"type": "STATE_SNAPSHOT", "snapshot": {}},
            ]
            self._run(route, checker, f"reattach-{next(self._runs)}", frame["threadId"], snapshot)
            return
        if frame.get("type"):
            return  # cancel: nothing here runs long enough to stop
        self.inputs.append(frame)
        thread, run = frame["threadId"], frame["runId"]
        action = (frame.get("forwardedProps") or {}).get("a2uiAction")
        if action:
            self.actions.append(action["userAction"])
            if self.refuse:
                error = {"type": "RUN_ERROR", "code": "VALIDATION_ERROR", "message": self.refuse}
                self._run(route, checker, run, thread, [], end=error)
                return
            activity = {
                "id": f"a2ui-action-{run}",
                "role": "activity",
                "activityType": "a2ui-action",
                "content": {"userAction": action["userAction"]},
            }
            self.messages.append(activity)
            event = {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": activity["id"],
                "activityType": "a2ui-action",
                "content": activity["content"],
                "replace": True,
            }
            self._run(
                route,
                checker,
                run,
                thread,
                [event, *self._said(f"reply-{run}", "요청을 받았습니다.")],
            )
            return
        typed = frame["messages"][-1]
        self.messages.append(typed)
        events = self._answers.get(
            typed["content"], self._said(f"reply-{run}", "스크립트에 없는 말입니다.")
        )
        self._keep(events)
        self._run(route, checker, run, thread, events)

    def _said(self, message_id: str, text: str) -> list[dict[str, Any]]:
        events = reply_events(message_id, text)
        self._keep(events)
        return events

    def _keep(self, events: list[dict[str, Any]]) -> None:
        """The thread as a snapshot will show it once these events have streamed."""
        texts: dict[str, dict[str, Any]] = {}
        for event in events:
            kind = event["type"]
            if kind == "ACTIVITY_SNAPSHOT":
                self.messages.append(
                    {
                        "id": event["messageId"],
                        "role": "activity",
                        "activityType": event["activityType"],
                        "content": json.loads(json.dumps(event["content"])),
                    }
                )
            elif kind == "ACTIVITY_DELTA":
                [held] = [m for m in self.messages if m.get("id") == event["messageId"]]
                held["content"]["operations"].extend(p["value"] for p in event["patch"])
            elif kind == "TEXT_MESSAGE_START":
                texts[event["messageId"]] = {
                    "id": event["messageId"],
                    "role": "assistant",
                    "content": "",
                }
                self.messages.append(texts[event["messageId"]])
            elif kind == "TEXT_MESSAGE_CONTENT":
                texts[event["messageId"]]["content"] += event["delta"]

    def _run(
        self,
        route: WebSocketRoute,
        checker: StreamChecker,
        run_id: str,
        thread_id: str,
        events: list[dict[str, Any]],
        end: dict[str, Any] | None = None,
    ) -> None:
        started = {
            "type": "RUN_STARTED",
            "threadId": thread_id,
            "runId": run_id,
            "protocolVersion": "1.0",
        }
        finished = end or {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
        frames = [started, *events, finished]

        async def stream() -> None:
            for frame in frames:
                try:
                    checker.feed(frame)
                except AssertionError as problem:
                    self.problems.append(f"{problem!r} in {frame!r}")
                route.send(json.dumps(frame))
                if self.pace and frame["type"] == "TEXT_MESSAGE_CONTENT":
                    await asyncio.sleep(self.pace)

        task = asyncio.get_running_loop().create_task(stream())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
