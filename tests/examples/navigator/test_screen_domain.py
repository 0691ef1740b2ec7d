"""Issue 5 through the real server: the policy before the browser, and the audit trail."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import ClassVar

import pytest
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse

from gateway.examples.navigator.scripted import ScriptedLlm
from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


async def test_a_forbidden_screen_never_reaches_the_browser(gateway: RunningGateway) -> None:
    async with gateway.socket(user="guest") as ws:
        events = await ws.run(user_input(new_id("t"), "MNU-3120 화면 열어줘"))
    assert not tool_calls(events, "navigateToScreen")
    assert "권한이 없어 이동하지 못했습니다" in text_of(events)
    assert outcome(events) == {"type": "success"}


async def test_only_the_side_panel_may_navigate(gateway: RunningGateway) -> None:
    for surface in ("full-screen", "modal"):
        context = [{"description": "surface", "value": surface}]
        async with gateway.socket() as ws:
            events = await ws.run(user_input(new_id("t"), FLAGSHIP, context=context))
        assert not tool_calls(events, "navigateToScreen"), surface
        assert "메뉴에서" in text_of(events)
    side_panel = [{"description": "surface", "value": "side-panel"}]
    async with gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), FLAGSHIP, context=side_panel))
    assert tool_calls(events, "navigateToScreen")


@pytest.mark.process
async def test_every_tool_call_is_audited_and_printed(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    thread = new_id("t")
    async with running_gateway(db=str(db)) as gateway, gateway.socket() as ws:
        first = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
        records = await gateway.app.hub.audit.query(thread=thread)  # type: ignore[union-attr]
    by_tool = {record.tool: record for record in records}
    assert by_tool["find_screen"].executor == "server"
    assert by_tool["navigateToScreen"].executor == "client"
    assert by_tool["navigateToScreen"].outcome == "navigated"
    assert by_tool["navigateToScreen"].arguments["screenId"] == "MNU-3120"
    assert all(r.user_id == "demo" and r.run_id for r in records)
    printed = subprocess.run(
        [sys.executable, "-m", "gateway", "--db", str(db), "audit", "--thread", thread],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "navigateToScreen" in printed.stdout and "find_screen" in printed.stdout
    threads = subprocess.run(
        [sys.executable, "-m", "gateway", "--db", str(db), "threads", "--user", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert thread in threads.stdout
    exported = subprocess.run(
        [sys.executable, "-m", "gateway", "--db", str(db), "export", thread],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    roles = [message["role"] for message in json.loads(exported.stdout)]
    assert roles[0] == "user" and "tool" in roles


class _Recording(ScriptedLlm):
    """Scripted, and keeps the system instruction of every model call."""

    seen: ClassVar[list[str]] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        _Recording.seen.append(str(llm_request.config.system_instruction))
        async for response in super().generate_content_async(llm_request, stream):
            yield response


async def test_only_allowed_screen_context_reaches_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    context = [
        {"description": "currentScreen", "value": "MNU-3120"},
        {"description": "selectedIds", "value": "R-1042"},
        {"description": "sessionCookie", "value": "secret-cookie"},
    ]
    async with running_gateway(model=_Recording()) as gateway, gateway.socket() as ws:
        with caplog.at_level(logging.INFO):
            await ws.run(user_input(new_id("t"), "안녕", context=context))
    instruction = _Recording.seen[-1]
    assert "currentScreen: MNU-3120" in instruction and "selectedIds: R-1042" in instruction
    assert "secret-cookie" not in instruction
    assert "sessionCookie" in caplog.text
