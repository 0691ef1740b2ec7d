"""A dojo agent (``tests/support/dojo``) driven the ways a page drives it, and what the page
shows at the end of each, for putting side by side.

A conversation is a list of turns: ``Say`` (the user's words), ``Answer`` (the page's
result for a call of one of its tools) and ``Approve`` (the user's answer to the interrupt
the last run ended on). Each turn becomes the RunAgentInput a stock page sends next: the
messages and state it shows so far, the tools it declares, and the new message or resume.
``converse(way, target, turns, tools)`` plays them one of three ways:

- ``"client"``: @ag-ui/client 1.0's own HttpAgent, against the gateway's POST /invocations
  or any AG-UI URL (ag-ui-adk's, from ``tests.support.agui_adk``);
- ``"ws"``: a /ws connection (``RunningGateway.socket``); the page is the stream folded by
  @ag-ui/client (``official_client.replay``), as a page on the WebSocket client would;
- ``"sse"``: POST /invocations read by httpx (``post_run``), folded the same way;
- ``"tab"``: sent over /ws while another tab of the user follows the thread (a reattach
  before the first run); the page is that tab's, folded the same way.

``reloaded(gateway, thread)`` is what a page shows after a reload: the snapshots of a
reattach (also folded by @ag-ui/client) and ``GET /history``. ``gist(page)`` is what two
servers should agree on: roles, words, tool calls by name and arguments, tool results and
state, without the ids each server mints.

``fresh_agent(module)`` is a new copy of a dojo module's ``root_agent``, as a new process
would import it: hosting gives the agent it is handed the gateway's client toolset, so two
servers in one test never share one. ``quiet_log()`` gathers what the gateway logs, and
``assert_quiet`` says it held no ERROR and no traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import runpy
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import httpx
from google.adk.agents.base_agent import BaseAgent

from gateway.adk.hosting import llm_agents
from gateway.models.script import ScriptLlm
from tests.support.agui import PROTOCOL_VERSION, new_id, snapshot_of
from tests.support.budgets import scaled
from tests.support.official_client import accepted, replay, run_http_agent
from tests.support.servers import RunningGateway, post_run

Way = Literal["client", "ws", "sse", "tab"]
WAYS: tuple[Way, ...] = ("client", "ws", "sse", "tab")


def fresh_agent(module: str, *, pace_ms: float = 0.0) -> BaseAgent:
    """``tests.support.dojo.<module>``'s ``root_agent``, from a fresh run of the module;
    its script models stream a chunk every ``pace_ms``, so a test can act mid-run."""
    agent: BaseAgent = runpy.run_module(f"tests.support.dojo.{module}")["root_agent"]
    for member in llm_agents(agent):
        if isinstance(member.model, ScriptLlm):
            member.model.pace_ms = pace_ms
    return agent


# --- turns ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Say:
    """The user types ``text``."""

    text: str


@dataclasses.dataclass(frozen=True)
class Answer:
    """The page answers its open call of ``tool`` with ``result``, as a ``tool`` message:
    a string as it is (a page's own words), anything else as JSON."""

    tool: str
    result: Any


@dataclasses.dataclass(frozen=True)
class Approve:
    """The user answers the interrupt the last run ended on: ``approved``, with ``payload``
    (the edited payload the tool asked for) when given."""

    approved: bool = True
    payload: Any = None


Turn = Say | Answer | Approve


@dataclasses.dataclass
class Page:
    """What a page shows: its messages and its state."""

    messages: list[dict[str, Any]]
    state: dict[str, Any]


@dataclasses.dataclass
class Conversation:
    """A conversation played one way: the page at its end and each run's events."""

    thread: str
    page: Page
    runs: list[list[dict[str, Any]]]


def next_input(
    thread: str, page: Page, turn: Turn, tools: Sequence[dict[str, Any]], last_run: list[Any]
) -> dict[str, Any]:
    """The RunAgentInput a stock page sends for ``turn`` after showing ``page``."""
    run_input: dict[str, Any] = {
        "threadId": thread,
        "runId": new_id("run"),
        "protocolVersion": PROTOCOL_VERSION,
        "messages": list(page.messages),
        "tools": list(tools),
        "context": [],
        "state": page.state,
        "forwardedProps": {},
    }
    if isinstance(turn, Say):
        run_input["messages"].append({"id": new_id("msg"), "role": "user", "content": turn.text})
    elif isinstance(turn, Answer):
        run_input["messages"].append(
            {
                "id": new_id("tool"),
                "role": "tool",
                "toolCallId": _open_call(page, turn.tool),
                "content": turn.result
                if isinstance(turn.result, str)
                else json.dumps(turn.result, ensure_ascii=False),
            }
        )
    else:
        [interrupt] = last_run[-1]["outcome"]["interrupts"]
        answer: dict[str, Any] = {"approved": turn.approved}
        if turn.payload is not None:
            answer["payload"] = turn.payload
        run_input["resume"] = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": answer}
        ]
    return run_input


