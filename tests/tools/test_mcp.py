"""MCP tools through the gateway: the warehouse example's toolsets on real MCP servers, one over
stdio (a child process the toolset starts) and one over streamable HTTP (a process the test
starts on loopback). Their calls stream as AG-UI tool calls, the order desk waits for an
approval, and a server that dies mid-call ends the run with AGENT_ERROR and a usable thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from gateway.examples.warehouse import agent as warehouse
from gateway.examples.warehouse import orders
from gateway.tools.mcp import TOOLSET_LOGGER, ToolsetLoadFailure, failed_result
from tests.support.agui import new_id, outcome, resume, snapshot_of, text_of, tool_calls, user_input
from tests.support.budgets import eventually, scaled
from tests.support.processes import GATEWAY, gateway_process, order_desk, run_over_ws
from tests.support.servers import free_port, post_run, running_gateway

pytestmark = pytest.mark.process

STOCK_SCRIPT = Path(warehouse.__file__).with_name("stock.py")


@pytest.fixture(autouse=True)
def no_credential_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    # ADK would look for Google credentials, asking the metadata server at 169.254.169.254,
    # to try mTLS with an HTTP MCP server.
    monkeypatch.setenv("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false")


class Clerk(BaseLlm):
    """Calls what the user writes, "tool {json args}", when the request offers that tool;
    after a tool answers, says the answer (its structured content when it has one)."""

    model: str = "clerk"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        answers = [part.function_response for part in last if part.function_response]
        if answers:
            response = answers[-1].response or {}
            said = response.get("structuredContent", response)
            part = types.Part(text=json.dumps(said, sort_keys=True))
        else:
            words = "".join(part.text or "" for part in last).strip()
            name, _, args = words.partition(" ")
            if name in llm_request.tools_dict:
                call = types.FunctionCall(name=name, args=json.loads(args or "{}"))
                part = types.Part(function_call=call)
            else:
                part = types.Part(text=f"I have no tool called {name}.")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def warehouse_agent(orders_port: int, count_seconds: float = 0.0) -> LlmAgent:
    return warehouse.build_agent(
        Clerk(),
        stock=warehouse.stock_server(count_seconds),
        orders_at=warehouse.orders_server(f"http://127.0.0.1:{orders_port}{orders.PATH}"),
    )


def stock_servers() -> list[int]:
    """The stock servers this process started (the toolset's children), by pid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            # A zombie has no command line left: it is no server any more.
            if int(stat[1]) == os.getpid() and str(STOCK_SCRIPT).encode() in command:
                found.append(int(entry))
    return found


async def until(condition: Any, timeout: float = 10) -> None:
    await eventually(condition, timeout, what="timed out waiting")


def results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "TOOL_CALL_RESULT"]


# --- calls stream as tool calls ------------------------------------------------------------


async def test_mcp_calls_stream_as_tool_calls_over_ws_and_sse() -> None:
    port = free_port()
    async with order_desk(port), running_gateway(agent=warehouse_agent(port)) as gateway:
        async with gateway.socket() as ws:
            events = await ws.run(user_input(new_id("t"), 'find_items {"query": "box"}', tools=[]))
        [call] = tool_calls(events)
        assert call["name"] == "find_items" and call["args"] == {"query": "box"}
        kinds = [e["type"] for e in events if e.get("toolCallId") == call["id"]]
        assert kinds == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
        [result] = results(events)
        assert json.loads(result["content"])["structuredContent"]["items"][0]["sku"] == "SKU-300"
        assert json.loads(text_of(events))["count"] == 1

        # The tool's own "no" (an MCP isError result) is an answer, for the model to read.
        async with gateway.socket() as ws:
            ask = user_input(new_id("t"), 'count_shelf {"sku": "SKU-999"}', tools=[])
            events = await ws.run(ask)
        assert outcome(events) == {"type": "success"}
        [result] = results(events)
        assert json.loads(result["content"])["isError"] is True
        assert "No item SKU-999" in result["content"]

        ask = user_input(new_id("t"), 'find_items {"query": "tape"}', tools=[])
        status, _, events, _ = await post_run(gateway, ask)
        assert status == 200 and outcome(events) == {"type": "success"}
        [call] = tool_calls(events)
        assert call["name"] == "find_items"
        assert json.loads(text_of(events))["items"][0]["sku"] == "SKU-200"


