"""``agent-gateway serve tests.support.dojo.<module>:root_agent`` as a team moving to the
gateway runs its agent: the installed command, in the project's folder, with no PYTHONPATH
and no GATEWAY_MODEL (each agent carries its own script model). The process logs no ERROR
and no traceback, at start (its warm-up included) or while a conversation runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.dojo_runs import assert_quiet_text
from tests.support.processes import ROOT, gateway_process, run_over_ws

pytestmark = pytest.mark.process

# The console script pip installed beside this interpreter.
COMMAND = str(Path(sys.executable).with_name("agent-gateway"))

CONVERSATIONS = {
    # on_tool_error_callback answers for a tool that raised: a healthy agent, no ERROR.
    "callbacks": ("where is order a-100", "and order B-7"),
    "instruction_state": ("who am i", "my name is Ada", "who am i now"),
    "sub_agents": ("hello", "roll a die for me"),
    "sequential_workflow": ("write a poem about roses",),
}


@pytest.mark.parametrize("module", CONVERSATIONS)
async def test_the_installed_command_serves_a_dojo_agent_from_its_folder_and_logs_no_error(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("GATEWAY_MODEL", raising=False)
    log = tmp_path / "gateway.log"
    command = [COMMAND, "serve", f"tests.support.dojo.{module}:root_agent"]
    async with gateway_process(
        tmp_path / "threads.db", log, command=command, cwd=ROOT, warm_up_runs=3
    ) as (_, port):
        thread = new_id("t")
        for words in CONVERSATIONS[module]:
            events = await run_over_ws(port, user_input(thread, words, tools=[]))
            assert outcome(events)["type"] == "success", events[-1]
            reply = text_of(events)
            assert reply and "offline script model" not in reply, reply
    text = log.read_text()
    assert "ready on 127.0.0.1" in text
    assert_quiet_text(text)
