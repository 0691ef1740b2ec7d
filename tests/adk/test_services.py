"""The ADK services an agent expects: memory across a user's threads (never another user's),
artifacts and credentials, each a setting, each said in /capabilities; and a healthy agent's
start and runs log no error and no traceback."""

from __future__ import annotations

import logging
import sys
import time
import tracemalloc
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.memory import BaseMemoryService, InMemoryMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.sessions import Session
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.adk.artifacts import RecentArtifacts
from gateway.adk.hosting import HostingError
from gateway.adk.memory import RecentMemory
from gateway.api import create_app
from gateway.config import Settings
from gateway.models.script import ScriptLlm
from tests.support.agui import new_id, text_of, tool_calls, user_input
from tests.support.budgets import eventually, scaled
from tests.support.dojo import memory
from tests.support.servers import post_run, running_gateway

pytestmark = pytest.mark.server

SHARED = InMemoryMemoryService()


class DownMemory(BaseMemoryService):
    """A memory service across a network that is down."""

    async def add_session_to_memory(self, session: Session) -> None:
        raise ConnectionError("memory bank unreachable")

    async def add_events_to_memory(self, **_: Any) -> None:
        raise ConnectionError("memory bank unreachable")

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> Any:
        return SearchMemoryResponse()


DOWN = DownMemory()


def shared_memory(settings: Settings) -> InMemoryMemoryService:
    """A memory service named by GATEWAY_MEMORY=module:function."""
    return SHARED


def healthy(records: list[logging.LogRecord]) -> None:
    """No ERROR, no traceback, and no ADK complaint about a missing memory service."""
    for record in records:
        message = record.getMessage()
        assert record.levelno < logging.ERROR and record.exc_info is None, message
        assert "Failed to preload memory" not in message, message