def _open_call(page: Page, tool: str) -> str:
    answered = {m.get("toolCallId") for m in page.messages if m["role"] == "tool"}
    calls = [
        call["id"]
        for message in page.messages
        for call in message.get("toolCalls") or ()
        if call["function"]["name"] == tool and call["id"] not in answered
    ]
    assert calls, f"the page has no open call of {tool}: {page.messages}"
    return calls[-1]


# --- playing them ---------------------------------------------------------------------------


async def converse(
    way: Way,
    target: RunningGateway | str,
    turns: Sequence[Turn],
    tools: Sequence[dict[str, Any]] = (),
    *,
    user: str = "demo",
) -> Conversation:
    """``turns`` played ``way`` against ``target`` on a new thread, as ``user``; every
    stream is checked (``StreamChecker``, and @ag-ui/client's enforcement and verifier with
    no warning)."""
    thread = new_id("t")
    if way == "tab":
        assert isinstance(target, RunningGateway), "only the gateway has /ws"
        return await _followed(target, thread, turns, tools, user)
    page = Page([], {})
    runs: list[list[dict[str, Any]]] = []
    for turn in turns:
        run_input = next_input(thread, page, turn, tools, runs[-1] if runs else [])
        if way == "client":
            report = await run_http_agent(target, run_input, {"X-Gateway-User": user})
            accepted(report)
            events = report["http"]["events"]
            page = Page(report["messages"], report["state"])
        else:
            assert isinstance(target, RunningGateway), "only the gateway has /ws"
            events = await _stream(way, target, run_input, user)
            page = await _folded(run_input, events)
        runs.append(events)
    return Conversation(thread, page, runs)


async def _followed(
    gateway: RunningGateway,
    thread: str,
    turns: Sequence[Turn],
    tools: Sequence[dict[str, Any]],
    user: str,
) -> Conversation:
    """The conversation sent from one /ws connection, as another one following the thread
    shows it: the page each input is made from is the follower's."""
    async with gateway.socket(user) as sender, gateway.socket(user) as tab:
        opened = await tab.run({"type": "reattach", "threadId": thread})
        page = await _folded({"threadId": thread, "runId": new_id("run")}, opened)
        runs: list[list[dict[str, Any]]] = []
        for turn in turns:
            run_input = next_input(thread, page, turn, tools, runs[-1] if runs else [])
            await sender.run(run_input)
            events = await tab.until_end()
            # The follower sent nothing: its page before the run is what it showed.
            page = await _folded({**run_input, "messages": page.messages}, events)
            runs.append(events)
    return Conversation(thread, page, runs)


async def _stream(way: Way, gateway: RunningGateway, run_input: dict[str, Any], user: str) -> Any:
    if way == "ws":
        async with gateway.socket(user) as ws:
            return await ws.run(run_input)
    status, _, events, _ = await post_run(gateway, run_input, user)
    assert status == 200, events
    return events


