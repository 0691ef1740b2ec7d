"""Hosting any ADK agent: what AGENT may name, what start-up refuses, client tools declared
by the browser, threads kept apart by App, and the gateway mounted inside another app."""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import sys
import warnings
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pydantic
import pytest
import uvicorn
from fastapi import FastAPI
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types
from starlette.responses import PlainTextResponse
from websockets.asyncio.client import connect

import gateway
from gateway import wire as p
from gateway.adk import loading
from gateway.adk.hosting import Hosted, HostingError
from gateway.api import create_app
from gateway.config import Settings
from gateway.models.gemini import GeminiLlm
from gateway.tools import declarations
from tests.support import ROOT
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.counting import counting
from tests.support.servers import free_port, running_gateway

pytestmark = pytest.mark.unit

LOOKUP = {
    "name": "lookUpOrder",
    "description": "Shows an order in the user's browser.",
    "parameters": {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    },
}


class ToolUser(BaseLlm):
    """Calls the first tool it is offered with {"orderId": "O-1"}, then says what came back;
    with no tool, says which tools it was offered (none)."""

    model: str = "tool-user"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        answers = [part.function_response for part in last if part.function_response]
        offered = sorted(llm_request.tools_dict)
        if answers:
            part = types.Part(text=json.dumps(answers[-1].response, sort_keys=True))
        elif offered and offered != ["transfer_to_agent"]:
            call = types.FunctionCall(name=offered[0], args={"orderId": "O-1"})
            part = types.Part(function_call=call)
        else:
            part = types.Part(text=f"{llm_request.config.system_instruction and 'agent'}: no tools")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def orders_agent(name: str = "orders") -> LlmAgent:
    return LlmAgent(name=name, model=ToolUser(), instruction="Help with orders.")


def server_side_order(orderId: str) -> dict[str, str]:
    """Looks an order up on the server."""
    return {"orderId": orderId, "where": "server"}


# --- what AGENT may name -------------------------------------------------------------------


root_agent = orders_agent("module_level")
not_an_agent = {"name": "orders"}


def factory(settings: Settings) -> Hosted:
    return Hosted(orders_agent(f"made_for_{settings.port}"))


def made_with_nothing() -> LlmAgent:
    """A factory as ADK samples write them: no parameters."""
    return orders_agent("made_with_nothing")


async def made_later() -> LlmAgent:
    """An ``async def`` factory, as some ADK samples write them."""
    await asyncio.sleep(0)
    return orders_agent("made_later")


async def made_later_for(settings: Settings) -> Hosted:
    await asyncio.sleep(0)
    return Hosted(orders_agent(f"made_later_for_{settings.port}"))


async def fails_later() -> LlmAgent:
    await asyncio.sleep(0)
    raise ValueError("no model key\nsecond line")


def test_agent_specs_name_agents_apps_modules_and_factories() -> None:
    settings = Settings(port=9123)
    assert loading.load("tests.adk.test_hosting:root_agent", settings).agent is root_agent
    assert loading.load("tests.adk.test_hosting", settings).agent is root_agent
    assert loading.load("tests.adk.test_hosting:factory", settings).app_name == "made_for_9123"
    made = loading.load("tests.adk.test_hosting:made_with_nothing", settings)
    assert made.app_name == "made_with_nothing"
    assert loading.load("", settings).app_name == "screen_navigator"


def test_an_async_factory_is_awaited_once_as_the_agent_is_loaded() -> None:
    settings = Settings(port=9124)
    assert loading.load("tests.adk.test_hosting:made_later", settings).app_name == "made_later"
    made = loading.load("tests.adk.test_hosting:made_later_for", settings)
    assert made.app_name == "made_later_for_9124"
    with pytest.raises(HostingError) as refused:
        loading.load("tests.adk.test_hosting:fails_later", settings)
    assert str(refused.value).endswith("the function raised ValueError: no model key")


async def test_an_async_factory_loads_from_code_that_runs_a_loop_already() -> None:
    """``create_app`` called from async code (a test, an app's own start-up): the factory's
    loop is not this one, which cannot wait for a coroutine without returning."""
    hosted = loading.load("tests.adk.test_hosting:made_later", Settings())
    assert hosted.app_name == "made_later"
    assert asyncio.get_running_loop().is_running()


