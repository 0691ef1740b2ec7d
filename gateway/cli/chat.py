"""A command-line chat over the gateway's /ws door that plays the browser.

Each line read from stdin becomes a run on one thread. The reply prints as it streams, with
a line for every tool call and result, its JSON shown as a person writes it (no ``\\u``
escapes). A client-tool call (navigateToScreen) is answered with the result you pick, or the
one ``--auto`` names; an approval (the run ends with an AG-UI interrupt) is answered yes or
no, with a reason for a no, or as ``--approve`` says; the continuation prints in turn. The
answer to a question is the next line read, never a new message: a "yes" approves.
Ctrl-C during a reply cancels the run; Ctrl-C at the prompt, or the end of stdin, quits, also
mid-question (the call or approval stays open on the thread, for a browser to answer).

``--url`` takes the gateway's address as ws://, wss://, http:// or https:// (the path
defaults to /ws); without it, the chat talks to 127.0.0.1 on the configured port
(``GATEWAY_PORT``, else 8080).

    agent-gateway-chat --url http://127.0.0.1:8080
    echo "업무 요청 목록 화면 열어줘" | agent-gateway-chat --auto navigated
    printf 'R-1042 승인해줘\\nno\\nnot this week\\n' | agent-gateway-chat --user approver
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
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from gateway import config

# What the browser can report for a screen change, with the words it sends along.
RESULTS = {
    "navigated": "The screen is open.",
    "denied": "The user has no access to this screen.",
    "not_allowed_here": "This window cannot change screens.",
    "error": "The screen failed to load.",
}
RESULT_PREVIEW = 160
YES = {"y", "yes", "approve", "ok", "네", "예", "승인"}
NO = {"n", "no", "reject", "아니오", "아니요", "거절"}
SCHEMES = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}


def _id() -> str:
    return uuid.uuid4().hex


def socket_url(url: str) -> str:
    """The /ws address from what a person types: http(s) becomes ws(s), no path means /ws.

    Raises ValueError, in words, for anything else (a missing scheme, ftp://, no host)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.netloc:
        raise ValueError(
            f"--url {url!r} is not a gateway address: give ws://, wss://, http:// or https:// "
            "and a host, e.g. http://127.0.0.1:8080"
        )
    path = parts.path if parts.path not in ("", "/") else "/ws"
    return urllib.parse.urlunsplit((SCHEMES[parts.scheme], parts.netloc, path, parts.query, ""))


def tools_url(ws_url: str) -> str:
    """GET /tools on the same host as the socket: ws://h:p/ws?x -> http://h:p/tools."""
    parts = urllib.parse.urlsplit(ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    return urllib.parse.urlunsplit((scheme, parts.netloc, "/tools", "", ""))


def with_user(ws_url: str, user: str) -> str:
    parts = urllib.parse.urlsplit(ws_url)
    query = dict(urllib.parse.parse_qsl(parts.query), user=user)
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def readable(text: str) -> str:
    """JSON text as a person reads it: Hangul as Hangul, not ``\\uXXXX``; other text as is."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text


def shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class Chat:
    def __init__(
        self,
        ws: ClientConnection,
        tools: list[Any],
        thread: str,
        auto: str | None,
        approve: str | None = None,
    ) -> None:
        self.ws, self.tools, self.thread, self.auto = ws, tools, thread, auto
        self.approve = approve
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        # Once stdin has ended every question gets None: the pump sends its end only once,
        # and a chat that asked after it would wait forever.
        self.ended = False
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
        if self.ended:
            return None
        if sys.stdin.isatty():
            print(prompt, end="", flush=True)
        line = await self.lines.get()
        if line is None:
            self.ended = True
        return line

    async def serve(self) -> None:
        while (line := await self.ask("you> ")) is not None:
            if line.strip():
                await self.turn({"messages": [{"id": _id(), "role": "user", "content": line}]})

    async def turn(self, answer: dict[str, Any]) -> None:
        """Runs until the thread waits for nothing, answering each client call and approval."""
        while answer:
            # Only the new messages go up: the thread's history lives on the server.
            run_id = _id()
            run_input = {
                "threadId": self.thread,
                "runId": run_id,
                "protocolVersion": "1.0",
                "messages": [],
                "tools": self.tools,
                "context": [],
                "state": {},
                "forwardedProps": {},
                **answer,
            }
            await self.ws.send(json.dumps(run_input, ensure_ascii=False))
            self.replying = True
            try:
                outcome, calls = await self.reply(run_id)
            finally:
                self.replying = False
            if outcome.get("type") == "interrupt":
                resume = await self.decide(outcome.get("interrupts") or [])
                answer = {"resume": resume} if resume else {}
            else:
                messages = await self.results(outcome.get("pendingToolCallIds") or [], calls)
                answer = {"messages": messages} if messages else {}

    async def results(
        self, pending: list[str], calls: dict[str, tuple[str, str]]
    ) -> list[dict[str, str]]:
        """The browser's answer to each call the run left to it; none once stdin has ended."""
        messages = []
        for call_id in pending:
            name, args = calls.get(call_id, ("?", ""))
            status = await self.choose(name, args)
            if status is None:
                return []
            content = json.dumps({"status": status, "message": RESULTS[status]})
            print(f"[tool result] {name} -> {content}")
            messages.append(
                {"id": _id(), "role": "tool", "toolCallId": call_id, "content": content}
            )
        return messages

    async def decide(self, interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A person's answer to each approval: AG-UI ``resume`` entries; none once stdin ended."""
        resume = []
        for interrupt in interrupts:
            print(f"[approval] {interrupt.get('message') or interrupt.get('reason')}")
            payload = await self.verdict()
            if payload is None:
                print("[approval left open]")
                return []
            said = "approved" if payload["approved"] else "rejected"
            print(f"[approval] {said}" + (f": {payload['reason']}" if "reason" in payload else ""))
            entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
            resume.append(entry)
        return resume

    async def verdict(self) -> dict[str, Any] | None:
        if self.approve is not None:
            return {"approved": self.approve == "yes"}
        while (answer := await self.ask("approve? [yes/no] ")) is not None:
            word = answer.strip().lower()
            if word in YES:
                return {"approved": True}
            if word in NO:
                reason = await self.ask("reason (optional)> ")
                return {"approved": False, **({"reason": reason.strip()} if reason else {})}
            print("please answer yes or no")
        return None

    async def reply(self, run_id: str) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
        """Prints one run's events; returns its outcome and its calls: id -> (name, args)."""
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
                name, args = calls[event["toolCallId"]]
                print(f"[tool call] {name} {readable(args)}")
            elif kind == "TOOL_CALL_RESULT":
                content = event["content"]
                content = readable(content) if isinstance(content, str) else shown(content)
                if len(content) > RESULT_PREVIEW:
                    content = content[:RESULT_PREVIEW] + "…"
                print(f"[tool result] {content}")
            elif kind == "CUSTOM":
                print(f"[{event['name']}] {shown(event.get('value'))}")
            elif kind == "RUN_ERROR":
                print(f"[error {event.get('code')}] {event['message']}")
                return {}, calls
            elif kind == "RUN_FINISHED" and event["runId"] == run_id:
                # Other runs on the socket are notices, such as a cancel that came too late.
                outcome: dict[str, Any] = event.get("outcome") or {}
                if outcome.get("type") == "cancelled":
                    print("[run cancelled]")
                return outcome, calls

    async def choose(self, name: str, args: str) -> str | None:
        if self.auto is not None:
            return self.auto
        choices = "/".join(RESULTS)
        prompt = f"{name} {readable(args)}: result? [{choices}] "
        while (answer := await self.ask(prompt)) is not None:
            if answer.strip() in RESULTS:
                return answer.strip()
            print(f"please answer one of {choices}")
        return None


async def converse(args: argparse.Namespace) -> int:
    try:
        url = socket_url(args.url or f"ws://127.0.0.1:{config.load().port}/ws")
    except ValueError as exc:
        print(exc)
        return 2
    try:
        with urllib.request.urlopen(tools_url(url), timeout=10) as response:
            tools = json.load(response)["tools"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"cannot reach the gateway at {tools_url(url)} ({exc}); is it running?")
        return 2
    try:
        async with connect(with_user(url, args.user), max_size=None) as ws:
            chat = Chat(ws, tools, args.thread, args.auto, args.approve)
            print(f"thread {args.thread} ({len(tools)} client tools)", flush=True)
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, chat.interrupt)
            chat.read_stdin()
            await chat.serve()
    except ConnectionClosed as closed:
        print(f"[connection closed: {closed}]")
        return 1
    except (OSError, InvalidHandshake) as exc:
        print(f"cannot open {url} ({exc})")
        return 2
    return 0


def main() -> int:
    """``agent-gateway-chat``: the terminal client, an installed command."""
    parser = argparse.ArgumentParser(
        prog="agent-gateway-chat", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument(
        "--url", help="ws://, wss://, http:// or https:// (default: 127.0.0.1, GATEWAY_PORT)"
    )
    parser.add_argument("--user", default="demo")
    parser.add_argument("--thread", default=str(uuid.uuid4()))
    parser.add_argument("--auto", choices=list(RESULTS), help="answer every client-tool call so")
    parser.add_argument("--approve", choices=["yes", "no"], help="answer every approval so")
    return asyncio.run(converse(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
