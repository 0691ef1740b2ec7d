"""An input sent twice runs once across the processes of a cluster (``gateway.hub.dedupe``):
a copy that reaches another process finds the run in the store, whether it has run or is
running there, and neither runs it again nor stops it as a new message would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.dedupe import ran_once, stored, told_deduped
from tests.support.first_events import LONG, replied
from tests.support.postgres import Postgres
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.process


@pytest.fixture
async def pair(postgres: Postgres) -> AsyncIterator[tuple[RunningGateway, RunningGateway]]:
    """Two gateways on one fresh PostgreSQL database (so in one cluster)."""
    url = postgres.fresh_database()
    async with (
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as a,
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as b,
    ):
        yield a, b


async def told_then_shown(ws: Any, asked: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(asked)
    told_deduped(await ws.until_end(), asked["runId"])
    return await ws.until_end()


async def test_an_input_run_on_one_process_and_sent_to_another_runs_once(pair):
    a, b = pair
    thread = new_id("t")
    asked = user_input(thread, "안녕")
    async with a.socket() as on_a:
        first = await on_a.run(asked)
    assert outcome(first) == {"type": "success"}
    async with b.socket() as on_b:
        shown = await told_then_shown(on_b, asked)
    assert text_of(first) in replied(shown)
    ran_once(await stored(b, thread), asked)


async def test_an_input_sent_to_another_process_while_it_runs_does_not_stop_it(pair):
    a, b = pair
    thread = new_id("t")
    asked = user_input(thread, LONG)
    async with a.socket() as on_a, b.socket() as on_b:
        await on_a.send(asked)
        events = []
        while not text_of(events):  # its message is stored once its reply streams
            events.append(await on_a.next())
        shown = await told_then_shown(on_b, asked)
        rest = await on_a.until_end()
    assert outcome(rest) == {"type": "success"}, "the copy stopped the run"
    # B showed the run going on A, to its end.
    assert outcome(shown) == {"type": "success"} and replied(shown)
    ran_once(await stored(a, thread), asked)