async def _folded(run_input: dict[str, Any], events: list[dict[str, Any]]) -> Page:
    report = await replay(run_input, events)
    assert report["failed"] is None, report["failed"]
    assert report["warnings"] == report["errors"] == [], report
    return Page(report["messages"], report["state"])


async def joined_mid_run(
    gateway: RunningGateway, thread: str, run_input: dict[str, Any], after: str
) -> Page:
    """``run_input`` sent over /ws, and what a tab opened on the thread once the sender has
    seen an event of type ``after`` shows by the run's end (a reattach mid-run, folded)."""
    async with gateway.socket() as sender, gateway.socket() as tab:
        await sender.send(run_input)
        while (await sender.next())["type"] != after:
            pass
        events = await tab.run({"type": "reattach", "threadId": thread})
        await sender.until_end()
    assert events[-1]["runId"] == run_input["runId"], "the tab came after the run"
    return await _folded({"threadId": thread, "runId": new_id("run")}, events)


@dataclasses.dataclass
class Reload:
    """What a reload shows: a reattach's snapshots, folded by @ag-ui/client, and the
    messages of ``GET /history``."""

    snapshot: Page
    history: list[dict[str, Any]]
    events: list[dict[str, Any]]


async def reloaded(gateway: RunningGateway, thread: str, user: str = "demo") -> Reload:
    async with gateway.socket(user) as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    snapshot = await _folded({"threadId": thread, "runId": new_id("run")}, events)
    assert snapshot.messages == snapshot_of(events)
    async with httpx.AsyncClient(timeout=scaled(20)) as client:
        response = await client.get(
            f"{gateway.http}/history",
            params={"threadId": thread},
            headers={"X-Gateway-User": user},
        )
    assert response.status_code == 200, response.text
    return Reload(snapshot, response.json()["messages"], events)


# --- comparing them -------------------------------------------------------------------------


def as_reloaded(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a reload shows them, to compare a live page with: a live stream's events
    carry ``metadata`` (``gateway.seq``), which the client copies onto its messages and a
    snapshot has no need of; and a live stream names only text messages (TOOL_CALL_START
    has no ``name``), so an assistant message of tool calls alone is named on a reload."""
    shown = []
    for message in messages:
        message = {key: value for key, value in message.items() if key != "metadata"}
        if message.get("toolCalls"):
            calls = [{k: v for k, v in c.items() if k != "metadata"} for c in message["toolCalls"]]
            message["toolCalls"] = calls
        if message["role"] == "assistant" and not message.get("content"):
            message.pop("name", None)
        shown.append(message)
    return shown


def gist(page: Page) -> dict[str, Any]:
    """What two servers should agree on: each message's role, words, tool calls (name and
    arguments, parsed) and tool results (parsed when JSON), and the state; no ids."""
    return {"messages": [_message_gist(m) for m in page.messages], "state": page.state}


def _message_gist(message: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"role": message["role"]}
    if message.get("content"):
        content = message["content"]
        found["content"] = _parsed(content) if message["role"] == "tool" else content
    calls = message.get("toolCalls")
    if calls:
        found["toolCalls"] = [
            (call["function"]["name"], _parsed(call["function"]["arguments"])) for call in calls
        ]
    return found


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# --- the log --------------------------------------------------------------------------------


class _Gathered(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def quiet_log() -> Iterator[list[logging.LogRecord]]:
    """Every record logged at WARNING or above while the block runs, from any logger."""
    gathered = _Gathered()
    gathered.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(gathered)
    try:
        yield gathered.records
    finally:
        root.removeHandler(gathered)


def assert_quiet(records: Sequence[logging.LogRecord]) -> None:
    """No ERROR, no traceback: what a healthy agent's runs must log."""
    loud = [r for r in records if r.levelno >= logging.ERROR or r.exc_info or r.stack_info]
    assert not loud, "\n".join(f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud)


def assert_quiet_text(log: str) -> None:
    """The same for a process's log file."""
    loud = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    assert not loud, log[-4000:]
