"""Someone else's agent, as they would serve it with workers: a package of their own in a
folder far from this checkout, ``agent-gateway serve`` (the installed command) run there
with no PYTHONPATH, ``GATEWAY_WORKERS=2`` so that every run crosses to a worker process
that imports the agent by its spec, and the offline script model in place of theirs.

The flagship's moves on it (a server tool that keeps state, a browser tool answered, an
approval, a cancel, a reattach), then the other shapes such an agent comes in: a file path,
a factory of no parameters (as ADK's samples write them), an ``async def`` one, an ``App``
with a plugin of its own, an ``adk web`` folder (what loading it said is said once, not
again by each worker); and a script that starts the gateway outside its ``__main__`` guard,
which a worker runs again as it starts (Python's spawn does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from gateway.api import RERUN_IN_A_WORKER
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    resume,
    text_of,
    tool_answer,
    tool_calls,
    tool_result,
    user_input,
)
from tests.support.budgets import scaled
from tests.support.processes import free_port, gateway_process

pytestmark = pytest.mark.process

# The console script pip installed beside this interpreter.
COMMAND = str(Path(sys.executable).with_name("agent-gateway"))

THEIR_AGENT = '''
import logging
import os
import warnings

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool, ToolContext

# What a module of theirs does as it is imported, in the main process and in each worker.
logging.basicConfig(level=logging.INFO)
PREFIX = os.environ.get("THEIR_PREFIX", "note")
print("their_pkg.agent imported", flush=True)
logging.getLogger("their_pkg").warning("their_pkg: notes live in the session state")
warnings.warn("their_pkg: THEIR_PREFIX will be renamed", UserWarning, stacklevel=1)


def add_note(text: str, tool_context: ToolContext) -> dict:
    """Adds a note to the user's notes."""
    notes = [*tool_context.state.get("notes", []), text]
    tool_context.state["notes"] = notes
    return {"count": len(notes), "pid": os.getpid()}


def delete_notes(tool_context: ToolContext) -> dict:
    """Deletes every note, once a person approved."""
    count = len(tool_context.state.get("notes", []))
    tool_context.state["notes"] = []
    return {"deleted": count}


def count_turns(callback_context) -> None:
    callback_context.state["turns"] = callback_context.state.get("turns", 0) + 1


def build(name: str = "notes") -> LlmAgent:
    return LlmAgent(
        name=name,
        model="gemini-2.5-flash",
        instruction="Keep the user's notes.",
        tools=[add_note, FunctionTool(delete_notes, require_confirmation=True)],
        before_agent_callback=count_turns,
    )