def test_a_file_is_served_as_its_module_whose_relative_imports_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``agent-gateway serve path/to/agent.py``: the file's module, named from the package
    it is in (a worker process loads the same spec the same way)."""
    package = tmp_path / "their_files" / "filed_assistant"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text("def lookup(item: str) -> dict:\n    return {}\n")
    (package / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\n"
        "from .tools import lookup\n"
        "root_agent = LlmAgent(name='filed', model='gemini-2.5-flash', tools=[lookup])\n"
        "other = LlmAgent(name='other', model='gemini-2.5-flash')\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path / "their_files")
    assert loading.load("filed_assistant/agent.py", Settings()).app_name == "filed"
    assert loading.load(f"{package / 'agent.py'}:other", Settings()).app_name == "other"
    assert sys.path[0] == str(tmp_path / "their_files")  # the folder above the package
    with pytest.raises(HostingError, match="is not a file"):
        loading.load("filed_assistant/nothing.py", Settings())


def test_gateway_model_replaces_every_agents_model_but_not_a_factorys_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "not-used-offline")
    settings = Settings(model="gemini-2.5-flash")
    model = loading.load(orders_agent(), settings).model
    assert isinstance(model, GeminiLlm) and model.model == "gemini-2.5-flash"
    assert loading.load("tests.adk.test_hosting:factory", settings).model is None
    # A factory of no parameters was not given the settings: it chose nothing.
    made = loading.load("tests.adk.test_hosting:made_with_nothing", settings).model
    assert isinstance(made, GeminiLlm) and made.model == "gemini-2.5-flash"
    with pytest.raises(HostingError, match="GATEWAY_MODEL='gpt-4o'"):
        loading.load(orders_agent(), Settings(model="gpt-4o"))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_such_package.agent:root_agent", "module 'no_such_package.agent' cannot be imported"),
        ("tests.adk.test_hosting:nothing_here", "has no attribute 'nothing_here'"),
        ("tests.adk.test_hosting:not_an_agent", "is a builtins.dict, not an ADK agent"),
        ("json", "has neither 'app' nor 'root_agent'"),
        ("./no/such/folder", "is not a folder"),
        ("./tests", "is not an ADK agent folder"),
    ],
)
def test_an_agent_that_cannot_be_hosted_fails_with_one_sentence(spec: str, says: str) -> None:
    with pytest.raises(HostingError) as refused:
        loading.load(spec, Settings())
    message = str(refused.value)
    assert says in message and spec.strip() in message
    assert "\n" not in message


@pytest.mark.process
def test_the_cli_says_why_and_exits_before_listening(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        # Port 0: the agent's fault is told whatever listens on the default port.
        [
            sys.executable,
            "-m",
            "gateway",
            "serve",
            "--port",
            "0",
            "tests.adk.test_hosting:not_an_agent",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    # The start-up lines (the version, the settings) and the sentence: nothing else.
    *start_up, line = done.stderr.strip().splitlines()
    assert line.startswith("agent-gateway: AGENT 'tests.adk.test_hosting:not_an_agent'")
    assert all(" INFO gateway.config: " in said for said in start_up), start_up


def shop_folder(folder: Path) -> Path:
    """An ``adk web`` folder whose agent.py defines root_agent ``shop``."""
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\n"
        "root_agent = LlmAgent(name='shop', model='gemini-2.5-flash')\n"
    )
    return folder


def test_an_adk_web_folder_loads_with_adks_own_loader(tmp_path: Path) -> None:
    folder = shop_folder(tmp_path / "shop_agent")
    assert loading.load(str(folder), Settings()).app_name == "shop"


def test_an_adk_web_folder_named_otherwise_than_its_agent_builds_runners_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ADK's loader marks the agent with its folder's name, and a Runner of an App named
    otherwise warned "App name mismatch" as it was built (once a Runner: the main
    process's, each worker's, the warm-up's). The gateway names the App, the key of its
    stored threads, after the agent as before, and makes every session under that name."""
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    from gateway.adk.hosting import prepare
    from gateway.tools.client import ClientToolset

    folder = shop_folder(tmp_path / "shop_folder")
    app = prepare(loading.load(str(folder), Settings()), ClientToolset(None))
    with caplog.at_level(logging.WARNING, logger="google_adk"):
        runner = Runner(app=app, session_service=InMemorySessionService())
    assert runner.app_name == app.name == "shop"
    assert [r.getMessage() for r in caplog.records if "mismatch" in r.getMessage()] == []


# --- client tools for any agent ------------------------------------------------------------


