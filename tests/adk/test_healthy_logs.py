"""`agent-gateway serve` on other people's agents, warm-up included, as an operator runs it:
the log of a healthy start and of a user's runs holds no ERROR and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.agui import new_id, text_of, user_input
from tests.support.processes import GATEWAY, gateway_process, run_over_ws

pytestmark = pytest.mark.process

DOJO = "tests.support.dojo"


@pytest.mark.parametrize(
    ("agent", "said", "answer"),
    [
        ("session_state:root_agent", "hello", "This is turn one of ours, and I kept count."),
        (
            "memory:root_agent",
            "my favourite colour is teal",
            "Noted: your favourite colour is teal.",
        ),
        ("notes:app", "note buy milk", "Saved: buy milk."),
    ],
)
async def test_a_healthy_agent_starts_and_runs_without_an_error_in_the_log(
    tmp_path: Path, agent: str, said: str, answer: str
) -> None:
    log = tmp_path / "gateway.log"
    command = (*GATEWAY, "serve", f"{DOJO}.{agent}")
    async with gateway_process(tmp_path / "g.db", log, command=command, warm_up_runs=3) as (
        _,
        port,
    ):
        for user in ("gina", "hal"):
            events = await run_over_ws(port, user_input(new_id("t"), said, tools=[]), user)
            assert text_of(events) == answer
    text = log.read_text()
    assert "warmed up in" in text and "ready on" in text
    assert "ERROR" not in text and "Traceback" not in text, text[-3000:]