async def test_every_reservation_waits_for_approval_and_runs_once_only_when_approved() -> None:
    port = free_port()
    reserve = 'reserve_stock {"sku": "SKU-100", "quantity": 1, "order": "O-1"}'
    async with order_desk(port), running_gateway(agent=warehouse_agent(port)) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            events = await ws.run(user_input(thread, reserve, tools=[]))
            [interrupt] = outcome(events)["interrupts"]
            [call] = tool_calls(events, "reserve_stock")
            assert interrupt["toolCallId"] == call["id"]
            asked = "Approve reserve_stock(sku=SKU-100, quantity=1, order=O-1)?"
            assert interrupt["message"] == asked
            answer = {"approved": False, "reason": "O-1 was cancelled"}
            events = await ws.run(resume(thread, interrupt["id"], payload=answer))
            said = json.loads(text_of(events))
            assert said["status"] == "rejected" and said["reason"] == "O-1 was cancelled"

            events = await ws.run(user_input(thread, reserve, tools=[]))
            [interrupt] = outcome(events)["interrupts"]
            events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
            assert outcome(events) == {"type": "success"}
            [result] = results(events)
            assert result["toolCallId"] == interrupt["toolCallId"]
        # The desk's first reservation, and 3 of 4 left: the rejected call never reached it.
        said = json.loads(text_of(events))
        assert said["reservation"] == "RES-1" and said["free"] == 3


# --- a server that fails -------------------------------------------------------------------


async def test_a_stdio_server_killed_mid_call_is_agent_error_and_the_thread_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()  # no order desk: its tools are simply not offered
    agent = warehouse_agent(port, count_seconds=30)
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.send(user_input(thread, 'count_shelf {"sku": "SKU-100"}', tools=[]))
        events = [await ws.next()]
        while events[-1]["type"] != "TOOL_CALL_END":
            events.append(await ws.next())
        [call] = tool_calls(events)
        [server] = stock_servers()
        await asyncio.sleep(0.3)  # the call reaches the server, which now counts for 30 s
        caplog.clear()
        killed = time.monotonic()
        os.kill(server, signal.SIGKILL)
        events += await ws.until_end()
        seconds = time.monotonic() - killed

        error = events[-1]
        assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR"
        assert results(events) == []
        [error_id] = re.findall(r"error id ([0-9a-f]{12})", error["message"])
        for leak in ("Connection closed", "McpError", "MCP tool execution"):
            assert leak not in error["message"]
        logged = [r for r in caplog.records if error_id in r.getMessage()]
        assert len(logged) == 1 and "count_shelf" in logged[0].getMessage()
        assert not logged[0].exc_info  # one line: no traceback follows it
        assert seconds < scaled(5)

        # The thread keeps a result for the call: a sentence, not the exception's text.
        async with gateway.socket() as again:
            snapshot = await again.run({"type": "reattach", "threadId": thread})
        [kept] = [m for m in snapshot_of(snapshot) if m.get("toolCallId") == call["id"]]
        assert json.loads(kept["content"]) == failed_result("count_shelf")
        assert "Connection closed" not in json.dumps(snapshot)

        # The thread goes on: the toolset starts the server again for the next call.
        events = await ws.run(user_input(thread, 'find_items {"query": "jack"}', tools=[]))
        assert json.loads(text_of(events))["items"][0]["sku"] == "SKU-100"
        assert len(stock_servers()) == 1
    # Stopping the gateway stops the servers its toolsets started.
    await until(lambda: not stock_servers())


async def test_an_http_server_killed_mid_call_is_agent_error_and_the_next_turn_works() -> None:
    port = free_port()
    reserve = 'reserve_stock {"sku": "SKU-200", "quantity": 5, "order": "O-2"}'
    thread = new_id("t")
    async with running_gateway(agent=warehouse_agent(port)) as gateway, gateway.socket() as ws:
        async with order_desk(port, reserve_seconds=30) as desk:
            events = await ws.run(user_input(thread, reserve, tools=[]))
            [interrupt] = outcome(events)["interrupts"]
            await ws.send(resume(thread, interrupt["id"], payload={"approved": True}))
            await asyncio.sleep(1.0)  # the approved call is at the desk, for 30 s
            killed = time.monotonic()
            desk.kill()
            events = await ws.until_end()
            seconds = time.monotonic() - killed
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AGENT_ERROR"
        assert seconds < scaled(5)

        # While the desk is down its tools are not offered; once it is back they are.
        events = await ws.run(user_input(thread, reserve, tools=[]))
        assert text_of(events) == "I have no tool called reserve_stock."
        async with order_desk(port):
            events = await ws.run(user_input(thread, reserve, tools=[]))
            [interrupt] = outcome(events)["interrupts"]
            events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
            assert json.loads(text_of(events))["status"] == "reserved"