@pytest.mark.server
async def test_a_declared_client_tool_reaches_every_agent_of_the_invocation() -> None:
    """No catalog: the browser's declaration is offered as is, to a sub-agent too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ADK 2 prefers its Workflow
        tree = SequentialAgent(name="pipeline", sub_agents=[orders_agent("first")])
    thread = new_id("t")
    async with running_gateway(agent=tree) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "where is O-1?", tools=[LOOKUP]))
        [call] = tool_calls(events, "lookUpOrder")
        assert call["args"] == {"orderId": "O-1"}
        assert outcome(events)["pendingToolCallIds"] == [call["id"]]
        answer = tool_answer(thread, [(call["id"], {"status": "shown"})], tools=[LOOKUP])
        events = await ws.run(answer)
        assert json.loads(text_of(events)) == {"status": "shown"}


@pytest.mark.server
async def test_without_a_declaration_the_model_is_offered_no_client_tool() -> None:
    async with running_gateway(agent=orders_agent()) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "hello", tools=[]))
        assert text_of(events) == "agent: no tools"


@pytest.mark.server
async def test_declarations_a_model_cannot_use_are_refused_naming_the_tool() -> None:
    agent = LlmAgent(name="orders", model=ToolUser(), tools=[server_side_order])
    clash = {**LOOKUP, "name": "server_side_order"}
    bad_schema = {**LOOKUP, "parameters": {"type": "object", "properties": {"x": {"type": 5}}}}
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        for tool, says in [
            (clash, "'server_side_order' has the name of a server tool of agent 'orders'"),
            (bad_schema, "'lookUpOrder': parameters is not a valid JSON Schema at"),
        ]:
            events = await ws.run(user_input(new_id("t"), "hi", tools=[tool]))
            assert events[-1]["type"] == "RUN_ERROR", events[-1]
            assert events[-1]["code"] == "VALIDATION_ERROR"
            assert says in events[-1]["message"]


def test_a_schema_declared_on_every_run_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = counting(monkeypatch, declarations, "schema_problem")
    declarations._checked.cache_clear()
    good = msgspec.convert(LOOKUP, p.Tool)
    for _ in range(3):
        assert list(declarations.declared_client_tools([good], None, {})) == ["lookUpOrder"]
    bad = msgspec.convert(
        {**LOOKUP, "parameters": {"type": "object", "properties": {"x": {"type": 5}}}}, p.Tool
    )
    for _ in range(2):  # a bad schema remembered is still refused
        with pytest.raises(p.GatewayError, match="not a valid JSON Schema"):
            declarations.declared_client_tools([bad], None, {})
    assert len(checked) == 2


@pytest.mark.server
async def test_a_catalog_given_by_setting_restricts_the_declared_tools(tmp_path: Path) -> None:
    (tmp_path / "lookUpOrder.json").write_text(json.dumps({**LOOKUP, "executor": "client"}))
    async with (
        running_gateway(agent=orders_agent(), catalog=str(tmp_path)) as gateway,
        gateway.socket() as ws,
    ):
        other = {**LOOKUP, "name": "deleteEverything"}
        events = await ws.run(user_input(new_id("t"), "hi", tools=[other]))
        assert events[-1]["code"] == "VALIDATION_ERROR"
        assert "not in the tool catalog; client tools are: lookUpOrder" in events[-1]["message"]
        async with httpx.AsyncClient(base_url=gateway.http) as client:
            listed = (await client.get("/tools")).json()["tools"]
        assert [tool["name"] for tool in listed] == ["lookUpOrder"]


# --- Apps: plugins kept, threads apart ------------------------------------------------------


class Counting(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="counting")
        self.users: list[str] = []

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self.users.append(invocation_context.user_id)


@pytest.mark.server
async def test_an_apps_plugins_run_and_two_apps_on_one_database_never_share_threads(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "shared.db")
    counting = Counting()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        app = App(
            name="orders_app",
            root_agent=orders_agent(),
            plugins=[counting],
            resumability_config=ResumabilityConfig(is_resumable=True),
        )
    thread = new_id("t")
    async with running_gateway(agent=app, db=db) as gateway, gateway.socket() as ws:
        await ws.run(user_input(thread, "hello", tools=[]))
        assert [user for user in counting.users if user == "demo"] == ["demo"]
        threads = await gateway.app.hub.engine.sessions.threads("orders_app", user_id="demo")
        assert [t.thread_id for t in threads] == [thread]
    async with running_gateway(agent=orders_agent("other"), db=db) as gateway:
        sessions = gateway.app.hub.engine.sessions
        assert await sessions.threads("other", user_id="demo") == []
        assert await gateway.app.hub.engine.thread_owner(thread) is None


# --- embedded in another app ---------------------------------------------------------------


async def test_mounted_under_a_prefix_beside_the_host_apps_own_routes(tmp_path: Path) -> None:
    """As the README shows it: FastAPI's lifespan runs the gateway's, and a mount."""
    agent = gateway.create_app(orders_agent(), gateway.Settings(db=":memory:", user_rate=0))
    host = FastAPI(lifespan=agent.lifespan)
    host.mount("/agent", agent)

    @host.get("/")
    async def home() -> PlainTextResponse:
        return PlainTextResponse("the host app")

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(host, host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.02)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            assert (await client.get("/")).text == "the host app"
            assert (await client.get("/agent/ping")).json()["status"] == "Healthy"
            frame = user_input(new_id("t"), "hello", tools=[])
            streamed = await client.post(
                "/agent/invocations", json=frame, headers={"X-Gateway-User": "demo"}
            )
            assert streamed.status_code == 200 and "RUN_FINISHED" in streamed.text
        url = f"ws://127.0.0.1:{port}/agent/ws?user=demo"
        async with connect(url) as ws:
            events = await AgUiSocket(ws).run(user_input(new_id("t"), "hello", tools=[]))
        assert text_of(events) == "agent: no tools"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


# --- the boundary between the core and the demo ----------------------------------------------


def test_the_core_imports_nothing_of_the_examples() -> None:
    core = [
        path
        for path in (ROOT / "gateway").rglob("*.py")
        if "examples" not in path.relative_to(ROOT / "gateway").parts
    ]
    offenders = []
    for path in core:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("gateway.examples")]
    assert core and offenders == []


def test_the_examples_use_only_the_cores_public_modules() -> None:
    """...and nothing of one another: each example stands alone as a user's agent would."""
    examples = ROOT / "gateway" / "examples"
    private = []
    for path in examples.rglob("*.py"):
        own = "gateway.examples." + path.relative_to(examples).parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gateway."):
                module = node.module or ""
                if not module.startswith((own, *PUBLIC)):
                    private.append(f"{path.name}: {module}")
    assert private == []