root_agent = build()
'''

THEIR_SHAPES = """
import asyncio

from google.adk.apps import App, ResumabilityConfig
from google.adk.plugins.base_plugin import BasePlugin

from .agent import build


class Stamp(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="their_stamp")

    async def after_tool_callback(self, *, tool, tool_args, tool_context, result):
        return {**result, "stamped": True}


app = App(
    name="their_app",
    root_agent=build("in_app"),
    plugins=[Stamp()],
    resumability_config=ResumabilityConfig(is_resumable=True),
)


def make_agent():
    return build("made")


async def make_agent_later():
    await asyncio.sleep(0)
    return build("made_later")
"""

# A script that serves its own agent and forgot the guard a spawned process needs.
UNGUARDED_SCRIPT = """
import sys

import gateway
from google.adk.agents import LlmAgent

root_agent = LlmAgent(name="unguarded", model="gemini-2.5-flash")
gateway.serve("__main__:root_agent", gateway.Settings(port=int(sys.argv[1]), db=sys.argv[2]))
"""

TURNS = {
    "rules": [
        {"user": "note (?P<text>.+)", "call": {"name": "add_note", "args": {"text": "{text}"}}},
        {"after": "add_note", "say": "Noted; {count} notes now."},
        {"user": "show (?P<what>.+)", "call": {"name": "showNote", "args": {"what": "{what}"}}},
        {"after": "showNote", "say": "The browser said {status}."},
        {"user": "delete", "call": {"name": "delete_notes", "args": {}}},
        {"after": "delete_notes", "say": "Deleted {deleted} notes."},
        {"user": "long", "say": " ".join(f"word{n}" for n in range(40))},
    ]
}

SHOW_NOTE = {
    "name": "showNote",
    "description": "Shows a note in the browser.",
    "parameters": {
        "type": "object",
        "properties": {"what": {"type": "string"}},
        "required": ["what"],
    },
}


@pytest.fixture
def their_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Their project: ``their_pkg`` and the script the model plays, nothing on PYTHONPATH."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    folder = tmp_path / "their_project"
    package = folder / "their_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(THEIR_AGENT)
    (package / "shapes.py").write_text(THEIR_SHAPES)
    (folder / "turns.json").write_text(json.dumps(TURNS))
    return folder


def with_workers(folder: Path) -> dict[str, str]:
    return {"GATEWAY_WORKERS": "2", "GATEWAY_MODEL": f"script:{folder / 'turns.json'}"}


async def test_their_package_tells_the_flagships_moves_through_workers(
    their_folder: Path, tmp_path: Path
) -> None:
    command = [COMMAND, "serve", "their_pkg.agent:root_agent"]
    async with gateway_process(
        tmp_path / "threads.db",
        tmp_path / "gateway.log",
        command=command,
        cwd=their_folder,
        environment=with_workers(their_folder),
    ) as (process, port):
        thread = new_id("t")
        async with connect(f"ws://127.0.0.1:{port}/ws?user=stranger", max_size=None) as raw:
            await the_flagships_moves(AgUiSocket(raw), thread, process.pid)
        # A reattach from a new connection: the state the tools and the callback left.
        query = f"user=stranger&threadId={thread}"
        async with connect(f"ws://127.0.0.1:{port}/ws?{query}", max_size=None) as raw:
            ws = AgUiSocket(raw)
            while (event := await ws.next())["type"] != "STATE_SNAPSHOT":
                pass
    assert event["snapshot"] == {"turns": 6, "notes": []}  # a callback each of six runs


async def the_flagships_moves(ws: AgUiSocket, thread: str, main_pid: int) -> None:
    noted = await ws.run(user_input(thread, "note milk", tools=[SHOW_NOTE]))
    assert text_of(noted) == "Noted; 1 notes now."
    assert tool_result(noted, "add_note")["pid"] != main_pid  # a worker ran it
    # The browser's tool: the run waits for it, and the answer resumes the invocation.
    shown = await ws.run(user_input(thread, "show milk", tools=[SHOW_NOTE]))
    [call] = tool_calls(shown, "showNote")
    assert outcome(shown)["pendingToolCallIds"] == [call["id"]]
    answered = await ws.run(tool_answer(thread, [(call["id"], {"status": "shown"})]))
    assert text_of(answered) == "The browser said shown."
    # An approval: an interrupt, then the person's yes.
    asked = await ws.run(user_input(thread, "delete", tools=[SHOW_NOTE]))
    [interrupt] = outcome(asked)["interrupts"]
    approved = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
    assert text_of(approved) == "Deleted 1 notes."
    # A cancel as the reply streams.
    await ws.send(user_input(thread, "long", tools=[SHOW_NOTE]))
    while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
        pass
    await ws.send({"type": "cancel", "threadId": thread})
    assert outcome(await ws.until_end()) == {"type": "cancelled"}


@pytest.mark.parametrize(
    ("spec", "stamped"),
    [
        ("their_pkg/agent.py", False),  # a file, not a module
        ("their_pkg.shapes:make_agent", False),  # a factory of no parameters
        ("their_pkg.shapes:make_agent_later", False),  # an async one, awaited at load
        ("their_pkg.shapes:app", True),  # an App and its own plugin
        ("./their_pkg", False),  # an adk web folder, named otherwise than its agent
    ],
)
async def test_their_agent_in_another_shape_is_served_by_workers(
    spec: str, stamped: bool, their_folder: Path, tmp_path: Path
) -> None:
    command = [COMMAND, "serve", spec]
    async with (
        gateway_process(
            tmp_path / "threads.db",
            tmp_path / "gateway.log",
            command=command,
            cwd=their_folder,
            environment=with_workers(their_folder),
        ) as (process, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=stranger") as raw,
    ):
        noted = await AgUiSocket(raw).run(user_input(new_id("t"), "note tea", tools=[]))
    # The script model played (GATEWAY_MODEL reached what the factory made), in a worker.
    assert text_of(noted) == "Noted; 1 notes now."
    result: dict[str, Any] = tool_result(noted, "add_note")
    assert result["pid"] != process.pid
    assert result.get("stamped") is (True if stamped else None)  # the App's plugin ran
    # What loading said, said once: the main process's, not again by each worker; and no
    # false alarm from ADK's Runner about the App's name.
    said = (tmp_path / "gateway.log").read_text()
    assert said.count("their_pkg: notes live in the session state") == 1, said
    assert said.count("UserWarning: their_pkg: THEIR_PREFIX will be renamed") == 1, said
    assert "App name mismatch" not in said
    assert said.count("their_pkg.agent imported") == 3  # their print: theirs, in each process


def test_a_script_serving_outside_its_main_guard_stops_at_once_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker runs the script again as it starts: serve() there would start a second
    gateway on the same port. It exits with the sentence instead, and the gateway stops
    saying which worker did not start, rather than waiting out the start timeout."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    (tmp_path / "serve_it.py").write_text(UNGUARDED_SCRIPT)
    done = subprocess.run(
        [sys.executable, "serve_it.py", str(free_port()), str(tmp_path / "threads.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(90),
        env={**os.environ, "GATEWAY_WORKERS": "2"},
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert RERUN_IN_A_WORKER in said
    assert "exited (exit code 1) before it was ready" in said
