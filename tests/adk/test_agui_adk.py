"""Leaving ag-ui-adk: a module built for it is served with the settings that carry over,
the ones that do not are named in the log, a FastAPI app alone is refused naming the
module's agents, AGUIToolset is served by the gateway's client tools, and predictive state
(PredictState, then confirm_changes) works for any agent."""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from ag_ui_adk import ADKAgent, AGUIToolset
from google.adk.agents import LlmAgent
from google.adk.apps import App

from gateway.adk import agui_adk, loading
from gateway.adk.hosting import HostingError, prepare
from gateway.config import Settings
from gateway.models.script import ScriptLlm
from gateway.tools.client import ClientToolset
from tests.support import ROOT
from tests.support.agui import (
    new_id,
    outcome,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.dojo import agui_toolset, predictive_state
from tests.support.processes import GATEWAY, gateway_process, run_over_ws
from tests.support.servers import running_gateway

pytestmark = pytest.mark.unit

_modules = itertools.count()

STORY = "Write a story about Candy Beard."


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str = "") -> str:
    """A module laid out as a dojo server module (``AGENTS``, then ``body``), importable
    under a name of its own, for this test only."""
    name = f"left_agui_adk_{next(_modules)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(AGENTS + body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


AGENTS = """
    from ag_ui_adk import ADKAgent, PredictStateMapping, add_adk_fastapi_endpoint
    from fastapi import FastAPI
    from google.adk.agents import LlmAgent
    from google.adk.sessions import InMemorySessionService

    recipe_agent = LlmAgent(name="RecipeAgent", model="gemini-2.5-flash")
    helper_agent = LlmAgent(name="HelperAgent", model="gemini-2.5-flash")
    app = FastAPI()
"""


# --- what serve picks in a module ----------------------------------------------------------


def test_a_module_that_builds_an_adkagent_is_served_with_the_settings_that_carry_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    name = _module(
        tmp_path,
        monkeypatch,
        """
    wrapped = ADKAgent(
        adk_agent=recipe_agent,
        app_name="recipes",
        user_id="demo_user",
        # Its own sessions: ag-ui-adk's shared default holds the first ADKAgent's settings.
        session_service=InMemorySessionService(),
        tool_timeout_seconds=45,
        max_concurrent_executions=10,
        predict_state=[PredictStateMapping("recipe", "write_recipe", "recipe")],
    )
    add_adk_fastapi_endpoint(app, wrapped, path="/")
    """,
    )
    with caplog.at_level(logging.INFO, logger="gateway.adk.loading"):
        hosted = loading.load(name, Settings())
    assert isinstance(hosted.agent, App) and hosted.agent.name == "recipes"
    assert hosted.agent.root_agent.name == "RecipeAgent"
    assert [(p.state_key, p.tool, p.confirm) for p in hosted.predict_state] == [
        ("recipe", "write_recipe", True)
    ]
    dropped = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # Each setting the owner changed, once, with what to set instead; defaults say nothing.
    assert len(dropped) == 2, dropped
    assert "ADKAgent's user_id='demo_user' is not kept: the user is whoever" in dropped[0]
    assert "tool_timeout_seconds=45 is not kept" in dropped[1]
    assert "GATEWAY_CLIENT_TOOL_TIMEOUT seconds to answer a call: set that to 45" in dropped[1]
    [kept] = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert "as App 'recipes' (settings kept: app_name, predict_state)" in kept


def test_an_explicit_attribute_wins_over_the_modules_adkagent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(
        tmp_path,
        monkeypatch,
        """
    wrapped = ADKAgent(adk_agent=recipe_agent)
    """,
    )
    assert loading.load(f"{name}:helper_agent", Settings()).app_name == "HelperAgent"
    assert loading.load(f"{name}:wrapped", Settings()).app_name == "RecipeAgent"


def test_an_adkagent_made_from_an_app_serves_that_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(
        tmp_path,
        monkeypatch,
        """
    from google.adk.apps import App, ResumabilityConfig

    recipes = App(
        name="recipe_app",
        root_agent=recipe_agent,
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    wrapped = ADKAgent.from_app(recipes, user_id="demo")
    """,
    )
    hosted = loading.load(name, Settings())
    assert isinstance(hosted.agent, App) and hosted.agent.name == "recipe_app"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            "",
            "holds a fastapi.applications.FastAPI as 'app', not an ADK agent or App; "
            "serve one of its agents instead: {name}:recipe_agent or {name}:helper_agent.",
        ),
        (
            """
    first = ADKAgent(adk_agent=recipe_agent)
    second = ADKAgent(adk_agent=helper_agent)
    """,
            "builds 2 ADKAgents; serve one of them: {name}:first or {name}:second.",
        ),
    ],
)
def test_a_module_with_no_one_agent_to_serve_is_refused_naming_its_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, says: str
) -> None:
    name = _module(tmp_path, monkeypatch, extra)
    with pytest.raises(HostingError) as refused:
        loading.load(name, Settings())
    assert says.format(name=name) in str(refused.value)
    assert str(refused.value).startswith(f"AGENT {name!r}: module {name!r} (")