PUBLIC = (
    "gateway.api",
    "gateway.config",
    "gateway.context",
    # What a model reads of a reply cut off, and of the turn a restart asks it again in.
    "gateway.store.cut_off",
    "gateway.adk.hosting",
    "gateway.models",
    "gateway.tools",
)


class Recording(ToolUser):
    calls: list[str] = pydantic.Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.calls.append("called")
        async for response in super().generate_content_async(llm_request, stream):
            yield response


@pytest.mark.server
@pytest.mark.parametrize("warm_up", ["gateway", "agent"])
async def test_the_warm_up_never_calls_the_agents_model(warm_up: str) -> None:
    """By default it meets a stand-in; warming the agent itself, its model is answered for."""
    model = Recording()
    agent = LlmAgent(name="paid", model=model)
    async with running_gateway(agent=agent, warm_up_runs=3, warm_up=warm_up) as gateway:
        assert gateway.app.ready.is_set() and model.calls == []
        async with gateway.socket() as ws:
            await ws.run(user_input(new_id("t"), "hello", tools=[]))
        assert model.calls == ["called"]


@pytest.mark.server
async def test_without_a_catalog_the_declared_set_is_logged_once_per_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_gateway(agent=orders_agent()) as gateway, gateway.socket() as ws:
        with caplog.at_level(logging.INFO, logger="gateway.tools.declarations"):
            for _ in range(3):
                await ws.run(user_input(new_id("t"), "hello", tools=[]))
            await ws.run(user_input(new_id("t"), "hello", tools=[LOOKUP]))
            await ws.run(user_input(new_id("t"), "hello", tools=[LOOKUP]))
    logged = [r.getMessage() for r in caplog.records if "client tools declared" in r.message]
    assert logged == [
        "client tools declared (no catalog): none",
        "client tools declared (no catalog): lookUpOrder",
    ]


@pytest.mark.server
async def test_a_model_name_given_in_python_is_built_as_gateway_model_builds_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"rules": [{"user": "hi", "say": "hello from the script"}]}))
    agent = orders_agent("scripted_by_name")
    async with running_gateway(agent=agent, model=f"script:{script}") as gateway:
        async with gateway.socket() as ws:
            events = await ws.run(user_input(new_id("t"), "hi", tools=[]))
        assert text_of(events) == "hello from the script"
    with pytest.raises(HostingError, match="GATEWAY_MODEL='gpt-4o'"):
        create_app(orders_agent("unknown_name"), model="gpt-4o")