async def test_a_server_that_is_not_up_does_not_hold_up_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()  # nothing listens here yet
    started = time.monotonic()
    async with running_gateway(agent=warehouse_agent(port)) as gateway, gateway.socket() as ws:
        assert time.monotonic() - started < scaled(10)
        thread = new_id("t")
        events = await ws.run(user_input(thread, 'find_items {"query": "label"}', tools=[]))
        assert json.loads(text_of(events))["items"][0]["sku"] == "SKU-400"
        # ADK says on every model call that the desk's tools are missing: a line, not a traceback.
        lost = [r for r in caplog.records if r.name == TOOLSET_LOGGER]
        assert lost and not any(r.exc_info for r in lost)
        cause = "(cause: ConnectError: All connection attempts failed)"
        assert all(r.getMessage().endswith(cause) for r in lost)
        reserve = 'reserve_stock {"sku": "SKU-400", "quantity": 1, "order": "O-3"}'
        events = await ws.run(user_input(thread, reserve, tools=[]))
        assert text_of(events) == "I have no tool called reserve_stock."
        async with order_desk(port):
            events = await ws.run(user_input(thread, reserve, tools=[]))
            assert outcome(events)["type"] == "interrupt"


async def test_a_cancel_during_an_mcp_call_ends_cancelled_and_the_server_serves_on() -> None:
    port = free_port()
    agent = warehouse_agent(port, count_seconds=30)
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.send(user_input(thread, 'count_shelf {"sku": "SKU-300"}', tools=[]))
        while (await ws.next())["type"] != "TOOL_CALL_END":
            pass
        [server] = stock_servers()
        await asyncio.sleep(0.3)  # the call is at the server, counting for 30 s
        sent = time.monotonic()
        await ws.send({"type": "cancel", "threadId": thread})
        rest = await ws.until_end()
        assert time.monotonic() - sent < scaled(2.0)
        assert outcome(rest) == {"type": "cancelled"}

        events = await ws.run(user_input(thread, 'find_items {"query": "tape"}', tools=[]))
        assert json.loads(text_of(events))["items"][0]["sku"] == "SKU-200"
        assert stock_servers() == [server]  # the same server, still serving
        session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
        assert session is not None
        answered = {r.id for e in session.events for r in e.get_function_responses()}
        called = {c.id for e in session.events for c in e.get_function_calls()}
        assert called <= answered, "a cancelled run leaves no call without a response"


def test_a_lost_toolset_is_one_line_with_its_cause_unless_the_log_level_is_debug() -> None:
    def lost() -> logging.LogRecord:
        try:
            try:
                raise BaseExceptionGroup("in a task group", [OSError("connect refused")])
            except BaseExceptionGroup as group:
                raise ConnectionError("") from group
        except ConnectionError as error:
            # As ADK 2.13 words it; str(error) is empty, as a transport's often is.
            template = (
                "Agent %s will run without the tools from toolset %s%s, which failed to load: %s"
            )
            args = ("warehouse", "McpToolset", "", error)
            cause = (type(error), error, None)
            level = logging.ERROR
            return logging.LogRecord(TOOLSET_LOGGER, level, __file__, 1, template, args, cause)

    logger = logging.getLogger(TOOLSET_LOGGER)
    level = logger.level
    try:
        logger.setLevel(logging.INFO)
        record = lost()
        assert ToolsetLoadFailure().filter(record)
        assert not record.exc_info
        assert record.getMessage() == (
            "Agent warehouse will run without the tools from toolset McpToolset, which failed "
            "to load:  (cause: OSError: connect refused)"
        )
        logger.setLevel(logging.DEBUG)
        record = lost()
        assert ToolsetLoadFailure().filter(record) and record.exc_info
    finally:
        logger.setLevel(level)


# --- the example as its docstring runs it ---------------------------------------------------


def running_servers() -> list[int]:
    """Every process running this checkout's stock server, whoever started it."""
    return [
        int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _runs_stock_server(entry)
    ]


def _runs_stock_server(pid: str) -> bool:
    with contextlib.suppress(OSError):
        return str(STOCK_SCRIPT).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


@pytest.mark.serial  # it counts every stock server on the machine, whoever started it
async def test_the_example_runs_as_its_docstring_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("WAREHOUSE_ORDERS_URL", f"http://127.0.0.1:{port}{orders.PATH}")
    command = (*GATEWAY, "serve", "gateway.examples.warehouse.agent")
    thread = new_id("t")
    async with (
        order_desk(port),
        gateway_process(tmp_path / "threads.db", tmp_path / "gateway.log", command=command) as (
            _,
            gateway_port,
        ),
    ):
        events = await run_over_ws(gateway_port, user_input(thread, "find tape", tools=[]))
        assert text_of(events) == "Found 1: SKU-200 Packing tape, 50 m (320 on shelf B-07)."
        ask = user_input(thread, "reserve SKU-100 for O-7", tools=[])
        [interrupt] = outcome(await run_over_ws(gateway_port, ask))["interrupts"]
        answer = resume(thread, interrupt["id"], payload={"approved": True})
        events = await run_over_ws(gateway_port, answer)
        assert text_of(events) == "Reserved 1 × Pallet jack for O-7 (RES-1); 3 left free."
        assert running_servers()
    # The gateway stopped the stock server it started.
    await until(lambda: not running_servers())