def test_every_adkagent_option_has_a_row_in_the_table_and_the_readme() -> None:
    options = {
        name
        for function in (ADKAgent.__init__, ADKAgent.from_app)
        for name in inspect.signature(function).parameters
        if name not in ("self", "cls", "app")
    }
    rows = [setting.name for setting in agui_adk.SETTINGS]
    assert set(rows) == options and len(rows) == len(options)
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Moving from ag-ui-adk") :]
    table = table[: table.index("\n## ")]
    assert [
        re.sub(r"[`| ]", "", line.split("|")[1])
        for line in table.splitlines()
        if line.startswith("| `")
    ] == rows


# --- AGUIToolset ----------------------------------------------------------------------------


def test_agui_toolset_is_taken_out_and_the_client_toolset_serves_its_tools() -> None:
    agent = agui_toolset.chat_agent()
    client_tools = ClientToolset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        app = prepare(loading.load(agent, Settings()), client_tools)
    [hosted] = [agent for agent in [app.root_agent] if isinstance(agent, LlmAgent)]
    assert hosted.tools == [client_tools]
    assert not agui_adk.is_agui_toolset(client_tools)


def test_ag_ui_adk_is_recognised_only_once_loaded() -> None:
    """The gateway never imports ag-ui-adk: with it not loaded, nothing is one of its."""
    probe = (
        "import sys; from gateway.adk import agui_adk, loading; "
        "assert 'ag_ui_adk' not in sys.modules; "
        "assert not agui_adk.is_adk_agent(object()) and not agui_adk.is_agui_toolset(None); "
        "assert 'ag_ui_adk' not in sys.modules"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


# --- predictive state through the gateway ---------------------------------------------------


# The dojo's page declares the dialog as a tool of its own (CopilotKit's useHumanInTheLoop).
CONFIRM_DIALOG = {
    "name": "confirm_changes",
    "description": "Asks the user to confirm the changes.",
    "parameters": {"type": "object", "properties": {}},
}


@pytest.mark.server
@pytest.mark.parametrize("declared", [[], [CONFIRM_DIALOG]], ids=["undeclared", "declared"])
async def test_predictive_state_asks_for_confirmation_and_the_answer_resumes_the_run(
    declared: list[dict[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    thread = new_id("t")
    agent = predictive_state.document_agent()
    async with (
        running_gateway(agent=agent, predict_state=predictive_state.PREDICTIONS) as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(user_input(thread, STORY, tools=declared))
        kinds = [e["type"] for e in events]
        custom = events[kinds.index("CUSTOM")]
        assert custom["name"] == "PredictState"
        assert custom["value"] == [
            {"state_key": "document", "tool": "write_document_local", "tool_argument": "document"}
        ]
        assert kinds[kinds.index("CUSTOM") + 1] == "TOOL_CALL_START"
        write, confirm = tool_calls(events)
        assert (write["name"], confirm["name"], confirm["args"]) == (
            "write_document_local",
            "confirm_changes",
            {},
        )
        assert kinds[-4:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
        assert outcome(events)["pendingToolCallIds"] == [confirm["id"]]
        assert text_of(events) == ""  # the model answers once the person has decided

        answer = tool_answer(thread, [(confirm["id"], {"accepted": True})], tools=declared)
        events = await ws.run(answer)
        assert text_of(events) == "The story is yours now."

        # A reload shows the dialog's call and its answer as they were.
        messages = snapshot_of(await ws.run({"type": "reattach", "threadId": thread}))
        [assistant] = [m for m in messages if m.get("toolCalls")]
        assert [c["function"]["name"] for c in assistant["toolCalls"]] == [
            "write_document_local",
            "confirm_changes",
        ]
        [answered] = [m for m in messages if m.get("toolCallId") == confirm["id"]]
        assert json.loads(answered["content"]) == {"accepted": True}
    assert not [
        r for r in caplog.records if r.levelno >= logging.WARNING and "Duplicate" in r.getMessage()
    ]


@pytest.mark.server
async def test_a_rejection_reaches_the_model_and_no_confirmation_is_asked_when_told_not_to() -> (
    None
):
    thread = new_id("t")
    quiet = [{**m.to_payload(), "emit_confirm_tool": False} for m in predictive_state.PREDICTIONS]
    async with (
        running_gateway(
            agent=predictive_state.document_agent(), predict_state=json.dumps(quiet)
        ) as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(user_input(thread, STORY, tools=[]))
        assert [e["name"] for e in events if e["type"] == "CUSTOM"] == ["PredictState"]
        assert [c["name"] for c in tool_calls(events)] == ["write_document_local"]
        assert outcome(events) == {"type": "success"}
    thread = new_id("t")
    async with (
        running_gateway(
            agent=predictive_state.document_agent(), predict_state=predictive_state.PREDICTIONS
        ) as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(user_input(thread, STORY, tools=[]))
        [confirm] = tool_calls(events, "confirm_changes")
        events = await ws.run(tool_answer(thread, [(confirm["id"], {"accepted": False})], tools=[]))
        assert text_of(events) == "I left the document as it was."


# --- the command line -----------------------------------------------------------------------


@pytest.mark.process
async def test_serve_on_a_dojo_module_keeps_its_predictive_state_and_names_what_it_drops(
    tmp_path: Path,
) -> None:
    log = tmp_path / "gateway.log"
    command = (*GATEWAY, "serve", "tests.support.dojo.predictive_state")
    async with gateway_process(tmp_path / "threads.db", log, command=command) as (_, port):
        events = await run_over_ws(port, user_input(new_id("t"), STORY, tools=[]))
    assert [e["name"] for e in events if e["type"] == "CUSTOM"] == ["PredictState"]
    assert [c["name"] for c in tool_calls(events)] == ["write_document_local", "confirm_changes"]
    text = log.read_text()
    assert "as App 'demo_app' (settings kept: app_name, predict_state)" in text
    assert "ADKAgent's user_id='demo_user' is not kept" in text
    assert "ADKAgent's session_timeout_seconds=3600 is not kept" in text
    assert " ERROR " not in text and "Traceback" not in text


@pytest.mark.process
def test_serve_on_a_module_with_only_a_web_app_exits_naming_its_agents(tmp_path: Path) -> None:
    (tmp_path / "shared_state_page.py").write_text(textwrap.dedent(AGENTS))
    done = subprocess.run(
        [*GATEWAY, "serve", "--port", "0", "shared_state_page"],  # whatever holds 8080
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("agent-gateway: AGENT 'shared_state_page': module 'shared_state_page'")
    assert last.endswith(
        "serve one of its agents instead: shared_state_page:recipe_agent or "
        "shared_state_page:helper_agent."
    )


@pytest.mark.process
async def test_a_run_of_an_agent_with_agui_toolset_logs_no_error(tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    command = (*GATEWAY, "serve", "tests.support.dojo.agui_toolset:root_agent")
    tools = [agui_toolset.CHANGE_BACKGROUND]
    thread = new_id("t")
    async with gateway_process(tmp_path / "threads.db", log, command=command) as (_, port):
        events = await run_over_ws(
            port, user_input(thread, "Make the background blue", tools=tools)
        )
        [change] = tool_calls(events, "change_background")
        assert change["args"] == {"background": "blue"}
        answer = tool_answer(thread, [(change["id"], {"status": "changed"})], tools=tools)
        events = await run_over_ws(port, answer)
        assert text_of(events) == "The background is blue now."
    text = log.read_text()
    assert "agent ChatAgent: AGUIToolset is served by the gateway's client tools" in text
    assert " ERROR " not in text and "Traceback" not in text, text


@pytest.mark.server
async def test_agui_toolsets_filter_narrows_the_client_tools_its_agent_is_offered(
    tmp_path: Path,
) -> None:
    script = tmp_path / "page.json"
    rules = [
        {
            "user": "title (?P<title>\\w+)",
            "call": {"name": "change_title", "args": {"title": "{title}"}},
        },
        {"user": "title", "say": "I cannot change the title."},
        {
            "user": "background (?P<color>\\w+)",
            "call": {"name": "change_background", "args": {"background": "{color}"}},
        },
    ]
    script.write_text(json.dumps({"rules": rules}))
    agent = LlmAgent(
        name="page",
        model=ScriptLlm.from_file(script),
        tools=[AGUIToolset(tool_filter=["change_background"])],
    )
    title = {
        "name": "change_title",
        "description": "Changes the page's title.",
        "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
    }
    tools = [agui_toolset.CHANGE_BACKGROUND, title]
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "Set the title Hello", tools=tools))
        assert (tool_calls(events), text_of(events)) == ([], "I cannot change the title.")
        events = await ws.run(user_input(new_id("t"), "background red", tools=tools))
        assert [call["name"] for call in tool_calls(events)] == ["change_background"]