async def test_what_a_user_said_in_one_thread_is_recalled_in_another_never_for_another_user(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with running_gateway(agent=memory.root_agent, warm_up_runs=3) as gateway:
        async with gateway.socket("alice") as ws:
            told = await ws.run(user_input(new_id("t"), "my favourite colour is teal", tools=[]))
            assert text_of(told) == "Noted: your favourite colour is teal."
            asked = await ws.run(user_input(new_id("t"), "what is my favourite colour?", tools=[]))
            assert tool_calls(asked, "load_memory")
            assert "teal" in text_of(asked) and text_of(asked).startswith("You told me:")
        # The same over SSE, in a third thread.
        status, _, events, _ = await post_run(
            gateway, user_input(new_id("t"), "what is my favourite colour?", tools=[]), "alice"
        )
        assert status == 200 and "teal" in text_of(events)
        async with gateway.socket("bob") as ws:
            asked = await ws.run(user_input(new_id("t"), "what is my favourite colour?", tools=[]))
            assert text_of(asked) == "I do not remember that."
        async with httpx.AsyncClient() as client:
            doc = (await client.get(gateway.http + "/capabilities")).json()
    assert doc["state"]["memory"] is True
    assert doc["custom"]["gateway"]["services"] == {
        "memory": "RecentMemory",
        "artifacts": "RecentArtifacts",
        "credentials": "InMemoryCredentialService",
    }
    # PreloadMemoryTool searched on every model call: without a service ADK logs a traceback.
    healthy(caplog.records)


async def test_a_configured_memory_service_is_used_and_none_means_none() -> None:
    agent = memory.root_agent
    target = f"{__name__}:shared_memory"
    async with running_gateway(agent=agent, memory=target) as gateway:
        assert gateway.app.hub is not None
        assert gateway.app.hub.engine.runner.memory_service is SHARED
        async with gateway.socket("carol") as ws:
            await ws.run(user_input(new_id("t"), "my favourite colour is plum", tools=[]))
        found = await SHARED.search_memory(app_name="recall", user_id="carol", query="colour")
        assert any("plum" in (m.content.parts or [types.Part()])[0].text for m in found.memories)
    async with running_gateway(agent=agent, memory="none", artifacts="none") as gateway:
        async with httpx.AsyncClient() as client:
            doc = (await client.get(gateway.http + "/capabilities")).json()
        assert doc["state"]["memory"] is False
        assert doc["custom"]["gateway"]["services"]["artifacts"] is None


async def test_a_memory_service_that_is_down_costs_a_run_nothing_but_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.adk.memory")
    async with running_gateway(agent=memory.root_agent, memory=f"{__name__}:DOWN") as gateway:
        async with gateway.socket("ivy") as ws:
            told = await ws.run(user_input(new_id("t"), "my favourite colour is red", tools=[]))
        assert told[-1]["type"] == "RUN_FINISHED"
        await eventually(
            lambda: any("not added to memory (DownMemory)" in r.message for r in caplog.records),
            10,
            what="a log line for the memory service that is down",
        )


def broken_memory(settings: Settings) -> BaseMemoryService:
    raise RuntimeError("no project configured")


def test_a_setting_that_names_no_service_stops_start_up_with_a_sentence() -> None:
    with pytest.raises(HostingError, match="the function raised RuntimeError: no project"):
        create_app(memory.root_agent, Settings(db=":memory:", memory=f"{__name__}:broken_memory"))
    with pytest.raises(HostingError, match=r"say 'memory', 'none' or package\.module:attr"):
        create_app(memory.root_agent, Settings(db=":memory:", credentials="vault"))
    with pytest.raises(HostingError, match=r"GATEWAY_MEMORY='tests.adk.test_services:SHARED_"):
        create_app(memory.root_agent, Settings(db=":memory:", memory=f"{__name__}:SHARED_"))
    with pytest.raises(HostingError, match=r"not an ADK BaseArtifactService"):
        create_app(memory.root_agent, Settings(db=":memory:", artifacts=f"{__name__}:SHARED"))


async def save_report(title: str, tool_context: ToolContext) -> dict[str, Any]:
    """Saves a report as an artifact."""
    version = await tool_context.save_artifact(f"{title}.txt", types.Part(text=f"Report {title}"))
    return {"saved": title, "version": version}


async def read_report(title: str, tool_context: ToolContext) -> dict[str, Any]:
    """Reads a saved report."""
    part = await tool_context.load_artifact(f"{title}.txt")
    return {"text": part.text if part else None}


async def test_a_tool_saves_an_artifact_and_a_later_run_of_the_thread_reads_it(
    tmp_path: Any,
) -> None:
    script = tmp_path / "reports.json"
    script.write_text(
        '{"rules": ['
        '{"user": "save (?P<t>\\\\w+)", "call": {"name": "save_report", "args": {"title": "{t}"}}},'
        '{"after": "save_report", "say": "Saved version {version}."},'
        '{"user": "read (?P<t>\\\\w+)", "call": {"name": "read_report", "args": {"title": "{t}"}}},'
        '{"after": "read_report", "say": "It says: {text}"}]}'
    )
    agent = LlmAgent(
        name="reports", model=ScriptLlm.from_file(script), tools=[save_report, read_report]
    )
    async with running_gateway(agent=agent) as gateway, gateway.socket("dana") as ws:
        thread = new_id("t")
        assert text_of(await ws.run(user_input(thread, "save q3", tools=[]))) == "Saved version 0."
        assert text_of(await ws.run(user_input(thread, "read q3", tools=[]))) == (
            "It says: Report q3"
        )
        assert gateway.app.hub is not None
        assert isinstance(gateway.app.hub.engine.runner.artifact_service, RecentArtifacts)


def _said(event_id: str, text: str, author: str = "user") -> Event:
    return Event(
        id=event_id,
        invocation_id="i",
        author=author,
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


async def test_recent_memory_keeps_each_users_newest_words_within_its_bounds() -> None:
    memory_service = RecentMemory(user_bytes=100, total_bytes=150)
    for n in range(10):
        await memory_service.add_events_to_memory(
            app_name="a", user_id="u1", events=[_said(f"e{n}", f"note {n} about 파이썬을 배우기")]
        )
    assert memory_service.size <= 100
    found = await memory_service.search_memory(app_name="a", user_id="u1", query="파이썬 note")
    texts = [m.content.parts[0].text for m in found.memories if m.content.parts]
    assert texts and texts[0] == "note 9 about 파이썬을 배우기"  # the newest first
    assert "note 0 about 파이썬을 배우기" not in texts  # forgotten: over the user's bound
    none = await memory_service.search_memory(app_name="a", user_id="u2", query="note")
    assert none.memories == []
    await memory_service.add_events_to_memory(
        app_name="a", user_id="u2", events=[_said("x", "a" * 90)]
    )
    assert memory_service.size <= 150  # the user heard from least recently gave way


async def test_a_hostile_query_costs_a_bounded_search() -> None:
    memory_service = RecentMemory()
    events = [_said(f"e{n}", f"메모 {n}번: 파이썬을 배우기 " * 8) for n in range(1000)]
    await memory_service.add_events_to_memory(app_name="a", user_id="u", events=events)
    assert memory_service.size > 200_000
    # A whole message of distinct words, each sought inside every remembered text.
    flood = " ".join(f"낱말{n}" for n in range(50_000))
    started = time.perf_counter()
    found = await memory_service.search_memory(app_name="a", user_id="u", query=flood)
    assert time.perf_counter() - started < scaled(0.5) and found.memories == []


async def test_what_memory_holds_of_an_event_is_about_its_text() -> None:
    """No copy of a text that lower-casing leaves alone, and no set of its words: an event
    the 1,000 runs of issue 32 remembered held three times its text."""
    memory_service = RecentMemory()
    texts = [f"메모 {n}번: 파이썬을 배우기, 오늘은 무엇을 할까요 " * 4 for n in range(200)]
    events = [_said(f"e{n}", text) for n, text in enumerate(texts)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await memory_service.add_events_to_memory(app_name="a", user_id="u", events=events)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1.5 * sum(sys.getsizeof(text) for text in texts)
    found = await memory_service.search_memory(app_name="a", user_id="u", query="메모 199번")
    assert found.memories and found.memories[0].content.parts[0].text == texts[199]
    english = [_said("en", "Learning Python today"), _said("en2", "pythonic code")]
    await memory_service.add_events_to_memory(app_name="a", user_id="en", events=english)
    found = await memory_service.search_memory(app_name="a", user_id="en", query="python")
    assert [m.content.parts[0].text for m in found.memories] == ["Learning Python today"]


async def test_artifacts_in_memory_stay_within_their_budget_oldest_first() -> None:
    artifacts = RecentArtifacts(user_bytes=100, total_bytes=150)

    async def save(user: str, name: str, size: int) -> None:
        await artifacts.save_artifact(
            app_name="a",
            user_id=user,
            filename=name,
            session_id="s",
            artifact=types.Part(text="x" * size),
        )

    await save("u1", "one.txt", 60)
    await save("u1", "two.txt", 30)
    await save("u1", "one.txt", 30)  # a new version: 120 bytes, and two.txt is the oldest
    assert await artifacts.list_artifact_keys(app_name="a", user_id="u1", session_id="s") == [
        "one.txt"
    ]
    loaded = await artifacts.load_artifact(
        app_name="a", user_id="u1", filename="one.txt", session_id="s", version=0
    )
    assert loaded is not None and loaded.text == "x" * 60
    await save("u2", "big.txt", 90)
    await save("u2", "more.txt", 40)  # 160 in all: u1, heard from least recently, gives way
    assert await artifacts.list_artifact_keys(app_name="a", user_id="u1", session_id="s") == []
    assert artifacts.size <= 150
    with pytest.raises(ValueError, match="at most 100 bytes"):
        await save("u3", "huge.txt", 101)
