"""The wheel, as a user gets it: built from the tracked files, installed into a fresh venv
(not editable), run from a folder far from this checkout. It serves the demo (every data
file is package data), a user's own ADK agent folder, and with the mcp extra the warehouse
example and its MCP servers; its operator commands read the threads back."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agui import new_id, text_of, tool_calls, user_input
from tests.support.checkout import clean_copy, succeed
from tests.support.processes import ROOT, free_port, gateway_process, order_desk, run_over_ws

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git ls-files"),
    pytest.mark.process,
]

# Someone else's agent, laid out as `adk web` expects: a package whose agent.py has root_agent,
# with a model of its own that needs no network.
USER_AGENT = """
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class Parrot(BaseLlm):
    model: str = "parrot"

    async def generate_content_async(self, llm_request, stream=False):
        words = "".join(part.text or "" for part in llm_request.contents[-1].parts or [])
        reply = types.Content(role="model", parts=[types.Part(text=f"parrot: {words}")])
        yield LlmResponse(content=reply)


root_agent = LlmAgent(name="parrot", model=Parrot(), instruction="Repeat.")
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin/`` of a fresh venv holding only the wheel and its dependencies."""
    root = tmp_path_factory.mktemp("wheel")
    source = clean_copy(root / "source")
    pip = (sys.executable, "-m", "pip")
    succeed(*pip, "wheel", "-q", "--no-deps", "-w", root / "dist", ".", cwd=source)
    [wheel] = (root / "dist").glob("agent_gateway-*.whl")
    succeed(sys.executable, "-m", "venv", root / "venv", cwd=root)
    bin_dir = root / "venv" / "bin"
    succeed(bin_dir / "pip", "install", "-q", "--disable-pip-version-check", wheel, cwd=root)
    yield bin_dir


async def test_the_installed_wheel_serves_the_demo_and_reads_its_threads(
    installed: Path, tmp_path: Path
) -> None:
    db = tmp_path / "demo.db"
    command = (str(installed / "agent-gateway"), "serve")
    async with gateway_process(db, tmp_path / "log", command=command, cwd=tmp_path) as (_, port):
        thread = new_id("t")
        events = await run_over_ws(port, user_input(thread, "업무 요청 목록 화면 열어줘"))
        [call] = tool_calls(events, "navigateToScreen")
        assert call["args"]["screenId"] == "MNU-3120"
        page = await _get(port, "/")
        assert "<!doctype html>" in page.lower()
        modules = await _modules(port, "/app.js")
        assert {"/agui-websocket/connection.js", "/agui-websocket/ledger.js"} <= modules
    threads = ("threads", "--user", "demo", "--db", db)
    listed = succeed(installed / "agent-gateway", *threads, cwd=tmp_path)
    assert [t["threadId"] for t in json.loads(listed)] == [thread]


async def test_the_installed_wheel_serves_a_users_agent_folder(
    installed: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "my_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(USER_AGENT)
    command = (str(installed / "agent-gateway"), "serve", "./my_agent")
    db = tmp_path / "mine.db"
    async with gateway_process(db, tmp_path / "log", command=command, cwd=tmp_path) as (_, port):
        events = await run_over_ws(port, user_input(new_id("t"), "hello", tools=[]))
        assert text_of(events) == "parrot: hello"
        assert json.loads(await _get(port, "/tools")) == {"tools": []}
        # The gateway's own chat page, every module it imports a file of the wheel.
        assert 'src="/main.js"' in await _get(port, "/")
        modules = await _modules(port, "/main.js")
        assert {"/chat.js", "/agui-websocket/connection.js", "/markdown.js"} <= modules


async def test_the_installed_wheel_runs_the_warehouse_and_its_mcp_servers(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["mcp"]
    succeed(installed / "pip", "install", "-q", "--disable-pip-version-check", *extra, cwd=tmp_path)
    port = free_port()
    monkeypatch.setenv("WAREHOUSE_ORDERS_URL", f"http://127.0.0.1:{port}/mcp")
    monkeypatch.setenv("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false")
    command = (str(installed / "agent-gateway"), "serve", "gateway.examples.warehouse.agent")
    db = tmp_path / "warehouse.db"
    async with (
        order_desk(port, python=installed / "python", cwd=tmp_path),
        gateway_process(db, tmp_path / "log", command=command, cwd=tmp_path) as (_, gateway_port),
    ):
        # The stock server, a file of the installed package, started by the toolset.
        events = await run_over_ws(gateway_port, user_input(new_id("t"), "count SKU-100", tools=[]))
        assert text_of(events) == "Counted 4 × Pallet jack on shelf A-01."
        ask = user_input(new_id("t"), "reserve SKU-100 for O-9", tools=[])
        events = await run_over_ws(gateway_port, ask)
        assert events[-1]["outcome"]["type"] == "interrupt"


async def _modules(port: int, entry: str) -> set[str]:
    """Every module the page's ``entry`` imports, at any depth, each fetched from the wheel."""
    found, queue = set(), [entry]
    while queue:
        path = queue.pop()
        if path in found:
            continue
        found.add(path)
        source = await _get(port, path)
        folder = path.rsplit("/", 1)[0]
        for name in re.findall(r'^(?:import|export)\b[^;]*?from\s+"(\.\.?/[^"]+)"', source, re.M):
            queue.append(os.path.normpath(f"{folder}/{name}"))
    return found


async def _get(port: int, path: str) -> str:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        response = await client.get(path)
        response.raise_for_status()
        return response.text
