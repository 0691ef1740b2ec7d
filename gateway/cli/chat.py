"""A command-line chat over the gateway's /ws door that plays the browser.

Each line read from stdin becomes a run on one thread. The reply prints as it streams, with
a line for every tool call and result; a client-tool call (navigateToScreen) is answered
with the result you pick, or the one ``--auto`` names, and the continuation prints in turn.
Ctrl-C during a reply cancels the run; Ctrl-C at the prompt, or the end of stdin, quits.

    agent-gateway-chat --url ws://127.0.0.1:8080/ws
    echo "업무 요청 목록 화면 열어줘" | agent-gateway-chat --auto navigated
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import urllib.parse
import urllib.request
import uuid
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

# What the browser can report for a screen change, with the words it sends along.
RESULTS = {
    "navigated": "The screen is open.",
    "denied": "The user has no access to this screen.",
    "not_allowed_here": "This window cannot change screens.",
    "error": "The screen failed to load.",
}
RESULT_PREVIEW = 160


def _id() -> str:
    return uuid.uuid4().hex


def tools_url(ws_url: str) -> str:
    """GET /tools on the same host as the socket: ws://h:p/ws?x -> http://h:p/tools."""
    parts = urllib.parse.urlsplit(ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    return urllib.parse.urlunsplit((scheme, parts.netloc, "/tools", "", ""))


def with_user(ws_url: str, user: str) -> str:
    parts = urllib.parse.urlsplit(ws_url)
    query = dict(urllib.parse.parse_qsl(parts.query), user=user)
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


class Chat:
    def __init__(
        self, ws: ClientConnection, tools: list[Any], thread: str, auto: str | None
    ) -> None:
        self.ws, self.tools, self.thread, self.auto = ws, tools, thread, auto
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.replying = False
        self.cancelling: asyncio.Task[None] | None = None

    def read_stdin(self) -> None:
        """Feeds stdin to ``lines`` from a daemon thread, which cannot hold up the exit."""
        loop = asyncio.get_running_loop()

        def pump() -> None:
            for line in sys.stdin:
                loop.call_soon_threadsafe(self.lines.put_nowait, line.rstrip("\n"))
            loop.call_soon_threadsafe(self.lines.put_nowait, None)

        threading.Thread(target=pump, daemon=True).start()

    def interrupt(self) -> None:
        if self.replying:
            print("\n[cancelling]", flush=True)
            cancel = json.dumps({"type": "cancel", "threadId": self.thread})
            self.cancelling = asyncio.create_task(self.ws.send(cancel))
        else:
            self.lines.put_nowait(None)

    async def ask(self, prompt: str) -> str | None:
        if sys.stdin.isatty():
            print(prompt, end="", flush=True)
        return await self.lines.get()

    async def serve(self) -> None:
        while (line := await self.ask("you> ")) is not None:
            if line.strip():
                await self.turn([{"id": _id(), "role": "user", "content": line}])

    async def turn(self, messages: list[dict[str, str]]) -> None:
        """Runs until the thread waits for nothing, answering each client-tool call."""
        while messages:
            # Only the new messages go up: the thread's history lives on the server.
            run_id = _id()
            run_input = {
                "threadId": self.thread,
                "runId": run_id,
                "protocolVersion": "1.0",
                "messages": messages,
                "tools": self.tools,
                "context": [],
                "state": {},
                "forwardedProps": {},
            }
            await self.ws.send(json.dumps(run_input, ensure_ascii=False))
            self.replying = True
            try:
                pending = await self.reply(run_id)
            finally:
                self.replying = False
            messages = []
            for call_id, (name, args) in pending.items():
                status = await self.choose(name, args)
                if status is None:
                    return
                content = json.dumps({"status": status, "message": RESULTS[status]})
                print(f"[tool result] {name} -> {content}")
                messages.append(
                    {"id": _id(), "role": "tool", "toolCallId": call_id, "content": content}
                )

    async def reply(self, run_id: str) -> dict[str, tuple[str, str]]:
        """Prints one run's events; returns the calls it left to the browser: id -> (name, args)."""
        calls: dict[str, tuple[str, str]] = {}
        while True:
            event = json.loads(await self.ws.recv())
            kind = event["type"]
            if kind == "TEXT_MESSAGE_START":
                print("assistant> ", end="", flush=True)
            elif kind == "TEXT_MESSAGE_CONTENT":
                print(event["delta"], end="", flush=True)
            elif kind == "TEXT_MESSAGE_END":
                print()
            elif kind == "TOOL_CALL_START":
                calls[event["toolCallId"]] = (event["toolCallName"], "")
            elif kind == "TOOL_CALL_ARGS":
                name, args = calls[event["toolCallId"]]
                calls[event["toolCallId"]] = (name, args + event["delta"])
            elif kind == "TOOL_CALL_END":
                print("[tool call] {} {}".format(*calls[event["toolCallId"]]))
            elif kind == "TOOL_CALL_RESULT":
                content = event["content"]
                if len(content) > RESULT_PREVIEW:
                    content = content[:RESULT_PREVIEW] + "…"
                print(f"[tool result] {content}")
            elif kind == "CUSTOM":
                print(f"[{event['name']}] {json.dumps(event.get('value'), ensure_ascii=False)}")
            elif kind == "RUN_ERROR":
                print(f"[error {event.get('code')}] {event['message']}")
                return {}
            elif kind == "RUN_FINISHED" and event["runId"] == run_id:
                # Other runs on the socket are notices, such as a cancel that came too late.
                outcome = event.get("outcome") or {}
                if outcome.get("type") != "success":
                    rest = {k: v for k, v in outcome.items() if k != "type"}
                    print(f"[run {outcome.get('type')}]", *([json.dumps(rest)] if rest else []))
                pending = outcome.get("pendingToolCallIds") or []
                return {call_id: calls[call_id] for call_id in pending}

    async def choose(self, name: str, args: str) -> str | None:
        if self.auto is not None:
            return self.auto
        choices = "/".join(RESULTS)
        while (answer := await self.ask(f"{name} {args}: result? [{choices}] ")) is not None:
            if answer.strip() in RESULTS:
                return answer.strip()
            print(f"please answer one of {choices}")
        return None


async def converse(args: argparse.Namespace) -> int:
    try:
        with urllib.request.urlopen(tools_url(args.url), timeout=10) as response:
            tools = json.load(response)["tools"]
    except OSError as exc:
        print(f"cannot reach the gateway at {tools_url(args.url)} ({exc}); is it running?")
        return 2
    async with connect(with_user(args.url, args.user), max_size=None) as ws:
        chat = Chat(ws, tools, args.thread, args.auto)
        print(f"thread {args.thread} ({len(tools)} client tools)", flush=True)
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, chat.interrupt)
        chat.read_stdin()
        try:
            await chat.serve()
        except ConnectionClosed as closed:
            print(f"[connection closed: {closed}]")
            return 1
    return 0


def main() -> int:
    """``agent-gateway-chat``: the terminal client, an installed command."""
    parser = argparse.ArgumentParser(
        prog="agent-gateway-chat", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--url", default="ws://127.0.0.1:8080/ws")
    parser.add_argument("--user", default="demo")
    parser.add_argument("--thread", default=str(uuid.uuid4()))
    parser.add_argument("--auto", choices=list(RESULTS), help="answer every client-tool call so")
    return asyncio.run(converse(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
